"""Summaries and histograms of repetitions, and SI formatting for people."""
from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Sequence


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
    return Summary(len(values), statistics.median(values), mean, stdev,
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


def detectable_pct(sigma_b: float, v: float, sessions: int = 1) -> float:
    """The smallest change (in %) that `sessions` sessions a side find with 80% power at
    alpha 0.05, each with session noise sigma_b and median sampling variance v (log scale),
    normal quantiles: the live panel's figure, before any degrees of freedom."""
    return math.expm1((Z95 + Z80) * math.sqrt(2 * (sigma_b ** 2 + v) / sessions)) * 100.0


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
    power = 10 ** math.floor(math.log10(raw))
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


_PREFIXES = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""), (1e-3, "m"),
             (1e-6, "µ"), (1e-9, "n")]


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """12345678 B/s -> '12.3 MB/s'; per-op units stay unprefixed below 10k."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    if "/op" in unit and abs(value) < 1e4:     # 3694 ns/op, 87.7 ns/op, 0.142 ns/op
        decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))
        return f"{value:.{decimals}f} {unit}".strip()
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            scaled = value / scale
            decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(scaled)))))
            return f"{scaled:.{decimals}f} {prefix}{unit}".strip()
    return f"{value:.3g} {unit}".strip()


def si_range(lo: float, hi: float, unit: str = "", digits: int = 3) -> str:
    """'15.6-22.7 MB/s': both ends on the scale of the larger, the unit once."""
    top = max(abs(lo), abs(hi))
    if not (math.isfinite(lo) and math.isfinite(hi)) or top == 0:
        return f"{si(lo, unit)} - {si(hi, unit)}"
    if "/op" in unit and top < 1e4:
        scale, prefix = 1.0, ""
    else:
        scale, prefix = next(((sc, p) for sc, p in _PREFIXES if top >= sc), (1e-9, "n"))
    decimals = max(0, digits - 1 - int(math.floor(math.log10(top / scale))))
    return f"{lo / scale:.{decimals}f}-{hi / scale:.{decimals}f} {prefix}{unit}".strip()


def bucket_labels(buckets: Sequence[Bucket], unit: str = "") -> list[str]:
    """'13-14 MB/s' style labels, one SI scale for all, as precise as the width needs."""
    if not buckets:
        return []
    top = max(abs(b.high) for b in buckets) or 1.0
    if "/op" in unit and top < 1e4:
        scale, prefix = 1.0, ""
    else:
        scale, prefix = next(((sc, p) for sc, p in _PREFIXES if top >= sc), (1e-9, "n"))
    width = (buckets[0].high - buckets[0].low) / scale
    decimals = max(0, -math.floor(math.log10(width) + 1e-9)) if width > 0 else 0
    return [f"{b.low / scale:.{decimals}f}-{b.high / scale:.{decimals}f} {prefix}{unit}".strip()
            for b in buckets]


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"
