"""A hot symbol and its DSO as a column shows them (the reports, the mail, the console)."""
from __future__ import annotations

import contextlib
import re

from hotloop import events as ev


def symbol_name(s: ev.HotSymbol) -> str:
    """The symbol as shown: perf's bare address where it knows the mapping becomes
    `[unknown] libfoo.so+0x1234` (perf gives the address within the DSO then)."""
    if s.symbol.startswith("0x") and s.dso != "[unknown]":
        with contextlib.suppress(ValueError):
            return f"[unknown] {s.dso}+{int(s.symbol, 16):#x}"
    return s.symbol


def dso_name(dso: str) -> str:
    """A DSO short enough for a column: `kernel`, a module's name, a file's base name
    without Python's extension suffix (`x.cpython-311-x86_64-linux-gnu.so`: `x.so`); a
    library's version stays, as perf report shows it (`libc.so.6`)."""
    if dso == "[kernel.kallsyms]":
        return "kernel"
    if dso.startswith("[") and dso.endswith("]"):
        return dso[1:-1]
    return re.sub(r"\.cpython-[^.]+\.so$", ".so", dso.rsplit("/", 1)[-1])
