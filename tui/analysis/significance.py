"""The statistics behind compare's verdicts, on plain arrays (no files, no names).

Runs of one session are not independent samples of "the kernel": a session carries an offset of
its own (the boot, the VM's neighbours, the time of day), measured at 2-4% on a 2-core KVM guest,
far more than the 1% changes kernel developers look for.  A rank test on the runs of two sessions
grows confident about that offset and calls A/A pairs "faster" or "slower" about half the time.
So the unit of replication here is the session, as Kalibera & Jones argue ("Rigorous benchmarking
in reasonable time", ISMM 2013): repeat at the level where the variance arises, and let every
level's variance into the interval.

Two methods, chosen by how the runs were taken:

* **Sessions as replicates** (`sessions_test`): separate sessions, each side one or more of them.
  One number per session, y = log(session median), with y = mu + b + e: b the session's offset
  (variance sigma_b^2, the same on both sides), e the sampling error of its median (variance v,
  which shrinks as 1/runs).  A side's estimate is the mean of its sessions' y; the change is the
  difference of the two, with SE^2 = tau^2 (1/k_a + 1/k_b), where tau^2 = sigma_b^2 + v is the
  variance of one session's y, and a Student t interval.  tau^2 is estimated directly, never
  from a per-session guess of v (the order-statistic standard error of a median is far too
  noisy at tens of runs, worst on the bimodal results some workloads give):
  - from the sides' own sessions: the pooled variance of y within each side (df = sessions - 2;
    with equal run counts this is exactly the pooled two-sample t-test on session log-medians);
  - from this machine's calibration (`hotloop calibrate`): the variance of its sessions' y
    (df = its sessions - 1), moved to the runs compared here through v's 1/n_i, session by
    session (`MetricNoise.runs_for`), and never below what it measured;
  pooled by degrees of freedom when there are both.  Where the sides ran in different boots
  the replicate is the boot (`units`: a boot's sessions averaged into one y; analysis.boots
  says why), and with one a side and no calibration nothing is assumed (`assume`): no test.
  With neither (one session a side within one boot, no
  calibration) sigma_b is assumed, with a normal quantile: the larger of
  `ASSUMED_SESSION_NOISE` and `ASSUMED_PER_WITHIN` times the spread of the sessions' runs,
  because on this project's machine sessions differed by up to that much (docs/statistics.md,
  "How small a change can hotloop call") and a setup noisy within a session is noisy between sessions too;
  v is then the McKean-Schrader estimate (McKean & Schrader 1984), the only one there is.  The
  outcome's interval and p rest on that assumption, so compare calls nothing on it: a change
  beyond it is a direction (comparison.Verdict.BEYOND_ASSUMED), since sessions that differ by
  more than assumed (6% apart) had 22% of A/A pairs beyond it.
  Why not a hierarchical bootstrap: with the 1-5 sessions a side people run, resampling sessions
  has 1-126 distinct outcomes and its intervals are far too narrow; and it holds resamples x runs
  in memory, which a million-run file cannot afford.  Everything here is O(runs log runs).

* **Paired rounds** (`paired_test`): the variants of one interleaved batch ran round by round,
  so run i of each variant shares round i's drift, and the per-round log ratio removes it.
  What it does not remove is each worker process's own offset (its memory layout, the CPU it
  was placed on): two identical variants, one process each, 80 rounds, were called different
  in 1 to 7 of 20 batches by a Wilcoxon signed-rank test on the rounds.  So the unit of
  replication is again the process: each variant's runs are spread over several worker
  processes in turn (`--interleave` defaults to 5), the processes of one round block run at
  the same time, each block gives its Hodges-Lehmann estimate of the log ratio (the median
  Walsh average, found by counting, never listing the n^2 of them), and a Student t interval
  over the blocks (df = processes - 1) makes the verdict.  With fewer than `MIN_PROCESSES`
  processes a variant there is no verdict.  No session noise enters (every block holds both
  variants): this is still the cheap way to a small effect.

Values that are not all positive (a CPU time of 0 s) are analysed on their own scale (medians and
differences instead of log-ratios); the % change is then the difference over the baseline.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from hotloop.analysis.room import make_room
from hotloop.stats import SESSION_OFFSET_BOUND, Z95, assumed_session_noise, median_se, robust_spread
from hotloop.stats import detectable_pct as stats_detectable

make_room()     # under `ulimit -v`: one line if they cannot load, never OpenBLAS's hang
import numpy as np  # noqa: E402
from scipy import optimize, special  # noqa: E402, F401 - for symstats, loaded here
from scipy import stats as sps  # noqa: E402

ALPHA = 0.05
CONFIDENCE = 1 - ALPHA
Z = Z95
MIN_ROUNDS = 6                  # fewer paired rounds: no verdict
MIN_PROCESSES = 3               # fewer worker processes a variant: no verdict (see above)
# The sides' own session variance against the calibration's: an upper-tail F test at this
# level drops a calibration the sessions contradict.  Far looser than alpha on purpose: with
# the few degrees of freedom of 3 sessions a side, a check at 5% misses most calibrations
# that are too quiet (taken back to back, compared across reboots), and what it misses is
# pooled in.  On synthetic 3-a-side A/A pairs with a calibration of half the session noise,
# the A/A rate was 10.5% checking at 0.1 and 5.9% at 0.3 (a third of it: 7.7% and 4.3%);
# with a calibration that fits, 4.4% and 2.9%: dropping a good calibration only costs power
# (the sessions' own test stays valid).
NOISE_CHECK_ALPHA = 0.30


@dataclass(frozen=True)
class Outcome:
    """A comparison of two sides of one metric, on the analysis scale, before any wording."""
    method: str                 # "sessions", "paired" or "exact" (identical samples)
    log: bool                   # the change is a ratio (log scale) or a difference
    baseline: float             # a side's centre, on the metric's own scale
    new: float
    change_pct: float | None    # (new / baseline - 1) * 100; None when the baseline is 0
    ci_low: float | None        # 95% interval of change_pct
    ci_high: float | None
    p_value: float | None
    significant: bool
    noise_pct: float | None = None          # sigma_b in % used (sessions method)
    noise_source: str | None = None         # "measured", "calibrated", "measured+calibrated",
                                            # "assumed"; "unmeasured" across boots: both
                                            # on the offset bound (sessions_test)
    half_width_pct: float | None = None     # the interval's half width: changes within it
                                            # are not told from noise
    spread_pct: float | None = None         # sessions: the runs' robust spread within a
                                            # session, % (what "too noisy" reports)
    runs_pct: float | None = None           # sessions: the runs' part of a session centre's
                                            # spread, %: against noise_pct, which made it wide
    rounds: int = 0                         # paired method: rounds compared...
    processes: int = 0                      # ...and the worker processes they ran in
    noise_check: dict[str, Any] | None = None   # sessions with a calibration: did it fit?
    df: float | None = None                 # the interval's degrees of freedom (inf: normal)


# --------------------------------------------------------------------------- one session

@dataclass(frozen=True)
class SessionEstimate:
    """One session of one metric: its centre on the analysis scale and the centre's variance."""
    centre: float
    var: float
    n: int


