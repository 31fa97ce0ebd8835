"""The worker's CPU time per op (cpu_ns/op, from the worker_cpu_s each run carries): said
when the worker had well under a CPU, and made the primary metric with --metric, on forged
sessions: the wall clock noisy with another task's load, the CPU time steady."""
from __future__ import annotations

import json
from pathlib import Path

import forge
import pytest

from hotloop.analysis import metrics
from hotloop.run import protocol

OPS = 100_000
# Three sessions a side: the wall clock of each run swings with the load (+-30%), the CPU time
# is steady; side B's code costs 5% more CPU, which its wall time hides.
WALL = (792, 625, 1010, 700, 880, 560)
OFFSETS = (1.000, 1.002, 0.998)


def session(path: Path, cpu_ns: float, offset: float, shift: int) -> Path:
    runs = []
    for i in range(6):
        wall = WALL[(i + shift) % len(WALL)]
        cpu = cpu_ns * offset * forge.JITTER[i] ** 0.1
        runs.append(forge.run(i, "ns/op", ops=OPS, ns=wall * OPS,
                              extra={protocol.CPU_EXTRA: round(cpu * OPS / 1e9, 9)}))
    return forge.write(path, forge.header(forge.SYSCALL, params={}, runs=6), runs)


@pytest.fixture
def sides(tmp_path: Path) -> list[str]:
    out = []
    for name, cpu in (("a", 228.0), ("b", 239.4)):
        for k, off in enumerate(OFFSETS):
            session(tmp_path / name / f"s{k}.jsonl", cpu, off, 2 * k + (name == "b"))
        out.append(str(tmp_path / name))
    return out


def test_the_names_the_worker_and_the_analysis_use_are_one():
    assert metrics.CPU_EXTRA == protocol.CPU_EXTRA


def test_a_worker_with_a_third_of_a_cpu_is_said(cli, sides):
    p = cli("compare", *sides, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    said = [w for w in [x["text"] for x in doc["warnings"]] if "of a CPU over its runs" in w]
    assert len(said) == 2 and "the worker of a had 30% of a CPU" in said[0], said
    assert "--metric cpu_ns/op" in said[0]
    # the wall clock's noise hides the change: no call on ns/op
    row = doc["comparisons"][0]
    assert row["metric"] == "ns/op" and not row["significant"]


@pytest.mark.parametrize("name", ["cpu", "cpu_ns/op"])
def test_metric_makes_cpu_time_per_op_the_primary_and_calls_the_change(cli, sides, name):
    p = cli("compare", *sides, "--metric", name, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    first = doc["comparisons"][0]
    assert first["metric"] == "cpu_ns/op" and not first["exploratory"], first
    assert first["significant"] and first["change_pct"] == pytest.approx(5.0, abs=0.5)
    assert sum(not r["exploratory"] for r in doc["comparisons"]) == 1
    assert doc["metric"] == "cpu_ns/op"
    text = cli("compare", *sides, "--metric", name)
    assert "compare syscall: cpu_ns/op (lower is better)" in text.stdout
    assert "distribution of cpu_ns/op" in text.stdout
    # the gate reads the primary metric chosen
    gate = cli("compare", *sides, "--metric", name, "--fail-on", "worse")
    assert gate.returncode == 3, gate.stdout + gate.stderr


def test_the_sides_and_the_mail_are_of_the_metric_chosen(sides):
    """--metric: each side's summary (its median, its %stddev in the mail) is of the metric
    judged, not of the workload's, and the mail's metric line and reproduce line say it."""
    from hotloop.analysis import compare
    from hotloop.analysis.sides import load_sides
    from hotloop.render import mail
    loaded = load_sides(sides)
    comp = compare.compare_sides(loaded, sides, primary="cpu")
    base = comp.sides[0].summary
    assert base is not None and 220 < base.median < 235, base      # ns of CPU an op, ~228
    text = mail.compare_mail(comp, loaded)
    assert "metric     cpu_ns/op (lower is better)" in text, text
    assert "--metric cpu_ns/op" in text, text
    plain = compare.compare_sides(loaded, sides)
    assert plain.sides[0].summary is not None and plain.sides[0].summary.median > 550
    assert "--metric" not in mail.compare_mail(plain, loaded)


@pytest.mark.parametrize("name, says", [
    ("nope", "--metric nope: not a metric every session recorded (they have: ns/op, "
             "cpu_ns/op)"),
    ("ns\nop", "--metric ns\\nop: not a metric"),
])
def test_an_unknown_metric_is_one_line_naming_those_there_are(cli, sides, name, says):
    p = cli("compare", *sides, "--metric", name)
    assert p.returncode == 2 and says in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
