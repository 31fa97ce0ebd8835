"""--until-ci: a session stops once its median is known well enough, and says why.

Whether a median gets known to +-3% depends on how noisy the runs are: zero_null's half
millisecond is preempted often on a busy machine.  The runs that must stop early are the
`faulty` workload's (tests/faulty.py), each timed around a 20 ms sleep: its median is known
to a fraction of a percent in 10 runs however busy the CPUs are (a busy machine delays a
wake-up by microseconds, not by the 600 us that 3% of 20 ms is).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import hotloop

from hotloop import results
from hotloop.stats import median_ci_pct

ZERO = ["zero_null", "--param", "count=2000", "--warmup", "0", "--no-perf"]


def sleeper(faulty: Path) -> list[str]:
    """A run of 20 ms asleep, timed: runs whose median is known however busy the CPUs are."""
    return ["faulty", "--profiles", str(faulty), "--warmup", "0", "--no-perf"]


def test_stops_once_the_median_is_known_and_records_why(tmp_path: Path, faulty, leftovers):
    out = tmp_path / "u.jsonl"
    p = hotloop("run", *sleeper(faulty), "--runs", "400", "--until-ci", "3", "--out", str(out))
    assert p.returncode == 0, p.stderr
    r = results.read(out)
    stop = r.finished.summary.stop
    assert stop is not None and stop.reason == "until_ci" and stop.target_pct == 3
    assert 10 <= len(r.runs) == stop.runs < 400
    # what it recorded is what the file's runs say
    assert stop.ci_pct == pytest.approx(median_ci_pct(sorted(r.values)))
    assert stop.ci_pct <= 3
    assert r.header.plan.until_ci == 3
    assert f"stopped at {len(r.runs)} runs: the median is known to" in p.stdout
    assert leftovers() == []


def test_a_target_not_reached_says_so_and_runs_every_run(tmp_path: Path):
    p = hotloop("run", *ZERO, "--runs", "12", "--until-ci", "0.0001", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["runs"]) == 12
    assert doc["summary"]["stop"]["reason"] == "runs"
    assert doc["summary"]["stop"]["ci_pct"] > 0.0001


def test_spread_over_processes_the_ones_left_are_not_started(tmp_path: Path, faulty):
    out = tmp_path / "p.jsonl"
    p = hotloop("run", *sleeper(faulty), "--runs", "600", "--processes", "3", "--until-ci", "3",
                "--out", str(out))
    assert p.returncode == 0, p.stderr
    r = results.read(out)
    stop = r.finished.summary.stop
    assert stop is not None and stop.reason == "until_ci" and len(r.runs) < 200


def test_interleaved_variants_cannot_stop_apart(tmp_path: Path):
    """Each variant would stop when its own median is known, the other running on alone, no
    longer interleaved: refused before anything runs."""
    p = hotloop("run", "zero_null", "--param", "count=2000", "--param", "block_size=512,1024",
                "--interleave", "--runs", "300", "--until-ci", "3", "--warmup", "0",
                "--no-perf", "--format", "json")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == ("hotloop: until_ci cannot be used with --interleave: the "
                                "variants would stop apart; give --runs instead (a paired "
                                "test needs every round)")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "101"])
def test_a_target_that_cannot_be_is_one_line(value: str):
    p = hotloop("run", *ZERO, "--until-ci", value)
    assert p.returncode == 2 and f"--until-ci {value}" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_a_plan_key_that_cannot_be_is_file_line_key(tmp_path: Path, faulty):
    d = tmp_path / "prof"
    d.mkdir()
    (d / "p.toml").write_text('[plan.bad]\nworkload = "zero_null"\nuntil_ci = 0\n')
    p = hotloop("run", "bad", "--profiles", str(d))
    assert p.returncode == 2 and "p.toml:3" in p.stderr and "until_ci" in p.stderr
    (d / "p.toml").write_text('[plan.good]\nworkload = "faulty"\nuntil_ci = 3\nruns = 200\n'
                              'warmup = 0\nperf = false\n')
    p = hotloop("run", "good", "--profiles", str(d), "--profiles", str(faulty),
                "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["summary"]["stop"]["reason"] == "until_ci"


def test_the_last_run_is_checked_too(tmp_path: Path, faulty):
    """A loose target met by the last run: the record says it was met, not "not reached"."""
    p = hotloop("run", *sleeper(faulty), "--runs", "10", "--until-ci", "50", "--format", "json")
    assert p.returncode == 0, p.stderr
    stop = json.loads(p.stdout)["summary"]["stop"]
    assert stop["reason"] == "until_ci" and stop["runs"] == 10
