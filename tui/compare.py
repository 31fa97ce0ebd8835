"""Compare result files: baseline (the first) against each later one.

For every metric the files recorded (the workload's primary metric, ns/op, cycles/op where the
CPU counted cycles, each `extra` value such as user_s, sys_s or latency percentiles, and perf
counters where a file carries them) a comparison row holds the baseline and new medians, the
difference, the % change, a 95% bootstrap confidence interval of the % change, a two-sided
Mann-Whitney U p-value and a verdict.  Around that: which header fields other than the kernel
differ (apples vs oranges), the primary metric's distributions on shared bucket edges (seed
000's table, side by side) and the perf symbol diff (seed 003).

Decisions (documented here because every format shows their outcome):

* `change_pct` is the raw relative change of the medians, ``(new / baseline - 1) * 100``: a
  positive number means the metric went up, whatever the metric.  Whether up is good is what
  the verdict says, following the metric's direction (`higher_is_better`).
* The CI is a percentile bootstrap (``scipy.stats.bootstrap``, 9999 resamples, fixed seed, so
  the same files always give the same interval) of the % change of the medians, each sample
  resampled independently.  Where the baseline's values are not all of one sign (a CPU time of
  0 s), the ratio is not defined for every resample: the interval of the *difference* of medians
  is bootstrapped instead and divided by the baseline median.
* `significant` = p < 0.05 and the CI excludes 0.  Both must agree: the rank test alone also
  flags changes of shape that leave the median in place.
* Verdict words: "faster"/"slower" for the primary metric, per-op costs (ns/op, cycles/op) and
  latencies (extra names starting with ``lat`` or ending in ``_ns``); "better"/"worse" for
  resources a run consumes (CPU times ending in ``_s``, perf counters); "higher"/"lower" for
  extra values whose direction nobody declared.  "no significant change" otherwise, and
  "too few runs (n<5)" instead of any of these when either side has fewer than 5 runs (with 4
  against 4 runs no rank test can reach p < 0.05 anyway).
* perf counters are one number per session: they are shown with their difference and % change
  but no test ("one value each, no test").
* A partial result (a crash mid-run) is compared on the runs it holds and flagged.
"""
from __future__ import annotations

import csv
import io
import json
import math
import statistics
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from scipy import stats as sps

from tui import results
from tui.errors import HotloopError
from tui.perf import SymbolDelta, diff_symbols
from tui.results import Result
from tui.stats import Bucket, Summary, bucket_labels, edges, si

FORMATS = ("text", "md", "org", "csv", "json")
MIN_RUNS = 5                            # fewer on either side: no verdict
ALPHA = 0.05
CONFIDENCE = 0.95
RESAMPLES = 9999
SEED = 20151118                         # fixed: the same files give the same interval
TOP_SYMBOLS = 15
TOO_FEW = f"too few runs (n<{MIN_RUNS})"
NO_CHANGE = "no significant change"
NO_TEST = "one value each, no test"
SPEED = ("faster", "slower")
RESOURCE = ("better", "worse")
UNDIRECTED = ("higher", "lower")

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
    """One compared result file, as the report names it."""
    index: int                          # 0 = the baseline
    name: str                           # unique among the compared files
    label: str                          # the kernel profile's label ("stock")
    kernel: str                         # kernel release
    file: str
    variant: str
    runs: int
    partial: bool
    partial_reason: str
    summary: Summary | None


@dataclass(frozen=True)
class Test:
    """Two samples of one metric compared (no names: `compare_samples`' answer)."""
    n_baseline: int
    n_new: int
    baseline: float                     # median
    new: float                          # median
    diff: float                         # new - baseline
    change_pct: float | None            # (new / baseline - 1) * 100; None if baseline is 0
    ci_low: float | None                # 95% CI of change_pct
    ci_high: float | None
    p_value: float | None               # Mann-Whitney U, two-sided
    significant: bool
    verdict: str


@dataclass(frozen=True)
class MetricDelta:
    """One row of the comparison table."""
    metric: str
    unit: str
    higher_is_better: bool | None
    test: Test

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
    """The baseline against one later result."""
    baseline: Side
    new: Side
    metrics: list[MetricDelta]
    metadata: list[MetaDiff]
    symbols: list[SymbolDelta] | None   # None unless both sides have session hot symbols


