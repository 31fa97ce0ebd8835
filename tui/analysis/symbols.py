"""The perf symbol diff of a comparison: which hot symbols grew or shrank, a function's
compiler clones counted as the function; and its model, a row a symbol (SymbolDelta: the
shares of samples, and where the sessions give one the cost per operation, its test and its
word) and the pair's change explained (Explained).  analysis.symcost says what a cost per
operation is, analysis.symdiff how a row is tested.

A build names a function's copies by what the compiler did to it: GCC's interprocedural
passes add `.isra.N`, `.constprop.N`, `.part.N` (and `.lto_priv.N`, `.localalias`), its
hot/cold splitting `.cold` (`.cold.N` before GCC 10), Clang's ThinLTO `.llvm.N`; a
demangled C++ name says ` [clone .isra.0]`. Another build of the same kernel may clone
another way, so `read_zero.isra.0` and `read_zero` are one function: the diff adds them up in
one row, which names them all.
"""
from __future__ import annotations

import enum
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


# A workload's build is a module named for its content (run.build: _hl_NAME_KEY, KEY 16 hex
# digits of the source, flags and compiler): two revisions of one workload are two files, and
# their hl_run one function to compare, not one "gone" and one "new".
_BUILD = re.compile(r"(_hl_\w+?)_[0-9a-f]{16}(\.[^/]*)$")


def dso_key(dso: str) -> str:
    """The DSO as rows are matched across sides: a workload's build without its content key
    (`.../_hl_chain_0123456789abcdef.cpython-311-x86_64-linux-gnu.so` is `.../_hl_chain.cpython
    ...so`), anything else as it is."""
    return _BUILD.sub(r"\1\2", dso)


def symbol_key(s: HotSymbol) -> tuple[str, str, bool]:
    """What makes two sides' samples one row: the function (its clones one), its DSO (a
    workload's builds one), kernel or user."""
    return base_name(s.symbol), dso_key(s.dso), s.kernel


# Defaults from benchmarks/perf_overhead.py on a 2-core KVM guest: workload CPU time per
# repetition +1.2..1.8% at 999 Hz, +4..6% at 1999 Hz, +12..15% at 3999 Hz (perf's default).


# --------------------------------------------------------------------------- symbol diff

class SymbolVerdict(enum.Enum):
    """What the differential test found of one symbol's cost per operation (analysis.symdiff
    says the rules): called (costlier, cheaper; new, gone where one side never sampled it),
    same within a margin, or can't tell.  Three words, never a fourth: "no change" beside
    an interval of [-58%, +168%] said what the data did not."""
    COSTLIER = "costlier"               # called, after the false discovery rate's control
    CHEAPER = "cheaper"
    NEW = "new"                         # called, and no session of the baseline sampled it
    GONE = "gone"                       # called, and no session of the new side did
    SAME = "same"                       # its interval within +-SAME_MARGIN_PCT
    CANT_TELL = "can't tell"            # neither: too wide (or one session a side: why)

    @property
    def called(self) -> bool:
        return self in (SymbolVerdict.COSTLIER, SymbolVerdict.CHEAPER, SymbolVerdict.NEW,
                        SymbolVerdict.GONE)


SAME_MARGIN_PCT = 5.0                   # "same within +-5%": the equivalence margin

# The symbols that turn interrupts (or softirqs) back on.  Where perf samples on a timer
# (cpu-clock: no PMU), a tick that falls while interrupts are off is taken when they come
# back on, so time spent with them off is charged here (docs/perf.md).
_IRQ_REENABLE = re.compile(
    r"irqrestore|irq_restore|irq_enable|bh_enable|softirq|_unlock_irq$|_unlock_bh$|"
    r"^finish_task_switch$")


def irq_reenable(symbol: str) -> bool:
    """Whether the symbol re-enables interrupts or softirqs (the irqrestore / irq_enable /
    softirq family): under cpu-clock sampling it may hold time from an interrupts-off region."""
    return bool(_IRQ_REENABLE.search(base_name(symbol)))


