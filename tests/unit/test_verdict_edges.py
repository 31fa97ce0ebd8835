"""Verdicts at the edges (issue 23), on synthetic data: the regression gate, many sides,
unequal runs, thin or mismatched calibrations, copies, outliers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synthetic_results import side

from hotloop.cli import main
from hotloop.render.warning_words import words

# --------------------------------------------------------------------------- the gate

@pytest.fixture
def worse(tmp_path: Path) -> tuple[str, str]:
    """Three sessions a side, the new side's rate 10% lower: far beyond 1% of noise."""
    rng = np.random.default_rng(1)
    return (str(side(tmp_path / "stock", 3, rng)),
            str(side(tmp_path / "patched", 3, rng, change=-0.10, label="patched")))


def test_the_gate_fails_on_a_significant_change_the_way_it_was_asked(worse, capsys):
    base, new = worse
    assert main(["compare", base, new]) == 0
    assert main(["compare", base, new, "--fail-on", "worse"]) == 3
    err = capsys.readouterr().err
    assert "slower" in err and "--fail-on worse" in err and len(err.strip().splitlines()) == 1
    assert main(["compare", base, new, "--fail-on", "change"]) == 3
    assert main(["compare", base, new, "--fail-on", "better"]) == 0
    assert main(["compare", new, base, "--fail-on", "better"]) == 3
    assert main(["compare", new, base, "--fail-on", "worse"]) == 0
    # a threshold above the change: the change is ignored; below it, it counts
    assert main(["compare", base, new, "--fail-on", "worse", "--threshold", "20"]) == 0
    assert main(["compare", base, new, "--fail-on", "worse", "--threshold", "5"]) == 3


def test_the_gate_passes_what_noise_explains(tmp_path: Path):
    rng = np.random.default_rng(2)
    base = side(tmp_path / "a", 3, rng)
    same = side(tmp_path / "b", 3, rng, label="patched")
    assert main(["compare", str(base), str(same), "--fail-on", "change"]) == 0