def _indexed(x: np.ndarray) -> Sequence[float]:
    """A sorted array as the order statistics read it (by index): no list of a float object
    a run (300,000 runs a side)."""
    return cast("Sequence[float]", x)


def session_estimate(values: Sequence[float] | np.ndarray, log: bool) -> SessionEstimate:
    x = np.sort(np.asarray(values, dtype=float))
    median = float(np.median(x))
    if log:
        # the log of the median, not the median of the logs: with an even number of runs those
        # differ, and a session's centre must read the same whichever scale a comparison uses
        return SessionEstimate(float(np.log(median)), median_se(_indexed(x), log=True) ** 2, len(x))
    return SessionEstimate(median, median_se(_indexed(x)) ** 2, len(x))


def positive(*groups: Sequence[float] | np.ndarray) -> bool:
    """Whether every value is above 0, so the analysis can be on the log scale."""
    return all(len(g) and float(np.min(g)) > 0 for g in groups)


def _pct(delta: float, base: float, log: bool) -> float | None:
    if log:
        try:
            return math.expm1(delta) * 100.0
        except OverflowError:           # an interval from two wildly different sessions
            return math.inf
    if not base:
        return 0.0 if delta == 0 else None     # from 0 to 0 is no change; from 0 to x: none
    return delta / abs(base) * 100.0


