"""Statistics of repetitions: summaries, the median's precision, session noise, histograms, and
the running statistics a live view keeps as runs arrive."""
from __future__ import annotations

import bisect
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    stdev: float
    cv: float                 # stdev / mean, as a fraction
    min: float
    max: float

    def to_json(self) -> dict[str, float]:
        return asdict(self)


def summarize(values: Sequence[float]) -> Summary | None:
    if not values:
        return None
    mean = statistics.fmean(values)
    stdev = statistics.stdev(values) if len(values) > 1 else 0.0
    np = sys.modules.get("numpy")       # loaded (compare): the same median, without a list of
    median = float(np.median(np.asarray(values, dtype=float))) if np is not None \
        else statistics.median(values)  # a float object a run (300,000 runs a side)
    return Summary(len(values), median, mean, stdev,
                   stdev / mean if mean else 0.0, min(values), max(values))


# --------------------------------------------------------------------------- the median's precision

Z95 = 1.959963984540054                 # two-sided 95%
Z80 = 0.8416212335729143                # one-sided 80%: the power a "detectable" change has


def median_se(s: Sequence[float], log: bool = False) -> float:
    """Standard error of the median of sorted values from two order statistics
    (McKean-Schrader): distribution-free, so a bimodal sample gets the wide error it deserves.
    With `log`, of the median of the values' logarithms (values above 0), without taking the
    logarithm of every value."""
    n = len(s)
    if n < 2:
        return 0.0
    c = max(1, int(round((n + 1) / 2 - Z95 * math.sqrt(n / 4))))
    lo, hi = float(s[c - 1]), float(s[n - c])
    if log:
        lo, hi = math.log(lo), math.log(hi)
    return (hi - lo) / (2 * Z95)


def _median_rank(n: int) -> int:
    """k such that [x_(k), x_(n-k+1)] covers the median with >= 95% (sign test)."""
    if n > 200:
        return max(1, int(math.floor((n - Z95 * math.sqrt(n)) / 2)))
    cdf, k, total = 0.0, 0, 2 ** n
    while True:                         # largest k with P(B <= k - 1) <= 2.5%
        cdf += math.comb(n, k) / total
        if cdf > 0.025:
            return max(1, k)
        k += 1


def median_ci(s: Sequence[float]) -> tuple[float, float]:
    """Distribution-free 95% interval of the median of sorted values; with fewer than
    6 values it is their whole range."""
    n = len(s)
    k = _median_rank(n)
    return float(s[k - 1]), float(s[n - k])


UNTIL_CI_MIN_RUNS = 10                  # until_ci never stops a session on fewer runs


def median_ci_pct(s: Sequence[float]) -> float | None:
    """How far (in %) the 95% interval of the median reaches from it: "known to +-x%"."""
    n = len(s)
    if n < 6:
        return None
    m = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    if not m:
        return None
    lo, hi = median_ci(s)
    return 100.0 * max(m - lo, hi - m) / abs(m)


def robust_spread(s: Sequence[float], log: bool = False) -> float:
    """The spread of one run, robustly: the interquartile range of sorted values (of their
    logarithms with `log`, values above 0) over 1.349, the standard deviation for normal
    runs.  A few runs far out (5% of runs 3x slower) leave it where it was; they made the
    plain standard deviation, and the session noise assumed from it, ten times larger."""
    n = len(s)
    if n < 2:
        return 0.0

    def q(p: float) -> float:           # linear interpolation, as numpy's default
        h = (n - 1) * p
        lo = int(math.floor(h))
        hi = min(lo + 1, n - 1)
        a, b = (math.log(s[lo]), math.log(s[hi])) if log else (float(s[lo]), float(s[hi]))
        return a + (h - lo) * (b - a)
    return (q(0.75) - q(0.25)) / 1.3489795003921634


