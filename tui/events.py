"""The typed events a session streams to its consumers (results file, CLI, TUI).

Every event turns into one JSON object with a "type" key (`to_json`) and back
(`from_json`), which is also the shape of the lines in a result file.
"""
from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any

from hotloop import record
from hotloop.checks import Check, fields, list_of, map_of, optional, show
from hotloop.record import Header, Summary


@dataclass(frozen=True)
class HotSymbol:
    """One line of `perf report`: share of samples in one symbol."""
    symbol: str
    dso: str
    percent: float
    kernel: bool
    samples: int = 0

    @property
    def named(self) -> bool:
        """False for an address perf has no symbol for (a stripped binary, JIT code)."""
        return not (self.symbol.startswith("0x") or self.symbol == "[unknown]")


@dataclass(frozen=True)
class Started:
    """The worker is set up; `header` is what the result file's first line holds."""
    header: Header
    result_file: str = ""

    @property
    def variant(self) -> str:
        return self.header.variant


@dataclass(frozen=True)
class RunSample:
    """One repetition of the measured section."""
    index: int                     # 0-based among recorded runs (warmups: -1, -2, ...)
    value: float                   # the workload's primary metric
    ops: int
    bytes: int
    ns: int
    cycles: int
    extra: dict[str, float] = field(default_factory=dict)
    warmup: bool = False
    variant: str = ""              # interleaved sessions: which variant ran


@dataclass(frozen=True)
class HotSymbols:
    """A perf summary: of one window (scope "window") or a whole run ("session")."""
    symbols: tuple[HotSymbol, ...]
    scope: str = "window"
    window: int = 0
    samples: int = 0
    variant: str = ""
    # the whole run's: {DSO as perf names it: build id} of the binaries sampled, so a later
    # annotation knows whether the code on disk is still the code that ran
    build_ids: dict[str, str] = field(default_factory=dict, hash=False)
    # and {path: build id} of those binaries as the workers mapped them when set up, and the
    # workers' pids: perf samples whole CPUs, and another user's run of the same workload
    # has its own copy of the module under the same name
    binaries: dict[str, str] = field(default_factory=dict, hash=False)
    pids: tuple[int, ...] = ()
    comms: tuple[str, ...] = ()    # the workers' names, inherited by what they fork per run
    # a window's: why it has no symbols though it may have had samples ("dropped unread: perf
    # report fell behind ..."), else ""
    dropped: str = ""
    # the session's: every symbol with at least this many samples is listed (1: every symbol
    # sampled); 0, an older file: its top 100 only (analysis.symcost reads what that means)
    floor: int = 0


@dataclass(frozen=True)
class Warning:  # noqa: A001 - the event is called what it is
    message: str
    variant: str = ""


@dataclass(frozen=True)
class PerfStart:
    """Whether perf's recording of a worker started: written once perf acked (sampling is
    on) or gave up, so a header with perf on can be told from a session where perf never ran.
    `seconds` is the wait from perf's spawn to its answer; `message` why it did not start."""
    started: bool
    seconds: float = 0.0
    message: str = ""
    variant: str = ""


@dataclass(frozen=True)
class Finished:
    """The session ended with every run: its summary, and perf stat's counters for the whole
    session (a counter this CPU lacks is None, never 0)."""
    summary: Summary
    variant: str = ""
    counters: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Failed:
    """The session ended early; `run` is the repetition that failed (-1: before any)."""
    message: str
    run: int = -1
    signal: str = ""
    interrupted: bool = False
    bad_input: bool = False        # params that cannot work: exit 2, not 1
    variant: str = ""


Event = Started | RunSample | HotSymbols | Warning | PerfStart | Finished | Failed

