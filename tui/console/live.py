"""The live model of one run in the console: samples in, numbers out.

Plain Python (no Textual): the session worker feeds it one sample at a time
and the panels read it when they redraw, at most ~10 times a second.  It keeps
running sums and a sorted copy so that a redraw costs O(buckets · log n), not
O(n), even at thousands of runs.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hotloop.stats import (
    SESSION_OFFSET_BOUND,
    UNTIL_CI_MIN_RUNS,
    Bucket,
    RunningStats,
    Summary,
    assumed_session_noise,
    detectable_pct,
    median_ci_pct,
    median_se,
    upper_variance,
)

if TYPE_CHECKING:
    from hotloop.analysis.noise import MetricNoise

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
        self.state = "building"         # building | booting (a VM) | running | finished | stopped | failed
        self.result_file = ""
        self.values: list[float] = []      # in the order they ran (the drift plot)
        self.stats = RunningStats()
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
        self.stats.add(value)

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
        return self.state in ("building", "booting", "running")

    def summary(self) -> Summary | None:
        return self.stats.summary()

    def precision_pct(self) -> float | None:
        """How well the median is known so far: its 95% interval reaches +-this %."""
        return median_ci_pct(self.stats.sorted)

    def detectable(self) -> float | None:
        """The smallest change (%) that compare would find, with at least 80% power, between
        this session and another like it: with the calibrated session noise moved to the runs
        so far, planned on its 90% upper bound (the calibration is itself uncertain: on its
        point value, t.975 + t.8 gave 72-83% real power; benchmarks/detect_power.py), or else
        the largest plausible session offset compare calls beyond; None before 6 runs or
        with values not all above 0."""
        s = self.stats.sorted
        n = len(s)
        if n < 6 or s[0] <= 0:
            return None
        if self.noise is not None:
            bound = upper_variance(self.noise.session_var, self.noise.df)
            return detectable_pct(self.noise.at(n, bound), 1, self.noise.df)
        within = self.stats.robust_log_spread()     # as compare bounds it
        offset = max(SESSION_OFFSET_BOUND, assumed_session_noise(within))
        return detectable_pct(offset ** 2 + median_se(s, log=True) ** 2)

    def noisier_than_offsets(self) -> bool:
        """Whether the runs spread so much that compare's offset bound grows past its 25%
        (twice their spread): "too noisy to call" says more there than a figure."""
        return assumed_session_noise(self.stats.robust_log_spread()) > SESSION_OFFSET_BOUND

    def runs_to_target(self) -> int | None:
        """Runs still needed for the median to be known to +-until_ci %; 0 once it is, and
        never before the session itself would stop (UNTIL_CI_MIN_RUNS)."""
        now = self.precision_pct()
        if self.until_ci is None or now is None:
            return None
        short = UNTIL_CI_MIN_RUNS - self.n
        if now <= self.until_ci:
            return max(0, short)
        return max(1, short, math.ceil(self.n * (now / self.until_ci) ** 2) - self.n)

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
        return self.stats.histogram(target)

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
