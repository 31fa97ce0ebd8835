"""What a comparison holds: its sides, each later side's pair with the baseline, a row (a
MetricDelta) per metric with its Test and Verdict, the header fields that differ, and its
warnings as records (analysis.compare_warnings).  analysis.compare builds it; render words it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from hotloop.analysis import noise as noise_mod
from hotloop.analysis.compare_warnings import CompareWarning, DiffersBeyondKernel, MetaDiff
from hotloop.analysis.metrics import SPEED
from hotloop.analysis.symbols import Explained, SymbolDelta
from hotloop.record import compared_fields
from hotloop.stats import Summary


class Verdict(enum.Enum):
    """What the test of one metric found.  The numbers behind it are the Test's; the words,
    which depend on the metric's kind (faster, better, higher), are render.verdicts'."""
    GOOD = "good"                       # a change the metric's good way, its interval clear of 0
    BAD = "bad"
    UP = "up"                           # the same for a metric with no good way
    DOWN = "down"
    WITHIN_NOISE = "within noise"       # the interval holds 0: Test.half_width_pct wide
    NO_CHANGE = "no change"
    TOO_FEW_RUNS = "too few runs"       # fewer than MIN_RUNS a session
    TOO_FEW_ROUNDS = "too few rounds"   # paired, fewer than MIN_ROUNDS
    TOO_FEW_PROCESSES = "too few processes"     # paired, fewer than MIN_PROCESSES
    NO_TEST = "no test"                 # one value a side
    TOO_NOISY = "too noisy"             # the interval holds 0 and is wider than
                                        # TOO_NOISY_PCT either way: no change could be told
    NOT_AFTER_CORRECTION = "not after correction"   # called alone, not once corrected for
                                                    # the number of sides (Holm)
    ACROSS_BOOTS = "across boots"       # one boot a side, a reboot between, and nothing
                                        # (no second boot, no calibration across reboots)
                                        # measured what a reboot moves
    ONE_A_SIDE = "one session a side"   # one session a side, nothing measured how much
                                        # sessions differ, and the change not beyond any
                                        # session's plausible offset: no verdict, no
                                        # direction (sessions 6% apart showed "faster?" on
                                        # 30% of A/A pairs)
    BEYOND_ASSUMED = "one session a side"   # its old name (an alias): kept for callers

    @property
    def called(self) -> bool:
        """A change found, in one direction."""
        return self in (Verdict.GOOD, Verdict.BAD, Verdict.UP, Verdict.DOWN)

    @property
    def judged(self) -> bool:
        """A test was made: a change found, or none beyond the noise (or none once
        corrected for the number of sides).  What compare --fail-on needs to pass a side."""
        return self.called or self in (Verdict.WITHIN_NOISE, Verdict.NO_CHANGE,
                                       Verdict.NOT_AFTER_CORRECTION)

METHODS = {
    "sessions": "sessions as replicates: t interval on session log-medians, session noise "
                "from the sessions and the noise profile",
    "paired": "paired rounds of one interleaved batch: per worker process, the Hodges-Lehmann "
              "estimate of the per-round log ratios; a t interval over the processes",
    # series: analysis.series_pairs
    "pairs": "paired sessions of one series: session i of each side ran side by side; a t "
             "interval on the per-pair differences of session log-medians",
    "exact": "identical samples",
    "none": "one value each, no test",
}


@dataclass(frozen=True)
class SideText:
    """A side's names as its files hold them: what JSON carries (JSON escapes a control
    character itself).  Side's own fields are these made `visible`, for a terminal."""
    name: str = ""
    label: str = ""
    kernel: str = ""
    variant: str = ""


@dataclass(frozen=True)
class Side:
    """One compared side: one session or several, as the report names it."""
    index: int                          # 0 = the baseline
    name: str                           # unique among the compared sides
    label: str                          # the kernel profile's label ("stock")
    kernel: str                         # kernel release(s)
    file: str                           # as given: a file, a directory, or files joined by ","
    variant: str
    runs: int                           # over all its sessions
    partial: bool
    partial_reason: str
    summary: Summary | None             # of all its runs, pooled
    files: tuple[str, ...] = ()         # one per session
    sessions: int = 1
    text: SideText = SideText()         # name, label, kernel, variant unescaped