_TYPES: dict[str, type[Event]] = {
    "started": Started, "run": RunSample, "hot_symbols": HotSymbols,
    "warning": Warning, "perf_start": PerfStart, "finished": Finished, "failed": Failed,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def to_json(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _NAMES[type(event)]}
    out.update(record.to_json(event))
    return out


# The magnitudes a measured number (a run's value, an extra, a counter) may have,
# besides 0.  Every real measurement of a hot path fits with room to spare (u64
# counters end at 1.8e19); within them, ratios, squares and sums of a million values
# stay finite in a float64 and histogram widths stay normal floats, so no consumer
# has to guard its arithmetic.  NaN, infinities and denormals are not measurements.
MIN_ABS, MAX_ABS = 1e-50, 1e50
_U64 = 2**64


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


def of_type(t: type, name: str) -> Check:
    def check(v: Any) -> str | None:
        ok = isinstance(v, t) and (t is bool or not isinstance(v, bool))
        return None if ok else f"expected {name}, got {show(v)}"
    return check


STRING, BOOL, OBJECT = of_type(str, "a string"), of_type(bool, "true or false"), of_type(dict, "an object")


def integer(lo: int = -_U64, hi: int = _U64 - 1) -> Check:
    def check(v: Any) -> str | None:
        bad = of_type(int, "an integer")(v)
        return bad or (None if lo <= v <= hi else f"{v} is out of range {lo}..{hi}")
    return check


_COUNT = integer(0)


def _build_id(v: Any) -> str | None:
    return STRING(v) or (None if re.fullmatch(r"[0-9a-f]{2,128}", v)
                         else f"{show(v)} is not a build id (hex digits)")


_SYMBOL = fields({"symbol": STRING, "dso": STRING, "percent": number_problem, "kernel": BOOL,
                   "samples": _COUNT}, required=("symbol", "dso", "percent", "kernel"))
MESSAGE_MAX = 1000          # a warning's or a failure's words, as read back
# perf stat's counters: finite, or null (not counted)
_COUNTERS = map_of(optional(finite_problem))
# the header and the summary check themselves (hotloop.record), from their definitions
_SUMMARY = fields({"counters": _COUNTERS})     # format 1 kept the counters in the summary
# What each field of each line may hold, by the dataclass's field name.
_SPECS: dict[type, dict[str, Check]] = {
    Started: {"header": OBJECT, "result_file": STRING},    # the header: Header.from_json
    RunSample: {"index": integer(), "value": number_problem, "ops": _COUNT, "bytes": _COUNT,
                "ns": _COUNT, "cycles": _COUNT, "extra": map_of(number_problem),
                "warmup": BOOL, "variant": STRING},
    HotSymbols: {"symbols": list_of(_SYMBOL), "scope": lambda v: STRING(v) or (
                     None if v in ("window", "run", "session") else f"unknown scope {show(v)}"),
                 "window": integer(), "samples": _COUNT, "variant": STRING,
                 "build_ids": map_of(_build_id), "binaries": map_of(_build_id),
                 "pids": list_of(integer(1, 2**31 - 1)), "comms": list_of(STRING),
                 "dropped": STRING, "floor": integer(0)},
    Warning: {"message": STRING, "variant": STRING},
    PerfStart: {"started": BOOL, "seconds": lambda v: finite_problem(v) or (
                    None if v >= 0 else f"{show(v)} is negative"),
                "message": STRING, "variant": STRING},
    Finished: {"summary": _SUMMARY, "variant": STRING, "counters": _COUNTERS},
    Failed: {"message": STRING, "run": integer(), "signal": STRING, "interrupted": BOOL,
             "bad_input": BOOL, "variant": STRING},
}

# The fields a line must have: those without a default.
_REQUIRED: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING) for cls in _SPECS}


def from_json(obj: Any) -> Event:
    """Build an event from a parsed JSON line; ValueError (saying which field and why)
    if it is not one, so no consumer ever sees a field of the wrong type."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected an object, got {show(obj)}")
    kind = obj.get("type")
    cls = _TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown type {show(kind)}" if "type" in obj else "no \"type\"")
    spec, required = _SPECS[cls], _REQUIRED[cls]
    for name in required:
        if name not in obj:
            raise ValueError(f"{kind} line without {name!r}")
    args = {k: v for k, v in obj.items() if k in spec}      # unknown keys: a newer writer
    for name, value in args.items():
        bad = spec[name](value)
        if bad:
            raise ValueError(f"{kind} line: {name}: {bad}")
    # every string bounded (record.TEXT_MAX), what a table shows by a name shorter
    args = {k: v if k == "header" else record.cut_all(v) for k, v in args.items()}
    if "message" in args:
        args["message"] = record.cut(args["message"], MESSAGE_MAX)
    if "variant" in args:
        args["variant"] = record.cut(args["variant"], record.NAME["max"])
    if cls is HotSymbols:
        args["symbols"] = tuple(HotSymbol(**{k: v for k, v in s.items()
                                             if k in ("symbol", "dso", "percent", "kernel",
                                                      "samples")})
                                for s in args["symbols"])
        for key in ("pids", "comms"):
            if key in args:
                args[key] = tuple(args[key])
    if cls is Started:
        try:
            args["header"] = Header.from_json(args["header"])
        except record.NewerFormat:
            raise
        except ValueError as e:
            raise ValueError(f"header: {e}") from None
    if cls is Finished:
        summary = dict(args["summary"])
        counters = summary.pop("counters", None)
        if "counters" not in args and counters is not None:
            args["counters"] = counters     # format 1 kept them in the summary
        try:
            args["summary"] = Summary.from_json(summary)
        except ValueError as e:
            raise ValueError(f"{kind} line: summary: {e}") from None
    if cls is RunSample:            # -0.0 reads as 0.0: a sign on nothing is noise
        args["value"] = args["value"] + 0.0
    return cls(**args)
