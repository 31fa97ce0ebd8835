"""The live model of one run in the console: samples in, numbers out.

Plain Python (no Textual): the session worker feeds it one sample at a time
and the panels read it when they redraw, at most ~10 times a second.  It keeps
running sums and a sorted copy so that a redraw costs O(buckets · log n), not
O(n), even at thousands of runs.
"""
from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tui.stats import (Bucket, Summary, assumed_session_noise, detectable_pct, median_ci_pct,
                       median_se, nice_width)

if TYPE_CHECKING:
    from tui.noise import MetricNoise

_PREFIXES = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"),
             (1e-6, "µ"), (1e-9, "n")]


def axis_scale(top: float, unit: str) -> tuple[float, str]:
    """(divisor, label) so values on an axis read as e.g. '12.5' with 'MB/s'."""
    top = abs(top)
    if ("/op" in unit and top < 1e4) or top == 0 or not math.isfinite(top):
        return 1.0, unit
    for scale, prefix in _PREFIXES:
        if top >= scale:
            return scale, f"{prefix}{unit}"
    return 1e-9, f"n{unit}"


@dataclass
class Drift:
    xs: list[float]
    ys: list[float]


class LiveRun:
    """What the panels show about the session in progress (or just ended)."""

    def __init__(self, plan_name: str, runs: int, warmup: int, unit: str,
                 higher_is_better: bool = True, perf: bool = True,
                 until_ci: float | None = None):
        self.plan_name = plan_name
        self.runs = runs
        self.warmup = warmup
        self.unit = unit
        self.higher_is_better = higher_is_better
        self.perf = perf
        self.until_ci = until_ci        # stop once the median is known to +-this %
        self.noise: MetricNoise | None = None       # the calibration of what runs, if any
        self.state = "building"         # building | running | finished | stopped | failed
        self.result_file = ""
        self.values: list[float] = []
        self._sorted: list[float] = []
        self._mean = 0.0
        self._m2 = 0.0
        self._log_mean = 0.0            # the same running sums of the values' logarithms:
        self._log_m2 = 0.0              # the spread of runs that compare's assumed noise uses
        self.warmups_done = 0
        self.started_at = time.monotonic()
        self.first_at: float | None = None  # first sample (warmup or not)
        self.last_at: float | None = None
        self.ended_at: float | None = None
        self.dirty = True

    # --- feeding -----------------------------------------------------------

    def add(self, value: float, warmup: bool = False) -> None:
        now = time.monotonic()
        if self.first_at is None:
            self.first_at = now
        self.last_at = now
        self.state = "running"
        self.dirty = True
        if warmup:
            self.warmups_done += 1
            return
        self.values.append(value)
        bisect.insort(self._sorted, value)
        n = len(self.values)
        delta = value - self._mean
        self._mean += delta / n
        self._m2 += delta * (value - self._mean)
        if value > 0:
            lv = math.log(value)
            delta = lv - self._log_mean
            self._log_mean += delta / n
            self._log_m2 += delta * (lv - self._log_mean)

    def end(self, state: str) -> None:
        self.state = state
        self.ended_at = time.monotonic()
        self.dirty = True

    # --- reading -----------------------------------------------------------

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def running(self) -> bool:
        return self.state in ("building", "running")

    def summary(self) -> Summary | None:
        n = len(self.values)
        if not n:
            return None
        s = self._sorted
        median = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
        stdev = math.sqrt(self._m2 / (n - 1)) if n > 1 else 0.0
        mean = self._mean
        return Summary(n, median, mean, stdev, stdev / mean if mean else 0.0, s[0], s[-1])

    def precision_pct(self) -> float | None:
        """How well the median is known so far: its 95% interval reaches +-this %."""
        return median_ci_pct(self._sorted)

    def detectable(self) -> float | None:
        """The smallest change (%) that compare would call, with 80% power, between this
        session and another like it: with the calibrated session noise moved to the runs so
        far, or else the noise compare would assume; None before 6 runs or with values not
        all above 0."""
        s = self._sorted
        n = len(s)
        if n < 6 or s[0] <= 0:
            return None
        if self.noise is not None:
            return detectable_pct(self.noise.at(n), 1, self.noise.df)
        within = math.sqrt(self._log_m2 / (n - 1))
        return detectable_pct(assumed_session_noise(within) ** 2 + median_se(s, log=True) ** 2)

    def runs_to_target(self) -> int | None:
        """Runs still needed for the median to be known to +-until_ci %; 0 once it is."""
        now = self.precision_pct()
        if self.until_ci is None or now is None:
            return None
        if now <= self.until_ci:
            return 0
        return max(1, math.ceil(self.n * (now / self.until_ci) ** 2) - self.n)

    def elapsed(self) -> float:
        return (self.ended_at or time.monotonic()) - self.started_at

    def eta(self) -> float | None:
        """Seconds left, from the pace of the repetitions so far; None before two."""
        if not self.running or self.first_at is None or self.last_at is None:
            return None
        done = self.n + self.warmups_done
        left = self.runs_to_target()        # until_ci: it may stop before its last run
        total = self.warmup + (self.runs if left is None else min(self.runs, self.n + left))
        if done < 2:
            return None
        pace = (self.last_at - self.first_at) / (done - 1)
        return max(0.0, pace * (total - done) - (time.monotonic() - self.last_at))

    def histogram(self, target: int = 10) -> list[Bucket]:
        """Like stats.histogram (nice widths, empty buckets kept), from the sorted copy."""
        s = self._sorted
        if not s:
            return []
        lo, hi = s[0], s[-1]
        width = nice_width(hi - lo if hi > lo else abs(hi) * 0.01 or 1.0, target)
        start = math.floor(lo / width) * width
        count = int(math.floor((hi - start) / width + 1e-9)) + 1
        n = len(s)
        out, below = [], 0
        for i in range(count):
            edge = start + (i + 1) * width
            upto = n if i == count - 1 else bisect.bisect_left(s, edge - width * 1e-9)
            c = upto - below
            out.append(Bucket(start + i * width, edge, c, 100.0 * c / n))
            below = upto
        return out

    def drift(self, points: int) -> Drift:
        """Run-by-run values (1-based x), averaged in groups beyond `points` points."""
        v = self.values
        points = max(2, points)
        if len(v) <= points:
            return Drift([float(i + 1) for i in range(len(v))], list(v))
        step = len(v) / points
        xs, ys = [], []
        for k in range(points):
            a, b = int(k * step), max(int((k + 1) * step), int(k * step) + 1)
            chunk = v[a:b]
            xs.append((a + b + 1) / 2)
            ys.append(sum(chunk) / len(chunk))
        return Drift(xs, ys)
