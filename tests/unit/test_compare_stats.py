"""compare's statistics on synthetic samples: directions, ties, false positives at alpha, noise."""
from __future__ import annotations

import pytest

from hotloop.analysis import judge, metrics
from hotloop.analysis.comparison import MetricDelta, Verdict
from hotloop.analysis.noise import MetricNoise
from hotloop.analysis.significance import Outcome
from hotloop.render import verdicts

# A calibration of 8 sessions, 1% apart: one session a side is judged on it (without one, a
# change beyond the assumed noise gets no verdict, ONE_A_SIDE).
CAL = MetricNoise(session_var=1e-4, median_var=1e-5, sigma_within=0.01, runs=30, df=7)

# --------------------------------------------------------------------------- sessions as sides


def test_synthetic_lower_is_better_and_resource_wording():
    """Synthetic samples (pure statistics): a drop in a lower-is-better metric is good."""
    base = [100.0, 101, 99, 100.5, 99.5, 100.2, 100.1]
    less = [v * 0.9 for v in base]
    t = judge.compare_samples(base, less, higher_is_better=False, calibrated=CAL)
    assert t.change_pct == pytest.approx(-10) and t.significant and t.verdict is Verdict.GOOD
    assert t.ci_high < 0
    assert judge.compare_samples(base, less, higher_is_better=True,
                                 calibrated=CAL).verdict is Verdict.BAD
    assert judge.compare_samples(base, less, higher_is_better=None,
                                 calibrated=CAL).verdict is Verdict.DOWN
    kinds = ((False, metrics.SPEED), (True, metrics.SPEED), (False, metrics.RESOURCE),
             (True, metrics.RESOURCE), (None, metrics.UNDIRECTED))
    worded = [verdicts.word(MetricDelta("m", "", hib, judge.compare_samples(
                  base, less, higher_is_better=hib, kind=kind, calibrated=CAL), kind))
              for hib, kind in kinds]
    # one session a side: the data cannot check the calibration, and the verdict says so
    assert worded == [f"{w} (calibration unchecked)"
                      for w in ("faster", "slower", "better", "worse", "lower")]
    # not calibrated, one session a side: no verdict and no direction word, whatever the kind
    asked = {verdicts.word(MetricDelta("m", "", hib, judge.compare_samples(
                 base, less, higher_is_better=hib, kind=kind), kind))
             for hib, kind in kinds}
    assert len(asked) == 1 and asked.pop().startswith(
        "no verdict: one session a side: cannot tell -")
    assert metrics.extra_kind("user_s")[1:] == (False, metrics.RESOURCE)
    assert metrics.extra_kind("lat_p99_ns")[1:] == (False, metrics.SPEED)
    # same data, same interval: nothing random in the statistics
    assert judge.compare_samples(base, less) == judge.compare_samples(base, less)


def outcome(**kw) -> Outcome:
    return Outcome(**{"method": "paired", "log": True, "baseline": 100.0, "new": 99.0,
                      "change_pct": 2.30, "ci_low": 0.40, "ci_high": 4.23, "p_value": 0.02,
                      "significant": True, **kw})


@pytest.mark.parametrize("kw, verdict, said", [
    # a paired estimate whose medians lie the other way: the interval decides (+2.3% ns/op)
    ({}, Verdict.BAD, "slower"),
    ({"method": "sessions"}, Verdict.BAD, "slower"),
    ({"change_pct": -2.3, "ci_low": -4.23, "ci_high": -0.4, "new": 101.0}, Verdict.GOOD,
     "faster"),
    # "significant" with an interval that holds 0 is no direction at all; inside ±5% it is
    # the same, wider it cannot tell (the symbol rows' three words)
    ({"ci_low": -0.1}, Verdict.NO_CHANGE, "same within ±5%"),
    ({"ci_low": -0.1, "method": "sessions", "half_width_pct": 2.2}, Verdict.WITHIN_NOISE,
     "same within ±5%"),
    ({"significant": False, "method": "sessions", "half_width_pct": 2.2}, Verdict.WITHIN_NOISE,
     "same within ±5%"),
    ({"method": "exact"}, Verdict.NO_CHANGE, "same within ±5%"),
    ({"ci_low": -8.0, "ci_high": 12.6, "method": "sessions", "half_width_pct": 10.3,
      "significant": False}, Verdict.WITHIN_NOISE, "can't tell: ±10% (session noise)"),
    ({"ci_low": -5.5, "ci_high": 4.0}, Verdict.NO_CHANGE, "can't tell: ±4.8% (session noise)"),
])
def test_the_verdict_follows_the_interval_in_every_mode(kw, verdict, said):
    # ns/op: lower is better, so a change up is worse
    assert judge._verdict(outcome(**kw), False, None) is verdict
    t = judge._test(outcome(**kw), 10, 10, 1, 1, verdict, None)
    assert t.significant == verdict.called
    assert verdicts.word(MetricDelta("ns/op", "ns/op", False, t, metrics.SPEED)) == said