@dataclass(frozen=True)
class SharedBucket:
    low: float
    high: float
    label: str
    counts: tuple[int, ...]             # one per compared file, in order
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

    @property
    def baseline(self) -> Side:
        return self.sides[0]

    @property
    def single(self) -> bool:
        """One file only: the comparison just carries its summary."""
        return not self.pairs


# --------------------------------------------------------------------------- statistics

def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def _pct_of_medians(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return (np.median(y, axis=axis) / np.median(x, axis=axis) - 1.0) * 100.0


def _diff_of_medians(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(y, axis=axis) - np.median(x, axis=axis)


def _bootstrap(stat: Any, x: np.ndarray, y: np.ndarray, resamples: int,
               seed: int) -> tuple[float, float] | None:
    if len(x) < 2 or len(y) < 2:
        return None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = sps.bootstrap((x, y), stat, vectorized=True, paired=False,
                            confidence_level=CONFIDENCE, n_resamples=resamples,
                            method="percentile", rng=np.random.default_rng(seed))
    lo, hi = _finite(res.confidence_interval.low), _finite(res.confidence_interval.high)
    return None if lo is None or hi is None else (lo, hi)


def compare_samples(base: Sequence[float], new: Sequence[float], *,
                    higher_is_better: bool | None = True,
                    words: tuple[str, str] = SPEED,
                    resamples: int = RESAMPLES, seed: int = SEED) -> Test:
    """Medians, % change, bootstrap CI, Mann-Whitney p and verdict of two samples.

    `words` are (the word for a change in the good direction, the bad one); with
    `higher_is_better` None the direction is unknown and the verdict says "higher"/"lower".
    """
    x = np.asarray(base, dtype=float)
    y = np.asarray(new, dtype=float)
    if not len(x) or not len(y):
        raise ValueError("compare_samples needs at least one value on each side")
    mb, mn = statistics.median(x.tolist()), statistics.median(y.tolist())
    diff = mn - mb
    change = (mn / mb - 1.0) * 100.0 if mb else (0.0 if mn == mb else None)

    p: float | None = None
    if len(x) >= 1 and len(y) >= 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = _finite(sps.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    ci: tuple[float, float] | None = None
    excludes_zero = False
    if (x > 0).all() or (x < 0).all():          # every resampled median is nonzero
        ci = _bootstrap(_pct_of_medians, x, y, resamples, seed)
        if ci is not None:
            excludes_zero = ci[0] > 0 or ci[1] < 0
    else:
        dci = _bootstrap(_diff_of_medians, x, y, resamples, seed)
        if dci is not None:
            excludes_zero = dci[0] > 0 or dci[1] < 0
            if mb:
                ci = (dci[0] / abs(mb) * 100.0, dci[1] / abs(mb) * 100.0)
    significant = bool(p is not None and p < ALPHA and excludes_zero
                       and len(x) >= MIN_RUNS and len(y) >= MIN_RUNS)
    if len(x) < MIN_RUNS or len(y) < MIN_RUNS:
        verdict = TOO_FEW
    elif not significant:
        verdict = NO_CHANGE
    else:
        up = diff > 0 if diff else (ci is not None and ci[0] > 0)
        if higher_is_better is None:
            verdict = UNDIRECTED[0] if up else UNDIRECTED[1]
        else:
            verdict = words[0] if up == higher_is_better else words[1]
    return Test(len(x), len(y), mb, mn, diff, change,
                ci[0] if ci else None, ci[1] if ci else None, p, significant, verdict)


# --------------------------------------------------------------------------- metrics of a result

@dataclass(frozen=True)
class Series:
    name: str
    unit: str
    higher_is_better: bool | None
    words: tuple[str, str]
    values: list[float]
    per_session: bool = False           # a perf counter: one value for the whole session


def extra_kind(name: str) -> tuple[str, bool | None, tuple[str, str]]:
    """(unit, higher_is_better, verdict words) of an `extra` value, from its name."""
    if name.startswith("lat") or name.endswith("_ns"):
        return ("ns" if name.endswith("_ns") else ""), False, SPEED
    if name.endswith("_s"):
        return "s", False, RESOURCE
    return "", None, UNDIRECTED


_COUNTER_UP = {"ipc", "instructions-per-cycle"}     # counters where more is better


def _counters(r: Result) -> dict[str, float]:
    found: dict[str, Any] = {}
    source = r.finished.summary.get("counters") if r.finished else None
    if isinstance(source, dict):
        found.update(source)
    return {k: float(v) for k, v in found.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


def series(r: Result) -> dict[str, Series]:
    """Every metric the result recorded, per run, the primary metric first."""
    w = r.workload
    primary = w.get("metric", "value")
    out: dict[str, Series] = {primary: Series(primary, w.get("unit", ""),
                                              bool(w.get("higher_is_better", True)), SPEED,
                                              r.values)}
    per_op = [x for x in r.runs if x.ops > 0]
    if "ns/op" not in out:
        vals = [x.ns / x.ops for x in per_op if x.ns > 0]
        if vals:
            out["ns/op"] = Series("ns/op", "ns/op", False, SPEED, vals)
    if "cycles/op" not in out:
        vals = [x.cycles / x.ops for x in per_op if x.cycles > 0]
        if vals:
            out["cycles/op"] = Series("cycles/op", "cycles/op", False, SPEED, vals)
    names: list[str] = []
    for x in r.runs:
        names += [k for k in x.extra if k not in names]
    for name in names:
        if name in out:
            continue
        vals = [float(x.extra[name]) for x in r.runs
                if isinstance(x.extra.get(name), (int, float))]
        if vals:
            unit, hib, words = extra_kind(name)
            out[name] = Series(name, unit, hib, words, vals)
    for name, v in _counters(r).items():
        key = f"perf:{name}"
        out[key] = Series(key, "", name in _COUNTER_UP, RESOURCE, [v], per_session=True)
    return out


def _metric_delta(b: Series, n: Series) -> MetricDelta:
    if b.per_session or n.per_session:
        mb, mn = b.values[0], n.values[0]
        change = (mn / mb - 1.0) * 100.0 if mb else (0.0 if mn == mb else None)
        t = Test(len(b.values), len(n.values), mb, mn, mn - mb, change, None, None, None,
                 False, NO_TEST)
    else:
        t = compare_samples(b.values, n.values, higher_is_better=b.higher_is_better,
                            words=b.words)
    return MetricDelta(b.name, b.unit, b.higher_is_better, t)


# --------------------------------------------------------------------------- metadata

def _get(header: dict[str, Any], path: tuple[str, ...]) -> Any:
    cur: Any = header
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


def metadata_diff(base: dict[str, Any], new: dict[str, Any]) -> list[MetaDiff]:
    """Header fields other than the kernel that differ between two results."""
    out: list[MetaDiff] = []
    for name, path in META_FIELDS:
        a, b = _get(base, path), _get(new, path)
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(a.keys() | b.keys()):
                if a.get(key) != b.get(key):
                    out.append(MetaDiff(f"{name}.{key}", a.get(key), b.get(key)))
        elif a != b:
            out.append(MetaDiff(name, a, b))
    return out


# --------------------------------------------------------------------------- building

def _names(rs: Sequence[Result]) -> list[str]:
    def label(r: Result) -> str:
        h = r.header
        return str(h.get("variant") or h.get("label") or r.path.stem)

    names = [label(r) for r in rs]
    if len(set(names)) < len(names):
        names = [r.path.stem for r in rs]
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def _side(i: int, name: str, r: Result) -> Side:
    why = ""
    if r.partial:
        why = r.failed.message if r.failed else "the file ends early (a crash?)"
    h = r.header
    return Side(i, name, str(h.get("label", "")), str(h.get("kernel_release", "?")),
                str(r.path), str(h.get("variant", "")), len(r.runs), r.partial, why, r.summary)


def shared_histogram(rs: Sequence[Result], metric: str, unit: str,
                     target: int = 10) -> SharedHistogram | None:
    """Seed 000's bucket table for every result at once, on edges of the union."""
    every = [v for r in rs for v in r.values]
    if not every:
        return None
    start, width = edges(every, target)
    index = [[int(math.floor((v - start) / width + 1e-9)) for v in r.values] for r in rs]
    lo = min(min(ix) for ix in index if ix)
    hi = max(max(ix) for ix in index if ix)
    plain = [Bucket(start + i * width, start + (i + 1) * width, 0, 0.0) for i in range(lo, hi + 1)]
    labels = bucket_labels(plain, unit)
    buckets = []
    for k, i in enumerate(range(lo, hi + 1)):
        counts = tuple(ix.count(i) for ix in index)
        pcts = tuple(100.0 * c / len(ix) if ix else 0.0 for c, ix in zip(counts, index))
        buckets.append(SharedBucket(plain[k].low, plain[k].high, labels[k], counts, pcts))
    return SharedHistogram(metric, unit, start, width, buckets)


def compare(rs: list[Result]) -> Comparison:
    """Compare every result with the first (the baseline); HotloopError for what cannot be."""
    if not rs:
        raise HotloopError("compare: no result files given")
    base = rs[0]
    wname = base.workload.get("name", "?")
    metric = base.workload.get("metric", "value")
    if not base.runs:
        raise HotloopError(f"{base.path}: the baseline has no recorded runs, nothing to compare")
    for r in rs[1:]:
        other = r.workload.get("name", "?")
        if other != wname:
            raise HotloopError(f"{r.path}: workload {other!r} cannot be compared with the "
                               f"baseline's {wname!r} ({base.path})")
        if r.workload.get("metric", "value") != metric:
            raise HotloopError(f"{r.path}: metric {r.workload.get('metric')!r} cannot be "
                               f"compared with the baseline's {metric!r} ({base.path})")
        if not r.runs:
            raise HotloopError(f"{r.path}: no recorded runs, nothing to compare")
    names = _names(rs)
    sides = [_side(i, n, r) for i, (n, r) in enumerate(zip(names, rs))]
    unit = base.workload.get("unit", "")
    comp = Comparison(wname, metric, unit, bool(base.workload.get("higher_is_better", True)),
                      sides, histogram=shared_histogram(rs, metric, unit))
    base_series = series(base)
    for side, r in zip(sides[1:], rs[1:]):
        new_series = series(r)
        rows = [_metric_delta(s, new_series[k]) for k, s in base_series.items() if k in new_series]
        syms = None
        bs, ns = base.session_symbols, r.session_symbols
        if bs and bs.symbols and ns and ns.symbols:
            syms = diff_symbols(list(bs.symbols), list(ns.symbols))[:TOP_SYMBOLS]
        comp.pairs.append(Pair(sides[0], side, rows, metadata_diff(base.header, r.header), syms))
    for s in sides:
        if s.partial:
            comp.warnings.append(f"{s.name} ({s.file}) is partial, {s.runs} runs: "
                                 f"{s.partial_reason}")
    for p in comp.pairs:
        if p.metadata:
            comp.warnings.append(f"{p.new.name} differs from the baseline in more than the "
                                 f"kernel: " + "; ".join(_meta_text(d) for d in p.metadata))
    return comp


def load_and_compare(paths: Sequence[Path]) -> Comparison:
    """Read the files (one-line HotloopError for what is not a result) and compare them."""
    return compare([results.read(Path(p)) for p in paths])


def main_compare(paths: Sequence[Path], fmt: str = "text") -> str:
    """What `hotloop compare A B C --format F` prints."""
    if fmt not in FORMATS:
        raise HotloopError(f"compare: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return render(load_and_compare(paths), fmt)


# --------------------------------------------------------------------------- rendering helpers

def _meta_value(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(map(str, v)) + "]"
    s = str(v)
    return s[:12] if len(s) == 64 and all(c in "0123456789abcdef" for c in s) else s


def _meta_text(d: MetaDiff) -> str:
    return f"{d.field} {_meta_value(d.baseline)} -> {_meta_value(d.new)}"


def _num(v: float | None, unit: str = "", signed: bool = False) -> str:
    """For people: SI prefixes."""
    if v is None:
        return "-"
    if "/op" in unit and abs(v) < 1e5:       # si() would say 1.27e+03 cycles/op
        s = f"{v:.0f} {unit}" if abs(v) >= 1000 else f"{v:.4g} {unit}"
    else:
        s = si(v, unit)
    return ("+" + s if signed and v > 0 else s)


def _plain(v: float | None, signed: bool = False) -> str:
    """For tables a tool may compute on (org's TBLFM, csv): digits only, 5 significant."""
    if v is None:
        return ""
    if abs(v) >= 1e5:
        s = f"{v:.0f}"
    else:
        s = f"{v:.5g}"
        if "e" in s:
            s = f"{v:.3e}"
    return "+" + s if signed and v > 0 else s


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:+.2f}%"


def _ci(t: Test) -> str:
    if t.ci_low is None or t.ci_high is None:
        return "-"
    return f"[{t.ci_low:+.2f}%, {t.ci_high:+.2f}%]"


def _p(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.4f}" if v >= 1e-4 else f"{v:.1e}"


def _direction(hib: bool | None) -> str:
    return "higher is better" if hib else ("lower is better" if hib is not None else "")


def _side_line(s: Side, baseline: bool) -> str:
    tag = "baseline" if baseline else f"[{s.index}]"
    line = (f"  {tag:<8}  {s.name}  label {s.label or '-'}  kernel {s.kernel}  "
            f"{s.runs} runs  {s.file}")
    return line + ("  PARTIAL" if s.partial else "")


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                             for i, c in enumerate(r)).rstrip() for r in rows]


HEAD = ["metric", "baseline", "new", "diff", "change", "95% CI", "p", "verdict"]


def _text_rows(p: Pair) -> list[list[str]]:
    rows = [HEAD]
    for m in p.metrics:
        t = m.test
        rows.append([m.metric, _num(t.baseline, m.unit), _num(t.new, m.unit),
                     _num(t.diff, m.unit, signed=True), _pct(t.change_pct), _ci(t), _p(t.p_value),
                     t.verdict])
    return rows


def _summary_lines(comp: Comparison) -> list[str]:
    s = comp.baseline.summary
    if s is None:
        return ["  no runs"]
    u = comp.unit
    return [f"  n {s.n}   median {si(s.median, u)}   mean {si(s.mean, u)}   "
            f"stdev {si(s.stdev, u)}   CV {100 * s.cv:.2f}%   "
            f"min {si(s.min, u)}   max {si(s.max, u)}"]


# --------------------------------------------------------------------------- formats

def render_text(comp: Comparison) -> str:
    lines = [f"compare {comp.workload}: {comp.metric} ({_direction(comp.higher_is_better)}), "
             f"baseline = the first file"]
    lines += [_side_line(s, s.index == 0) for s in comp.sides]
    if comp.single:
        lines += ["", "one file only: its summary"] + _summary_lines(comp)
    for p in comp.pairs:
        lines += ["", f"{p.new.name} vs {p.baseline.name} (baseline)"
                  + (f"  [partial: {p.new.runs} runs]" if p.new.partial else "")]
        lines += _table(_text_rows(p), right={1, 2, 3, 4, 6})
        if p.metadata:
            lines.append("  warning: differs in more than the kernel: "
                         + "; ".join(_meta_text(d) for d in p.metadata))
    h = comp.histogram
    if h and h.buckets:
        lines += ["", f"distribution of {h.metric}"
                  + (" (shared buckets)" if len(comp.sides) > 1 else "")]
        rows = [[h.metric] + [s.name for s in comp.sides]]
        for b in h.buckets:
            rows.append([b.label] + [f"{c:>4}  ({pct:5.1f}%)" for c, pct in zip(b.counts, b.percents)])
        lines += _table(rows, right=set(range(1, len(comp.sides) + 1)))
    for p in comp.pairs:
        if p.symbols:
            lines += ["", f"hot symbols, {p.new.name} vs {p.baseline.name} "
                          f"(top {TOP_SYMBOLS} by |delta|, % of samples)"]
            rows = [["symbol", "dso", "baseline", "new", "delta"]]
            for d in p.symbols:
                rows.append([f"[{'k' if d.kernel else '.'}] {d.symbol[:50]}", d.dso[:30],
                             f"{d.baseline_pct:.2f}%", f"{d.new_pct:.2f}%", f"{d.delta:+.2f}"])
            lines += _table(rows, right={2, 3, 4})
    partial = [s for s in comp.sides if s.partial]     # metadata warnings are shown above
    if partial:
        lines.append("")
        lines += [f"warning: {s.name} ({s.file}) is partial, compared on its {s.runs} runs: "
                  f"{s.partial_reason}" for s in partial]
    return "\n".join(lines)


def _result_cell(s: Side) -> str:
    return s.name + (" (partial)" if s.partial else "")


def render_md(comp: Comparison) -> str:
    lines = [f"**{comp.workload}** {comp.metric} ({_direction(comp.higher_is_better)}); "
             f"baseline: `{comp.baseline.name}` ({comp.baseline.file})", ""]
    if comp.single:
        s = comp.baseline.summary
        lines += ["| result | n | median | mean | stdev | CV | min | max |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        if s:
            u = comp.unit
            lines.append(f"| {_result_cell(comp.baseline)} | {s.n} | {si(s.median, u)} | "
                         f"{si(s.mean, u)} | {si(s.stdev, u)} | {100 * s.cv:.2f}% | "
                         f"{si(s.min, u)} | {si(s.max, u)} |")
    else:
        lines += ["| result | " + " | ".join(HEAD) + " |",
                  "|---|---|---:|---:|---:|---:|---|---:|---|"]
        for p in comp.pairs:
            for row in _text_rows(p)[1:]:
                verdict = f"**{row[-1]}**" if row[-1] in SPEED + RESOURCE + UNDIRECTED else row[-1]
                lines.append("| " + " | ".join([_result_cell(p.new)] + row[:-1] + [verdict]) + " |")
    if comp.warnings:
        lines.append("")
        lines += [f"> warning: {w}" for w in comp.warnings]
    return "\n".join(lines) + "\n"


ORG_HEAD = ["result", "metric", "unit", "baseline", "new", "diff", "% change", "CI low",
            "CI high", "p", "verdict"]


def _org_table(rows: list[list[str]], groups: list[int]) -> list[str]:
    """Aligned org table; a `|-+-|` rule after the header and before each group start."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    rule = "|" + "+".join("-" * (w + 2) for w in widths) + "|"
    out = []
    for k, r in enumerate(rows):
        if k in groups:
            out.append(rule)
        out.append("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(r)) + " |")
    return out


def render_org(comp: Comparison) -> str:
    lines = [f"#+CAPTION: {comp.workload} {comp.metric} ({_direction(comp.higher_is_better)}), "
             f"baseline {comp.baseline.name} ({comp.baseline.file})"]
    if comp.single:
        s = comp.baseline.summary
        rows = [["result", "unit", "n", "median", "mean", "stdev", "CV %", "min", "max"]]
        if s:
            rows.append([_result_cell(comp.baseline), comp.unit, str(s.n), _plain(s.median),
                         _plain(s.mean), _plain(s.stdev), f"{100 * s.cv:.2f}", _plain(s.min),
                         _plain(s.max)])
        lines += _org_table(rows, [1])
    else:
        rows = [ORG_HEAD]
        groups = []
        for p in comp.pairs:
            groups.append(len(rows))
            for m in p.metrics:
                t = m.test
                rows.append([_result_cell(p.new), m.metric, m.unit, _plain(t.baseline),
                             _plain(t.new), _plain(t.diff, signed=True),
                             "" if t.change_pct is None else f"{t.change_pct:.2f}",
                             "" if t.ci_low is None else f"{t.ci_low:.2f}",
                             "" if t.ci_high is None else f"{t.ci_high:.2f}",
                             _p(t.p_value) if t.p_value is not None else "", t.verdict])
        lines += _org_table(rows, groups)
    lines += [f"# warning: {w}" for w in comp.warnings]
    return "\n".join(lines) + "\n"


CSV_COLUMNS = ["file", "label", "name", "partial", "metric", "unit", "higher_is_better",
               "n_baseline", "n_new", "baseline", "new", "diff", "change_pct", "ci_low",
               "ci_high", "p_value", "significant", "verdict", "baseline_file"]
CSV_SUMMARY_COLUMNS = ["file", "label", "name", "partial", "metric", "unit", "n", "median",
                       "mean", "stdev", "cv", "min", "max"]


def _json_num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def rows(comp: Comparison) -> list[dict[str, Any]]:
    """The comparison table as flat dicts (the csv rows and the json `comparisons`)."""
    out = []
    for p in comp.pairs:
        for m in p.metrics:
            t = m.test
            out.append({"file": p.new.file, "label": p.new.label, "name": p.new.name,
                        "partial": p.new.partial, "metric": m.metric, "unit": m.unit,
                        "higher_is_better": m.higher_is_better, "n_baseline": t.n_baseline,
                        "n_new": t.n_new, "baseline": _json_num(t.baseline),
                        "new": _json_num(t.new), "diff": _json_num(t.diff),
                        "change_pct": _json_num(t.change_pct), "ci_low": _json_num(t.ci_low),
                        "ci_high": _json_num(t.ci_high), "p_value": _json_num(t.p_value),
                        "significant": t.significant, "verdict": t.verdict,
                        "baseline_file": p.baseline.file})
    return out


def _summary_row(comp: Comparison) -> dict[str, Any]:
    b = comp.baseline
    s = b.summary.to_json() if b.summary else {"n": 0}
    return {"file": b.file, "label": b.label, "name": b.name, "partial": b.partial,
            "metric": comp.metric, "unit": comp.unit, **s}


def render_csv(comp: Comparison) -> str:
    buf = io.StringIO()
    if comp.single:
        w = csv.DictWriter(buf, CSV_SUMMARY_COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerow(_summary_row(comp))
    else:
        w = csv.DictWriter(buf, CSV_COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows(comp):
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return buf.getvalue()


def _side_json(s: Side) -> dict[str, Any]:
    return {"file": s.file, "name": s.name, "label": s.label, "kernel": s.kernel,
            "variant": s.variant, "runs": s.runs, "partial": s.partial,
            "partial_reason": s.partial_reason or None,
            "summary": s.summary.to_json() if s.summary else None}


def document(comp: Comparison) -> dict[str, Any]:
    """The `--format json` document."""
    h = comp.histogram
    return {
        "workload": comp.workload, "metric": comp.metric, "unit": comp.unit,
        "higher_is_better": comp.higher_is_better,
        "baseline": _side_json(comp.baseline),
        "results": [_side_json(s) for s in comp.sides[1:]],
        "summary": _side_json(comp.baseline)["summary"] if comp.single else None,
        "comparisons": rows(comp),
        "metadata_differences": [
            {"file": p.new.file, "name": p.new.name, "field": d.field,
             "baseline": d.baseline, "new": d.new} for p in comp.pairs for d in p.metadata],
        "histogram": None if h is None else {
            "metric": h.metric, "unit": h.unit, "start": h.start, "width": h.width,
            "files": [s.file for s in comp.sides],
            "buckets": [{"low": b.low, "high": b.high, "label": b.label,
                         "counts": list(b.counts), "percents": [round(x, 3) for x in b.percents]}
                        for b in h.buckets]},
        "symbol_diffs": [
            {"file": p.new.file, "name": p.new.name,
             "symbols": [{"symbol": d.symbol, "dso": d.dso, "kernel": d.kernel,
                          "baseline_pct": d.baseline_pct, "new_pct": d.new_pct,
                          "delta": d.delta} for d in p.symbols]}
            for p in comp.pairs if p.symbols],
        "warnings": comp.warnings,
        "method": {"test": "Mann-Whitney U, two-sided", "alpha": ALPHA,
                   "ci": f"{CONFIDENCE:.0%} percentile bootstrap of the % change of medians, "
                         f"{RESAMPLES} resamples, seed {SEED}",
                   "min_runs": MIN_RUNS},
    }


def render_json(comp: Comparison) -> str:
    return json.dumps(document(comp), indent=2, default=str, allow_nan=False)


_RENDERERS = {"text": render_text, "md": render_md, "org": render_org, "csv": render_csv,
              "json": render_json}


def render(comp: Comparison, fmt: str = "text") -> str:
    renderer = _RENDERERS.get(fmt)
    if renderer is None:
        raise HotloopError(f"compare: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return renderer(comp)
