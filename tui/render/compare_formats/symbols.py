"""The differential profile in every format alike: a pair's symbol rows (cost per op, change,
interval, p, q, word; or the shares of samples where the sides have no cost per op) and the
line that explains the pair's change.
"""
from __future__ import annotations

import math
from typing import Any

from hotloop.analysis.comparison import Pair
from hotloop.analysis.symbols import SAME_MARGIN_PCT, Explained, SymbolDelta, SymbolVerdict, pct3
from hotloop.analysis.symdiff import EXPLAIN_TOP, MIN_SAMPLES
from hotloop.render.units import p_value

COST_HEAD = ["symbol", "dso", "baseline", "new", "vs rest", "interval", "p", "q", "verdict"]
SHARE_HEAD = ["symbol", "dso", "baseline", "new", "delta"]
CORRECTION = "benjamini-hochberg"


# How a "too few samples" row gets more (docs/differential.md#when-samples-are-too-few)
MORE_SAMPLES = "for more: a higher --perf-freq, longer runs or more --runs, more --sessions"


def costed(p: Pair) -> bool:
    """The pair's rows have a cost per op (else: shares of samples, as before)."""
    return p.explained is not None


def title(p: Pair, top: int) -> str:
    if costed(p):
        why = next((d.why for d in p.symbols or () if d.verdict is SymbolVerdict.CANT_TELL
                    and d.why), "too few samples")
        tested = (f"q: Benjamini-Hochberg over the {p.symbols_tested} symbols tested, "
                  f"intervals adjusted to match"
                  if p.symbols_tested else f"none tested, the change shown: {why}")
        return (f"hot symbols, {p.new.name} vs {p.baseline.name}: worker CPU ns/op a symbol "
                f"(top {top} by |change|; {tested})")
    return (f"hot symbols, {p.new.name} vs {p.baseline.name} (top {top} by |delta|, % of "
            f"samples)" + (f"; {p.symbol_note}" if p.symbol_note else ""))


def ns(v: float | None, signed: bool = False) -> str:
    """A cost per op: one decimal (the explained line's numbers add up at this precision)."""
    if v is None:
        return "-"
    return f"{v:+.1f}" if signed else f"{v:.1f}"


def ci_ns(d: SymbolDelta) -> str:
    c = d.ci_ns
    return "-" if c is None else f"[{ns(c[0], True)}, {ns(c[1], True)}]"


def ci_pct(d: SymbolDelta) -> str:
    if d.ci_low is None or d.ci_high is None:
        return "-"
    return f"[{pct3(d.ci_low)}, {pct3(d.ci_high)}]"


def cells(d: SymbolDelta, cost: bool) -> list[str]:
    """A row's cells after its name and dso, for COST_HEAD or SHARE_HEAD."""
    if not cost:
        return [f"{d.baseline_pct:.2f}%", f"{d.new_pct:.2f}%", f"{d.delta:+.2f}"]
    return [ns(d.baseline_ns_per_op), ns(d.new_ns_per_op), pct3(d.change_pct), ci_pct(d),
            p_value(d.p_value), p_value(d.q_value), d.word]


def explained_parts(e: Explained) -> tuple[float, list[tuple[SymbolDelta, float]], float]:
    """The change, each top row's and the rest's, rounded to 0.1 ns/op so that what is shown
    adds up too: the rest takes what rounding the parts left."""
    total = round(e.change, 1)
    parts = [(d, round(d.change_ns or 0.0, 1)) for d in e.top]
    rest = round(total - math.fsum(x for _, x in parts), 1)
    return total, parts, rest


def explained_line(p: Pair) -> str:
    """"+12.4 ns/op: read_zero +9.1 [+7.9, +10.3], ..., the rest +0.6"."""
    e = p.explained
    if e is None:
        return ""
    total, parts, rest = explained_parts(e)
    named = [f"{d.symbol} {ns(x, True)}" + (f" {ci_ns(d)}" if d.ci_ns else f" ({d.word})")
             for d, x in parts]
    return (f"{ns(total, True)} ns/op ({ns(e.baseline_ns_per_op)} -> "
            f"{ns(e.new_ns_per_op)}, worker CPU time per op): "
            + ", ".join(named + [f"the rest {ns(rest, True)}"]))


def notes(p: Pair) -> list[str]:
    """What the symbol table's words rest on, once under it."""
    if not costed(p):
        return []
    how = {"sessions": "sessions as replicates", "pairs": "the series' sessions paired"}
    methods = ", ".join(dict.fromkeys(how.get(d.method, d.method)
                                      for d in p.symbols or () if d.method))
    return ["cost per op: a symbol's share of the worker's samples x the worker's CPU time "
            "(perf stat task-clock) per op of the measured runs; baseline and new are the "
            "means of the sessions' costs; vs rest the symbol's change relative to the rest of "
            "the profile (each session's scale removed), p the test's, its interval adjusted "
            "for the symbols tested"
            + (f" ({methods})" if methods else "")
            + f"; tested: the symbols with {MIN_SAMPLES}+ samples over the sessions; same: "
            f"the interval within ±{SAME_MARGIN_PCT:g}%; can't tell, {MORE_SAMPLES} "
            f"(docs/differential.md)"] + timer_note(p)


