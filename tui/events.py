"""The typed events a session streams to its consumers (results file, CLI, TUI).

Every event turns into one JSON object with a "type" key (`to_json`) and back
(`from_json`), which is also the shape of the lines in a result file: hotloop.codec does both
from the definitions below (their types, and what their fields' metadata bound), so a field
added here is written, read and checked with nothing else to change.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from hotloop import codec
from hotloop.checks import show
from hotloop.record import NAME, Header, SessionSummary

# The magnitudes a measured number (a run's value, an extra, a counter) may have,
# besides 0.  Every real measurement of a hot path fits with room to spare (u64
# counters end at 1.8e19); within them, ratios, squares and sums of a million values
# stay finite in a float64 and histogram widths stay normal floats, so no consumer
# has to guard its arithmetic.  NaN, infinities and denormals are not measurements.
MIN_ABS, MAX_ABS = 1e-50, 1e50


def finite_problem(value: Any) -> str | None:
    """Why `value` is not a finite number (NaN, infinite, a bool, a string...), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number, got {show(value)}"
    try:
        if math.isfinite(value):
            return None
    except OverflowError:           # an int too big for a float
        pass
    return f"{show(value)} is not a finite number"


def number_problem(value: Any) -> str | None:
    """Why `value` cannot be a measured number, or None: see MIN_ABS, MAX_ABS."""
    bad = finite_problem(value)
    if bad:
        return bad
    if value and not MIN_ABS <= abs(value) <= MAX_ABS:
        return f"{show(value)} is outside the range of a measurement " \
               f"(0 or {MIN_ABS:g} to {MAX_ABS:g} in magnitude)"
    return None


def _build_id(v: str) -> str | None:
    return None if re.fullmatch(r"[0-9a-f]{2,128}", v) else f"{show(v)} is not a build id (hex digits)"


# What a field may hold beyond its type (hotloop.codec reads them): a measured number, a
# count, a worker's pid, a warning's or a failure's words as read back.
MEASURED = {"check": number_problem}
COUNT = {"min": 0}
MESSAGE_MAX = 1000
MESSAGE = {"cut": MESSAGE_MAX}


@dataclass(frozen=True)
class HotSymbol:
    """One line of `perf report`: share of samples in one symbol."""
    symbol: str
    dso: str
    percent: float = field(metadata=MEASURED)
    kernel: bool
    samples: int = field(default=0, metadata=COUNT)

    @property
    def named(self) -> bool:
        """False for an address perf has no symbol for (a stripped binary, JIT code)."""
        return not (self.symbol.startswith("0x") or self.symbol == "[unknown]")


@dataclass(frozen=True)
class Started:
    """The worker is set up; `header` is what the result file's first line holds."""
    tag: ClassVar[str] = "started"
    header: Header
    result_file: str = ""

    @property
    def variant(self) -> str:
        return self.header.variant


@dataclass(frozen=True)
class RunSample:
    """One repetition of the measured section."""
    tag: ClassVar[str] = "run"
    index: int                     # 0-based among recorded runs (warmups: -1, -2, ...)
    value: float = field(metadata=MEASURED)     # the workload's primary metric
    ops: int = field(metadata=COUNT)
    bytes: int = field(metadata=COUNT)
    ns: int = field(metadata=COUNT)
    cycles: int = field(metadata=COUNT)
    extra: dict[str, float] = field(default_factory=dict, metadata=MEASURED)
    warmup: bool = False
    variant: str = field(default="", metadata=NAME)     # interleaved sessions: which ran


@dataclass(frozen=True)
class HotSymbols:
    """A perf summary: of one window (scope "window"), one run ("run") or a whole session."""
    tag: ClassVar[str] = "hot_symbols"
    symbols: tuple[HotSymbol, ...]
    scope: Literal["window", "run", "session"] = "window"
    window: int = 0
    samples: int = field(default=0, metadata=COUNT)
    variant: str = field(default="", metadata=NAME)
    # the whole run's: {DSO as perf names it: build id} of the binaries sampled, so a later
    # annotation knows whether the code on disk is still the code that ran
    build_ids: dict[str, str] = field(default_factory=dict, hash=False,
                                      metadata={"check": _build_id})
    # and {path: build id} of those binaries as the workers mapped them when set up, and the
    # workers' pids: perf samples whole CPUs, and another user's run of the same workload
    # has its own copy of the module under the same name
    binaries: dict[str, str] = field(default_factory=dict, hash=False,
                                     metadata={"check": _build_id})
    pids: tuple[int, ...] = field(default=(), metadata={"min": 1, "max": 2**31 - 1})
    comms: tuple[str, ...] = ()    # the workers' names, inherited by what they fork per run
    # a window's: why it has no symbols though it may have had samples ("dropped unread: perf
    # report fell behind ..."), else ""
    dropped: str = ""
    # the session's: every symbol with at least this many samples is listed (1: every symbol
    # sampled); 0, an older file: its top 100 only (analysis.symcost reads what that means)
    floor: int = field(default=0, metadata=COUNT)