MIN_RUNS = 5                            # fewer runs in a session: no verdict, no calibration
# The largest offset a session (or a boot) plausibly carries, as a standard deviation of its
# log-median: where nothing measured the sessions' noise, a change is called only beyond what
# offsets this large could make (two sessions: a doubling or a halving at 95%).  Chosen by
# simulation through compare's code (benchmarks/sensitivity.py --bound): one session a side,
# A/A 4.3% for sessions 25% apart and 2.2% at 20% (20% as a bound: 5.2% at 20%, no margin),
# while sessions measured here differed by at most 17% (under load); +700% called always.
SESSION_OFFSET_BOUND = 0.25
ASSUMED_SESSION_NOISE = 0.03            # session-to-session noise nothing measured: at least,
ASSUMED_PER_WITHIN = 2.0                # or this times the spread of runs within a session
# An interval this wide (half width, %) that holds 0 is no verdict: a change it could call
# would be half the value again (the assumed noise of runs spread 35% was ±214%).  Saying
# "within noise (±214%)" told a newcomer nothing; compare and the console say "too noisy".
TOO_NOISY_PCT = 50.0


def assumed_session_noise(within: float) -> float:
    """sigma_b (a fraction) when nothing measured it, from the spread of runs within the
    sessions: on this project's machine sessions differed by up to that much (docs/statistics.md)."""
    return max(ASSUMED_SESSION_NOISE, ASSUMED_PER_WITHIN * within)


# Student t quantiles for df 1-30 (scipy's, to 4 decimals): the console computes with them
# without loading scipy; beyond 30 the Cornish-Fisher expansion is within 0.1%.
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.306, 2.2622, 2.2281,
         2.201, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.093, 2.086, 2.0796,
         2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)
_T80 = (1.3764, 1.0607, 0.9785, 0.941, 0.9195, 0.9057, 0.896, 0.8889, 0.8834, 0.8791, 0.8755,
        0.8726, 0.8702, 0.8681, 0.8662, 0.8647, 0.8633, 0.862, 0.861, 0.86, 0.8591, 0.8583,
        0.8575, 0.8569, 0.8562, 0.8557, 0.8551, 0.8546, 0.8542, 0.8538)


def t_quantile(p: float, df: float) -> float:
    """The Student t quantile for p = 0.975 or 0.8 (a normal one for infinite df)."""
    z, table = {0.975: (Z95, _T975), 0.8: (Z80, _T80)}[p]
    if not math.isfinite(df):
        return z
    if df < 1:
        raise ValueError(f"no t quantile for {df} degrees of freedom")
    if df <= len(table) and df == int(df):
        return table[int(df) - 1]
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def upper_variance(var: float, df: float, level: float = 0.9) -> float:
    """An upper `level` confidence bound of a variance estimated with `df` degrees of
    freedom (chi-square; its quantile by Wilson-Hilferty, within 1% from df 7, without
    scipy): what the planner plans on, so a figure stated from a calibration holds even if
    the calibration came out low."""
    if not math.isfinite(df):
        return var
    z = {0.9: -1.2815515655446004, 0.95: -1.6448536269514722}[level]
    h = 2 / (9 * df)
    q = df * (1 - h + z * math.sqrt(h)) ** 3
    return var * df / q


def detectable_pct(tau2: float, sessions: int = 1, df: float = math.inf) -> float:
    """The smallest change (in %) that `sessions` sessions a side find with about 80% power
    at alpha 0.05, when one session's log-median varies by tau2 and the interval has `df`
    degrees of freedom: the console's quick figure, without scipy.  t.975 + t.8 is exact
    for infinite df, 79.8% from df 7 (a calibration's least), 73-79% at df 1-4; the planner
    uses the exact one (analysis.significance.detectable_pct)."""
    q = t_quantile(0.975, df) + t_quantile(0.8, df)
    try:
        return math.expm1(q * math.sqrt(2 * tau2 / sessions)) * 100.0
    except OverflowError:
        return math.inf


