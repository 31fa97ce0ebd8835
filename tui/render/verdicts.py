"""A verdict in words: what analysis.compare found (a Verdict and its numbers), said for the
metric's kind.  Every format and the console word verdicts here, so they say the same.

A speed gets "faster"/"slower" (the primary metric, ns/op, cycles/op, latencies), a resource a
run consumes "better"/"worse" (CPU seconds, perf counters), a value nobody declared a direction
for "higher"/"lower".  When the interval holds 0: "within session noise (±X%)" (X: the change
that noise alone can make), "within assumed noise (±X%)" when nothing measured that noise, and
a change beyond an assumed noise "faster? beyond assumed session noise (X%); calibrate to
call": a direction to look at, not a call.
One boot a side, a reboot between and no calibration across reboots: "cannot call: one session a
side, from different boots" (or "one boot a side"): nothing measured what a reboot moves.
"""
from __future__ import annotations

from hotloop.analysis.comparison import MetricDelta, Test, Verdict
from hotloop.analysis.judge import direction
from hotloop.analysis.metrics import RESOURCE, SPEED, UNDIRECTED
from hotloop.analysis.significance import MIN_PROCESSES, MIN_ROUNDS
from hotloop.render.units import figure, too_noisy
from hotloop.stats import MIN_RUNS

WORDS = {SPEED: ("faster", "slower"), RESOURCE: ("better", "worse"),
         UNDIRECTED: ("higher", "lower")}
FIXED = {Verdict.UP: "higher", Verdict.DOWN: "lower",
         Verdict.NO_CHANGE: "no significant change",
         Verdict.TOO_FEW_RUNS: f"too few runs (n<{MIN_RUNS})",
         Verdict.TOO_FEW_ROUNDS: f"too few rounds (n<{MIN_ROUNDS})",
         Verdict.TOO_FEW_PROCESSES: f"too few processes (n<{MIN_PROCESSES})",
         Verdict.NO_TEST: "one value each, no test"}


def word(m: MetricDelta, short: bool = False) -> str:
    """The verdict of one row; `short` for a narrow table ("assumed noise ±2.5%")."""
    v, t = m.test.verdict, m.test
    if v in (Verdict.GOOD, Verdict.BAD):
        good, bad = WORDS.get(m.kind, WORDS[SPEED])
        return good if v is Verdict.GOOD else bad
    if v is Verdict.WITHIN_NOISE:
        kind = "assumed" if t.noise_source == "assumed" else "session"
        width = f"±{t.half_width_pct:.1f}%" if t.half_width_pct is not None else "±?"
        return f"{kind} noise {width}" if short else f"within {kind} noise ({width})"
    if v is Verdict.BEYOND_ASSUMED:
        return beyond_assumed(m, short)
    if v is Verdict.TOO_NOISY:
        return _too_noisy(t, short)
    if v is Verdict.ACROSS_BOOTS:
        return across_boots(m, short)
    if v is Verdict.NOT_AFTER_CORRECTION:
        p = f", p adjusted {t.p_adjusted:.3f}" if t.p_adjusted is not None else ""
        return (f"not significant for {t.family} sides" if short else
                f"not significant once corrected for {t.family} sides (Holm{p})")
    return FIXED[v]


def _too_noisy(t: Test, short: bool) -> str:
    """Too noisy, naming what made the interval wide: the sessions' offsets, where they were
    measured or calibrated and outweigh the runs' part of a session's centre (a perf counter,
    one value a session, has no runs to spread: "runs spread 0%" said the opposite), else the
    runs' spread (which an assumed session noise is made of)."""
    source = t.noise_source or ""
    if t.noise_pct is not None and source not in ("", "assumed", "unmeasured") \
            and t.noise_pct >= (t.runs_pct or 0.0):
        return too_noisy(short=short, sessions_pct=t.noise_pct,
                         calibrated=source == "calibrated")
    return too_noisy(t.spread_pct, short)


def beyond_assumed(m: MetricDelta, short: bool = False) -> str:
    """A change beyond an assumed session noise: its direction, asked, not called."""
    t = m.test
    up = direction(t)
    if m.higher_is_better is None:
        way = "higher" if up else "lower"
    else:
        good, bad = WORDS.get(m.kind, WORDS[SPEED])
        way = good if up == m.higher_is_better else bad
    # The noise assumed, not the interval's width: a log interval's width grows with the
    # change (+756% had ±962%), and the assumption is what the reader has to weigh.
    noise = f"{figure(t.noise_pct)}%" if t.noise_pct is not None else "?"
    return f"{way}? assumed noise {noise}" if short else \
        f"{way}? beyond assumed session noise ({noise}); calibrate to call"


def across_boots(m: MetricDelta, short: bool = False) -> str:
    """No call: one boot a side, a reboot (or, for files that do not say, maybe one) between,
    and nothing measured how much a reboot moves the metric."""
    t = m.test
    if t.sessions_baseline == 1 and t.sessions_new == 1:
        if t.boots == "boots unknown":
            return "cannot call: boots unknown" if short else \
                "cannot call: one session a side, boots unknown"
        return "cannot call: 1 a side, 2 boots" if short else \
            "cannot call: one session a side, from different boots"
    return "cannot call: 1 boot a side" if short else \
        "cannot call: one boot a side, a reboot between"


def tone(m: MetricDelta) -> str | None:
    """"good" or "bad" for a called change with a good way, else None (for colour, bold)."""
    return {Verdict.GOOD: "good", Verdict.BAD: "bad"}.get(m.test.verdict)