# --------------------------------------------------------------------------- sessions

def centre_variance(sides: Sequence[Sequence[SessionEstimate]]) -> tuple[float, int]:
    """tau^2, the variance of one session's centre, from the sessions themselves: the pooled
    spread of their centres within each side; and its degrees of freedom."""
    df = sum(len(s) - 1 for s in sides)
    if df <= 0:
        return 0.0, 0
    ss = 0.0
    for side in sides:
        mean = sum(e.centre for e in side) / len(side)
        ss += sum((e.centre - mean) ** 2 for e in side)
    return ss / df, df


def within_spread(sessions: Sequence[Sequence[float]], log: bool) -> float:
    """The spread of one run within a session, pooled over the sessions (log scale: a
    fraction): each session's robust spread (`stats.robust_spread`, the interquartile range),
    so that a few runs far out do not make the session noise assumed from it huge."""
    parts = [robust_spread(_indexed(np.sort(np.asarray(s, dtype=float))), log) ** 2
             for s in sessions if len(s) > 1]
    return math.sqrt(float(np.mean(parts))) if parts else 0.0


def assumed_noise(sessions: Sequence[Sequence[float]], log: bool, scale: float = 1.0) -> float:
    """sigma_b when nothing measured it, as a fraction: see the module docstring."""
    return assumed_session_noise(within_spread(sessions, log) / scale)


def offset_bound(sessions: Sequence[Sequence[float]], log: bool, scale: float = 1.0,
                 bound: float | None = None) -> float:
    """The largest offset a session plausibly carries (a fraction): `stats.
    SESSION_OFFSET_BOUND`, or more where the runs spread so much that the assumed noise
    (twice their spread) is larger: a setup noisy within a session is noisy between too."""
    return max(SESSION_OFFSET_BOUND if bound is None else bound,
               assumed_noise(sessions, log, scale))


def combine(ests: Sequence[SessionEstimate],
            groups: Sequence[Sequence[int]] | None) -> list[SessionEstimate]:
    """Sessions grouped into replicates (a boot's sessions, `analysis.boots`): each group's
    mean centre, whose runs' part of the variance is the mean of its sessions' over their
    number, as if from all their runs."""
    if groups is None:
        return list(ests)
    out = []
    for g in groups:
        parts = [ests[i] for i in g]
        out.append(SessionEstimate(sum(e.centre for e in parts) / len(parts),
                                   sum(e.var for e in parts) / len(parts) ** 2,
                                   sum(e.n for e in parts)))
    return out


class Calibration(Protocol):
    """A metric's session noise as a calibration measured it (analysis.noise.MetricNoise,
    which reads this module to measure it: so the tests name only what they use of it)."""
    @property
    def df(self) -> int: ...

    def at(self, runs: float, session_var: float | None = None) -> float: ...

    def runs_for(self, sides: Sequence[Sequence[int]]) -> float: ...


