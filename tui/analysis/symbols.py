"""The perf symbol diff of a comparison: which hot symbols grew or shrank.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hotloop.events import HotSymbol

# Defaults from benchmarks/perf_overhead.py on a 2-core KVM guest: workload CPU time per
# repetition +1.2..1.8% at 999 Hz, +4..6% at 1999 Hz, +12..15% at 3999 Hz (perf's default).


# --------------------------------------------------------------------------- symbol diff

@dataclass(frozen=True)
class SymbolDelta:
    """One row of a `perf diff`-like comparison, in percentage points."""
    symbol: str
    dso: str
    kernel: bool
    baseline_pct: float
    new_pct: float
    delta: float


def diff_symbols(base: Sequence[HotSymbol], new: Sequence[HotSymbol]) -> list[SymbolDelta]:
    """Per (symbol, dso): baseline %, new %, delta (new - base), sorted by |delta| desc."""
    b = {(s.symbol, s.dso): s for s in base}
    n = {(s.symbol, s.dso): s for s in new}
    rows = []
    for key in b.keys() | n.keys():
        bp = b[key].percent if key in b else 0.0
        np_ = n[key].percent if key in n else 0.0
        kern = (b[key].kernel if key in b else False) or (n[key].kernel if key in n else False)
        rows.append(SymbolDelta(key[0], key[1], kern, bp, np_, round(np_ - bp, 4)))
    rows.sort(key=lambda r: (-abs(r.delta), -max(r.baseline_pct, r.new_pct), r.symbol))
    return rows