def test_synthetic_zero_baseline_and_ties():
    """Synthetic: CPU times of 0 s (no % change defined) and all-equal samples do not crash."""
    zeros = [0.0] * 6
    t = judge.compare_samples(zeros, zeros, higher_is_better=False)
    assert t.change_pct == 0.0 and not t.significant and t.p_value == pytest.approx(1.0)
    t = judge.compare_samples(zeros, [0.004] * 6, higher_is_better=False, kind=metrics.RESOURCE,
                              calibrated=CAL)
    assert t.change_pct is None and t.ci_low is None and t.verdict is Verdict.BAD
    # not calibrated: from nothing to 4 ms is beyond any offset of a quarter of the larger
    # centre, though there is no % to give it
    t = judge.compare_samples(zeros, [0.004] * 6, higher_is_better=False, kind=metrics.RESOURCE)
    assert t.verdict is Verdict.BAD and t.noise_source == "assumed"
    assert verdicts.word(MetricDelta("user_s", "s", False, t, metrics.RESOURCE)) == (
        "worse: beyond any session's offset (up to 25% a session)")


def test_synthetic_a_a_false_positives_stay_at_alpha():
    """Synthetic sessions (pure statistics) with 2.5% session noise and 2% within a session:
    the old test on runs called most A/A pairs significant; sessions as replicates call about
    5%, whether the noise comes from the sessions, a calibration or the assumed value."""
    import numpy as np

    from hotloop.analysis import significance as sg
    from hotloop.analysis.noise import metric_noise
    rng = np.random.default_rng(7)

    def session(effect: float = 0.0, n: int = 30) -> np.ndarray:
        return np.exp(rng.normal(rng.normal(0, 0.025) + np.log1p(effect), 0.02, n))

    def calibration() -> MetricNoise:
        return metric_noise([session() for _ in range(8)])

    trials = 300
    for k, calibrated in ((1, True), (3, False), (3, True), (5, False)):
        hits = sum(sg.sessions_test([session() for _ in range(k)],
                                    [session() for _ in range(k)],
                                    calibrated=calibration() if calibrated else None
                                    ).significant for _ in range(trials))
        assert hits / trials <= 0.08, (k, calibrated, hits)
    # ...and a 10% change is still found with 5 sessions a side
    found = sum(sg.sessions_test([session() for _ in range(5)],
                                 [session(0.10) for _ in range(5)]).significant
                for _ in range(100))
    assert found >= 80
    # interleaved rounds sharing a drift, 8 rounds in each of 5 worker processes with an
    # offset of their own: the paired test keeps alpha and finds 3%
    drift = lambda: np.cumsum(rng.normal(0, 0.01, 40))
    own = lambda: np.repeat(rng.normal(0, 0.004, 5), 8)
    blocks = [8] * 5

    def variant(d: np.ndarray, effect: float = 0.0) -> np.ndarray:
        return np.exp(d + own() + np.log1p(effect) + rng.normal(0, 0.02, 40))
    aa = 0
    for _ in range(trials):
        d = drift()
        aa += sg.paired_test(variant(d), variant(d), blocks).significant
    assert aa / trials <= 0.08
    hit = 0
    for _ in range(100):
        d = drift()
        hit += sg.paired_test(variant(d), variant(d, 0.03), blocks).significant
    assert hit >= 80
    # one process a variant: no verdict, whatever the rounds say
    d = drift()
    assert not sg.paired_test(variant(d), variant(d, 0.5), [40]).significant