def sessions_test(base: Sequence[Sequence[float]], new: Sequence[Sequence[float]],
                  calibrated: Calibration | None = None,
                  units: tuple[Sequence[Sequence[int]], Sequence[Sequence[int]]] | None = None,
                  assume: bool = True, bound: float | None = None) -> Outcome:
    """Each side a list of sessions (a list of runs each).  See the module docstring.

    `units`: each side's sessions (indices) grouped into replicates, the sessions of one boot
    together when the sides span boots.  Where nothing measured the replicates' variance the
    interval is the one `offset_bound` allows (`bound`: another bound than the stored one, for
    the benchmarks that choose it); its noise_source is "assumed", or with `assume` false (one
    boot a side, a reboot between) "unmeasured"."""
    if not base or not new or not all(len(s) for s in [*base, *new]):
        raise ValueError("sessions_test needs at least one run in every session")
    log = positive(*base, *new)
    a = [session_estimate(s, log) for s in base]
    b = [session_estimate(s, log) for s in new]
    if units is not None:
        a, b = combine(a, units[0]), combine(b, units[1])
    ya = sum(e.centre for e in a) / len(a)
    yb = sum(e.centre for e in b) / len(b)
    centre_a = math.exp(ya) if log else ya
    centre_b = math.exp(yb) if log else yb
    delta = yb - ya
    change = _pct(delta, ya, log)
    if len(base) == len(new) and all(len(s) == len(t) and np.array_equal(np.sort(s),
                                                                         np.sort(t))
                                      for s, t in zip(base, new)):
        # Identical samples (a file against itself): exactly no change, nothing to estimate.
        zero = 0.0 if change is not None else None
        return Outcome("exact", log, centre_a, centre_b, zero, zero, zero, 1.0, False)
    # Noise as a fraction is of the centres on the linear scale (a CPU time of 0 s).
    scale = 1.0 if log else max(abs(ya), abs(yb))
    if not scale:                       # centred at 0 on both sides: no % to speak of
        return Outcome("sessions", log, centre_a, centre_b, change, None, None, None, False)
    ests = [*a, *b]
    parts: list[tuple[float, int]] = []
    measured, df_data = centre_variance([a, b])
    if df_data:
        parts.append((measured, df_data))
    check: dict[str, Any] | None = None
    if calibrated is not None:
        at = calibrated.runs_for([[e.n for e in a], [e.n for e in b]])
        cal = calibrated.at(at) * scale ** 2
        check = noise_check(measured, df_data, cal, calibrated.df, scale)
        if check["action"] != "dropped":
            parts.append((cal, calibrated.df))
    used_cal = check is not None and check["action"] != "dropped"
    if parts:
        df: float = sum(d for _, d in parts)
        tau2 = sum(v * d for v, d in parts) / df
        source = "+".join(name for name, used in (("measured", df_data),
                                                   ("calibrated", used_cal))
                          if used)
        q = float(sps.t.ppf(1 - ALPHA / 2, df))
    else:
        # Nothing measured how much these sessions (or, across a reboot, boots) differ: the
        # interval is what the largest plausible offset allows, so only a change beyond any
        # offset is called ("assumed" within one boot, "unmeasured" across boots).
        sigma = offset_bound([*base, *new], log, scale, bound) * scale
        tau2 = sigma ** 2 + float(np.mean([e.var for e in ests]))
        source, df, q = "assumed" if assume else "unmeasured", math.inf, Z
    counted = count_floor(base, new, log)
    if counted > tau2:
        tau2 = counted
    se = math.sqrt(tau2 * (1 / len(a) + 1 / len(b)))
    if se == 0.0:       # no spread at all on either side, yet different: nothing to test
        p = 0.0 if delta else 1.0
    else:
        tstat = abs(delta) / se
        p = float(2 * (sps.t.sf(tstat, df) if math.isfinite(df) else sps.norm.sf(tstat)))
    lo, hi = delta - q * se, delta + q * se
    ci_low, ci_high = _pct(lo, ya, log), _pct(hi, ya, log)
    if ci_low is not None and ci_low < -100 and ya > 0 \
            and all(v >= 0 for s in (*base, *new) for v in s):
        ci_low = -100.0                 # a count or a time falls by 100% at most
    significant = bool(p < ALPHA and (lo > 0 or hi < 0))
    # What of tau^2 is the sessions' own offset: sigma_b, as a % of the centre.
    within = float(np.mean([e.var for e in ests]))
    sigma_b = math.sqrt(max(0.0, tau2 - within)) / scale * 100
    return Outcome("sessions", log, centre_a, centre_b, change, ci_low, ci_high, p, significant,
                   noise_pct=sigma_b, noise_source=source,
                   half_width_pct=_half(ci_low, ci_high),
                   spread_pct=100 * within_spread([*base, *new], log) / scale,
                   runs_pct=100 * math.sqrt(within) / scale, noise_check=check, df=df)


def count_floor(base: Sequence[Sequence[float]], new: Sequence[Sequence[float]],
                log: bool) -> float:
    """A session's variance at least a count's where every session is one whole number (a
    perf counter): a Poisson count's, its mean (1 / mean on the log scale); without it 0 0 0
    against 6 6 6 migrations had a p of 0.  0 for anything else (a run's values, a time)."""
    values = [v for s in (*base, *new) for v in s]
    if any(len(s) != 1 for s in (*base, *new)) or \
            not all(v >= 0 and float(v).is_integer() for v in values):
        return 0.0
    mean = float(np.mean(values))
    if log:
        return 1 / mean if mean > 0 else 0.0
    return mean


