"""compare --fail-on on what real runs wrote: the gate's exit codes, as CI sees them.

Real `hotloop run` sessions of zero_null (the same settings twice, and a block size 128
times larger), compared by the real command line in its own process.  Only verdicts that
no load on this machine can move are asserted: one session a side not calibrated gets none
(whatever the numbers), and a sixfold change is beyond any session's offset.  The
statistics behind each verdict are unit tests on fixed synthetic data (test_boots,
test_verdict_edges).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, hotloop

from hotloop.analysis import compare


def session(path: Path, block: int, env: dict[str, str]) -> Path:
    p = subprocess.run([sys.executable, "-m", "hotloop", "run", "zero_null", "--param",
                        "count=5000", "--param", f"block_size={block}", "--runs", "10",
                        "--no-perf", "--out", str(path)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    return path


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory, cache_home: Path) -> dict[str, Path]:
    """The three sessions, run once for the module: each test only reads them.  A module's
    fixture comes before the tests' own isolation, so it brings its own directories."""
    d = tmp_path_factory.mktemp("gate")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(cache_home),
               XDG_CONFIG_HOME=str(d / "config"), XDG_STATE_HOME=str(d / "state"),
               HOTLOOP_SYSTEM_DIR=str(d / "state" / "hotloop"))
    return {"a": session(d / "a.jsonl", 512, env), "a2": session(d / "a2.jsonl", 512, env),
            "big": session(d / "big.jsonl", 65536, env)}


def test_one_session_a_side_not_calibrated_fails_closed(sessions):
    a, a2 = str(sessions["a"]), str(sessions["a2"])
    p = hotloop("compare", a, a2, "--fail-on", "worse")
    assert p.returncode == 4, p.stderr
    (line,) = [x for x in p.stderr.splitlines() if "--fail-on" in x]
    assert line.startswith("hotloop: --fail-on: no verdict for a2 (") and line.endswith(
        "exit 4"), line
    passed = hotloop("compare", a, a2, "--fail-on", "worse", "--pass-unjudged")
    assert passed.returncode == 0, passed.stderr
    old = hotloop("compare", a, a2, "--fail-on", "worse", "--strict")
    assert old.returncode == 4 and "--strict is deprecated" in old.stderr
    assert hotloop("compare", a, a2, "--strict").returncode == 2


def test_an_obvious_change_fails_the_gate_with_one_session_a_side(sessions):
    """A block 128 times larger moves zero_null's bytes/s severalfold: called without a
    calibration, beyond any offset a session could carry (25% a session, or twice the runs'
    spread where they spread more: under a heavy load they can, and then it is no call).
    Either way the gate never passes it: exit 3 on the call, exit 4 where there is none."""
    comp = compare.load_and_compare([sessions["a"], sessions["big"]])
    row = next(m for m in comp.pairs[0].metrics if m.primary)
    assert row.test.change_pct is not None and row.test.change_pct > 300, row.test
    p = hotloop("compare", str(sessions["a"]), str(sessions["big"]), "--fail-on", "better")
    worse = hotloop("compare", str(sessions["a"]), str(sessions["big"]), "--fail-on", "worse")
    if row.test.verdict.called:         # the bound was beaten: the usual case
        assert p.returncode == 3, p.stdout + p.stderr
        assert "faster: beyond any session's offset" in p.stderr
        assert worse.returncode == 0, worse.stderr
    else:                               # runs spread past the change: no verdict, closed
        assert row.test.noise_pct is not None and row.test.noise_pct > 25, row.test
        assert p.returncode == 4 and "no verdict" in p.stderr, p.stderr
        assert worse.returncode == 4, worse.stderr
