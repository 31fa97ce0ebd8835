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
  A random-effects model on one number per session, y = log(session median): y = mu + b + e,
  with b the session's offset (variance sigma_b^2, the same on both sides) and e the sampling
  error of its median (variance v, known from the session's own runs by the distribution-free
  order-statistic standard error of the median, McKean & Schrader 1984; it holds for the bimodal
  results some workloads give).  A side's estimate is the mean of its sessions' y; the change is
  the difference of the sides' estimates, with

      SE^2 = sigma_b^2 (1/k_a + 1/k_b) + mean(v_a)/k_a + mean(v_b)/k_b

  and a Student t interval.  sigma_b comes from the sessions themselves (the spread of y within
  each side, pooled, less the part their v explain; df = sessions - 2), from a calibration of this
  machine (`hotloop calibrate`: df = its sessions - 1), pooled by degrees of freedom when there
  are both.  With neither (one session a side, no calibration) sigma_b is assumed, with a
  normal quantile: the larger of `ASSUMED_SESSION_NOISE` and `ASSUMED_PER_WITHIN` times the
  sessions' own spread of runs, because on this project's machine sessions differed by up to
  that much (README, "How small a change can hotloop call?") and a setup noisy within a session
  is noisy between sessions too.  A change is then called only far beyond what sessions
  plausibly differ by, and the verdict says so.
  With equal sessions this is exactly the pooled two-sample t-test on session log-medians (when
  the data alone estimate sigma_b), which is why it keeps its false-positive rate at alpha:
  measured in benchmarks/sensitivity.py.
  Why not a hierarchical bootstrap: with the 1-5 sessions a side people run, resampling sessions
  has 1-126 distinct outcomes and its intervals are far too narrow; and it holds resamples x runs
  in memory, which a million-run file cannot afford.  Everything here is O(runs log runs).

* **Paired rounds** (`paired_test`): the variants of one interleaved batch ran ABAB..., so run i
  of each variant shares round i's drift.  Wilcoxon signed-rank test on the per-round log ratios,
  with the Hodges-Lehmann interval that inverts the same test (found by counting Walsh averages,
  never listing the n^2 of them).  Every round is one session for both variants, so no session
  noise enters: this is the cheap way to a small effect.

Values that are not all positive (a CPU time of 0 s) are analysed on their own scale (medians and
differences instead of log-ratios); the % change is then the difference over the baseline.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
from scipy import stats as sps

from tui.stats import median_se

if TYPE_CHECKING:
    from tui.noise import SessionNoise

ALPHA = 0.05
CONFIDENCE = 1 - ALPHA
Z = float(sps.norm.ppf(1 - ALPHA / 2))      # 1.96
ASSUMED_SESSION_NOISE = 0.03    # sigma_b when nothing measured it (at least)...
ASSUMED_PER_WITHIN = 2.0        # ...or this times the within-session spread: README figures
MIN_RUNS = 5                    # fewer runs in a session: no verdict
MIN_ROUNDS = 6                  # fewer paired rounds: no two-sided test can reach p < 0.05


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
                                            # "assumed"
    half_width_pct: float | None = None     # the interval's half width: changes within it
                                            # are not told from noise
    rounds: int = 0                         # paired method: rounds compared


# --------------------------------------------------------------------------- one session

@dataclass(frozen=True)
class SessionEstimate:
    """One session of one metric: its centre on the analysis scale and the centre's variance."""
    centre: float
    var: float
    n: int


def session_estimate(values: Sequence[float] | np.ndarray, log: bool) -> SessionEstimate:
    x = np.sort(np.asarray(values, dtype=float))
    if log:
        x = np.log(x)
    return SessionEstimate(float(np.median(x)), median_se(x) ** 2, len(x))


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

def between_variance(sides: Sequence[Sequence[SessionEstimate]]) -> tuple[float, int]:
    """sigma_b^2 from the sessions themselves: the pooled spread of their centres within each
    side, less the part their own sampling error explains; and its degrees of freedom."""
    df = sum(len(s) - 1 for s in sides)
    if df <= 0:
        return 0.0, 0
    ss = 0.0
    for side in sides:
        mean = sum(e.centre for e in side) / len(side)
        ss += sum((e.centre - mean) ** 2 for e in side)
    mean_v = float(np.mean([e.var for s in sides for e in s]))
    return max(0.0, ss / df - mean_v), df


