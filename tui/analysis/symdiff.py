"""The differential profile: each symbol's cost per operation (analysis.symcost) tested between
two sides, and the pair's worker CPU time per op explained by its symbols.

* **The test** (analysis.symstats): a symbol's samples a session as a count, the session's
  scale (its size factor, the median of ratios over the well-sampled symbols) removed, each
  symbol's variance moderated with the others' help and its counts' Poisson noise in the
  model; a series' sessions paired by round (analysis.series_pairs), across boots a boot's
  sessions as one (analysis.boots).  What is tested is how the symbol's part of the profile
  moved, relative to the rest: what moves every symbol of a session alike (the machine's
  drift, a boot) moves none of them.  The change in ns/op (the centres' difference) is
  shown beside it: absolute, as the change explained adds it up.  With one session a side
  (one pair) nothing measured how much a symbol varies between sessions: "can't tell".
* **Many symbols.**  The p-values of the symbols with at least MIN_TOTAL samples over the
  pair's sessions (a filter on the counts alone, independent of the change: Bourgon et al.
  2010) are corrected together with Benjamini-Hochberg's step-up procedure (1995),
  controlling the false discovery rate at 5% (`bh`).  A symbol is called (costlier, cheaper;
  new or gone where one side never sampled it) when its q-value is below 0.05.  Its interval
  is adjusted to match (Benjamini and Yekutieli, 2005: with R of m symbols called, each
  interval at level 1 - R x 0.05 / m, or 1 - 0.05 / m with none), clear of 0 exactly when the
  row is called; its own 95% interval is kept (ci_low_alone, ci_high_alone).
* **Three words.**  A row not called is "same within +-M%" when its (adjusted) interval lies
  inside +-SAME_MARGIN_PCT (an equivalence test: a 5% change could not hide there), else
  "can't tell: +-X%", with the sessions a side that would find a 10% change of it.
* **New and gone.**  A symbol no session of one side sampled: new or gone when called, else
  "can't tell" (two samples against none are chance).  A symbol an older file's top 100 left
  out is censored, not 0 (analysis.symcost): tested at 0 and at the cut, called only if both
  call it.
* **The change explained.**  The sides' centres here are the arithmetic means of their
  sessions' costs, which are linear: a side's worker CPU ns/op is the sum of its symbols'
  costs, and the mean of sums is the sum of means, so the pair's change splits exactly into
  the EXPLAIN_TOP rows with the largest change in ns/op plus the rest (Explained).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from hotloop.analysis import symstats
from hotloop.analysis.boots import Boots
from hotloop.analysis.significance import ALPHA, np
from hotloop.analysis.symbols import (
    SAME_MARGIN_PCT,
    Explained,
    SymbolDelta,
    SymbolVerdict,
    base_name,
    dso_key,
    irq_reenable,
)
from hotloop.analysis.symcost import Key, SideCost, SideSymbol, display_name, side_cost
from hotloop.results import Result

MIN_TOTAL = 10                          # samples over the pair's sessions to be among the tested
MIN_SAMPLES = MIN_TOTAL                 # its older name (the json's "min_samples")
EXPLAIN_TOP = 5                         # rows named in the change explained
RESOLVE_PCT = 10.0                      # "can't tell": the sessions that would find this change


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


def _mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs) if xs else 0.0


def _counts(si: SideSymbol | None, side: SideCost) -> list[float]:
    """The row's samples a session; from its share where a file kept percents only."""
    if si is None:
        return [0.0] * len(side.sessions)
    return [float(n) if n or not sh else sh * s.samples
            for n, sh, s in zip(si.samples, si.shares, side.sessions)]


def _row(share: SymbolDelta | None, key: Key, bi: SideSymbol | None, ni: SideSymbol | None,
         b: SideCost, n: SideCost) -> SymbolDelta:
    """One symbol's row before its test: names, shares, the sides' mean costs."""
    names = tuple(sorted({*(bi.names if bi else ()), *(ni.names if ni else ())}))
    bc = bi.costs if bi and bi.costs is not None else (0.0,) * len(b.sessions)
    nc = ni.costs if ni and ni.costs is not None else (0.0,) * len(n.sessions)
    mb, mn = _mean(bc), _mean(nc)
    base = share or SymbolDelta(display_name(key, names), key[1], key[2],
                                0.0, 0.0, 0.0, names)
    return SymbolDelta(base.symbol, base.dso, base.kernel, base.baseline_pct, base.new_pct,
                       base.delta, names, baseline_ns_per_op=mb, new_ns_per_op=mn,
                       cost_change_pct=(mn / mb - 1) * 100 if mb else None,
                       samples_baseline=_mean(_counts(bi, b)),
                       samples_new=_mean(_counts(ni, n)), baseline_costs=tuple(bc),
                       new_costs=tuple(nc), timer=b.timer or n.timer,
                       irq=(b.timer or n.timer) and irq_reenable(base.symbol))


def _with(row: SymbolDelta, **changes: object) -> SymbolDelta:
    return dataclasses.replace(row, **changes)  # type: ignore[arg-type]


def _design(kb: int, kn: int, boots: Boots | None,
            pairs: Sequence[tuple[int, int]] | None) -> tuple[symstats.Design, str]:
    if pairs:
        return symstats.Design([[i] for i, _ in pairs], [[kb + j] for _, j in pairs],
                               [(i, kb + j) for i, j in pairs]), "pairs"
    if boots is not None and boots.across:
        ub, un = boots.units()
        return symstats.Design(ub, [[kb + i for i in g] for g in un]), "boots"
    return symstats.Design([[i] for i in range(kb)], [[kb + i] for i in range(kn)]), "sessions"