def test_synthetic_offset_bound_grows_with_the_runs_own_spread():
    """Synthetic (pure statistics): nothing measured the session noise, so the interval is
    the largest plausible offset's: 25% for steady runs, twice the within-session spread
    for runs noisier than 12.5%."""
    import numpy as np

    from hotloop.analysis import significance as sg
    rng = np.random.default_rng(5)
    steady = [np.exp(rng.normal(0, 0.005, 30)) for _ in range(2)]
    noisy = [np.exp(rng.normal(0, 0.15, 30)) for _ in range(2)]
    assert sg.sessions_test([steady[0]], [steady[1]]).noise_pct == pytest.approx(25.0)
    o = sg.sessions_test([noisy[0]], [noisy[1] * 1.3])
    assert o.noise_source == "assumed" and o.noise_pct == pytest.approx(30, rel=0.2)
    assert not o.significant                # +30% is within what such sessions may differ by


def test_synthetic_bimodal_runs_with_a_calibration_keep_alpha():
    """Synthetic: 70/30 bimodal runs (modes 12% apart), 1.5% session noise, one session a
    side, calibrated from 8 sessions.  Estimating each session's own median error here is
    hopeless at 30 runs; the verdict uses the measured spread of session medians instead."""
    import numpy as np

    from hotloop.analysis import significance as sg
    from hotloop.analysis.noise import metric_noise
    rng = np.random.default_rng(11)

    def session(n: int = 30) -> np.ndarray:
        high = rng.random(n) < 0.3
        return np.exp(rng.normal(rng.normal(0, 0.015), 0.01, n) + np.log(1.12) * high)
    trials = 400
    hits = sum(sg.sessions_test([session()], [session()],
                                calibrated=metric_noise([session() for _ in range(8)])
                                ).significant for _ in range(trials))
    assert hits / trials <= 0.08, hits


def test_synthetic_zero_centres_and_ties_never_crash_or_cry_wolf():
    """Synthetic: a CPU time that is 0 or one 4 ms tick: no % change to speak of at 0, and
    an A/A pair of such sessions is not called."""
    import numpy as np
    rng = np.random.default_rng(2)
    zeros = [0.0] * 8
    t = judge.compare_samples(zeros, [0.0] * 7 + [0.004], higher_is_better=False,
                            kind=metrics.RESOURCE)
    assert not t.significant and t.verdict is not Verdict.BAD
    called = 0
    for _ in range(100):
        a = (rng.random(20) < 0.5) * 0.004
        b = (rng.random(20) < 0.5) * 0.004
        called += judge.compare_samples(a.tolist(), b.tolist(), higher_is_better=False,
                                      kind=metrics.RESOURCE).significant
    assert called <= 8


def test_synthetic_paired_change_is_inside_its_interval_and_exact_zeros_stay_zero():
    import numpy as np

    from hotloop.analysis import significance as sg
    rng = np.random.default_rng(4)
    outside = 0
    for _ in range(200):
        drift = np.cumsum(rng.normal(0, 0.02, 40))
        o = sg.paired_test(np.exp(drift + rng.normal(0, 0.01, 40)),
                           np.exp(drift + rng.normal(0, 0.01, 40)), [8] * 5)
        outside += not o.ci_low <= o.change_pct <= o.ci_high
    assert outside == 0
    # ties: an interval end that is exactly 0 is 0, not 1e-62
    d = np.sort(np.array([0.0] * 6 + [0.01, 0.02, -0.01, 0.03]))
    values = {sg.walsh_quantile(d, k) for k in range(1, 56)}
    brute = sorted((d[i] + d[j]) / 2 for i in range(10) for j in range(i, 10))
    assert [sg.walsh_quantile(d, k) for k in range(1, 56)] == brute
    assert 0.0 in values


def test_header_differences_read_as_words():
    from hotloop.analysis.comparison import MetaDiff, meta_text
    assert meta_text(MetaDiff("perf", True, False)) == "perf on -> off"
    assert meta_text(MetaDiff("cpu.cpus", [0], [0, 1])) == "cpu.cpus [0] -> [0,1]"
    assert meta_text(MetaDiff("source_sha256", "a" * 64, "b" * 64)) == \
        f"source_sha256 {'a' * 12} -> {'b' * 12}"


def test_a_sessions_centre_is_its_median_on_either_scale():
    """With an even number of runs the median of the logs is not the log of the median: the
    baseline a table shows must not depend on whether the other side has a zero."""
    from hotloop.analysis.judge import compare_samples
    runs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    logged = compare_samples(runs, [2.0, 3.0, 4.0, 5.0, 6.0, 7.0])        # all above 0: logs
    linear = compare_samples(runs, [0.0, 3.0, 4.0, 5.0, 6.0, 7.0])        # a zero: linear
    assert logged.baseline == pytest.approx(3.5) and linear.baseline == pytest.approx(3.5)

