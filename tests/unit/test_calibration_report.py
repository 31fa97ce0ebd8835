"""What `hotloop calibrate` prints of its metrics (issue #43, 20): every metric the sessions
recorded has a row or a line saying why it has none, and a perf counter, one value a
session, has no within-a-session spread to show."""
from __future__ import annotations

from pathlib import Path

import forge

from hotloop import results
from hotloop.analysis import noise
from hotloop.render import calibration


def test_a_metric_at_0_is_named_and_a_counter_has_no_within(tmp_path: Path) -> None:
    # runs of 2 us: hl_run's rusage rounds user_s to 0 s, sys_s not
    for i, f in enumerate(forge.OFFSETS):
        forge.zero_null(tmp_path / f"aa{i}.jsonl", round(2000 * f),
                        counters={"task-clock": 10.0 + i / 10})
    profile = noise.estimate([results.read(p) for p in sorted(tmp_path.glob("*.jsonl"))])
    assert "sys_s" in profile.metrics and "user_s" not in profile.metrics
    assert "user_s" in profile.skipped and "0" in profile.skipped["user_s"]
    text = calibration.report(profile, None)
    assert "  user_s: not calibrated (a value of 0 in some run" in text
    row = next(x for x in text.splitlines() if x.startswith("  perf:task-clock "))
    assert row.split()[1] == "-" and "CV 0.00%" not in row.split("CV")[0]
    sys_row = next(x for x in text.splitlines() if x.startswith("  sys_s "))
    assert sys_row.split()[1] == "CV"


def test_calibrate_says_the_sessions_a_symbols_change_needs_at_its_drift(tmp_path: Path) -> None:
    from hotloop.analysis.symstats import FOUND_5PCT_30PCT, sessions_for_symbol_change
    # quiet: the first count whose worst row reaches 80%; 12% drift: the 20% row's; 30%:
    # beyond the table
    k, found, row = sessions_for_symbol_change(0.0) or (0, 0.0, 0.0)
    assert row == 0.0 and found >= 0.8
    assert all(min(r[j] for r in FOUND_5PCT_30PCT.values()) < 0.8
               for j in FOUND_5PCT_30PCT[0.0] if j < k)
    assert (sessions_for_symbol_change(0.12) or (0, 0, 0))[2] == 0.20
    assert sessions_for_symbol_change(0.30) is None
    for i, f in enumerate(forge.OFFSETS):
        forge.zero_null(tmp_path / f"aa{i}.jsonl", round(forge.NS_512 * f),
                        counters={"task-clock": 10.0 * f})
    profile = noise.estimate([results.read(p) for p in sorted(tmp_path.glob("*.jsonl"))])
    text = calibration.report(profile, None)
    assert "a symbol of 5% of the samples 30% costlier" in text
    assert f"  {k} sessions a side at 5,000 samples a session found it in" in text