@dataclass(frozen=True)
class SymbolDelta:
    """One row of a `perf diff`-like comparison. `symbol` is the name the sides share (the
    base name when the row holds several), `names` every name of the row seen on either side,
    sorted.  baseline_pct/new_pct/delta: the sides' shares of their samples (sessions
    pooled), in percentage points.  The rest is the cost per operation (analysis.symcost),
    None where the sessions cannot give one: a side's centre is the arithmetic mean of its
    sessions' ns/op (linear, so the rows add up: Explained); change_pct, the interval and p
    are the test's (judge.test_metric on the sessions' costs), q_value the p corrected for
    the false discovery rate across the symbols tested in the pair (Benjamini-Hochberg)."""
    symbol: str
    dso: str
    kernel: bool
    baseline_pct: float
    new_pct: float
    delta: float
    names: tuple[str, ...]
    baseline_ns_per_op: float | None = None
    new_ns_per_op: float | None = None
    change_pct: float | None = None
    ci_low: float | None = None         # interval of change_pct, adjusted for the symbols
    ci_high: float | None = None        # tested (symdiff): clear of 0 exactly when called
    p_value: float | None = None
    q_value: float | None = None
    significant: bool = False           # called: costlier or cheaper
    verdict: SymbolVerdict | None = None    # None: no cost per op on a side
    samples_baseline: float = 0.0       # the side's samples of the row, a session (mean)
    samples_new: float = 0.0
    baseline_costs: tuple[float, ...] = ()  # each session's ns/op (0: not sampled)
    new_costs: tuple[float, ...] = ()
    method: str = ""                    # the test's (comparison.METHODS), "" untested
    ci_low_alone: float | None = None   # the row's own 95% interval, as if tested alone
    ci_high_alone: float | None = None
    why: str = ""                       # what the word leaves out (no test: why not)
    cost_change_pct: float | None = None    # the means' change of ns/op, absolute (change_pct
                                            # is the symbol's part, the session scale removed)
    half_width_pct: float | None = None     # of the shown interval, log scale: "can't tell: +-X%"
    sessions_for: int | None = None     # sessions a side that would find a 10% change of it
    censored: bool = False              # an older file's cut left it out of a session
    df: float | None = None             # the moderated test's degrees of freedom
    timer: bool = False                 # a session of the pair sampled on cpu-clock (no PMU)
    irq: bool = False                   # timer-sampled, and it re-enables interrupts: it may
                                        # hold time from an interrupts-off region (irq_reenable)

    @property
    def merged(self) -> bool:
        """The row adds up more than one name (a function's clones)."""
        return len(self.names) > 1

    @property
    def word(self) -> str:
        """The verdict as every format says it: "costlier", "same within ±5%", "can't tell:
        ±58% (9 a side for 10%)"; "" without a cost."""
        if self.verdict is None:
            return ""
        if self.verdict is SymbolVerdict.SAME:
            return f"same within ±{SAME_MARGIN_PCT:g}%"
        if self.verdict is SymbolVerdict.CANT_TELL:
            if self.half_width_pct is None or not math.isfinite(self.half_width_pct):
                return f"can't tell: {self.why.split(':')[0]}" if self.why else "can't tell"
            more = f" ({self.sessions_for} a side for 10%)" if self.sessions_for else ""
            if self.half_width_pct >= 1000:     # a few samples, or sessions far apart
                return "can't tell: over ±1000%"
            return f"can't tell: ±{sig3(self.half_width_pct)}%{more}"
        return str(self.verdict.value)

    @property
    def change_ns(self) -> float | None:
        """new - baseline, ns/op (the centres' difference: what Explained adds up)."""
        if self.baseline_ns_per_op is None or self.new_ns_per_op is None:
            return None
        return self.new_ns_per_op - self.baseline_ns_per_op

    @property
    def ci_ns(self) -> tuple[float, float] | None:
        """The interval of the change in ns/op: the test's interval in % of the baseline's
        centre (the test's % is of its own, log-scale centre: close, not the same)."""
        if self.ci_low is None or self.ci_high is None or self.baseline_ns_per_op is None:
            return None
        b = self.baseline_ns_per_op
        return b * self.ci_low / 100, b * self.ci_high / 100


def sig3(v: float) -> str:
    """Three significant digits, never an exponent from a thousandth to a million."""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    if abs(v) < 1e-3:
        return f"{v:.3g}"
    digits = max(0, 2 - math.floor(math.log10(abs(v))))
    if digits and abs(round(v, digits)) >= 10 ** (3 - digits):
        digits -= 1                     # 9.999 rounds to 10.0, not 10.00
    return f"{v:.{digits}f}" if abs(v) < 1e6 else f"{v:.3g}"


def pct3(v: float | None) -> str:
    """A signed % change at three significant digits ("+68.1%", "-3.46%"); "-" for none."""
    if v is None or not math.isfinite(v):
        return "-"
    if abs(v) < 5e-4:                   # rounding's dust (-1.78e-13%) is no change
        return "+0%"
    return f"{'+' if v >= 0 else '-'}{sig3(abs(v))}%"


SymbolRow = SymbolDelta                 # the name the console work uses


@dataclass(frozen=True)
class Explained:
    """A pair's worker CPU time per operation (perf stat's task-clock over the measured
    runs' ops), each side the arithmetic mean of its sessions', split into the `top` rows'
    costs and the rest: rest = total - sum(top) on each side, so the changes add up exactly
    (change == sum of the top rows' change_ns + rest_change)."""
    baseline_ns_per_op: float
    new_ns_per_op: float
    rest_baseline_ns_per_op: float
    rest_new_ns_per_op: float
    top: tuple[SymbolDelta, ...]

    @property
    def change(self) -> float:
        return self.new_ns_per_op - self.baseline_ns_per_op

    @property
    def rest_change(self) -> float:
        return self.rest_new_ns_per_op - self.rest_baseline_ns_per_op


def _shares(syms: Sequence[HotSymbol]) -> dict[tuple[str, str, bool], list[HotSymbol]]:
    out: dict[tuple[str, str, bool], list[HotSymbol]] = {}
    for s in syms:
        out.setdefault(symbol_key(s), []).append(s)
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
        dso = next((s.dso for s in (*bs, *ns)), key[1])     # as a side sampled it
        rows.append(SymbolDelta(symbol, dso, key[2], bp, np_, round(np_ - bp, 4), names))
    rows.sort(key=lambda r: (-abs(r.delta), -max(r.baseline_pct, r.new_pct), r.symbol))
    return rows
