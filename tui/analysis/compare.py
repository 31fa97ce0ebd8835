"""Compare results: baseline (the first side) against each later side.

A side is one result file, a directory (every result file in it is one session of that side) or
several files joined by commas: the sessions of one kernel, say.  For every metric the files
recorded (the workload's primary metric, ns/op, cycles/op where the CPU counted cycles, each
`extra` value such as user_s, sys_s or latency percentiles, and perf counters) a comparison row
holds the two sides' centres, the difference, the % change, a 95% confidence interval of it, a
p-value and a verdict, from the method that fits how the runs were taken (hotloop.analysis.significance):

* separate sessions (the usual case: stock and patched kernels with a reboot between): the
  session is the unit of replication; the session-to-session noise comes from the sides' own
  sessions and from this machine's noise profile (`hotloop calibrate`), found by the files'
  headers or given with `--noise FILE`.  With one session a side and no profile nothing
  measured that noise: an assumed one (`significance.assumed_noise`) gives the interval, and a
  change beyond it is BEYOND_ASSUMED, a direction to look at but no call (see Decisions).
* the variants of one interleaved batch (one session a side, ABAB...): a paired test on the
  rounds, which removes the drift the rounds share.

Around that: which header fields other than the kernel differ (apples vs oranges), the primary
metric's distributions on shared bucket edges (a side's sessions pooled) and the perf symbol
diff (a side's sessions pooled).

Decisions (documented here because every format shows their outcome):

* `change_pct` is the relative change of the sides' centres, ``(new / baseline - 1) * 100``: a
  positive number means the metric went up, whatever the metric.  Whether up is good is what
  the verdict says, following the metric's direction (`higher_is_better`).  A side's centre is
  its session's median, or with several sessions the geometric mean of their medians (each
  session counts once, however many runs it has).
* A verdict is a `Verdict` and the Test's numbers; render.verdicts words it.  A change is
  called (GOOD/BAD, or UP/DOWN for a metric with no good way) only when the 95% interval of the
  change clears 0, and its direction is the interval's, in every mode (a paired test's medians
  are not its estimate).  When the interval holds 0: WITHIN_NOISE for separate sessions (the
  interval's half width is the change that noise alone can make), NO_CHANGE for paired rounds.
  TOO_FEW_RUNS when a session has fewer than 5 runs, TOO_FEW_ROUNDS for fewer than 6 paired
  rounds, TOO_FEW_PROCESSES for interleaved variants that ran in fewer than 3 worker processes
  each.
* Many sides, many rows: the primary metric's rows (one per later side) are corrected
  together for the number of sides (Holm: `correct_sides`); a side called alone but not
  after it is NOT_AFTER_CORRECTION.  Every other row is exploratory (not corrected), and
  every format says so.  `gate` (compare --fail-on) reads the corrected primary rows only.
* An interval that holds 0 and is wider than TOO_NOISY_PCT either way is TOO_NOISY ("too
  noisy to call"), not WITHIN_NOISE: no change anyone looks for could be told there.
* Across boots the boot is the replicate (`analysis.boots`): a boot's sessions are averaged
  into one, and with one boot a side and nothing that measured a reboot (no second boot, no
  calibration of one session a boot) the verdict is ACROSS_BOOTS ("cannot call"), never a
  call on an assumed noise.  A calibration within one boot is used within one boot only.
* Within one boot, one session a side and no calibration, the interval is the assumed noise's.
  A change beyond it is BEYOND_ASSUMED ("faster?"): not called, not significant, no pass of
  `--fail-on --strict`.  Nothing in one session a side can see that its sessions differ by more
  than assumed, and where they did (6% apart) 22% of A/A pairs were called.
* A session is its content (`Result.digest`): copies count once (`distinct`).
* perf counters are one number per session: with one session a side and no calibration of
  them they are shown with their difference and % change but no test (NO_TEST); with several
  sessions a side they are tested like the rest.
* A partial result (a crash mid-run) is compared on the runs it holds and flagged.
"""
from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotloop import results
from hotloop.analysis import boots as boots_mod
from hotloop.analysis import noise as noise_mod
from hotloop.analysis import series_pairs, significance
from hotloop.analysis.boots import Boots
from hotloop.analysis.metrics import (
    RESOURCE,
    SPEED,
    UNDIRECTED,
    Series,
    extra_kind,
    series,
)
from hotloop.analysis.significance import MIN_PROCESSES, MIN_ROUNDS, Outcome
from hotloop.analysis.symbols import SymbolDelta, diff_symbols
from hotloop.catalog import process_shares
from hotloop.errors import HotloopError
from hotloop.events import HotSymbol
from hotloop.perf.parse import aggregate
from hotloop.record import Header
from hotloop.results import Result
from hotloop.stats import (
    ASSUMED_PER_WITHIN,
    ASSUMED_SESSION_NOISE,
    MIN_RUNS,
    TOO_NOISY_PCT,
    Bucket,
    Summary,
    edges,
    summarize,
)
from hotloop.visible import visible

