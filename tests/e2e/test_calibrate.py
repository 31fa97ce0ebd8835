"""hotloop calibrate: real sessions of a real workload, the noise profile, and compare using it.

What compare makes of a noise profile that is bad, and calibrate's bad input, are unit tests on
forged sessions (tests/unit/test_noise_profiles.py).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import hotloop

from hotloop import results
from hotloop.analysis import noise

ARGS = ["zero_null", "--param", "count=20000", "--runs", "6", "--no-perf"]


def test_calibrate_runs_sessions_and_compare_uses_the_profile(isolated: Path, leftovers, cli,
                                                               monkeypatch):
    """Calibrated under umask 002 (Ubuntu's, Fedora's): the profile and its directories are
    made private anyway, or compare would refuse the calibration it just made.  compare and
    the listing are called in this process: they start none."""
    monkeypatch.setenv("COLUMNS", "400")        # the profile's long path on one line
    old = os.umask(0o002)
    try:
        p = hotloop("calibrate", *ARGS, "--sessions", "8")
        a, b = isolated / "a.jsonl", isolated / "b.jsonl"
        for f in (a, b):
            assert hotloop("run", *ARGS, "--out", str(f)).returncode == 0
    finally:
        os.umask(old)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "8 sessions" in out and "within a session" in out and "session to session" in out
    assert "a session's start costs" in out and "(assumed" not in out
    for change in ("1%", "2%", "5%"):
        assert f"\n  {change}  " in out
    # a series of one kernel (run --sessions): <time>-calibrate-PLAN/<kernel>/sNN.jsonl, each
    # header numbering its session
    (top,) = list((isolated / "results").iterdir())
    assert top.name.endswith("-calibrate-zero_null")
    (where,) = list(top.iterdir())
    assert where.name == "default"
    files = sorted(where.glob("s*.jsonl"))
    assert [f.name for f in files] == [f"s{i:02d}.jsonl" for i in range(1, 9)]
    assert "session 8/8:" in p.stderr and f"the sessions: {where.relative_to(isolated)}" in p.stdout
    batches = [results.read(f).header.batch for f in files]
    assert [b.session for b in batches if b] == list(range(1, 9))
    assert len({b.id for b in batches if b}) == 1 and all(b and b.variants == 1 for b in batches)
    assert not leftovers()
    # stored under the state dir, keyed by what makes it valid
    (stored,) = noise.stored()
    path, profile, why = stored
    assert profile is not None and not why and path.parent == isolated / "state/hotloop/noise"
    assert profile.key["workload"] == "zero_null" and profile.key["perf"] is False
    assert profile.key["params"]["count"] == 20000 and profile.sessions == 8
    assert set(profile.metrics) >= {"bytes/s", "ns/op"} and profile.cost_measured
    assert (path.stat().st_mode & 0o777) == 0o600
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    listed = cli("calibrate", "--list")
    assert listed.returncode == 0 and str(path) in listed.stdout

    # compare finds it for other sessions of the same benchmark, says so in every format
    cmp = cli("compare", str(a), str(b), "--format", "json")
    doc = json.loads(cmp.stdout)
    row = next(r for r in doc["comparisons"] if r["metric"] == "bytes/s")
    assert row["noise_source"] == "calibrated" and row["session_noise_pct"] is not None
    assert doc["noise_profile"]["path"] == str(path) == row["noise_profile"]
    csv_text = cli("compare", str(a), str(b), "--format", "csv").stdout
    assert str(path) in csv_text.splitlines()[1]
    assert not any("no noise profile" in w["text"] for w in doc["warnings"])
    for fmt in ("text", "md", "org"):
        text = cli("compare", str(a), str(b), "--format", fmt).stdout
        assert "session noise: calibrated" in text and str(path) in text, fmt
    # ...but not for its own sessions: they would count twice
    own = cli("compare", str(files[0]), str(files[1]))
    assert "noise profile not used" in own.stdout
    assert "session noise: not measured" in own.stdout
    # nor for copies of them elsewhere (a session is known by its content, not its path), and
    # the next warning does not pretend there was no profile
    copies = [isolated / f"copy-{f.name}" for f in files[:2]]
    for f, c in zip(files, copies):
        c.write_bytes(f.read_bytes())
    copied = cli("compare", *map(str, copies))
    assert "noise profile not used" in copied.stdout, copied.stdout
    assert "no usable noise profile for zero_null" in copied.stdout
    assert "warning: no noise profile" not in copied.stdout

    # the same sessions read back from their directory give the same components
    again = cli("calibrate", str(where))
    assert again.returncode == 0, again.stderr
    assert "(assumed: sessions read from files)" in again.stdout
    reread = noise.load(path)
    assert reread.metrics["bytes/s"] == profile.metrics["bytes/s"]