def timer_note(p: Pair, top: int = 15) -> list[str]:
    """Where perf sampled on cpu-clock: which rows may hold another place's time."""
    rows = (p.symbols or [])[:top]
    if not any(d.timer for d in rows):
        return []
    irq = [d.symbol for d in rows if d.irq]
    return ["sampled on cpu-clock (no PMU): time spent with interrupts off is charged where "
            "they come back on" + (f"; {', '.join(irq[:3])} may hold time from an "
                                   f"interrupts-off region" if irq else "")
            + " (docs/perf.md)"]


def _num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def row_json(d: SymbolDelta) -> dict[str, Any]:
    """A row as `symbol_diffs[i].symbols[j]`: the share keys as before, then the cost's."""
    out: dict[str, Any] = {"symbol": d.symbol, "dso": d.dso, "kernel": d.kernel,
                           "baseline_pct": d.baseline_pct, "new_pct": d.new_pct,
                           "delta": d.delta, "names": list(d.names)}
    ci = d.ci_ns                        # no cost per op: every cost key null, never 0
    return {**out, "baseline_ns_per_op": _num(d.baseline_ns_per_op),
            "new_ns_per_op": _num(d.new_ns_per_op), "change_ns_per_op": _num(d.change_ns),
            "change_pct": _num(d.change_pct), "ci_low": _num(d.ci_low),
            "ci_high": _num(d.ci_high), "ci_low_alone": _num(d.ci_low_alone),
            "ci_high_alone": _num(d.ci_high_alone),
            "ci_low_ns_per_op": _num(ci[0]) if ci else None,
            "ci_high_ns_per_op": _num(ci[1]) if ci else None,
            "p_value": _num(d.p_value), "q_value": _num(d.q_value),
            "significant": d.significant, "verdict": d.word or None,
            "samples_baseline": d.samples_baseline, "samples_new": d.samples_new,
            "baseline_sessions_ns_per_op": list(d.baseline_costs) if d.verdict else None,
            "new_sessions_ns_per_op": list(d.new_costs) if d.verdict else None,
            "method": d.method or None,
            "why": d.why or None, "cost_change_pct": _num(d.cost_change_pct),
            "sessions_for_10pct": d.sessions_for, "censored": d.censored,
            "cpu_clock": d.timer, "may_hold_irqs_off_time": d.irq}


def diff_json(p: Pair) -> dict[str, Any]:
    """One pair's `symbol_diffs` entry."""
    e = p.explained
    out: dict[str, Any] = {
        "file": p.new.file, "name": p.new.text.name,
        "symbols": [row_json(d) for d in p.symbols or ()],
        "tested": p.symbols_tested, "correction": CORRECTION if costed(p) else None,
        "min_samples": MIN_SAMPLES, "note": p.symbol_note or None, "explained": None}
    if e is not None:
        out["explained"] = {
            "baseline_ns_per_op": e.baseline_ns_per_op, "new_ns_per_op": e.new_ns_per_op,
            "rest_baseline_ns_per_op": e.rest_baseline_ns_per_op,
            "rest_new_ns_per_op": e.rest_new_ns_per_op,
            "change_ns_per_op": e.change, "rest_change_ns_per_op": e.rest_change,
            "top": [{"symbol": d.symbol, "dso": d.dso, "names": list(d.names),
                     "baseline_ns_per_op": d.baseline_ns_per_op,
                     "new_ns_per_op": d.new_ns_per_op, "change_ns_per_op": d.change_ns,
                     "ci_low_ns_per_op": d.ci_ns[0] if d.ci_ns else None,
                     "ci_high_ns_per_op": d.ci_ns[1] if d.ci_ns else None,
                     "verdict": d.word} for d in e.top],
            "text": explained_line(p)}
    return out


def csv_rows(p: Pair) -> list[dict[str, Any]]:
    """The costed rows as csv rows of the comparison table (metric "symbol NAME", unit
    ns/op), then the worker's total and the rest: the explained change, as numbers."""
    e = p.explained
    if e is None:
        return []
    base = {"file": p.new.file, "label": p.new.text.label, "name": p.new.text.name,
            "partial": p.new.partial, "unit": "ns/op", "higher_is_better": False,
            "baseline_file": p.baseline.file, "exploratory": True}
    out = []
    for d in p.symbols or ():
        out.append({**base, "metric": f"symbol {d.symbol}", "baseline": d.baseline_ns_per_op,
                    "new": d.new_ns_per_op, "diff": d.change_ns, "change_pct": d.change_pct,
                    "ci_low": d.ci_low, "ci_high": d.ci_high, "ci_low_alone": d.ci_low_alone,
                    "ci_high_alone": d.ci_high_alone, "p_value": d.p_value,
                    "q_value": d.q_value, "significant": d.significant, "verdict": d.word,
                    "method": d.method or None, "correction": CORRECTION,
                    "dso": d.dso, "names": " ".join(d.names)})
    out.append({**base, "metric": "worker cpu/op", "baseline": e.baseline_ns_per_op,
                "new": e.new_ns_per_op, "diff": e.change})
    out.append({**base, "metric": f"worker cpu/op, all but the top {EXPLAIN_TOP} symbols",
                "baseline": e.rest_baseline_ns_per_op, "new": e.rest_new_ns_per_op,
                "diff": e.rest_change})
    return out