__all__ = ["RESOURCE", "SPEED", "TOO_NOISY_PCT", "UNDIRECTED", "extra_kind", "compare",
           "compare_sides"]

TOP_SYMBOLS = 15
UNSTABLE_CV = 0.10                      # a session's runs above this CV: pyperf's "unstable"


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
    BEYOND_ASSUMED = "beyond assumed noise"     # one session a side, nothing measured how
                                        # much sessions differ: beyond what hotloop assumes,
                                        # a direction to look at, never a call (sessions
                                        # 6% apart called 22% of A/A pairs)

    @property
    def called(self) -> bool:
        """A change found, in one direction."""
        return self in (Verdict.GOOD, Verdict.BAD, Verdict.UP, Verdict.DOWN)

    @property
    def judged(self) -> bool:
        """A test was made: a change found, or none beyond the noise (or none once
        corrected for the number of sides).  What compare --fail-on --strict asks."""
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

# Header fields that must match for a fair comparison (everything but the kernel).
META_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cpu", ("cpu", "name")),
    ("cpu.cpus", ("cpu", "cpus")),
    ("cpu.sched", ("cpu", "sched")),
    ("cpu.priority", ("cpu", "priority")),
    ("cpu.nice", ("cpu", "nice")),
    ("cpu.governor", ("cpu", "governor")),
    ("cpu.boost", ("cpu", "boost")),
    ("host", ("host",)),
    ("cpu_model", ("cpu_model",)),
    ("arch", ("arch",)),
    ("compiler", ("compiler",)),
    ("cflags", ("cflags",)),
    ("params", ("params",)),            # compared key by key: params.block_size
    ("hotloop", ("hotloop",)),
    ("source_sha256", ("source_sha256",)),
    # sampling keeps vCPUs out of idle: on vs off can move wake-up-bound workloads
    ("perf", ("plan", "perf")),
    ("perf_freq", ("plan", "perf_freq")),
)


# --------------------------------------------------------------------------- data

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

    def __getattr__(self, name: str) -> Any:    # row.change_pct etc. read through
        if name == "test":
            raise AttributeError(name)
        return getattr(self.test, name)


@dataclass(frozen=True)
class MetaDiff:
    field: str
    baseline: Any
    new: Any


@dataclass
class Pair:
    """The baseline against one later side."""
    baseline: Side
    new: Side
    metrics: list[MetricDelta]
    metadata: list[MetaDiff]
    symbols: list[SymbolDelta] | None   # None unless both sides have session hot symbols
    method: str = "sessions"            # how the primary metric was tested


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
    warnings: list[str] = field(default_factory=list)
    noise: noise_mod.NoiseProfile | None = None     # the calibration used, if any
    batch: bool = False                 # the variants of one batch: they differ by design

    @property
    def baseline(self) -> Side:
        return self.sides[0]

    @property
    def single(self) -> bool:
        """One side only: the comparison just carries its summary."""
        return not self.pairs


