"""Judging one metric: its test (the method that fits how the sessions were taken,
analysis.significance) and the Verdict on it, the primary metric's correction for the number
of sides, and the gate of compare --fail-on.  Why each verdict is what it is: analysis.compare.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from hotloop.analysis import noise as noise_mod
from hotloop.analysis import series_pairs, significance
from hotloop.analysis.boots import Boots
from hotloop.analysis.comparison import Comparison, MetricDelta, Test, Verdict
from hotloop.analysis.metrics import SPEED, MetricValues
from hotloop.analysis.significance import MIN_PROCESSES, MIN_ROUNDS, Outcome
from hotloop.errors import HotloopError
from hotloop.stats import MIN_RUNS, TOO_NOISY_PCT


def direction(o: Outcome | Test) -> bool | None:
    """Up (True) or down of a change whose interval clears 0, as its interval says (a call,
    or a direction on an assumed noise): the medians of a paired test are not its estimate,
    and may even lie the other way round.  None: the interval does not clear 0, so no
    direction is shown."""
    if o.ci_low is not None and o.ci_high is not None:
        return True if o.ci_low > 0 else False if o.ci_high < 0 else None
    if o.change_pct is not None and o.change_pct != 0:
        return o.change_pct > 0
    return None if o.new == o.baseline else o.new > o.baseline


def _verdict(o: Outcome, higher_is_better: bool | None, too_few: Verdict | None) -> Verdict:
    if too_few:
        return too_few
    if o.method == "exact":
        return Verdict.NO_CHANGE
    up = direction(o) if o.significant else None
    # Nothing measured the sessions' (or boots') noise: the interval is the offset bound's,
    # and only a change beyond it is called; within it, no verdict and no direction.
    if up is None and o.noise_source == "unmeasured":
        return Verdict.ACROSS_BOOTS
    if up is None and o.noise_source == "assumed":
        return Verdict.ONE_A_SIDE
    if up is not None:
        if higher_is_better is None:
            return Verdict.UP if up else Verdict.DOWN
        return Verdict.GOOD if up == higher_is_better else Verdict.BAD
    if o.method in ("sessions", "pairs") and o.half_width_pct is not None:
        return Verdict.TOO_NOISY if o.half_width_pct > TOO_NOISY_PCT else Verdict.WITHIN_NOISE
    if o.method in ("sessions", "pairs") and o.ci_low is not None and o.half_width_pct is None:
        return Verdict.TOO_NOISY        # an interval too wide to measure (overflow)
    return Verdict.NO_CHANGE


def _test(o: Outcome, n_base: int, n_new: int, k_base: int, k_new: int, verdict: Verdict,
          calibrated: noise_mod.MetricNoise | None) -> Test:
    used_calibration = o.noise_source is not None and "calibrated" in o.noise_source
    # A paired change comes from the rounds, not from the two medians: its diff says the same
    # (in the metric's unit), so diff and change never disagree in sign.
    diff = o.baseline * o.change_pct / 100 if o.method == "paired" and o.change_pct is not None \
        else o.new - o.baseline
    # a series' pairs: a t interval on the pairs (analysis.series_pairs)
    df = o.df if o.df is not None else o.rounds - 1 if o.method == "pairs" else None
    # Too few to judge: an interval and p beside "too few runs" told another story.
    few = verdict in (Verdict.TOO_FEW_RUNS, Verdict.TOO_FEW_ROUNDS, Verdict.TOO_FEW_PROCESSES)
    lo, hi, p = (None, None, None) if few else (o.ci_low, o.ci_high, o.p_value)
    return Test(n_base, n_new, o.baseline, o.new, diff, o.change_pct,
                lo, hi, p, verdict.called, verdict, o.method, k_base,
                k_new,
                100 * calibrated.sigma_between if calibrated and used_calibration else None,
                o.noise_pct, o.noise_source, None if few else o.half_width_pct, spread_pct=o.spread_pct,
                runs_pct=o.runs_pct, noise_check=o.noise_check, df=df, log=o.log)


def correct_sides(tests: Sequence[Test]) -> list[Test]:
    """The primary metric's tests of every later side against the baseline, corrected
    together (Holm): with four sides each at alpha 0.05, an A/A family was called 14-16% of
    the time.  A test called alone but not after the correction becomes NOT_AFTER_CORRECTION.
    Each corrected row's interval becomes the one that matches its adjusted p (it excludes 0
    exactly when the row is called: a row not called kept an interval clear of 0 before);
    its own stays in ci_low_alone, ci_high_alone."""
    tested = [i for i, t in enumerate(tests) if t.p_value is not None
              and t.verdict not in (Verdict.TOO_FEW_RUNS, Verdict.TOO_FEW_ROUNDS,
                                    Verdict.TOO_FEW_PROCESSES, Verdict.NO_TEST)]
    if len(tested) < 2:
        return [dataclasses.replace(t, p_adjusted=t.p_value) for t in tests]
    adjusted = significance.holm([tests[i].p_value or 0.0 for i in tested])
    out = list(tests)
    for i, p in zip(tested, adjusted):
        t = tests[i]
        lost = t.verdict.called and not p < significance.ALPHA
        lo, hi = t.ci_low, t.ci_high
        if lo is not None and hi is not None and t.df is not None and t.p_value \
                and math.isfinite(lo) and math.isfinite(hi) and hi > lo:
            lo, hi = significance.adjusted_interval(lo, hi, t.log, t.df, p / t.p_value)
        out[i] = dataclasses.replace(
            t, p_adjusted=p, correction="holm", family=len(tested),
            significant=t.significant and not lost,
            verdict=Verdict.NOT_AFTER_CORRECTION if lost else t.verdict,
            ci_low=lo, ci_high=hi, ci_low_alone=t.ci_low, ci_high_alone=t.ci_high,
            half_width_pct=significance.half_width(lo, hi) if lo != t.ci_low else t.half_width_pct)
    return out


def test_metric(base: Sequence[MetricValues], new: Sequence[MetricValues], *,
                paired: Sequence[int] | None = None,
                calibrated: noise_mod.MetricNoise | None = None,
                boots: Boots | None = None,
                pairs: Sequence[tuple[int, int]] | None = None) -> Test:
    """One metric, each side a list of sessions' series.  `paired`: the two sides are one
    interleaved batch's variants, whose worker processes ran these many rounds each.
    `boots`: the sessions' boots; across boots the boot is the replicate, and one boot a side
    with no calibration is ACROSS_BOOTS (None: sessions are replicates, as within one boot).
    `pairs`: the two sides are kernels of one series, these sessions side by side; each pair's
    difference is the replicate, whether its two sessions shared a boot (a series here) or
    each had its own (a series of VMs), so the boots change nothing there."""
    t = _test_metric(base, new, paired, calibrated, boots, pairs)
    if boots is None or t.method in ("paired", "pairs"):
        return t
    kb, kn = boots.count()
    return dataclasses.replace(t, boots=boots.relation, boots_baseline=kb, boots_new=kn)


def _test_metric(base: Sequence[MetricValues], new: Sequence[MetricValues],
                 paired: Sequence[int] | None, calibrated: noise_mod.MetricNoise | None,
                 boots: Boots | None, pairs: Sequence[tuple[int, int]] | None) -> Test:
    units = boots.units() if boots is not None and boots.across else None
    assume = boots is None or not boots.across
    b0 = base[0]
    hib = b0.higher_is_better
    kb, kn = len(base), len(new)
    if pairs:                           # a series: analysis.series_pairs
        pb = [base[i].values for i, _ in pairs]
        pn = [new[j].values for _, j in pairs]
        o = series_pairs.pairs_test(pb, pn)
        short = min(len(v) for v in [*pb, *pn]) < MIN_RUNS \
            and not (b0.per_session or new[0].per_session)
        return _test(o, sum(map(len, pb)), sum(map(len, pn)), len(pairs), len(pairs),
                     _verdict(o, hib, Verdict.TOO_FEW_RUNS if short else None), None)
    if b0.per_session or new[0].per_session:
        # One value per session: the sessions are the samples.
        bv = [[s.values[0]] for s in base]
        nv = [[s.values[0]] for s in new]
        ub, un = (len(units[0]), len(units[1])) if units else (kb, kn)
        if ub + un - 2 <= 0 and calibrated is None:
            mb, mn = bv[0][0], nv[0][0]
            change = (mn / mb - 1.0) * 100.0 if mb else (0.0 if mn == mb else None)
            return Test(kb, kn, mb, mn, mn - mb, change, None, None, None, False,
                        Verdict.NO_TEST, "none", kb, kn)
        o = significance.sessions_test(bv, nv, calibrated=calibrated, units=units)
        return _test(o, kb, kn, kb, kn, _verdict(o, hib, None), calibrated)
    nb = sum(len(s.values) for s in base)
    nn = sum(len(s.values) for s in new)
    if paired is not None:
        o = significance.paired_test(base[0].values, new[0].values, paired)
        too_few = None if o.method == "exact" else Verdict.TOO_FEW_ROUNDS \
            if o.rounds < MIN_ROUNDS else Verdict.TOO_FEW_PROCESSES \
            if o.processes < MIN_PROCESSES else None
        return _test(o, nb, nn, kb, kn, _verdict(o, hib, too_few), None)
    o = significance.sessions_test([s.values for s in base], [s.values for s in new],
                                   calibrated=calibrated, units=units, assume=assume)
    short = min(len(s.values) for s in [*base, *new]) < MIN_RUNS
    return _test(o, nb, nn, kb, kn,
                 _verdict(o, hib, Verdict.TOO_FEW_RUNS if short else None), calibrated)


def compare_samples(base: Sequence[float], new: Sequence[float], *,
                    higher_is_better: bool | None = True,
                    kind: str = SPEED, paired: Sequence[int] | None = None,
                    calibrated: noise_mod.MetricNoise | None = None) -> Test:
    """Two samples of one session each (synthetic data, benchmarks): the Test compare gives."""
    def one(values: Sequence[float]) -> MetricValues:
        return MetricValues("value", "", higher_is_better, kind, list(values))
    return test_metric([one(base)], [one(new)], paired=paired, calibrated=calibrated)


GATES = ("worse", "better", "change")


def unjudged(comp: Comparison) -> list[MetricDelta]:
    """The primary-metric rows the gate cannot judge (no verdict: too noisy, too few runs,
    one session a side with nothing that measured its noise, one boot a side across a
    reboot): compare --fail-on exits 4 on them unless asked to pass them."""
    return [m for p in comp.pairs for m in p.metrics
            if m.primary and not m.test.verdict.judged]


def gate(comp: Comparison, fail_on: str, threshold_pct: float = 0.0) -> list[MetricDelta]:
    """The primary-metric rows that fail `compare --fail-on`: called the way asked (after the
    correction for the number of sides: a row's verdict is already corrected), and with a
    change of at least `threshold_pct` either way.  Only the primary metric gates: the other
    rows are exploratory, each with its own 5% of false positives."""
    if fail_on not in GATES:
        raise HotloopError(f"--fail-on {fail_on}: one of {', '.join(GATES)}")
    want = {"worse": (Verdict.BAD,), "better": (Verdict.GOOD,),
            "change": (Verdict.GOOD, Verdict.BAD, Verdict.UP, Verdict.DOWN)}[fail_on]
    return [m for p in comp.pairs for m in p.metrics
            if m.primary and m.test.verdict in want
            and m.test.change_pct is not None and abs(m.test.change_pct) >= threshold_pct]