@dataclass(frozen=True)
class Bucket:
    low: float                # inclusive
    high: float               # exclusive
    count: int
    percent: float


def nice_width(span: float, target: int = 10) -> float:
    """A 1, 2 or 5 times a power of ten bucket width giving about `target` buckets."""
    if span <= 0:
        return 1.0
    raw = span / target
    power: float = 10 ** math.floor(math.log10(raw))     # an int where it is one, as before
    for step in (1, 2, 5, 10):
        if raw <= step * power:
            return step * power
    return 10 * power


def edges(values: Sequence[float], target: int = 10) -> tuple[float, float]:
    """(first edge, width) of buckets aligned to multiples of a nice width."""
    lo, hi = min(values), max(values)
    width = nice_width(hi - lo if hi > lo else abs(hi) * 0.01 or 1.0, target)
    return math.floor(lo / width) * width, width


def histogram(values: Sequence[float], target: int = 10,
              shape: tuple[float, float] | None = None) -> list[Bucket]:
    """Counts per bucket; empty buckets inside the range are kept (gaps show)."""
    if not values:
        return []
    start, width = shape or edges(values, target)
    counts: dict[int, int] = {}
    for v in values:
        i = int(math.floor((v - start) / width + 1e-9))
        counts[i] = counts.get(i, 0) + 1
    n = len(values)
    return [Bucket(start + i * width, start + (i + 1) * width, counts.get(i, 0),
                   100.0 * counts.get(i, 0) / n)
            for i in range(min(counts), max(counts) + 1)]


class RunningStats:
    """The statistics of runs as they arrive, each costing O(log n) to add and O(buckets · log n)
    to read, so a live view redraws as fast at a million runs as at ten: running sums
    (Welford) of the values and of their logarithms, and a sorted copy."""

    def __init__(self) -> None:
        self.sorted: list[float] = []
        self._mean = self._m2 = 0.0
        self._log_mean = self._log_m2 = 0.0

    @property
    def n(self) -> int:
        return len(self.sorted)

    def add(self, value: float) -> None:
        bisect.insort(self.sorted, value)
        n = len(self.sorted)
        delta = value - self._mean
        self._mean += delta / n
        self._m2 += delta * (value - self._mean)
        if value > 0:
            lv = math.log(value)
            delta = lv - self._log_mean
            self._log_mean += delta / n
            self._log_m2 += delta * (lv - self._log_mean)

    def summary(self) -> Summary | None:
        s, n = self.sorted, len(self.sorted)
        if not n:
            return None
        median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
        stdev = math.sqrt(self._m2 / (n - 1)) if n > 1 else 0.0
        mean = self._mean
        return Summary(n, median, mean, stdev, stdev / mean if mean else 0.0, s[0], s[-1])

    def log_spread(self) -> float:
        """The standard deviation of the values' logarithms (values above 0 only)."""
        n = len(self.sorted)
        return math.sqrt(self._log_m2 / (n - 1)) if n > 1 else 0.0

    def robust_log_spread(self) -> float:
        """`robust_spread` of the values' logarithms (values above 0 only)."""
        i = bisect.bisect_right(self.sorted, 0.0)
        return robust_spread(self.sorted[i:], log=True)

    def histogram(self, target: int = 10) -> list[Bucket]:
        """What `histogram` gives for these values, counted by bisecting the sorted copy."""
        s = self.sorted
        if not s:
            return []
        start, width = edges((s[0], s[-1]), target)
        count = int(math.floor((s[-1] - start) / width + 1e-9)) + 1
        n = len(s)
        out, below = [], 0
        for i in range(count):
            edge = start + (i + 1) * width
            upto = n if i == count - 1 else bisect.bisect_left(s, edge - width * 1e-9)
            c = upto - below
            out.append(Bucket(start + i * width, edge, c, 100.0 * c / n))
            below = upto
        return out