@dataclass(frozen=True)
class Warning:  # noqa: A001 - the event is called what it is
    tag: ClassVar[str] = "warning"
    message: str = field(metadata=MESSAGE)
    variant: str = field(default="", metadata=NAME)


@dataclass(frozen=True)
class PerfStart:
    """Whether perf's recording of a worker started: written once perf acked (sampling is
    on) or gave up, so a header with perf on can be told from a session where perf never ran.
    `seconds` is the wait from the worker's being ready to perf's answer (perf record spawned
    as the worker started: what is left of its start then); `message` why it did not start."""
    tag: ClassVar[str] = "perf_start"
    started: bool
    seconds: float = field(default=0.0, metadata={"min": 0})
    message: str = field(default="", metadata=MESSAGE)
    variant: str = field(default="", metadata=NAME)


@dataclass(frozen=True)
class Finished:
    """The session ended with every run: its summary, and perf stat's counters for the whole
    session (a counter this CPU lacks is None, never 0)."""
    tag: ClassVar[str] = "finished"
    summary: SessionSummary
    variant: str = field(default="", metadata=NAME)
    counters: dict[str, float | None] = field(default_factory=dict)

    @staticmethod
    def from_older(obj: dict[str, Any]) -> dict[str, Any]:
        """Format 1 kept the counters in the summary."""
        summary = obj.get("summary")
        if type(summary) is dict and "counters" in summary:
            if "counters" in obj:           # no hotloop wrote both
                raise ValueError("summary: counters: format 1's, beside the line's own")
            summary = dict(summary)
            counters = summary.pop("counters")
            obj = {**obj, "summary": summary}
            if counters is not None:
                obj["counters"] = counters
        return obj


@dataclass(frozen=True)
class Failed:
    """The session ended early; `run` is the repetition that failed (-1: before any)."""
    tag: ClassVar[str] = "failed"
    message: str = field(metadata=MESSAGE)
    run: int = -1
    signal: str = ""
    interrupted: bool = False
    bad_input: bool = False        # params that cannot work: exit 2, not 1
    variant: str = field(default="", metadata=NAME)


Event = Started | RunSample | HotSymbols | Warning | PerfStart | Finished | Failed
# An event line of a newer writer may hold a key this version does not know: it is left
# unread (the header, which says the format, refuses one: hotloop.record).
LINES: codec.Tagged[Event] = codec.Tagged(
    (Started, RunSample, HotSymbols, Warning, PerfStart, Finished, Failed), unknown="ignore")


def to_json(event: Event) -> dict[str, Any]:
    return LINES.to_json(event)


def from_json(obj: Any) -> Event:
    """Build an event from a parsed JSON line; ValueError (saying which field and why)
    if it is not one, so no consumer ever sees a field of the wrong type."""
    return LINES.from_json(obj)


def metric_value(metric: str, ops: int, bytes_: int, ns: int, cycles: int,
                 extra: dict[str, float]) -> float:
    """A run's value of `metric` from its counters: the one rule the session records it by and
    a reader checks it by.  ValueError for a run that reported no such figure, or an extra
    that is no measurement (NaN, infinite, out of range: the run fails rather than record
    what no reader can use)."""
    for name, x in extra.items():
        bad = number_problem(x)
        if bad:
            raise ValueError(f"extra {name!r} from hl_add_extra: {bad}")
    per_op = metric in ("ns/op", "cycles/op", "ops/s")
    if per_op and not ops or not ns:
        raise ValueError(f"the workload reported {ops} ops in {ns} ns: "
                         f"no {metric} (hl_run must fill res->ops and res->ns)")
    if metric == "cycles/op" and not cycles:
        raise ValueError("no cycles/op: this CPU has no TSC for hl_clock to read")
    match metric:
        case "bytes/s":
            return bytes_ * 1e9 / ns
        case "ops/s":
            return ops * 1e9 / ns
        case "ns/op":
            return ns / ops
        case "cycles/op":
            return cycles / ops
    try:
        return float(extra[metric])
    except KeyError:
        raise ValueError(f"the workload reported no extra metric {metric!r} with "
                         f"hl_add_extra (its extras: {', '.join(extra) or 'none'})") from None