def within_spread(sessions: Sequence[Sequence[float]], log: bool) -> float:
    """The pooled standard deviation of one run within a session (log scale: a fraction)."""
    parts = [np.var(np.log(s) if log else np.asarray(s, dtype=float), ddof=1)
             for s in sessions if len(s) > 1]
    return math.sqrt(float(np.mean(parts))) if parts else 0.0


def assumed_noise(sessions: Sequence[Sequence[float]], log: bool, scale: float) -> float:
    """sigma_b when nothing measured it, as a fraction: see the module docstring."""
    within = within_spread(sessions, log) / (scale or 1.0)
    return max(ASSUMED_SESSION_NOISE, ASSUMED_PER_WITHIN * within)


def sessions_test(base: Sequence[Sequence[float]], new: Sequence[Sequence[float]],
                  calibrated: SessionNoise | None = None) -> Outcome:
    """Each side a list of sessions (a list of runs each).  See the module docstring."""
    if not base or not new or not all(len(s) for s in [*base, *new]):
        raise ValueError("sessions_test needs at least one run in every session")
    log = positive(*base, *new)
    a = [session_estimate(s, log) for s in base]
    b = [session_estimate(s, log) for s in new]
    ya = sum(e.centre for e in a) / len(a)
    yb = sum(e.centre for e in b) / len(b)
    centre_a = math.exp(ya) if log else ya
    centre_b = math.exp(yb) if log else yb
    delta = yb - ya
    change = _pct(delta, ya, log)
    if all(len(s) == len(t) and np.array_equal(np.sort(s), np.sort(t))
           for s, t in zip(base, new)) and len(base) == len(new):
        # Identical samples (a file against itself): exactly no change, nothing to estimate.
        return Outcome("exact", log, centre_a, centre_b, 0.0 if change is not None else None,
                       0.0 if change is not None else None, 0.0 if change is not None else None,
                       1.0, False, rounds=0)

    measured, df_data = between_variance([a, b])
    # On the linear scale sigma_b (a fraction) is a fraction of the baseline's centre.
    scale = 1.0 if log else abs(ya)
    parts: list[tuple[float, int]] = []
    if df_data:
        parts.append((measured, df_data))
    if calibrated is not None and calibrated.df:
        parts.append(((calibrated.sigma * scale) ** 2, calibrated.df))
    if parts:
        df: float = sum(d for _, d in parts)
        var_b = sum(v * d for v, d in parts) / df
        source = "+".join(s for s, ok in (("measured", df_data), ("calibrated", calibrated
                                          is not None and calibrated.df)) if ok)
        q = float(sps.t.ppf(1 - ALPHA / 2, df))
    else:
        var_b = (assumed_noise([*base, *new], log, scale) * scale) ** 2
        source, df, q = "assumed", math.inf, Z
    se2 = var_b * (1 / len(a) + 1 / len(b)) \
        + float(np.mean([e.var for e in a])) / len(a) + float(np.mean([e.var for e in b])) / len(b)
    se = math.sqrt(se2)
    if se == 0.0:       # no noise at all on either side, yet different: nothing to test
        p = 0.0 if delta else 1.0
    else:
        tstat = abs(delta) / se
        p = float(2 * (sps.t.sf(tstat, df) if math.isfinite(df) else sps.norm.sf(tstat)))
    lo, hi = delta - q * se, delta + q * se
    ci_low, ci_high = _pct(lo, ya, log), _pct(hi, ya, log)
    significant = bool(p < ALPHA and (lo > 0 or hi < 0))
    sigma_pct = math.sqrt(var_b) / scale * 100.0 if scale else None
    half = (q * se / scale * 100.0) if scale else None
    return Outcome("sessions", log, centre_a, centre_b, change, ci_low, ci_high, p, significant,
                   noise_pct=sigma_pct, noise_source=source, half_width_pct=half)