def _pct(x: float) -> float:
    return math.expm1(min(x, 700.0)) * 100


def _word(row: SymbolDelta, method: str, t: symstats.SymbolTest, q: float | None, lo: float,
          hi: float, new: bool, gone: bool, have: int) -> SymbolDelta:
    """The row's verdict: called (costlier, cheaper, new, gone), same, or can't tell.  `new`:
    no session of the baseline sampled it (none censored), `gone` the same of the new side;
    `have`: the units a side now (more would be needed to say "can't tell" is worth more)."""
    called = q is not None and q < ALPHA
    lo_pct, hi_pct = _pct(lo), _pct(hi)
    if called:
        verdict = SymbolVerdict.NEW if new and t.change > 0 else \
            SymbolVerdict.GONE if gone and t.change < 0 else \
            SymbolVerdict.COSTLIER if t.change > 0 else SymbolVerdict.CHEAPER
    elif lo_pct > -SAME_MARGIN_PCT and hi_pct < SAME_MARGIN_PCT:
        verdict = SymbolVerdict.SAME
    else:
        verdict = SymbolVerdict.CANT_TELL
    from_zero = verdict in (SymbolVerdict.NEW, SymbolVerdict.GONE) or new or gone
    return _with(row, change_pct=None if from_zero else _pct(t.change),
                 ci_low=None if from_zero else lo_pct, ci_high=None if from_zero else hi_pct,
                 ci_low_alone=None if from_zero else _pct(t.lo),
                 ci_high_alone=None if from_zero else _pct(t.hi),
                 p_value=t.p, q_value=q, significant=called, verdict=verdict,
                 half_width_pct=_pct((hi - lo) / 2),
                 sessions_for=need if (need := t.sessions_for(RESOLVE_PCT)) > have else None,
                 censored=t.censored, df=t.df, method=method)


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
    by_key = {(base_name(d.symbol), dso_key(d.dso), d.kernel): d for d in shares}
    keys = list(dict.fromkeys(s.key for s in (*b.symbols, *n.symbols)))
    bs = {s.key: s for s in b.symbols}
    ns_ = {s.key: s for s in n.symbols}
    rows = [_row(by_key.get(k), k, bs.get(k), ns_.get(k), b, n) for k in keys]
    kb, kn = len(b.sessions), len(n.sessions)
    counts = np.array([[*_counts(bs.get(k), b), *_counts(ns_.get(k), n)] for k in keys],
                      dtype=float).reshape(len(keys), kb + kn)
    censored = np.array([[*(bs[k].censored if k in bs else
                            tuple(s.cut is not None for s in b.sessions)),
                          *(ns_[k].censored if k in ns_ else
                            tuple(s.cut is not None for s in n.sessions))] for k in keys],
                        dtype=bool).reshape(len(keys), kb + kn)
    bounds = np.array([float(s.cut or 0) for s in (*b.sessions, *n.sessions)])
    design, method = _design(kb, kn, boots, pairs)
    totals = np.array([float(s.samples) for s in (*b.sessions, *n.sessions)])
    tests = symstats.test_symbols(counts, censored, bounds, totals, design)
    absent = (counts == 0) & ~censored
    if tests is None:
        why = "one session a side: nothing measured how much a symbol's cost varies " \
              "between sessions" if kb == kn == 1 else \
              "one pair (or boot) a side: nothing measured how much a symbol's cost varies"
        rows = [_with(r, verdict=SymbolVerdict.CANT_TELL, why=why) for r in rows]
        return Differential(_sorted(rows), _explained(rows, b, n), "", 0)
    total = counts.sum(axis=1)
    tested = [i for i in range(len(rows)) if total[i] >= MIN_TOTAL]
    qs = dict(zip(tested, bh([tests[i].p for i in tested])))
    called = sum(q < ALPHA for q in qs.values())
    # Benjamini-Yekutieli's false coverage: R of m called, each at level 1 - R alpha / m
    level = ALPHA * max(called, 1) / max(len(tested), 1)
    out = []
    for i, r in enumerate(rows):
        t = tests[i]
        lo, hi = symstats.interval_at(t, level if i in qs else ALPHA)
        row = _word(r, method, t, qs.get(i), lo, hi, bool(absent[i, :kb].all()),
                    bool(absent[i, kb:].all()), min(len(design.base), len(design.new)))
        if i not in qs:                 # a few samples: the width says it, not a %
            row = _with(row, change_pct=None, ci_low=None, ci_high=None)
        out.append(row)
    return Differential(_sorted(out), _explained(out, b, n), "", len(tested))


def _sorted(rows: list[SymbolDelta]) -> list[SymbolDelta]:
    return sorted(rows, key=lambda r: (-abs(r.change_ns or 0.0), r.symbol))


def _explained(rows: list[SymbolDelta], b: SideCost, n: SideCost) -> Explained:
    top = tuple(_sorted(rows)[:EXPLAIN_TOP])
    tb, tn = _mean(b.worker_ns), _mean(n.worker_ns)
    return Explained(tb, tn, tb - math.fsum(r.baseline_ns_per_op or 0.0 for r in top),
                     tn - math.fsum(r.new_ns_per_op or 0.0 for r in top), top)
