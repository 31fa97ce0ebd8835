"""A verdict in words: what analysis.compare found (a Verdict and its numbers), said for the
metric's kind.  Every format and the console word verdicts here, so they say the same.

A speed gets "faster"/"slower" (the primary metric, ns/op, cycles/op, latencies), a resource a
run consumes "better"/"worse" (CPU seconds, perf counters), a value nobody declared a direction
for "higher"/"lower".  When the interval holds 0: "within session noise (±X%)" (X: the change
that noise alone can make).  A direction word is a call, and only a call: one session a side
with nothing that measured how much sessions differ gets "no verdict: one session a side:
cannot tell +X% from a session's offset; ..." (never "faster?": read as a weak yes), unless
the change is beyond any session's plausible offset: "faster: beyond any session's offset
(up to 25% a session)", the bound it beat.  A row not called once corrected for the number
of sides says so, with no direction either.
One boot a side, a reboot between and no calibration across reboots: "cannot call: one session a
side, from different boots" (or "one boot a side"): nothing measured what a reboot moves.
"""
from __future__ import annotations

from hotloop.analysis.comparison import MetricDelta, Test, Verdict
from hotloop.analysis.metrics import RESOURCE, SPEED, UNDIRECTED
from hotloop.analysis.significance import MIN_PROCESSES, MIN_ROUNDS
from hotloop.analysis.symbols import SAME_MARGIN_PCT
from hotloop.render.units import figure, pct, too_noisy
from hotloop.stats import MIN_RUNS

WORDS = {SPEED: ("faster", "slower"), RESOURCE: ("better", "worse"),
         UNDIRECTED: ("higher", "lower")}
FIXED = {Verdict.UP: "higher", Verdict.DOWN: "lower",
         Verdict.TOO_FEW_RUNS: f"too few runs (n<{MIN_RUNS})",
         Verdict.TOO_FEW_ROUNDS: f"too few rounds (n<{MIN_ROUNDS})",
         Verdict.TOO_FEW_PROCESSES: f"too few processes (n<{MIN_PROCESSES})",
         Verdict.NO_TEST: "one value each, no test"}


CHECKS = {"pooled": "calibration checked by the sessions",
          "sitting": "calibration unchecked: from their boot and sitting",
          "unchecked": "calibration unchecked"}


def word(m: MetricDelta, short: bool = False) -> str:
    """The verdict of one row; `short` for a narrow table ("assumed noise ±2.5%").  A
    verdict that rests on a calibration says whether the data could check it."""
    said = _word(m, short)
    check = m.test.noise_check
    if short or not check or "calibrated" not in (m.test.noise_source or "") \
            or not (m.test.verdict.called or m.test.verdict is Verdict.WITHIN_NOISE):
        return said
    return f"{said} ({CHECKS.get(check['action'], check['action'])})"


def _word(m: MetricDelta, short: bool = False) -> str:
    v, t = m.test.verdict, m.test
    if v.called and t.noise_source in ("assumed", "unmeasured"):
        return beyond_offsets(m, short)
    if v in (Verdict.GOOD, Verdict.BAD):
        good, bad = WORDS.get(m.kind, WORDS[SPEED])
        return good if v is Verdict.GOOD else bad
    if v in (Verdict.WITHIN_NOISE, Verdict.NO_CHANGE):
        return same_or_cant_tell(t, short)
    if v is Verdict.ONE_A_SIDE:
        return one_a_side(m, short)
    if v is Verdict.TOO_NOISY:
        return _too_noisy(t, short)
    if v is Verdict.ACROSS_BOOTS:
        return across_boots(m, short)
    if v is Verdict.NOT_AFTER_CORRECTION:
        p = f", p adjusted {t.p_adjusted:.3f}" if t.p_adjusted is not None else ""
        return (f"not significant for {t.family} sides" if short else
                f"not significant once corrected for {t.family} sides (Holm{p})")
    return FIXED[v]


def same_or_cant_tell(t: Test, short: bool = False) -> str:
    """An interval that holds 0: "same within ±5%" where it lies inside the margin (an
    equivalence test on the 95% interval), else "can't tell: ±X%", X its half width, and in
    full what made it that wide.  "within noise" beside ±40% read as "no change"."""
    lo, hi = t.ci_low, t.ci_high
    if lo is not None and hi is not None and lo >= -SAME_MARGIN_PCT and hi <= SAME_MARGIN_PCT:
        return f"same ±{SAME_MARGIN_PCT:g}%" if short else f"same within ±{SAME_MARGIN_PCT:g}%"
    half = t.half_width_pct if t.half_width_pct is not None else \
        (hi - lo) / 2 if lo is not None and hi is not None else None
    width = f"±{figure(half)}%" if half is not None else "±?"
    if short:
        return f"can't tell {width}"
    what = {"assumed": "assumed session noise", "pairs": "the rounds' spread",
            "calibrated": "calibrated session noise"}.get(t.noise_source or "",
                                                          "session noise")
    return f"can't tell: {width} ({what})"


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


def _way(m: MetricDelta) -> str:
    v = m.test.verdict
    if v in (Verdict.UP, Verdict.DOWN):
        return FIXED[v]
    good, bad = WORDS.get(m.kind, WORDS[SPEED])
    return good if v is Verdict.GOOD else bad


def beyond_offsets(m: MetricDelta, short: bool = False) -> str:
    """A call where nothing measured the sessions' noise: the change is beyond what the
    largest plausible offset of a session (a boot, across a reboot) could make, and the
    words say which bound it beat."""
    t = m.test
    unit = "a boot" if t.noise_source == "unmeasured" else "a session"
    bound = f"{figure(t.noise_pct)}%" if t.noise_pct is not None else "?"
    if short:
        return f"{_way(m)} (beyond offsets)"
    return f"{_way(m)}: beyond any {unit.split()[1]}'s offset (up to {bound} {unit})"


def one_a_side(m: MetricDelta, short: bool = False) -> str:
    """One session a side, nothing that measured how much sessions differ: no verdict, and
    no direction (users read "faster?" as a weak yes), with the change it cannot tell."""
    change = pct(m.test.change_pct) if m.test.change_pct is not None else "the change"
    return "no verdict: 1 a side" if short else \
        (f"no verdict: one session a side: cannot tell {change} from a session's offset; "
         f"run 2+ sessions a side or calibrate")


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
