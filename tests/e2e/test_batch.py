"""Batches and interleaved A/B runs: one result file per variant and a comparison."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

from conftest import hotloop

from hotloop import catalog, results
from hotloop import events as ev
from hotloop.run.interleave import interleave
from hotloop.run.session import Session


def test_interleaved_sessions_take_turns_one_run_each(tmp_path, leftovers):
    cat = catalog.load()
    plans = [catalog.with_overrides(cat.plan_for("zero_null"), runs=4, warmup=1, perf=False,
                                    params={"count": 2000, "block_size": bs})
             for bs in (512, 4096)]
    sessions = [Session(cat.resolve(p), tmp_path / f"{v}.jsonl", variant=v)
                for p, v in zip(plans, "AB")]

    async def collect() -> list[ev.Event]:
        return [e async for e in interleave(sessions)]

    events = asyncio.run(collect())
    order = "".join(e.variant for e in events if isinstance(e, ev.RunSample))
    # every variant once a round, the warmups too; each round starts one later: AB BA AB...
    assert order == "ABBAABBAAB"
    assert sum(isinstance(e, ev.Finished) for e in events) == 2
    for v, bs in zip("AB", (512, 4096)):
        res = results.read(tmp_path / f"{v}.jsonl")
        assert len(res.runs) == 4 and not res.partial
        assert res.header.params["block_size"] == bs and res.header.variant == v
    assert leftovers() == []


def test_three_variants_rotate_which_runs_first(tmp_path):
    cat = catalog.load()
    sessions = [Session(cat.resolve(catalog.with_overrides(
        cat.plan_for("zero_null"), runs=3, warmup=0, perf=False,
        params={"count": 2000, "block_size": bs})), tmp_path / f"{v}.jsonl", variant=v)
        for bs, v in zip((512, 1024, 2048), "ABC")]

    async def collect() -> str:
        return "".join([e.variant async for e in interleave(sessions)
                        if isinstance(e, ev.RunSample)])
    assert asyncio.run(collect()) == "ABC" "BCA" "CAB"


def test_cpu_variants_interleaved_from_the_command_line(tmp_path):
    p = hotloop("run", "seqpacket", "--cpu", "same-core", "--cpu", "split", "--interleave",
                "--runs", "5", "--param", "msgs=5000", "--no-perf", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [r["workload"] for r in doc["results"]] == ["seqpacket", "seqpacket"]
    files = sorted((tmp_path / "results").glob("*.jsonl"))
    assert len(files) == 2
    cpus = {results.read(f).header.cpu.name for f in files}
    assert cpus == {"same-core", "split"}
    rows = doc["comparison"]["comparisons"]
    assert rows and {"metric", "baseline", "new", "change_pct", "p_value", "verdict"} <= set(rows[0])


def test_a_batch_of_plans_runs_in_turn_and_ends_with_the_comparison(tmp_path):
    for name, bs in (("small", 512), ("big", 8192)):
        # runs of some milliseconds: a run of 1 ms is one preemption away from an outlier that
        # widens the assumed noise past any change
        assert hotloop("save", name, "--workload", "zero_null", "--runs", "8",
                       "--param", "count=50000", "--param", f"block_size={bs}",
                       "--no-perf").returncode == 0
    p = hotloop("run", "small", "big")
    assert p.returncode == 0, p.stderr
    assert "big vs small (baseline)" in p.stdout
    files = sorted((tmp_path / "results").glob("*.jsonl"), key=lambda f: f.stat().st_mtime)
    assert len(files) == 2
    small, big = (results.read(f) for f in files)
    assert (small.header.plan.name, big.header.plan.name) == \
        ("small", "big")
    # 16x the bytes per syscall, one session a side, not calibrated: called only beyond any
    # session's offset (how far the runs let it be told depends on this machine's load),
    # else no verdict and no direction word (known numbers: tests/unit/test_compare_files)
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("  bytes/s "))
    # (in the short words where the table is narrowed to COLUMNS)
    assert ("faster: beyond any session's offset" in line or "faster (beyond offsets)" in line
            or "no verdict: one session a side" in line
            or "no verdict: 1 a side" in line), line
    assert "slower" not in line and "?" not in line, line
    # not calibrated: the cheap way to a verdict for variants is to interleave them
    assert "run the variants with --interleave" in " ".join(p.stdout.split())


def test_batch_usage_errors_are_one_line():
    for args, expected in [
        (["run", "zero_null", "--interleave"], "--interleave needs two or more variants"),
        (["run", "zero_null", "seqpacket", "--out", "x.jsonl"], "--out names one file"),
        (["run", "zero_null", "--param", "count=1,0"], "0 is below the minimum 1"),
    ]:
        p = hotloop(*args)
        assert p.returncode == 2 and expected in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1
    assert not Path("results").exists()
