"""A symbol's CPU time per operation, of one session and of a side's sessions.

What the data hold (run/drive, run/worker, perf/recorder): the worker does its warmups, then
says Ready; perf record and perf stat are attached then, both enabled over their control
pipes before the first measured run is let go, and both stopped together (SIGINT) after the
last measured run, before the worker's teardown.  So the samples and the counters cover the
same interval: the measured runs (and the worker's few lines of Python between them), never
the warmups, the setup or the teardown.  perf record samples the worker's CPUs (`-a -C`) and
`perf report --comm` keeps the worker's own samples (its comm, inherited by what it forks),
or without system-wide sampling it records the worker's pids (`-p`); either way the session
HotSymbols' percent is of the worker's samples only, and their `samples` is the worker's
total, of which the listed symbols (the top 100) are a part.  perf stat counts the worker's
pids: its task-clock (ms) is the CPU time they ran in that interval, user and kernel.  The
ops of that interval are the measured runs' ops; with several worker processes a session,
each has its own recording over its own runs, and the counts and samples are summed.

The cost of a symbol in a session, in ns per operation:

    cost = (samples of the symbol / the worker's samples) x task-clock / ops

its share of the worker's CPU time, spread over the operations.  Why this and not the
others the data offer: samples x the sampling period counts CPU time too, but at perf's
`-F` the period floats and a window's count is rounded; the measured wall time (a run's
ns) holds the time the worker sleeps (a blocking read, a helper's turn), in which no sample
falls.  task-clock is an exact count over the very interval sampled, so only the split
between symbols is a sampling estimate, and the symbols of a session add up to its worker
CPU time per op.

A session's list holds every symbol sampled (HotSymbols.floor 1): one missing from it had no
sample there.  An older file (no floor) kept its top OLD_SESSION_TOP only: with that many
listed, a symbol missing had at most as many samples as the last one listed (`cut`), and is
censored there, not 0 (analysis.symstats tests it both ways).  Its cost, in the side's means
and the change explained, is 0 there: what the cut left out is in the session's rest.

No cost (None, never 0), with the reason in `why`: perf off or no samples, no task-clock
(perf stat could not count, or the session is partial: the counters come with its last
line), no ops.  What a workload forks after Ready is in both: its samples by the comm it
inherits (or perf record's inheritance, with `-p`), its CPU time by perf stat's.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hotloop.analysis.symbols import symbol_key
from hotloop.results import Result

Key = tuple[str, str, bool]             # (base name, dso, kernel): one row, clones merged
OLD_SESSION_TOP = 100                   # what a session listed before HotSymbols.floor


@dataclass(frozen=True)
class SymbolCost:
    """One row (a function's clones merged) of one session."""
    names: tuple[str, ...]
    samples: int
    share: float                        # of the worker's samples, 0..1
    ns_per_op: float | None             # None: the session has no cost (SessionCost.why)


@dataclass(frozen=True)
class SessionCost:
    """One session's worker CPU time per op and its symbols' shares of it."""
    file: str
    samples: int                        # the worker's, all symbols
    task_clock_ms: float | None
    ops: int                            # of the measured runs
    ns_per_op: float | None             # the worker's CPU ns/op; None: see why
    why: str                            # "" when there is a cost
    symbols: dict[Key, SymbolCost]
    cut: int | None = None              # an older file's top 100: a symbol not listed had
                                        # at most this many samples; None: it had none
    timer: bool = False                 # sampled on cpu-clock (no PMU): time with interrupts
                                        # off is charged where they come back on


def _why_none(r: Result, samples: int) -> str:
    if not samples:
        return r.symbols_missing or "perf sampled nothing of the worker"
    if r.finished is None:
        return "partial session: perf stat's counters come with its last line"
    clock = r.finished.counters.get("task-clock")
    if clock is None or not math.isfinite(clock) or clock <= 0:
        return "no task-clock: perf stat did not count"
    if not sum(x.ops for x in r.runs):
        return "no ops recorded"
    return ""


def session_cost(r: Result) -> SessionCost:
    """The session's costs (see the module docstring); rows keyed by base name."""
    hs = r.session_symbols
    syms = hs.symbols if hs is not None else ()
    total = hs.samples if hs is not None else 0
    ops = sum(x.ops for x in r.runs)
    why = _why_none(r, total if syms else 0)
    clock = r.finished.counters.get("task-clock") if r.finished and not why else None
    worker = clock * 1e6 / ops if clock is not None else None
    grouped: dict[Key, list[tuple[str, int, float]]] = {}
    for s in syms:
        share = s.samples / total if total and s.samples else s.percent / 100
        grouped.setdefault(symbol_key(s), []).append(
            (s.symbol, s.samples, share))
    out = {}
    for key, parts in grouped.items():
        share = math.fsum(p[2] for p in parts)
        out[key] = SymbolCost(tuple(sorted({p[0] for p in parts})), sum(p[1] for p in parts),
                              share, share * worker if worker is not None else None)
    cut = None
    if hs is not None and not hs.floor and len(syms) >= OLD_SESSION_TOP:
        cut = min(s.samples for s in syms)
    elif hs is not None and hs.floor > 1:
        cut = hs.floor - 1
    return SessionCost(str(r.path), total, clock, ops, worker, why, out, cut, timer_sampled(r))


TIMER_WARNING = "sampling falls back to cpu-clock"      # perf.probe's, kept in the file


def timer_sampled(r: Result) -> bool:
    """Whether the session's samples came from a timer (cpu-clock): perf said so when it
    started, or perf stat could not count cycles (no PMU)."""
    if any(TIMER_WARNING in w for w in r.warnings):
        return True
    counters = r.finished.counters if r.finished else {}
    return "cycles" in counters and counters["cycles"] is None


def display_name(key: Key, names: Sequence[str]) -> str:
    """A row's name: its one name, or the base name its clones share."""
    return names[0] if len(names) == 1 else key[0]


@dataclass(frozen=True)
class SideSymbol:
    """One row over a side's sessions: what `show` prints."""
    key: Key
    symbol: str
    dso: str
    kernel: bool
    names: tuple[str, ...]
    samples: tuple[int, ...]            # a session each (0: not sampled there)
    shares: tuple[float, ...]
    costs: tuple[float, ...] | None     # ns/op a session each; None: no cost on the side
    censored: tuple[bool, ...] = ()     # a session each: not listed, below its cut (an
                                        # older file's top 100): its 0 is at most `cut`

    @property
    def mean_ns(self) -> float | None:
        return math.fsum(self.costs) / len(self.costs) if self.costs else None

    @property
    def sd_ns(self) -> float | None:
        """The sessions' standard deviation of the cost; None with one session."""
        c = self.costs
        if not c or len(c) < 2:
            return None
        m = math.fsum(c) / len(c)
        return math.sqrt(math.fsum((x - m) ** 2 for x in c) / (len(c) - 1))


@dataclass(frozen=True)
class SideCost:
    """A side's sessions: their worker CPU ns/op and their symbols."""
    sessions: tuple[SessionCost, ...]
    symbols: tuple[SideSymbol, ...]     # by mean cost (or share), highest first

    @property
    def costed(self) -> bool:
        return all(s.ns_per_op is not None for s in self.sessions)

    @property
    def why(self) -> str:
        """Why the side has no cost per op: its first session's reason."""
        return next((f"{s.file}: {s.why}" for s in self.sessions if s.why), "")

    @property
    def timer(self) -> bool:
        """Some session sampled on cpu-clock."""
        return any(s.timer for s in self.sessions)

    @property
    def worker_ns(self) -> tuple[float, ...]:
        return tuple(s.ns_per_op for s in self.sessions if s.ns_per_op is not None)


def side_cost(rs: Sequence[Result]) -> SideCost:
    """Every row of the side's sessions, a value a session (0 where a session did not list
    it), by mean cost per op, or by mean share where there is none."""
    sessions = tuple(session_cost(r) for r in rs)
    costed = all(s.ns_per_op is not None for s in sessions)
    keys = list(dict.fromkeys(k for s in sessions for k in s.symbols))
    rows = []
    for k in keys:
        got = [s.symbols.get(k) for s in sessions]
        names = tuple(sorted({n for g in got if g for n in g.names}))
        rows.append(SideSymbol(
            k, display_name(k, names), k[1], k[2], names,
            tuple(g.samples if g else 0 for g in got),
            tuple(g.share if g else 0.0 for g in got),
            tuple((g.ns_per_op or 0.0) if g else 0.0 for g in got) if costed else None,
            tuple(g is None and s.cut is not None for g, s in zip(got, sessions))))
    rows.sort(key=lambda r: (-(r.mean_ns if r.mean_ns is not None else math.fsum(r.shares)),
                             r.symbol))
    return SideCost(sessions, tuple(rows))