# --------------------------------------------------------------------------- paired rounds

def _walsh_count_le(d: np.ndarray, t: float) -> int:
    """How many Walsh averages (d_i + d_j) / 2, i <= j, are at most t (d sorted)."""
    j = np.searchsorted(d, 2 * t - d, side="right")        # d_j <= 2t - d_i
    return int(np.maximum(j - np.arange(len(d)), 0).sum())


def walsh_quantile(d: np.ndarray, k: int) -> float:
    """The k-th smallest (1-based) Walsh average of sorted d, by bisection on counts."""
    lo, hi = float(d[0]), float(d[-1])
    if _walsh_count_le(d, lo) >= k:
        return lo
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if _walsh_count_le(d, mid) >= k:
            hi = mid
        else:
            lo = mid
    return hi


def _signed_rank_lower(n: int) -> int:
    """The Wilcoxon signed-rank critical count k: the interval [W_(k), W_(N-k+1)] of the Walsh
    averages covers with probability >= 95%.  Exact for n <= 60, normal beyond."""
    total = n * (n + 1) // 2
    if n <= 60:
        counts = np.zeros(total + 1)            # the null distribution of T+, by counting
        counts[0] = 1.0
        for r in range(1, n + 1):
            counts[r:] = counts[r:] + counts[:-r].copy()
        cdf = np.cumsum(counts) / 2.0 ** n
        # largest k with P(T+ <= k - 1) <= alpha / 2
        k = int(np.searchsorted(cdf, ALPHA / 2, side="right"))
        return max(k, 1)
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    return max(1, int(math.floor(total / 2 - Z * sd)))


def paired_test(base: Sequence[float], new: Sequence[float]) -> Outcome:
    """Run i of `base` against run i of `new`: one round of an interleaved batch each."""
    n = min(len(base), len(new))
    if n == 0:
        raise ValueError("paired_test needs at least one round")
    x = np.asarray(base[:n], dtype=float)
    y = np.asarray(new[:n], dtype=float)
    log = positive(x, y)
    mx, my = float(np.median(x)), float(np.median(y))
    change = (my / mx - 1.0) * 100.0 if mx else (0.0 if my == mx else None)
    d = np.sort(np.log(y) - np.log(x) if log else y - x)
    if not d.any():
        return Outcome("exact", log, mx, my, change, 0.0 if change is not None else None,
                       0.0 if change is not None else None, 1.0, False, rounds=n)
    if n < 2:
        return Outcome("paired", log, mx, my, change, None, None, None, False, rounds=n)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(sps.wilcoxon(d, zero_method="wilcox").pvalue)
    if not math.isfinite(p):
        p = 1.0
    k = _signed_rank_lower(n)
    total = n * (n + 1) // 2
    lo, hi = walsh_quantile(d, k), walsh_quantile(d, total - k + 1)
    base_centre = 0.0 if log else mx
    ci_low, ci_high = _pct(lo, base_centre, log), _pct(hi, base_centre, log)
    significant = bool(n >= MIN_ROUNDS and p < ALPHA and (lo > 0 or hi < 0))
    half = None
    if ci_low is not None and ci_high is not None:
        half = (ci_high - ci_low) / 2
    return Outcome("paired", log, mx, my, change, ci_low, ci_high, p, significant,
                   half_width_pct=half, rounds=n)


# --------------------------------------------------------------------------- planning

def detectable_pct(sigma_b: float, v: float, sessions: int = 1, df: float = math.inf,
                   power: float = 0.8) -> float:
    """The smallest change (in %) that `sessions` sessions a side, each with sampling variance
    `v` of its log-median, find with `power` at alpha 0.05 (two-sided)."""
    se = math.sqrt(2 * (sigma_b ** 2 + v) / sessions)
    if math.isfinite(df):
        q = float(sps.t.ppf(1 - ALPHA / 2, df) + sps.t.ppf(power, df))
    else:
        q = float(Z + sps.norm.ppf(power))
    return math.expm1(q * se) * 100.0