# --------------------------------------------------------------------------- tests of a metric

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
    if o.noise_source == "unmeasured":
        return Verdict.ACROSS_BOOTS
    up = direction(o) if o.significant else None
    if up is not None and o.noise_source == "assumed":
        return Verdict.BEYOND_ASSUMED
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
    return Test(n_base, n_new, o.baseline, o.new, diff, o.change_pct,
                o.ci_low, o.ci_high, o.p_value, verdict.called, verdict, o.method, k_base,
                k_new,
                100 * calibrated.sigma_between if calibrated and used_calibration else None,
                o.noise_pct, o.noise_source, o.half_width_pct, spread_pct=o.spread_pct,
                runs_pct=o.runs_pct, noise_check=o.noise_check)


def correct_sides(tests: Sequence[Test]) -> list[Test]:
    """The primary metric's tests of every later side against the baseline, corrected
    together (Holm): with four sides each at alpha 0.05, an A/A family was called 14-16% of
    the time.  A test called alone but not after the correction becomes NOT_AFTER_CORRECTION;
    its interval and p stay its own (p_adjusted is the corrected one)."""
    tested = [i for i, t in enumerate(tests) if t.p_value is not None
              and t.verdict not in (Verdict.TOO_FEW_RUNS, Verdict.TOO_FEW_ROUNDS,
                                    Verdict.TOO_FEW_PROCESSES, Verdict.NO_TEST)]
    if len(tested) < 2:
        return [dataclasses.replace(t, p_adjusted=t.p_value) for t in tests]
    adjusted = significance.holm([tests[i].p_value or 0.0 for i in tested])
    out = list(tests)
    for i, p in zip(tested, adjusted):
        t = tests[i]
        # a direction on an assumed noise was never a call: it stays what it is, unjudged
        lost = t.verdict.called and not p < significance.ALPHA
        out[i] = dataclasses.replace(
            t, p_adjusted=p, correction="holm", family=len(tested),
            significant=t.significant and not lost,
            verdict=Verdict.NOT_AFTER_CORRECTION if lost else t.verdict)
    return out