@dataclass(frozen=True)
class Test:
    """Two sides of one metric compared (no names: the statistics' answer, worded)."""
    n_baseline: int                     # runs (or, per session metrics, sessions)
    n_new: int
    baseline: float                     # the side's centre
    new: float
    diff: float                         # new - baseline; paired: baseline * change_pct / 100
    change_pct: float | None            # (new / baseline - 1) * 100; None if baseline is 0
    ci_low: float | None                # 95% CI of change_pct
    ci_high: float | None
    p_value: float | None
    significant: bool
    verdict: Verdict
    method: str = "sessions"            # a key of METHODS
    sessions_baseline: int = 1
    sessions_new: int = 1
    session_noise_pct: float | None = None  # the calibrated session noise used, else None
    noise_pct: float | None = None      # the session noise the interval used (any source)
    noise_source: str | None = None     # measured / calibrated / measured+calibrated / assumed
    half_width_pct: float | None = None     # the interval's half width (within noise: how wide)
    p_adjusted: float | None = None     # the primary metric: p corrected for the sides (Holm)
    correction: str = "none"            # "holm" when several sides were corrected together
    family: int = 1                     # how many sides' tests were corrected together
    spread_pct: float | None = None     # the runs' robust spread within a session, %
    runs_pct: float | None = None       # the runs' part of a session centre's spread, %
    noise_check: dict[str, Any] | None = None   # the calibration against the sessions
    boots: str = ""                     # analysis.boots: "one boot", "across boots",
                                        # "boots unknown"; "" when nobody asked (samples)
    boots_baseline: int = 0             # the replicates a side: boots across boots,
    boots_new: int = 0                  # sessions within one
    calibration: str | None = None      # why a profile was not used for this row, if so
    df: float | None = None             # the interval's degrees of freedom (inf: normal)
    log: bool = True                    # the change is a ratio (else a difference)
    ci_low_alone: float | None = None   # corrected for several sides (Holm), ci_low and
    ci_high_alone: float | None = None  # ci_high are the adjusted interval; these its own


@dataclass(frozen=True)
class MetricDelta:
    """One row of the comparison table."""
    metric: str
    unit: str
    higher_is_better: bool | None
    test: Test
    kind: str = SPEED                   # how the verdict is worded (metrics.SPEED...)
    primary: bool = False               # the workload's own metric: the one verdict a side
                                        # gets (the rest are exploratory)


@dataclass
class Pair:
    """The baseline against one later side."""
    baseline: Side
    new: Side
    metrics: list[MetricDelta]
    metadata: list[MetaDiff]
    symbols: list[SymbolDelta] | None   # None unless both sides have session hot symbols
    method: str = "sessions"            # how the primary metric was tested
    # the differential profile (analysis.symdiff): the worker CPU ns/op change split into
    # the top symbols' and the rest (None without a cost per op on both sides, and why)
    explained: Explained | None = None
    symbol_note: str = ""               # why the rows have no cost per op, if so
    symbols_tested: int = 0             # the rows whose q-values were computed together


@dataclass(frozen=True)
class SharedBucket:
    low: float
    high: float
    counts: tuple[int, ...]             # one per compared side, in order
    percents: tuple[float, ...]


@dataclass
class SharedHistogram:
    metric: str
    unit: str
    start: float
    width: float
    buckets: list[SharedBucket]


@dataclass
class Comparison:
    workload: str
    metric: str
    unit: str
    higher_is_better: bool
    sides: list[Side]                   # [0] is the baseline
    pairs: list[Pair] = field(default_factory=list)
    histogram: SharedHistogram | None = None
    warnings: list[CompareWarning] = field(default_factory=list)     # render.warning_words
    noise: noise_mod.NoiseProfile | None = None     # the calibration used, if any
    batch: bool = False                 # the variants of one batch: they differ by design

    @property
    def baseline(self) -> Side:
        return self.sides[0]

    @property
    def single(self) -> bool:
        """One side only: the comparison just carries its summary."""
        return not self.pairs


# --------------------------------------------------------------------------- metadata words

def meta_value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):             # perf, boost, strict: words, not Python's True
        return "on" if v else "off"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(map(str, v)) + "]"
    s = str(v)
    return s[:12] if len(s) == 64 and all(c in "0123456789abcdef" for c in s) else s


def meta_text(d: MetaDiff) -> str:
    return f"{d.field} {meta_value(d.baseline)} -> {meta_value(d.new)}"


def meta_warning(p: Pair) -> DiffersBeyondKernel:
    return DiffersBeyondKernel(side=p.new.name, differences=tuple(p.metadata))


def _get(header: dict[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = header
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


def metadata_diff(base: dict[str, Any], new: dict[str, Any],
                  kernel: bool = False) -> list[MetaDiff]:
    """Header fields other than the kernel that differ between two results (and the kernel
    too with `kernel`: the sessions of one side should all be of one)."""
    out: list[MetaDiff] = []
    for name, path in compared_fields(within_side=kernel):
        a, b = _get(base, path), _get(new, path)
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(a.keys() | b.keys()):
                if a.get(key) != b.get(key):
                    out.append(MetaDiff(f"{name}.{key}", a.get(key), b.get(key)))
        elif a != b:
            out.append(MetaDiff(name, a, b))
    return out
