"""The differential profile: each symbol's cost per operation (analysis.symcost) tested between
two sides, and the pair's worker CPU time per op explained by its symbols.

* **The test.**  A symbol's cost a session is one number, like a perf counter: the rows are
  tested as the metric rows' counters are, by judge.test_metric on one value a session
  (sessions as replicates, the t interval on the sessions' log costs; a series' sessions
  paired by round, analysis.series_pairs; across boots, a boot's sessions as one).  No noise
  profile applies: a calibration measures the metrics' session noise, not a symbol's.  With
  one session a side nothing measured how much a symbol's cost varies from session to
  session: NO_TEST, the change shown, no call.
* **Many symbols.**  A pair tests tens of symbols: at alpha 0.05 each, some would be called
  by chance in every comparison.  The p-values of the symbols tested in a pair are corrected
  together with Benjamini-Hochberg's step-up procedure (1995), controlling the false discovery
  rate at 5% (`bh`): valid for independent tests and for positively dependent ones (PRDS),
  which the symbols of one pair are (a session's offset, its total CPU time per op, moves
  them all one way).  A symbol is called (costlier, cheaper) when its own test calls it and
  its q-value is below 0.05.  Its interval is adjusted to match (Benjamini and Yekutieli,
  2005: with R of m symbols called, each interval at level 1 - R x 0.05 / m, or 1 - 0.05 / m
  with none, which holds the false coverage rate of the called rows' intervals at 5%): it is
  clear of 0 exactly when the row is called, where its own 95% interval (kept as
  ci_low_alone, ci_high_alone) was clear of 0 on rows the correction did not call.
* **Too few samples.**  A session's count N of a symbol's samples is a Poisson count: its
  own sampling spread is 1/sqrt(N), so the count alone puts a session's cost within
  +-1.96/sqrt(N).  Below MIN_SAMPLES (16) samples a session that is wider than +-50%
  (stats.TOO_NOISY_PCT), the width at which a metric row is too noisy to call: such a row is
  TOO_FEW_SAMPLES, untested, and its N (the fewer of the two sides' mean samples a session)
  is said.  More samples: longer runs, a higher --perf-freq, more sessions (docs/differential.md).
* **New and gone.**  A symbol no session of one side sampled is NEW or GONE, with its cost on
  the other side (0 on its own: it was not among a session's top 100).
* **The change explained.**  The sides' centres here are the arithmetic means of their
  sessions' costs, which are linear: a side's worker CPU ns/op is the sum of its symbols'
  costs, and the mean of sums is the sum of means, so the pair's change splits exactly into
  the EXPLAIN_TOP rows with the largest change in ns/op plus the rest (Explained).  The test's
  change_pct is of its own centres (geometric, on the log scale), close to the means' ratio.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from hotloop.analysis.boots import Boots
from hotloop.analysis.comparison import Test, Verdict
from hotloop.analysis.judge import test_metric
from hotloop.analysis.metrics import RESOURCE, Series
from hotloop.analysis.significance import ALPHA, adjusted_interval
from hotloop.analysis.symbols import Explained, SymbolDelta, SymbolVerdict, base_name
from hotloop.analysis.symcost import Key, SideCost, display_name, side_cost
from hotloop.results import Result
from hotloop.stats import TOO_NOISY_PCT, Z95

# Samples a session below which a symbol's cost is not tested: 1.96 / sqrt(N) > 50%.
MIN_SAMPLES = math.ceil((Z95 / (TOO_NOISY_PCT / 100)) ** 2)
EXPLAIN_TOP = 5                         # rows named in the change explained


def bh(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the order given: the k-th smallest
    p times m / k, made monotone from the largest down, at most 1."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i], reverse=True)
    out = [0.0] * m
    running = 1.0
    for n, i in enumerate(order):
        rank = m - n                    # 1-based rank of p_values[i], smallest first
        running = min(running, p_values[i] * m / rank)
        out[i] = min(1.0, running)
    return out


@dataclass(frozen=True)
class Differential:
    """A pair's symbol rows (every symbol, by |change in ns/op|), the change explained, and
    why there is no cost per op when there is none."""
    rows: list[SymbolDelta]
    explained: Explained | None
    note: str
    tested: int


def _series(costs: Sequence[float]) -> list[Series]:
    return [Series("ns/op", "ns/op", False, RESOURCE, [c], per_session=True) for c in costs]


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def _row(share: SymbolDelta | None, key: Key, b: SideCost, n: SideCost,
         boots: Boots | None, pairs: Sequence[tuple[int, int]] | None
         ) -> tuple[SymbolDelta, Test | None]:
    """One symbol's row and its test, if tested (q-value, word and the adjusted interval to
    come: `differential`)."""
    bi = next((s for s in b.symbols if s.key == key), None)
    ni = next((s for s in n.symbols if s.key == key), None)
    names = tuple(sorted({*(bi.names if bi else ()), *(ni.names if ni else ())}))
    k_b, k_n = len(b.sessions), len(n.sessions)
    bc = bi.costs if bi and bi.costs is not None else (0.0,) * k_b
    nc = ni.costs if ni and ni.costs is not None else (0.0,) * k_n
    sb = _mean(bi.samples) if bi else 0.0
    sn = _mean(ni.samples) if ni else 0.0
    mb, mn = _mean(bc), _mean(nc)
    base = share or SymbolDelta(display_name(key, names), key[1], key[2],
                                0.0, 0.0, 0.0, names)
    row = SymbolDelta(base.symbol, base.dso, base.kernel, base.baseline_pct, base.new_pct,
                      base.delta, names, baseline_ns_per_op=mb, new_ns_per_op=mn,
                      change_pct=(mn / mb - 1) * 100 if mb else None,
                      samples_baseline=sb, samples_new=sn, baseline_costs=tuple(bc),
                      new_costs=tuple(nc))
    # a symbol one side never sampled is new or gone only where the other sampled it enough
    # for its absence to mean something: 2 samples against 0 are chance
    if not sb and sn >= MIN_SAMPLES:
        return _with(row, verdict=SymbolVerdict.NEW), None
    if not sn and sb >= MIN_SAMPLES:
        return _with(row, verdict=SymbolVerdict.GONE), None
    if min(sb, sn) < MIN_SAMPLES:
        return _with(row, verdict=SymbolVerdict.TOO_FEW_SAMPLES,
                     why=f"fewer than {MIN_SAMPLES} samples a session on a side"), None
    t = test_metric(_series(bc), _series(nc), boots=boots, pairs=pairs)
    if t.p_value is None:
        why = ("one session a side: nothing measured how much a symbol's cost varies "
               "between sessions" if k_b == k_n == 1 else f"no test ({t.verdict.value})")
        return _with(row, verdict=SymbolVerdict.NO_TEST, why=why, method=t.method), None
    called = t.verdict in (Verdict.GOOD, Verdict.BAD, Verdict.UP, Verdict.DOWN)
    return _with(row, change_pct=t.change_pct, ci_low=t.ci_low, ci_high=t.ci_high,
                 ci_low_alone=t.ci_low, ci_high_alone=t.ci_high,
                 p_value=t.p_value, method=t.method, significant=called,
                 verdict=SymbolVerdict.NO_CHANGE,
                 why="" if t.verdict in (Verdict.WITHIN_NOISE, Verdict.NO_CHANGE) or called
                 else t.verdict.value), t


def _with(row: SymbolDelta, **changes: object) -> SymbolDelta:
    return dataclasses.replace(row, **changes)  # type: ignore[arg-type]


def differential(base: Sequence[Result], new: Sequence[Result], *,
                 boots: Boots | None = None,
                 pairs: Sequence[tuple[int, int]] | None = None,
                 shares: Sequence[SymbolDelta] = ()) -> Differential:
    """Every symbol of two sides' sessions: its share (`shares`, diff_symbols' rows of the
    pooled sessions), and where both sides have a cost per op its test, q-value and word,
    sorted by |change in ns/op|; and the change explained."""
    b, n = side_cost(base), side_cost(new)
    if not (b.costed and n.costed):
        return Differential(list(shares), None, "no cost per op: " + (b.why or n.why), 0)
    by_key = {(base_name(d.symbol), d.dso, d.kernel): d for d in shares}
    keys = list(dict.fromkeys(s.key for s in (*b.symbols, *n.symbols)))
    got = [_row(by_key.get(k), k, b, n, boots, pairs) for k in keys]
    rows = [r for r, _ in got]
    tested = [i for i, r in enumerate(rows) if r.p_value is not None]
    qs = bh([rows[i].p_value or 0.0 for i in tested])
    widen = len(tested) / max(1, sum(q < ALPHA for q in qs))   # m / R: see above
    for i, q in zip(tested, qs):
        r, t = got[i]
        called = r.significant and q < ALPHA
        up = r.ci_low is not None and r.ci_low > 0
        lo, hi = r.ci_low, r.ci_high
        if t is not None and t.df is not None and lo is not None and hi is not None \
                and math.isfinite(lo) and math.isfinite(hi) and hi > lo:
            lo, hi = adjusted_interval(lo, hi, t.log, t.df, widen)
        rows[i] = _with(r, q_value=q, significant=called, ci_low=lo, ci_high=hi,
                        verdict=(SymbolVerdict.COSTLIER if up else SymbolVerdict.CHEAPER)
                        if called else SymbolVerdict.NO_CHANGE)
    rows.sort(key=lambda r: (-abs(r.change_ns or 0.0), r.symbol))
    top = tuple(rows[:EXPLAIN_TOP])
    tb, tn = _mean(b.worker_ns), _mean(n.worker_ns)
    explained = Explained(tb, tn, tb - math.fsum(r.baseline_ns_per_op or 0.0 for r in top),
                          tn - math.fsum(r.new_ns_per_op or 0.0 for r in top), top)
    return Differential(rows, explained, "", len(tested))
