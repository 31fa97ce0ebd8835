"""hotloop calibrate: real sessions of a real workload, the noise profile, and compare using it."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import hotloop

from hotloop.analysis import noise

ARGS = ["zero_null", "--param", "count=20000", "--runs", "6", "--no-perf"]


def test_calibrate_runs_sessions_and_compare_uses_the_profile(isolated: Path, leftovers):
    p = hotloop("calibrate", *ARGS, "--sessions", "8")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "8 sessions" in out and "within a session" in out and "session to session" in out
    assert "a session's start costs" in out and "(assumed" not in out
    for change in ("1%", "2%", "5%"):
        assert f"\n  {change}  " in out
    (where,) = list((isolated / "results").iterdir())
    files = sorted(where.glob("session-*.jsonl"))
    assert len(files) == 8 and "session 8/8:" in p.stderr
    assert not leftovers()
    # stored under the state dir, keyed by what makes it valid
    (stored,) = noise.stored()
    path, profile, why = stored
    assert profile is not None and not why and path.parent == isolated / "state/hotloop/noise"
    assert profile.key["workload"] == "zero_null" and profile.key["perf"] is False
    assert profile.key["params"]["count"] == 20000 and profile.sessions == 8
    assert set(profile.metrics) >= {"bytes/s", "ns/op"} and profile.cost_measured
    listed = hotloop("calibrate", "--list")
    assert listed.returncode == 0 and str(path) in listed.stdout

    # compare finds it for other sessions of the same benchmark, says so in every format
    a, b = isolated / "a.jsonl", isolated / "b.jsonl"
    for f in (a, b):
        assert hotloop("run", *ARGS, "--out", str(f)).returncode == 0
    cmp = hotloop("compare", str(a), str(b), "--format", "json")
    doc = json.loads(cmp.stdout)
    row = next(r for r in doc["comparisons"] if r["metric"] == "bytes/s")
    assert row["noise_source"] == "calibrated" and row["session_noise_pct"] is not None
    assert doc["noise_profile"]["path"] == str(path) == row["noise_profile"]
    csv_text = hotloop("compare", str(a), str(b), "--format", "csv").stdout
    assert str(path) in csv_text.splitlines()[1]
    assert not any("no noise profile" in w for w in doc["warnings"])
    for fmt in ("text", "md", "org"):
        text = hotloop("compare", str(a), str(b), "--format", fmt).stdout
        assert "session noise: calibrated" in text and str(path) in text, fmt
    # ...but not for its own sessions: they would count twice
    own = hotloop("compare", str(files[0]), str(files[1]))
    assert "noise profile not used" in own.stdout
    assert "session noise: not calibrated" in own.stdout
    # nor for copies of them elsewhere (a session is known by its content, not its path), and
    # the next warning does not pretend there was no profile
    copies = [isolated / f"copy-{f.name}" for f in files[:2]]
    for f, c in zip(files, copies):
        c.write_bytes(f.read_bytes())
    copied = hotloop("compare", *map(str, copies))
    assert "noise profile not used" in copied.stdout, copied.stdout
    assert "no usable noise profile for zero_null" in copied.stdout
    assert "warning: no noise profile" not in copied.stdout

    # the same sessions read back from their directory give the same components
    again = hotloop("calibrate", str(where))
    assert again.returncode == 0, again.stderr
    assert "(assumed: sessions read from files)" in again.stdout
    reread = noise.load(path)
    assert reread.metrics["bytes/s"] == profile.metrics["bytes/s"]


def test_calibrate_bad_input_is_one_line(isolated: Path, tmp_path: Path):
    for args, expected in [
        (["calibrate", *ARGS, "--sessions", "7"], "at least 8 sessions"),
        (["calibrate", *ARGS, "--runs", "4"], "at least 5 runs"),
        (["calibrate", *ARGS, "--gap", "-1"], "--gap -1"),
        (["calibrate", *ARGS, "--gap", "nan"], "--gap nan"),
        (["calibrate"], "name a plan"),
        (["calibrate", "zero_null", "seqpacket"], "one plan at a time"),
    ]:
        p = hotloop(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert expected in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for f in (a, b):
        assert hotloop("run", *ARGS, "--out", str(f)).returncode == 0
    two = hotloop("calibrate", str(a), str(b))
    assert two.returncode == 2 and "2 sessions; a calibration needs at least 8" in two.stderr
    assert not noise.stored()


def test_a_bad_noise_profile_is_ignored_with_a_warning(isolated: Path, tmp_path: Path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for f in (a, b):
        assert hotloop("run", *ARGS, "--out", str(f)).returncode == 0
    from hotloop import results
    key = noise.key_of(results.read(a).header)
    stored = noise.path_for(key)
    stored.parent.mkdir(parents=True)
    for forged in ("{not json", json.dumps({"hotloop_noise": 2, "key": key, "sessions": 8,
                                            "metrics": {"bytes/s": {"session_var": -1}}}),
                   json.dumps([1, 2]), "\x00" * 10):
        stored.write_text(forged)
        p = hotloop("compare", str(a), str(b))
        assert p.returncode == 0, p.stderr
        assert "noise profile ignored" in p.stdout and str(stored) in p.stdout
        assert "session noise: not calibrated, assumed" in p.stdout    # the profile unused
    # degrees of freedom that are not its sessions less one would make it look better known
    stored.write_text(json.dumps({**json.loads(json.dumps({"hotloop_noise": 2, "key": key,
                      "sessions": 8, "metrics": {"bytes/s": {
                          "session_var": 1e-4, "sigma_within": 0.01, "median_var": 1e-5,
                          "runs": 6, "df": 1000000}}, "session_cost_s": 1,
                      "run_cost_s": 0.01}))}))
    p = hotloop("compare", str(a), str(b))
    assert "noise profile ignored" in p.stdout and "is not sessions - 1" in p.stdout
    # a profile others may write (or a symlink to one) would let them decide verdicts
    good_doc = {"hotloop_noise": 2, "key": key, "sessions": 8,
                "metrics": {"bytes/s": {"session_var": 1e-4, "sigma_within": 0.01,
                                        "median_var": 1e-5, "runs": 6, "df": 7}},
                "session_cost_s": 1, "run_cost_s": 0.01}
    stored.write_text(json.dumps(good_doc))
    assert "session noise: calibrated" in hotloop("compare", str(a), str(b)).stdout
    stored.chmod(0o666)
    p = hotloop("compare", str(a), str(b))
    assert "noise profile ignored" in p.stdout and "others may write" in p.stdout
    stored.chmod(0o600)
    real = tmp_path / "elsewhere.json"
    stored.rename(real)
    stored.symlink_to(real)
    p = hotloop("compare", str(a), str(b))
    assert "not a regular file" in p.stdout and "session noise: calibrated" not in p.stdout
    stored.unlink()
    # a valid profile of another host, given by hand, is not used either
    other = tmp_path / "other.json"
    good = {"hotloop_noise": 2, "key": {**key, "host": "elsewhere"}, "sessions": 8,
            "metrics": {"bytes/s": {"session_var": 1e-4, "sigma_within": 0.01,
                                    "median_var": 1e-5, "runs": 6, "df": 7}},
            "session_cost_s": 1, "run_cost_s": 0.01}
    other.write_text(json.dumps(good))
    p = hotloop("compare", str(a), str(b), "--noise", str(other))
    assert p.returncode == 0 and "measured for host 'elsewhere'" in p.stdout
    assert "session noise: calibrated" not in p.stdout
    # ...and for this host it is
    other.write_text(json.dumps({**good, "key": key}))
    p = hotloop("compare", str(a), str(b), "--noise", str(other))
    assert "session noise: calibrated" in p.stdout, p.stdout
    # a file named by hand that is none (a typo, a FIFO): bad usage, not a quiet fallback
    missing = hotloop("compare", str(a), str(b), "--noise", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip() == f"hotloop: --noise {tmp_path / 'nope.json'}: no such noise profile"
    import os
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)                     # reading it would block: never opened
    p = hotloop("compare", str(a), str(b), "--noise", str(fifo), timeout=60)
    assert p.returncode == 2 and "not a regular file" in p.stderr


def test_a_profile_saved_under_a_permissive_umask_is_still_trusted(isolated: Path):
    """umask 002 (Ubuntu's, Fedora's): the profile and its directories are made private
    anyway, or compare would refuse the calibration it just made."""
    import os
    old = os.umask(0o002)
    try:
        assert hotloop("calibrate", *ARGS, "--sessions", "8").returncode == 0
        a = isolated / "a.jsonl"
        b = isolated / "b.jsonl"
        for f in (a, b):
            assert hotloop("run", *ARGS, "--out", str(f)).returncode == 0
    finally:
        os.umask(old)
    (path, profile, why), = noise.stored()
    assert profile is not None and (path.stat().st_mode & 0o777) == 0o600
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    assert "session noise: calibrated" in hotloop("compare", str(a), str(b)).stdout