def test_metric(base: Sequence[Series], new: Sequence[Series], *,
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


def _test_metric(base: Sequence[Series], new: Sequence[Series],
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
    def one(values: Sequence[float]) -> Series:
        return Series("value", "", higher_is_better, kind, list(values))
    return test_metric([one(base)], [one(new)], paired=paired, calibrated=calibrated)


# --------------------------------------------------------------------------- metadata

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
    fields = META_FIELDS + ((("kernel", ("kernel_release",)), ("label", ("label",)))
                            if kernel else ())
    for name, path in fields:
        a, b = _get(base, path), _get(new, path)
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(a.keys() | b.keys()):
                if a.get(key) != b.get(key):
                    out.append(MetaDiff(f"{name}.{key}", a.get(key), b.get(key)))
        elif a != b:
            out.append(MetaDiff(name, a, b))
    return out


# --------------------------------------------------------------------------- sides

def expand(arg: str) -> list[Path]:
    """The session files one side names: a file, a directory of them, or files joined by ","."""
    whole = Path(arg)
    parts = [whole] if whole.exists() or "," not in arg else \
        [Path(p) for p in arg.split(",") if p.strip()]
    if not parts:
        raise HotloopError(f"compare: {arg!r} names no result file")
    out: list[Path] = []
    for p in parts:
        if p.is_dir():
            found = sorted(f for f in p.glob("*.jsonl") if f.is_file())
            if not found:
                raise HotloopError(f"{p}: no result files (*.jsonl) in this directory")
            out += found
        else:
            out.append(p)
    seen: set[Path] = set()
    for p in out:
        real = p.resolve()
        if real in seen:
            raise HotloopError(f"{p}: named twice in one side ({arg})")
        seen.add(real)
    return out


def distinct(rs: Sequence[Result], given: str) -> tuple[list[Result], str | None]:
    """A side's sessions, each content once (a result's sha256: a copy of a file is the same
    session, not another one), and a warning naming the copies; HotloopError when the side
    is nothing but copies of one session.  Two copies a side once gave "+3.35% [+3.35%,
    +3.35%] p=0 faster": copies agree exactly, so they look like sessions without noise."""
    kept: list[Result] = []
    first: dict[str, Result] = {}
    copies: list[tuple[Result, Result]] = []
    for r in rs:
        key = r.digest or str(r.path.resolve())
        if key in first:
            copies.append((r, first[key]))
        else:
            first[key] = r
            kept.append(r)
    if not copies:
        return kept, None
    if len(kept) == 1:
        raise HotloopError(f"{given}: its {len(rs)} files are copies of one session "
                           f"({kept[0].path}): a side of copies is one session; give it once, "
                           f"or distinct sessions")
    dup, orig = copies[0]
    more = f" and {len(copies) - 1} more" if len(copies) > 1 else ""
    return kept, (f"{given}: {dup.path} is a copy of {orig.path} (the same content){more}: "
                  f"each session counted once, {len(kept)} sessions")


def _identity(r: Result) -> tuple[str, str, str]:
    return (r.workload.name, r.workload.metric,
            json.dumps(r.header.params, sort_keys=True, default=str))


def check_side(rs: Sequence[Result], given: str) -> None:
    """A side's sessions must be of one benchmark: same workload, metric and params."""
    first = rs[0]
    w0, m0, p0 = _identity(first)
    for r in rs[1:]:
        w, m, p = _identity(r)
        what = "workload" if w != w0 else "metric" if m != m0 else "params" if p != p0 else ""
        if what:
            mine, theirs = {"workload": (w, w0), "metric": (m, m0), "params": (p, p0)}[what]
            raise HotloopError(f"{r.path}: {what} {mine} differs from {first.path}'s {theirs}; "
                               f"the sessions of one side ({given}) must be of one benchmark")


def _label(rs: Sequence[Result]) -> str:
    labels = {r.header.variant or r.header.label for r in rs}
    return labels.pop() if len(labels) == 1 else ""


def _names(sides: Sequence[Sequence[Result]], given: Sequence[str]) -> list[str]:
    """Each side's name: its label or variant where those tell the sides apart, else what was
    given (a directory's name, the files' names) with as much of the path as tells them apart:
    A/s1 and A2/s1, not s1 and s1#2."""
    def where(rs: Sequence[Result], arg: str) -> Path:
        p = Path(arg.rstrip("/"))
        return p if p.is_dir() else rs[0].path.with_suffix("")

    def fallback(rs: Sequence[Result], arg: str, depth: int) -> str:
        p = where(rs, arg)
        name = "/".join(p.parts[-depth:])
        if len(rs) > 1 and not Path(arg.rstrip("/")).is_dir():
            name += "".join(f",{r.path.stem}" for r in rs[1:3]) + (
                f",+{len(rs) - 3}" if len(rs) > 3 else "")
        return name

    names = [_label(rs) for rs in sides]
    if not all(names) or len(set(names)) < len(names):
        for depth in range(1, 1 + max(len(where(rs, g).parts) for rs, g in zip(sides, given))):
            names = [fallback(rs, g, depth) for rs, g in zip(sides, given)]
            if len(set(names)) == len(names):
                break
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def _side(i: int, name: str, rs: Sequence[Result], given: str) -> Side:
    partial = [r for r in rs if r.partial]
    why = "; ".join(f"{r.path.name if len(rs) > 1 else ''}{': ' if len(rs) > 1 else ''}"
                    f"{r.failed.message if r.failed else 'the file ends early (a crash?)'}"
                    for r in partial)
    # from the files' headers: shown in tables and titles, so one line each, whatever a
    # forged file holds
    labels = sorted({visible(r.header.label) for r in rs})
    kernels = sorted({visible(r.header.kernel_release) for r in rs})
    values = [v for r in rs for v in r.values]
    return Side(i, visible(name), ",".join(labels), ",".join(kernels), given,
                visible(rs[0].header.variant), len(values), bool(partial), why,
                summarize(values), tuple(str(r.path) for r in rs), len(rs))


def process_blocks(header: Header) -> list[int]:
    """How many runs each worker process of a session ran, in turn (as the session split
    its plan's runs)."""
    if header.runs is None or header.runs < 1:
        return []
    return process_shares(header.runs, header.processes)


def _interleaved_pair(a: Sequence[Result], b: Sequence[Result]) -> list[int] | None:
    """Both sides one session of the same interleaved batch: their runs pair up by round,
    in blocks of the worker processes that ran them (empty when those do not line up)."""
    if len(a) != 1 or len(b) != 1 or a[0].path.resolve() == b[0].path.resolve():
        return None
    ba, bb = a[0].header.batch, b[0].header.batch
    if not (ba and bb and ba.interleaved and ba.id is not None and ba.id == bb.id):
        return None
    blocks = process_blocks(a[0].header)
    return blocks if blocks == process_blocks(b[0].header) else []


def shared_histogram(sides: Sequence[Sequence[Result]], metric: str, unit: str,
                     target: int = 10) -> SharedHistogram | None:
    """Every side's distribution (its sessions pooled) on the edges of the union."""
    values = [[v for r in rs for v in r.values] for rs in sides]
    every = [v for vs in values for v in vs]
    if not every:
        return None
    start, width = edges(every, target)
    index = [[int(math.floor((v - start) / width + 1e-9)) for v in vs] for vs in values]
    lo = min(min(ix) for ix in index if ix)
    hi = max(max(ix) for ix in index if ix)
    plain = [Bucket(start + i * width, start + (i + 1) * width, 0, 0.0) for i in range(lo, hi + 1)]
    counts_of = [dict.fromkeys(range(lo, hi + 1), 0) for _ in index]
    for ix, counts in zip(index, counts_of):
        for i in ix:
            counts[i] += 1
    buckets = []
    for k, i in enumerate(range(lo, hi + 1)):
        row = tuple(c[i] for c in counts_of)
        pcts = tuple(100.0 * c / len(ix) if ix else 0.0 for c, ix in zip(row, index))
        buckets.append(SharedBucket(plain[k].low, plain[k].high, row, pcts))
    return SharedHistogram(metric, unit, start, width, buckets)


def _symbols(rs: Sequence[Result]) -> Sequence[HotSymbol] | None:
    found = [r.session_symbols.symbols for r in rs
             if r.session_symbols and r.session_symbols.symbols]
    if len(found) != len(rs):
        return None
    return found[0] if len(found) == 1 else aggregate(found)


def _calibrate_hint(h: Header) -> str:
    """The command that measures the session noise these results need."""
    key = noise_mod.key_of(h)
    parts = ["hotloop calibrate", key["workload"] or "PLAN"]
    parts += [f"--param {k}={v}" for k, v in key["params"].items()]
    if key["cpu"]:
        parts.append(f"--cpu {key['cpu']}")
    parts.append("--perf" if key["perf"] else "--no-perf")
    return " ".join(parts + ["--sessions 8"])


def _accel(r: Result) -> str:
    vm = r.header.vm
    return "on this machine" if vm is None else \
        "emulated in a VM (TCG)" if vm.accel == "tcg" else f"in a VM under {vm.accel.upper()}"


def check_accel(rs: Sequence[Result]) -> None:
    """Emulated sessions measure qemu's translation, not the CPU: never beside others."""
    tcg = next((r for r in rs if r.header.vm is not None and r.header.vm.accel == "tcg"), None)
    other = next((r for r in rs if r.header.vm is None or r.header.vm.accel != "tcg"), None)
    if tcg is not None and other is not None:
        raise HotloopError(f"{tcg.path}: ran {_accel(tcg)}, {other.path} {_accel(other)}: "
                           f"emulated numbers cannot be compared with measured ones")


def compare_sides(sides: Sequence[Sequence[Result]], given: Sequence[str] | None = None,
                  noise_file: Path | None = None, batch: bool = False,
                  pair_sessions: bool = True) -> Comparison:
    """Compare every side with the first (the baseline); HotloopError for what cannot be.
    `pair_sessions`: two sides that are kernels of one series are tested on their pairs
    of sessions (analysis.series_pairs)."""
    if not sides or not all(sides):
        raise HotloopError("compare: no result files given")
    given = list(given) if given is not None else [str(rs[0].path) if len(rs) == 1 else
                                                  ",".join(str(r.path) for r in rs)
                                                  for rs in sides]
    copied: list[str] = []
    unique = []
    for rs, g in zip(sides, given):
        kept, note = distinct(rs, g)
        unique.append(kept)
        copied += [note] if note else []
    sides = unique
    for rs, g in zip(sides, given):
        check_side(rs, g)
        for r in rs:
            if not r.runs:
                what = "the baseline has" if rs is sides[0] else "has"
                raise HotloopError(f"{r.path}: {what} no recorded runs, nothing to compare")
    # A session (by its content: a copy is the same session) belongs to one side; a side
    # against itself, or against copies of itself, is fine (exactly no change).
    def ident(r: Result) -> str:
        return r.digest or str(r.path.resolve())
    owner: dict[str, int] = {}
    for i, rs in enumerate(sides):
        for r in rs:
            j = owner.setdefault(ident(r), i)
            if j != i and {ident(p) for p in sides[j]} != {ident(p) for p in rs}:
                raise HotloopError(f"{r.path}: in two sides ({given[j]} and {given[i]}); a "
                                   f"session belongs to one side (a side against itself is "
                                   f"fine)")
    base = sides[0][0]
    wname, metric, _ = _identity(base)
    for rs in sides[1:]:
        other, other_metric, _ = _identity(rs[0])
        if other != wname:
            raise HotloopError(f"{rs[0].path}: workload {other!r} cannot be compared with the "
                               f"baseline's {wname!r} ({base.path})")
        if other_metric != metric:
            raise HotloopError(f"{rs[0].path}: metric {other_metric!r} cannot be compared with the "
                               f"baseline's {metric!r} ({base.path})")
    check_accel([r for rs in sides for r in rs])
    names = _names(sides, given)
    out = [_side(i, n, rs, g) for i, (n, rs, g) in enumerate(zip(names, sides, given))]
    unit = base.workload.unit
    comp = Comparison(wname, metric, unit, base.workload.higher_is_better,
                      out, histogram=shared_histogram(sides, metric, unit))
    profile, notes = noise_mod.find(base.header, noise_file)
    compared = {r.path.resolve() for rs in sides for r in rs}
    digests = {r.digest for rs in sides for r in rs if r.digest}
    if profile is not None and (compared & {Path(f).resolve() for f in profile.files}
                                or digests & set(profile.digests)):
        # Its sessions would count twice: once as the calibration, once as the data.
        notes.append(f"noise profile not used: {profile.path} was measured from sessions "
                     f"compared here; calibrate from other A/A sessions")
        profile = None
    comp.noise = profile
    comp.warnings += copied + notes
    tcg = next((r for rs in sides for r in rs if r.header.vm is not None), None)
    if tcg is not None and tcg.header.vm is not None and tcg.header.vm.accel == "tcg":
        why = tcg.header.vm.why_not_kvm or "KVM not used"
        comp.warnings.append(f"no usable KVM ({why}): the sessions ran in emulated guests; "
                             f"their numbers do not measure this CPU")
    base_series = [series(r) for r in sides[0]]
    assumed: list[str] = []             # metrics whose session noise nothing measured
    unknown = sum(not boots_mod.boot_of(r) for rs in sides for r in rs)
    if unknown and len(sides) > 1:
        comp.warnings.append(
            f"{unknown} session{'s do' if unknown != 1 else ' does'} not say which boot "
            f"{'they' if unknown != 1 else 'it'} ran in (result files before format 3): "
            f"taken as possibly from another boot than the other side's, so one session a "
            f"side cannot be called without a calibration across reboots; run them again "
            f"with this hotloop to record their boots")
    spread = profile.boot_spread if profile is not None else ""
    for side, rs in zip(out[1:], sides[1:]):
        paired = _interleaved_pair(sides[0], rs)
        boots = boots_mod.of_sides(sides[0], rs)
        # A calibration stands in for the sides' own replicates only if it measured what
        # they differ by: taken within one boot, it measured no reboot.
        unfit = (f"its {profile.sessions} sessions: {spread}" if profile is not None
                 and not boots_mod.calibration_fits(boots, spread) else None)
        if unfit and profile is not None:
            comp.warnings.append(
                f"{side.name}: noise profile not used ({unfit}): {side.name} and "
                f"{out[0].name} ran in different boots ({boots.relation}), and a calibration "
                f"measures a reboot only from sessions of one boot each; calibrate from A/A "
                f"sessions one a boot: hotloop calibrate results/aa/")
        found = series_pairs.pairs(sides[0], rs) if pair_sessions and paired is None \
            else None
        if found is not None and (found.unmatched or not found.usable):
            comp.warnings.append(found.describe(out[0].name, side.name))
        by_pairs = found.index if found is not None and found.usable else None
        new_series = [series(r) for r in rs]
        rows = []
        for name, m in base_series[0].items():
            if not all(name in x for x in base_series + new_series):
                continue
            calibrated = profile.metrics.get(name) if profile and not unfit else None
            t = test_metric([x[name] for x in base_series], [x[name] for x in new_series],
                            paired=paired, calibrated=calibrated,
                            boots=None if paired is not None else boots, pairs=by_pairs)
            if unfit:
                t = dataclasses.replace(t, calibration=f"not used: {unfit}")
            rows.append(MetricDelta(m.name, m.unit, m.higher_is_better, t, m.kind,
                                    primary=m.name == metric))
            if t.noise_source == "assumed" and m.name not in assumed:
                assumed.append(m.name)
        check = rows[0].test.noise_check if rows else None
        if check and check["action"] == "dropped":
            comp.warnings.append(
                f"{side.name}: calibration dropped for {rows[0].metric}: the sessions "
                f"compared vary by {check['measured_pct']:.2f}% from one to the next, the "
                f"calibration says {check['calibrated_pct']:.2f}% (F test, p "
                f"{check['p']:.3f}); compared on the sessions' own noise. Calibrate the way "
                f"you compare (across reboots: hotloop calibrate results/aa/)")
        symbols = None
        bs, ns = _symbols(sides[0]), _symbols(rs)
        if bs and ns:
            symbols = diff_symbols(list(bs), list(ns))[:TOP_SYMBOLS]
        meta = metadata_diff(base.header.to_json(), rs[0].header.to_json())
        comp.pairs.append(Pair(out[0], side, rows, meta, symbols,
                               rows[0].test.method if rows else "sessions"))
        first_row = next((r for r in rows if r.primary), None)
        if first_row is not None and first_row.test.verdict is Verdict.ACROSS_BOOTS:
            t = first_row.test
            maybe = "" if boots.relation == boots_mod.ACROSS else "possibly "
            what = (f"one session a side, from {maybe}different boots"
                    if t.sessions_baseline == t.sessions_new == 1 else
                    f"one boot a side ({t.sessions_baseline} and {t.sessions_new} sessions): "
                    f"sessions of one boot are not replicates of a reboot")
            comp.warnings.append(
                f"{side.name}: cannot call: {what}, and nothing measured how much a reboot "
                f"moves {first_row.metric}; run sessions in several boots a side (a reboot "
                f"between, or a VM booted for each), or calibrate across reboots (A/A "
                f"sessions one a boot: hotloop calibrate results/aa/)")
        if rows and rows[0].test.verdict is Verdict.TOO_FEW_PROCESSES:
            comp.warnings.append(
                f"{side.name} and {out[0].name} ran in fewer than {MIN_PROCESSES} worker "
                f"processes each: a process's own offset (its memory layout, its CPU) cannot "
                f"be told from a change; interleave with --processes 5 (the default)")
    # The primary metric's verdicts, corrected together for the number of sides.
    firsts = [next((j for j, m in enumerate(p.metrics) if m.primary), None) for p in comp.pairs]
    at = [(p, j) for p, j in zip(comp.pairs, firsts) if j is not None]
    fixed = correct_sides([p.metrics[j].test for p, j in at])
    for (p, j), t in zip(at, fixed):
        p.metrics[j] = dataclasses.replace(p.metrics[j], test=t)
    if any(m.primary and m.test.noise_check and m.test.noise_check["action"] == "unchecked"
           for p in comp.pairs for m in p.metrics):
        comp.warnings.append(
            "one session a side: nothing here can check that the calibration describes these "
            "sessions (its boots fit theirs: within one boot, or one session a boot across "
            "boots), so the verdict holds only if the machine was as it was when calibrated "
            "(the same load, the same setup)")
    rule = (f"the larger of {100 * ASSUMED_SESSION_NOISE:g}% and "
            f"{ASSUMED_PER_WITHIN:g} times the runs' own spread")
    if assumed and profile is None:
        # the variants of one batch: interleaving them is the cheap way to a verdict
        other = ("run the variants with --interleave" if batch else
                 "run two sessions a side or more")
        # the figure assumed is each row's (its noise_pct) and the header's: not said again
        comp.warnings.append(
            f"no {'usable ' if notes else ''}noise profile for "
            f"{noise_mod.describe_key(noise_mod.key_of(base.header))}: "
            f"with one session a side nothing measured how much sessions differ, so the "
            f"interval assumes it ({rule}) and a change beyond it is a direction "
            f"(\"faster?\"), not a call; {other}, or measure this machine's: "
            f"{_calibrate_hint(base.header)}")
    elif assumed:
        comp.warnings.append(f"the noise profile has no figure for {', '.join(assumed)} "
                             f"(values not all above 0): an assumed noise is used ({rule}), "
                             f"and with one session a side a change beyond it is a "
                             f"direction (\"faster?\"), not a call")
    for rs, s in zip(sides, out):
        shaky = [cv for r in rs if r.finished
                 for cv in [r.finished.summary.cv] if cv is not None and cv > UNSTABLE_CV]
        if shaky:
            comp.warnings.append(
                f"{len(shaky)} session{'s' * (len(shaky) != 1)} of {s.name} "
                f"var{'y' if len(shaky) != 1 else 'ies'} by CV "
                f"{100 * max(shaky):.0f}% within a session (above {100 * UNSTABLE_CV:.0f}%): "
                f"result may be unstable; quieten the machine (hotloop doctor says what it "
                f"allows; a CPU profile that pins the workload; run --apply-system), or run "
                f"more runs and sessions")
    for s in out:
        if s.partial:
            comp.warnings.append(f"{s.name} ({s.file}) is partial, {s.runs} runs: "
                                 f"{s.partial_reason}")
    # the variants of one interleaved batch (their headers say so) differ by design too
    comp.batch = batch or bool(comp.pairs) and all(p.method == "paired" for p in comp.pairs)
    if not comp.batch:
        comp.warnings += [meta_warning(p) for p in comp.pairs if p.metadata]
    for rs, s in zip(sides, out):
        inside = sorted({d.field for r in rs[1:]
                         for d in metadata_diff(rs[0].header.to_json(), r.header.to_json(),
                                                kernel=True)
                         if d.field not in ("hotloop",)})
        if inside:
            comp.warnings.append(f"the sessions of {s.name} differ among themselves in "
                                 f"{', '.join(inside)}")
    return comp


GATES = ("worse", "better", "change")


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


def compare(rs: list[Result], batch: bool = False) -> Comparison:
    """Each result its own side, the first the baseline.  `batch`: the variants of one batch,
    whose differences (a param, a CPU profile) are what was asked for, not a warning."""
    return compare_sides([[r] for r in rs], batch=batch)


def load_sides(args: Sequence[str | Path]) -> list[list[Result]]:
    """Read every side's files (one-line HotloopError for what is not a result)."""
    return [[results.read(p) for p in expand(str(a))] for a in args]


def load_and_compare(paths: Sequence[str | Path], noise_file: Path | None = None,
                     pair_sessions: bool = True) -> Comparison:
    return compare_sides(load_sides(paths), [str(p) for p in paths], noise_file,
                         pair_sessions=pair_sessions)


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


def meta_warning(p: Pair) -> str:
    return (f"{p.new.name} differs from the baseline in more than the kernel: "
            + "; ".join(meta_text(d) for d in p.metadata))