def noise_check(measured: float, df_data: int, calibrated: float, df_cal: int,
                scale: float = 1.0) -> dict[str, Any]:
    """Whether the sides' own sessions agree with the calibration: an upper-tail F test of
    their pooled session variance against the calibrated one.  A calibration taken back to
    back (one boot) and compared across reboots is too quiet: pooled in, it called 46-66% of
    A/A pairs one a side and 19-22% at 3 a side.  Where the sessions contradict it
    ("dropped"), the test uses their own variance alone; with one session a side nothing can
    check it ("unchecked"): the verdict rests on the calibration describing these sessions."""
    out: dict[str, Any] = {"df": [df_data, df_cal],
                           "calibrated_pct": 100 * math.sqrt(calibrated) / scale}
    if not df_data:
        return {**out, "action": "unchecked", "f": None, "p": None, "measured_pct": None}
    f = measured / calibrated if calibrated > 0 else math.inf
    p = float(sps.f.sf(f, df_data, df_cal)) if math.isfinite(f) else 0.0
    # the other tail: sessions far quieter than the calibration (one taken under load),
    # which is pooled in and only widens the interval: compare says so (p_quieter < ALPHA)
    quieter = float(sps.f.cdf(f, df_data, df_cal)) if math.isfinite(f) else 1.0
    return {**out, "action": "dropped" if p < NOISE_CHECK_ALPHA else "pooled",
            "f": f if math.isfinite(f) else None, "p": p, "p_quieter": quieter,
            "measured_pct": 100 * math.sqrt(measured) / scale}


def _half(lo: float | None, hi: float | None) -> float | None:
    """Half the interval's width in %: the change that noise alone can make."""
    if lo is None or hi is None or not math.isfinite(hi - lo):
        return None
    return (hi - lo) / 2


half_width = _half


# --------------------------------------------------------------------------- power

POWER = 0.8


def detectable_pct(tau2: float, sessions: int = 1, df: float = math.inf,
                   power: float = POWER) -> float:
    """The smallest change (in %) that `sessions` sessions a side find with exactly `power`
    at alpha 0.05 (compare's two-sided t test, its noncentral t), when one session's centre
    varies by tau2 and the interval has `df` degrees of freedom.  `stats.detectable_pct`'s
    t.975 + t.8 is the console's quick version: at df 1-4 its power is 73-79%."""
    if not math.isfinite(df):
        return stats_detectable(tau2, sessions, df)
    delta = _noncentrality(float(df), power)
    try:
        return math.expm1(delta * math.sqrt(2 * tau2 / sessions)) * 100.0
    except OverflowError:
        return math.inf


@functools.lru_cache(maxsize=512)
def _noncentrality(df: float, power: float) -> float:
    """The change in standard errors that the two-sided t test at ALPHA finds with `power`
    (the planner asks for the same few df thousands of times)."""
    from scipy.optimize import brentq
    c = float(sps.t.ppf(1 - ALPHA / 2, df))

    def short(delta: float) -> float:
        return float(sps.nct.sf(c, df, delta) + sps.nct.cdf(-c, df, delta)) - power
    hi = c + float(sps.t.ppf(power, df)) + 1.0
    while short(hi) < 0:
        hi *= 2
    return float(brentq(short, 0.0, hi, xtol=1e-10))


# --------------------------------------------------------------------------- many sides

def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the order given: the family-wise
    error of calling any of them stays at alpha whatever their dependence (the sides share
    one baseline, so they are correlated: Holm needs no model of that, Dunnett would)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def adjusted_interval(lo_pct: float, hi_pct: float, log: bool, df: float,
                      factor: float) -> tuple[float, float]:
    """A 95% interval (in %) widened to match a p-value adjusted by `factor` (p_adj / p,
    Holm's): the interval at level 1 - ALPHA / factor, which excludes 0 exactly when the
    adjusted p is below ALPHA, so a row's interval and its corrected verdict agree."""
    def g(x: float) -> float:
        return math.log1p(x / 100) if log else x / 100
    a, b = g(lo_pct), g(hi_pct)
    q = _quantile(1 - ALPHA / 2, df)
    centre, se = (a + b) / 2, (b - a) / (2 * q)
    q2 = _quantile(1 - ALPHA / (2 * max(factor, 1.0)), df)
    lo, hi = centre - q2 * se, centre + q2 * se
    if not log:
        return 100 * lo, 100 * hi
    return math.expm1(min(lo, 700.0)) * 100, math.expm1(min(hi, 700.0)) * 100