@pytest.mark.parametrize("args, expected", [
    (["--threshold", "5"], "--threshold needs --fail-on"),
    (["--fail-on", "worse", "--threshold", "-1"], "--threshold -1"),
    (["--fail-on", "worse", "--threshold", "nan"], "--threshold nan"),
])
def test_a_bad_gate_is_bad_usage(worse, capsys, args, expected):
    base, new = worse
    assert main(["compare", base, new, *args]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1
    assert main(["compare", base, new, "--fail-on", "sideways"]) == 2


# --------------------------------------------------------------------------- many sides

def test_holm_adjusts_p_values_step_down():
    from hotloop.analysis import significance as sg
    assert sg.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert sg.holm([0.2]) == [0.2] and sg.holm([]) == []
    assert sg.holm([0.6, 0.7]) == [1.0, 1.0]       # never above 1


def test_the_primary_metric_is_corrected_for_the_number_of_sides():
    """Synthetic: four later sides, one of them 1.2% slower, the rest A/A.  The raw test
    calls the 1.2% side (p < 0.05 but not < 0.05/4); after Holm for 4 sides it is no call,
    says why, and the gate does not fail on it."""
    from hotloop.analysis import comparison, judge
    from hotloop.analysis.comparison import Verdict
    from hotloop.analysis.significance import Outcome

    def test(p: float, lo: float, hi: float) -> comparison.Test:
        o = Outcome("sessions", True, 100.0, 100 + (lo + hi) / 2, (lo + hi) / 2, lo, hi, p,
                    lo > 0 or hi < 0, half_width_pct=(hi - lo) / 2, df=4)
        return judge._test(o, 30, 30, 3, 3, judge._verdict(o, False, None), None)
    t = test(0.03, 0.1, 2.3)
    assert t.verdict is Verdict.BAD                 # raw: called
    aa = test(0.6, -1.0, 1.5)
    fixed = judge.correct_sides([t, aa, aa, aa])
    assert [x.correction for x in fixed] == ["holm"] * 4
    assert fixed[0].p_adjusted == pytest.approx(min(1.0, 4 * t.p_value))
    assert fixed[0].verdict is Verdict.NOT_AFTER_CORRECTION and not fixed[0].significant
    # its interval is the adjusted one, which holds 0 as the corrected verdict says (its own,
    # clear of 0, is kept and labelled); so no direction can be read from it
    assert fixed[0].ci_low < 0 < fixed[0].ci_high
    assert (fixed[0].ci_low_alone, fixed[0].ci_high_alone) == (t.ci_low, t.ci_high)
    assert judge.direction(fixed[0]) is None
    assert fixed[1].ci_low < aa.ci_low and fixed[1].ci_high > aa.ci_high
    # one later side: nothing to correct for
    (alone,) = judge.correct_sides([t])
    assert alone.correction == "none" and alone.p_adjusted == t.p_value
    assert alone.verdict is Verdict.BAD and alone.ci_low == t.ci_low


def test_a_corrected_interval_excludes_0_exactly_when_the_adjusted_p_is_below_alpha():
    """Synthetic A/A families of 4 sides, 3 sessions each: every corrected row's interval
    and its adjusted p tell one story (an interval clear of 0 beside a corrected "not
    significant" was the issue)."""
    from hotloop.analysis import judge
    from hotloop.analysis.metrics import SPEED, MetricValues
    rng = np.random.default_rng(31)

    def sessions(effect: float = 0.0) -> list[MetricValues]:
        return [MetricValues("v", "", True, SPEED, list(np.exp(rng.normal(
            rng.normal(np.log1p(effect), 0.025), 0.02, 30)))) for _ in range(3)]
    seen = 0
    for _ in range(60):
        base = sessions()
        fixed = judge.correct_sides([judge.test_metric(base, sessions(e))
                                     for e in (0.0, 0.03, 0.0, -0.04)])
        for t in fixed:
            assert t.p_adjusted is not None and t.ci_low is not None and t.ci_high is not None
            clear = t.ci_low > 0 or t.ci_high < 0
            assert clear == (t.p_adjusted < 0.05) == t.significant, t
            seen += t.ci_low_alone is not None and (t.ci_low_alone > 0 or t.ci_high_alone < 0) \
                and not clear
    assert seen                         # rows whose own interval cleared 0: now adjusted


def test_many_sides_keep_the_family_wise_rate(tmp_path: Path):
    """Synthetic A/A, 4 later sides of 3 sessions each against one baseline: the raw tests
    call at least one side in about 15% of trials; corrected, at most 5% (+ simulation
    error)."""
    from hotloop.analysis import judge
    from hotloop.analysis.metrics import SPEED, MetricValues
    rng = np.random.default_rng(3)

    def sessions() -> list[MetricValues]:
        return [MetricValues("v", "", True, SPEED, list(np.exp(rng.normal(rng.normal(0, 0.025),
                                                                    0.02, 30))))
                for _ in range(3)]
    trials, raw, corrected = 300, 0, 0
    for _ in range(trials):
        base = sessions()
        tests = [judge.test_metric(base, sessions()) for _ in range(4)]
        raw += any(t.significant for t in tests)
        corrected += any(t.significant for t in judge.correct_sides(tests))
    assert raw / trials > 0.09, raw             # the problem is there...
    assert corrected / trials <= 0.07, corrected    # ...and gone


def test_secondary_rows_are_exploratory_in_every_format(tmp_path: Path):
    from hotloop.analysis import compare
    from hotloop.render import compare_formats
    rng = np.random.default_rng(4)
    sides = [str(side(tmp_path / n, 2, rng, label=n)) for n in ("a", "b", "c")]
    comp = compare.load_and_compare(sides)
    doc = __import__("json").loads(compare_formats.render(comp, "json"))
    rows = doc["comparisons"]
    primary = [r for r in rows if r["metric"] == "bytes/s"]
    other = [r for r in rows if r["metric"] != "bytes/s"]
    assert primary and other
    assert all(r["correction"] == "holm" and r["p_adjusted"] is not None
               and r["exploratory"] is False for r in primary)
    assert all(r["correction"] == "none" and r["p_adjusted"] is None and r["exploratory"]
               for r in other)
    csv_head = compare_formats.render(comp, "csv").splitlines()[0].split(",")
    assert {"p_adjusted", "correction", "exploratory"} <= set(csv_head)
    for fmt in ("text", "md", "org"):
        out = compare_formats.render(comp, fmt)
        assert "exploratory: ns/op" in out, fmt
        assert "Holm" in out, fmt


# --------------------------------------------------------------------------- calibrations

def _expected_ci_high(a, b, se: float, df: int) -> float:
    import math

    from scipy import stats as sps
    delta = math.log(np.median(b[0])) - math.log(np.median(a[0]))
    return math.expm1(delta + float(sps.t.ppf(0.975, df)) * se) * 100


def test_unequal_runs_combine_the_median_variance_per_session():
    """A calibration at 30 runs, one session of 10 runs against one of 20: the runs' part of
    each session's variance goes as 1/n_i (sum of 1/n_i), not as 1/mean(n)."""
    import math

    from hotloop.analysis import significance as sg
    from hotloop.analysis.noise import MetricNoise
    cal = MetricNoise(session_var=4e-4, median_var=3e-4, sigma_within=0.1, runs=30, df=7)
    rng = np.random.default_rng(6)
    a, b = [np.exp(rng.normal(0, 0.1, 10))], [np.exp(rng.normal(0, 0.1, 20))]
    o = sg.sessions_test(a, b, calibrated=cal)
    c = 3e-4 * 30                               # a run's share: median variance x runs
    se = math.sqrt(2 * 1e-4 + c * (1 / 10 + 1 / 20))
    assert o.ci_high == pytest.approx(_expected_ci_high(a, b, se, 7), rel=1e-9)


def test_a_calibration_is_not_shrunk_below_what_it_measured():
    """Calibrated at 30 runs, compared at 200: the runs' part measured at 30 is not divided
    down to 200 (it would rest on an estimate of the median variance with no degrees of
    freedom of its own); a session keeps the variance the calibration measured."""
    import math

    from hotloop.analysis import significance as sg
    from hotloop.analysis.noise import MetricNoise
    cal = MetricNoise(session_var=4e-4, median_var=3e-4, sigma_within=0.1, runs=30, df=7)
    assert cal.at(200) == pytest.approx(4e-4) and cal.at(10) == pytest.approx(1e-4 + 9e-4)
    rng = np.random.default_rng(8)
    a, b = [np.exp(rng.normal(0, 0.1, 200))], [np.exp(rng.normal(0, 0.1, 200))]
    o = sg.sessions_test(a, b, calibrated=cal)
    assert o.ci_high == pytest.approx(_expected_ci_high(a, b, math.sqrt(2 * 4e-4), 7),
                                      rel=1e-9)


# --------------------------------------------------------------------------- copies

def _copy(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(src.read_bytes())
    return dst


def test_a_copied_session_counts_once_and_says_so(tmp_path: Path):
    from hotloop.analysis import compare
    rng = np.random.default_rng(9)
    a = side(tmp_path / "a", 2, rng)
    b = side(tmp_path / "b", 2, rng, label="patched")
    _copy(a / "s0.jsonl", a / "s0-again.jsonl")
    comp = compare.load_and_compare([a, b])
    assert comp.baseline.sessions == 2 and len(comp.baseline.files) == 2
    (note,) = [w for w in map(words, comp.warnings) if "copy" in w]
    assert "s0-again.jsonl" in note and "s0.jsonl" in note and "counted once" in note


def test_a_side_of_copies_and_a_session_in_two_sides_are_refused(tmp_path: Path):
    from hotloop.analysis import compare
    from hotloop.errors import HotloopError
    rng = np.random.default_rng(10)
    a = side(tmp_path / "a", 2, rng)
    b = side(tmp_path / "b", 1, rng, label="patched")
    _copy(b / "s0.jsonl", b / "s0-copy.jsonl")
    with pytest.raises(HotloopError) as e:
        compare.load_and_compare([a, b])
    assert "copies of one session" in str(e.value) and "\n" not in str(e.value)
    # the same content on both sides (not a side against itself): refused too
    c = tmp_path / "c"
    _copy(a / "s0.jsonl", c / "x.jsonl")
    _copy(b / "s0.jsonl", c / "y.jsonl")
    with pytest.raises(HotloopError) as e:
        compare.load_and_compare([a, c])
    assert "in two sides" in str(e.value)
    # a side against a copy of itself is a side against itself: exactly no change
    d = tmp_path / "d"
    for f in sorted(a.glob("*.jsonl")):
        _copy(f, d / f"copy-{f.name}")
    comp = compare.load_and_compare([a, d])
    assert comp.pairs[0].metrics[0].test.change_pct == 0.0


def test_calibrating_from_copies_counts_each_session_once(tmp_path: Path, capsys):
    rng = np.random.default_rng(12)
    src = side(tmp_path / "two", 2, rng)
    many = tmp_path / "many"
    for f in sorted(src.glob("*.jsonl")):
        for i in range(50):
            _copy(f, many / f"{f.stem}-{i:02d}.jsonl")
    assert main(["calibrate", str(many)]) == 2
    err = capsys.readouterr().err
    assert "copies" in err and "2 sessions" in err


# --------------------------------------------------------------------------- noisy runs

def test_the_offset_bound_is_robust_to_a_few_slow_runs():
    """Synthetic: runs spread 2%, and 5% of them 3x slower.  The plain standard deviation of
    the log runs made the noise assumed from it 33-47%, so the bound would have grown to
    66-94%; a robust spread leaves it at 25%, and a threefold change is found."""
    from hotloop.analysis import significance as sg
    rng = np.random.default_rng(13)

    def session(effect: float = 0.0) -> np.ndarray:
        x = np.exp(rng.normal(np.log1p(effect), 0.02, 40))
        x[:2] *= 3                              # 2 of 40 runs: 5%
        return x
    assert sg.within_spread([session(), session()], log=True) == pytest.approx(0.02, rel=0.35)
    o = sg.sessions_test([session()], [session(2.0)])
    assert o.noise_source == "assumed" and o.noise_pct == pytest.approx(25), o.noise_pct
    assert o.significant and o.ci_low > 0


def test_an_interval_wider_than_any_change_says_too_noisy_to_call():
    from hotloop.analysis import judge
    from hotloop.analysis.comparison import MetricDelta, Verdict
    from hotloop.analysis.metrics import SPEED, MetricValues
    from hotloop.render import verdicts
    rng = np.random.default_rng(14)

    def sessions(scale: float = 1.0) -> list[MetricValues]:
        return [MetricValues("v", "", False, SPEED, list(scale * np.exp(rng.normal(0, 0.6, 10))))
                for _ in range(2)]
    t = judge.test_metric(sessions(), sessions())
    assert t.verdict is Verdict.TOO_NOISY and not t.significant
    assert t.spread_pct == pytest.approx(60, rel=0.35)
    words = verdicts.word(MetricDelta("ns/op", "ns/op", False, t))
    assert words.startswith(f"too noisy to call: runs spread {t.spread_pct:.0f}%")
    assert "calibrate or run more" in words
    # one session a side, not calibrated: no verdict within the offset bound (twice the runs'
    # spread here, 60%), and a twentyfold change beyond it called, saying the bound it beat
    a, b = np.exp(rng.normal(0, 0.3, 30)), np.exp(rng.normal(0, 0.3, 30))
    same = judge.compare_samples(a.tolist(), b.tolist(), higher_is_better=False)
    assert same.verdict is Verdict.ONE_A_SIDE and not same.significant
    big = judge.compare_samples(a.tolist(), (b * 20).tolist(), higher_is_better=False)
    assert big.verdict is Verdict.BAD and big.significant
    said = verdicts.word(MetricDelta("ns/op", "ns/op", False, big))
    assert said == f"slower: beyond any session's offset (up to {big.noise_pct:.0f}% a session)"
    assert big.noise_pct == pytest.approx(60, rel=0.35)


def test_a_session_with_unstable_runs_is_warned_about(tmp_path: Path):
    from hotloop.analysis import compare
    rng = np.random.default_rng(15)
    a = side(tmp_path / "a", 2, rng, within=0.2)
    b = side(tmp_path / "b", 2, rng, label="patched")
    comp = compare.load_and_compare([a, b])
    (w,) = [w for w in map(words, comp.warnings) if "unstable" in w]
    assert "result may be unstable" in w and "CV" in w and "2 sessions of stock" in w
    assert "hotloop doctor" in w                # how to fix it
    quiet = compare.load_and_compare([b, side(tmp_path / "c", 2, rng, label="x")])
    assert not [w for w in map(words, quiet.warnings) if "unstable" in w]


# --------------------------------------------------------------------------- thin calibrations

def test_a_calibration_needs_eight_sessions_and_says_so_before_running(tmp_path: Path,
                                                                       capsys):
    import json

    from hotloop.analysis import noise
    from hotloop.cli.parser import parser
    assert main(["calibrate", "zero_null", "--sessions", "3"]) == 2
    err = capsys.readouterr().err
    assert "at least 8 sessions" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()         # refused before the first session
    assert main(["calibrate", "zero_null", "--sessions", "8", "--runs", "3"]) == 2
    assert "at least 5 runs" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()
    helptext = next(a for a in parser()._subparsers._group_actions[0].choices.items()
                    if a[0] == "calibrate")[1].format_help()
    assert "at least 8" in " ".join(helptext.split())
    # a stored profile of 4 sessions (an older hotloop's) is not used
    doc = {"hotloop_noise": 2, "key": {k: None for k in noise.KEY_FIELDS}, "sessions": 4,
           "metrics": {"bytes/s": {"session_var": 1e-4, "sigma_within": 0.01,
                                   "median_var": 1e-5, "runs": 6, "df": 3}},
           "session_cost_s": 1, "run_cost_s": 0.01}
    thin = tmp_path / "thin.json"
    thin.write_text(json.dumps(doc))
    with pytest.raises(noise.NoiseError) as e:
        noise.load(thin)
    assert "4 sessions" in str(e.value) and "at least 8" in str(e.value)


# --------------------------------------------------------------------------- calibration fit

def test_a_calibration_the_sessions_contradict_is_dropped_and_said(tmp_path: Path):
    """Calibrated back to back (one boot), compared across reboots: the sides' own sessions
    vary far more than the calibration says.  An F test of the measured session variance
    against the calibrated one drops the calibration, and says so in a warning and in JSON
    (`noise_check`)."""
    import json

    from hotloop import results
    from hotloop.analysis import compare, noise
    from hotloop.render import compare_formats
    rng = np.random.default_rng(16)
    a = side(tmp_path / "a", 3, rng, between=0.05)
    b = side(tmp_path / "b", 3, rng, between=0.05, label="patched")
    key = noise.key_of(results.read(next(a.glob("*.jsonl"))).header)

    def profile(session_var: float) -> Path:
        path = tmp_path / f"profile-{session_var}.json"
        path.write_text(json.dumps({
            "hotloop_noise": 2, "key": key, "sessions": 10,
            "metrics": {"bytes/s": {"session_var": session_var, "sigma_within": 0.01,
                                    "median_var": 5e-6, "runs": 20, "df": 9}},
            "session_cost_s": 1, "run_cost_s": 0.01}))
        return path
    quiet = compare.load_and_compare([a, b], profile(2e-5))       # 0.45%: 10x too quiet
    row = quiet.pairs[0].metrics[0]
    assert row.test.noise_source == "measured"
    assert row.test.noise_check["action"] == "dropped" and row.test.noise_check["p"] < 0.1
    assert any("calibration dropped" in w and "F test" in w for w in map(words, quiet.warnings))
    doc = json.loads(compare_formats.render(quiet, "json"))
    assert doc["comparisons"][0]["noise_check"]["action"] == "dropped"
    assert doc["method"]["noise_check_alpha"] == 0.30
    # a calibration that fits is pooled, and says it was checked
    fits = compare.load_and_compare([a, b], profile(2.5e-3))
    row = fits.pairs[0].metrics[0]
    assert row.test.noise_source == "measured+calibrated"
    assert row.test.noise_check["action"] == "pooled"
    assert not any("calibration dropped" in w for w in map(words, fits.warnings))


# --------------------------------------------------------------------------- power

def _power(change_pct: float, tau2: float, k: int, df: float) -> float:
    """The exact power of compare's two-sided t test at alpha 0.05: noncentral t."""
    import math

    from scipy import stats as sps
    delta = math.log1p(change_pct / 100) / math.sqrt(2 * tau2 / k)
    c = float(sps.t.ppf(0.975, df))
    return float(sps.nct.sf(c, df, delta) + sps.nct.cdf(-c, df, delta))


@pytest.mark.parametrize("k, df", [(2, 2), (3, 4), (2, 9), (5, 8)])
def test_detectable_is_the_change_found_with_80_percent_power_exactly(k, df):
    """t.975 + t.8 gave 73-79% power at df 1-4, not the 80% it was labelled with."""
    from hotloop.analysis import significance as sg
    tau2 = 4e-4
    found = sg.detectable_pct(tau2, k, df)
    assert _power(found, tau2, k, df) == pytest.approx(0.80, abs=0.002)


def test_the_planner_reaches_80_percent_power_at_its_bound():
    from hotloop.analysis import noise
    from hotloop.analysis.noise import MetricNoise
    m = MetricNoise(session_var=3e-4, median_var=5e-5, sigma_within=0.02, runs=30, df=7)
    for change in (1.0, 2.0, 5.0):
        r = noise.repetitions(m, 1.5, 0.01, change, m.df)
        if r.sessions is None:
            continue
        tau2 = m.at(r.runs, m.upper())
        assert _power(change, tau2, r.sessions, 2 * r.sessions - 2 + m.df) >= 0.80 - 1e-9


def test_the_gate_reads_the_corrected_primary_verdict_only(worse):
    """A side called alone but not after the correction for the sides does not fail the
    gate; nor does an exploratory row, however significant."""
    import dataclasses

    from hotloop.analysis import compare, judge
    from hotloop.analysis.comparison import Verdict
    comp = compare.load_and_compare(list(worse))
    pair = comp.pairs[0]
    primary = pair.metrics[0]
    assert primary.primary and judge.gate(comp, "worse") == [primary]
    assert [m for m in pair.metrics if not m.primary and m.test.verdict.called]
    pair.metrics[0] = dataclasses.replace(primary, test=dataclasses.replace(
        primary.test, verdict=Verdict.NOT_AFTER_CORRECTION, significant=False))
    assert judge.gate(comp, "worse") == [] and judge.gate(comp, "change") == []


def test_too_noisy_names_what_made_the_interval_wide():
    """Synthetic, through compare's own test: the words name the sessions where their offsets
    (measured, or a calibration's) made the interval wide, the runs where the runs did."""
    from hotloop.analysis import comparison, judge
    from hotloop.analysis.comparison import MetricDelta, Verdict
    from hotloop.analysis.metrics import RESOURCE, SPEED, MetricValues
    from hotloop.analysis.noise import MetricNoise
    from hotloop.render import verdicts
    rng = np.random.default_rng(21)

    def said(t: comparison.Test) -> str:
        assert t.verdict is Verdict.TOO_NOISY, t
        return verdicts.word(MetricDelta("m", "", False, t))

    # a perf counter, one value a session (no runs to spread), sessions far apart
    def counter(*counts: float) -> list[MetricValues]:
        return [MetricValues("cs", "", False, RESOURCE, [c], per_session=True) for c in counts]
    t = judge.test_metric(counter(100, 300), counter(120, 380))
    assert t.noise_source == "measured" and not t.spread_pct and t.noise_pct > 50, t
    assert said(t) == (f"too noisy to call: sessions differ by {t.noise_pct:.0f}%; "
                       "run more sessions")
    assert verdicts.word(MetricDelta("cs", "", False, t), short=True) == \
        f"too noisy: sessions differ by {t.noise_pct:.0f}%"

    # runs that spread 40%, 500 a session: the sessions' 15% offsets made it wide, not they
    def sessions(*offsets: float) -> list[MetricValues]:
        return [MetricValues("v", "", False, SPEED, list(np.exp(rng.normal(o, 0.4, 500))))
                for o in offsets]
    t = judge.test_metric(sessions(0.0, 0.3), sessions(0.05, 0.35))
    assert t.spread_pct > 30 and t.runs_pct < t.noise_pct, t
    assert said(t).startswith("too noisy to call: sessions differ by ")

    # runs that spread 60%, 5 a session, the sessions alike: the runs made it wide
    def alike() -> list[MetricValues]:
        return [MetricValues("v", "", False, SPEED, list(np.exp(rng.normal(0, 0.6, 5))))
                for _ in range(3)]
    t = judge.test_metric(alike(), alike())
    assert t.noise_source == "measured" and t.runs_pct > t.noise_pct, t
    assert said(t).startswith("too noisy to call: runs spread "), said(t)

    # one session a side with a calibration that says sessions differ by 40%: the figure is
    # the calibration's, and calibrating again is no advice
    cal = MetricNoise(session_var=0.16, median_var=1e-4, sigma_within=0.05, runs=30, df=9)
    one = [MetricValues("v", "", False, SPEED, list(np.exp(rng.normal(0, 0.05, 30))))]
    two = [MetricValues("v", "", False, SPEED, list(np.exp(rng.normal(0, 0.05, 30))))]
    t = judge.test_metric(one, two, calibrated=cal)
    assert t.noise_source == "calibrated", t
    assert said(t) == (f"too noisy to call: calibrated session noise {t.noise_pct:.0f}%; "
                       "run more sessions")


def test_a_calibration_far_noisier_than_the_sessions_is_said_with_its_age(tmp_path: Path):
    """A calibration taken under load (42.5% session noise) and used on quiet sessions is
    pooled in and only widens the interval: compare says so, with the calibration's date
    and age (issue #43, 16)."""
    import json

    from hotloop import results
    from hotloop.analysis import compare, noise
    rng = np.random.default_rng(16)
    a = side(tmp_path / "a", 5, rng, between=0.005)
    b = side(tmp_path / "b", 5, rng, between=0.005, label="patched")
    key = noise.key_of(results.read(next(a.glob("*.jsonl"))).header)

    def profile(session_var: float) -> Path:
        path = tmp_path / f"profile-{session_var}.json"
        path.write_text(json.dumps({
            "hotloop_noise": 2, "key": key, "sessions": 10, "created": "2026-11-20T08:00:00+0000",
            "metrics": {"bytes/s": {"session_var": session_var, "sigma_within": 0.01,
                                    "median_var": 5e-6, "runs": 20, "df": 9}},
            "session_cost_s": 1, "run_cost_s": 0.01}))
        return path
    loud = compare.load_and_compare([a, b], profile(0.18))          # 42.5%
    check = loud.pairs[0].metrics[0].test.noise_check
    assert check["action"] == "pooled" and check["p_quieter"] < 0.05
    said = [w for w in map(words, loud.warnings) if "taken on a busier machine" in w]
    assert len(said) == 1 and "taken 2026-11-20, " in said[0] and "days ago" in said[0]
    # one that fits says nothing of the kind
    fits = compare.load_and_compare([a, b], profile(3e-5))
    assert not any("busier machine" in w for w in map(words, fits.warnings))


def test_a_counter_the_same_in_every_session_is_a_count_not_certainty():
    """perf:cpu-migrations 0 0 0 against 6 6 6: no spread on either side, which gave a p of 0;
    a counter is a Poisson count, its variance at least its mean (issue #43, 22)."""
    from hotloop.analysis import significance
    o = significance.sessions_test([[0], [0], [0]], [[6], [6], [6]])
    assert o.p_value is not None and 0.001 < o.p_value < 0.05 and o.significant
    assert o.ci_low is None and o.change_pct is None          # no % from 0
    # page-faults 100 against 130 in every session: an interval, not one of zero width
    o = significance.sessions_test([[100]] * 3, [[130]] * 3)
    assert o.ci_low is not None and o.ci_high is not None and o.ci_high - o.ci_low > 10
    # a count falls by 100% at most: 10 12 3 against 0 1 0 (a 0: no log scale)
    o = significance.sessions_test([[10], [12], [3]], [[0], [1], [0]])
    assert o.ci_low is not None and o.ci_low >= -100.0
    # not a count (a CPU time): as before, no floor
    assert significance.count_floor([[0.5]], [[0.7]], False) == 0.0
    assert significance.count_floor([[1.0, 2.0]], [[3.0]], False) == 0.0
