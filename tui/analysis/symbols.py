"""The perf symbol diff of a comparison: which hot symbols grew or shrank, a function's
compiler clones counted as the function.

A build names a function's copies by what the compiler did to it: GCC's interprocedural
passes add `.isra.N`, `.constprop.N`, `.part.N` (and `.lto_priv.N`, `.localalias`), its
hot/cold splitting `.cold` (`.cold.N` before GCC 10), Clang's ThinLTO `.llvm.N`; a
demangled C++ name says ` [clone .isra.0]`. Another build of the same kernel may clone
another way, so `read_zero.isra.0` and `read_zero` are one function: the diff adds them up in
one row, which names them all.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from hotloop.events import HotSymbol

# One clone suffix, without its dot. Only these: a dot in a symbol that is none of them (a
# static variable's `.5`, a name with a dot of its own) stays, as do addresses and [unknown].
_CLONE = r"(?:isra|constprop|part|lto_priv|llvm)\.\d+|(?:cold|localalias)(?:\.\d+)?"
_SUFFIXES = re.compile(rf"(?:\.(?:{_CLONE})| \[clone \.(?:{_CLONE})\])+$")


def base_name(symbol: str) -> str:
    """The symbol without its trailing clone suffixes, in any number and order
    (`foo.constprop.0.isra.0.cold` is `foo`); any other name as it is."""
    if symbol.startswith("0x") or symbol == "[unknown]":
        return symbol
    return _SUFFIXES.sub("", symbol) or symbol      # a name of nothing but a suffix stays


# Defaults from benchmarks/perf_overhead.py on a 2-core KVM guest: workload CPU time per
# repetition +1.2..1.8% at 999 Hz, +4..6% at 1999 Hz, +12..15% at 3999 Hz (perf's default).


# --------------------------------------------------------------------------- symbol diff

@dataclass(frozen=True)
class SymbolDelta:
    """One row of a `perf diff`-like comparison, in percentage points. `symbol` is the name
    the sides share (the base name when the row holds several), `names` every name of the
    row seen on either side, sorted."""
    symbol: str
    dso: str
    kernel: bool
    baseline_pct: float
    new_pct: float
    delta: float
    names: tuple[str, ...]

    @property
    def merged(self) -> bool:
        """The row adds up more than one name (a function's clones)."""
        return len(self.names) > 1


def _shares(syms: Sequence[HotSymbol]) -> dict[tuple[str, str, bool], list[HotSymbol]]:
    out: dict[tuple[str, str, bool], list[HotSymbol]] = {}
    for s in syms:
        out.setdefault((base_name(s.symbol), s.dso, s.kernel), []).append(s)
    return out


def diff_symbols(base: Sequence[HotSymbol], new: Sequence[HotSymbol]) -> list[SymbolDelta]:
    """Per (base name, dso, kernel or user): baseline %, new % (each the sum of the row's
    names on that side), delta (new - base), sorted by |delta| desc."""
    b, n = _shares(base), _shares(new)
    rows = []
    for key in b.keys() | n.keys():
        bs, ns = b.get(key, []), n.get(key, [])
        bp = math.fsum(s.percent for s in bs)
        np_ = math.fsum(s.percent for s in ns)
        names = tuple(sorted({s.symbol for s in (*bs, *ns)}))
        symbol = names[0] if len(names) == 1 else key[0]
        rows.append(SymbolDelta(symbol, key[1], key[2], bp, np_, round(np_ - bp, 4), names))
    rows.sort(key=lambda r: (-abs(r.delta), -max(r.baseline_pct, r.new_pct), r.symbol))
    return rows
