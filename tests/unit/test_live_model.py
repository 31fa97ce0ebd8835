"""The console's live model of a run (console.live), on fixed values: what it says before the
session says it."""
from __future__ import annotations

from hotloop.console.live import LiveRun
from hotloop.stats import UNTIL_CI_MIN_RUNS


def test_the_console_says_until_ci_is_reached_only_where_the_session_would_stop():
    # six identical runs are known exactly, but a session stops on no fewer than 10
    live = LiveRun("p", 100, 0, "ns/op", False, False, until_ci=3.0)
    for _ in range(6):
        live.add(100.0)
    assert live.precision_pct() == 0 and live.runs_to_target() == UNTIL_CI_MIN_RUNS - 6
    for _ in range(UNTIL_CI_MIN_RUNS - 6):
        live.add(100.0)
    assert live.runs_to_target() == 0