def _quantile(p: float, df: float) -> float:
    return float(sps.norm.ppf(p) if not math.isfinite(df) else sps.t.ppf(p, df))


# --------------------------------------------------------------------------- paired rounds

def _walsh_count_le(d: np.ndarray, t: float) -> int:
    """How many Walsh averages (d_i + d_j) / 2, i <= j, are at most t (d sorted)."""
    j = np.searchsorted(d, 2 * t - d, side="right")        # d_j <= 2t - d_i
    return int(np.maximum(j - np.arange(len(d)), 0).sum())


def walsh_quantile(d: np.ndarray, k: int) -> float:
    """The k-th smallest (1-based) Walsh average of sorted d: bisection on counts, then the
    largest Walsh average at or below where it ended (so an exact 0 stays 0, not 1e-62)."""
    lo, hi = float(d[0]), float(d[-1])
    if _walsh_count_le(d, lo) < k:
        for _ in range(200):
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            if _walsh_count_le(d, mid) >= k:
                hi = mid
            else:
                lo = mid
    else:
        hi = lo
    j = np.searchsorted(d, 2 * hi - d, side="right") - 1      # the largest d_j <= 2hi - d_i
    i = np.arange(len(d))
    ok = j >= i
    return float(np.max((d[ok] + d[j[ok]]) / 2))


def _hodges_lehmann(d: np.ndarray) -> float:
    """The median of the Walsh averages of sorted d: the typical pairwise change."""
    total = len(d) * (len(d) + 1) // 2
    return (walsh_quantile(d, (total + 1) // 2) + walsh_quantile(d, total // 2 + 1)) / 2


def paired_test(base: Sequence[float], new: Sequence[float],
                blocks: Sequence[int] = ()) -> Outcome:
    """Run i of `base` against run i of `new`: round i of an interleaved batch.  `blocks`:
    how many consecutive rounds each worker process ran, the same for both variants."""
    n = min(len(base), len(new))
    if n == 0:
        raise ValueError("paired_test needs at least one round")
    x = np.asarray(base[:n], dtype=float)
    y = np.asarray(new[:n], dtype=float)
    log = positive(x, y)
    mx, my = float(np.median(x)), float(np.median(y))
    d = np.log(y) - np.log(x) if log else y - x
    base_centre = 0.0 if log else mx
    if not d.any():
        zero = 0.0 if log or mx else None
        return Outcome("exact", log, mx, my, zero, zero, zero, 1.0, False, rounds=n)
    edges = np.cumsum([0, *blocks])
    groups = [np.sort(d[a:min(b, n)]) for a, b in zip(edges, edges[1:]) if a < n]
    # Each process's own estimate: the Hodges-Lehmann estimate of its rounds' log ratios.
    ys = np.array([_hodges_lehmann(g) for g in groups])
    k = len(ys)
    if k < MIN_PROCESSES:               # process offsets cannot be told from a change
        return Outcome("paired", log, mx, my, _pct(_hodges_lehmann(np.sort(d)), base_centre,
                                                    log), None, None, None, False,
                       rounds=n, processes=k)
    centre = float(np.mean(ys))
    se = float(np.std(ys, ddof=1)) / math.sqrt(k)
    q = float(sps.t.ppf(1 - ALPHA / 2, k - 1))
    p = float(2 * sps.t.sf(abs(centre) / se, k - 1)) if se else (0.0 if centre else 1.0)
    lo, hi = centre - q * se, centre + q * se
    ci_low, ci_high = _pct(lo, base_centre, log), _pct(hi, base_centre, log)
    significant = bool(n >= MIN_ROUNDS and p < ALPHA and (lo > 0 or hi < 0))
    return Outcome("paired", log, mx, my, _pct(centre, base_centre, log), ci_low, ci_high, p,
                   significant, half_width_pct=_half(ci_low, ci_high), rounds=n, processes=k,
                   df=k - 1)
