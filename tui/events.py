"""The typed events a session streams to its consumers (results file, CLI, TUI).

Every event turns into one JSON object with a "type" key (`to_json`) and back
(`from_json`), which is also the shape of the lines in a result file.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HotSymbol:
    """One line of `perf report`: share of samples in one symbol."""
    symbol: str
    dso: str
    percent: float
    kernel: bool
    samples: int = 0


@dataclass(frozen=True)
class Started:
    """The worker is set up; `header` is what the result file's first line holds."""
    header: dict[str, Any]
    result_file: str = ""


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


@dataclass(frozen=True)
class Warning:  # noqa: A001 - the event is called what it is
    message: str
    variant: str = ""


@dataclass(frozen=True)
class Finished:
    """The session ended with every run: its summary, and perf stat's counters for the whole
    session (a counter this CPU lacks is None, never 0)."""
    summary: dict[str, Any]
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


Event = Started | RunSample | HotSymbols | Warning | Finished | Failed

_TYPES: dict[str, type] = {
    "started": Started, "run": RunSample, "hot_symbols": HotSymbols,
    "warning": Warning, "finished": Finished, "failed": Failed,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def to_json(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _NAMES[type(event)]}
    out.update(dataclasses.asdict(event))
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
        return f"expected a number, got {_show(value)}"
    try:
        if math.isfinite(value):
            return None
    except OverflowError:           # an int too big for a float
        pass
    return f"{_show(value)} is not a finite number"


def number_problem(value: Any) -> str | None:
    """Why `value` cannot be a measured number, or None: see MIN_ABS, MAX_ABS."""
    bad = finite_problem(value)
    if bad:
        return bad
    if value and not MIN_ABS <= abs(value) <= MAX_ABS:
        return f"{_show(value)} is outside the range of a measurement " \
               f"(0 or {MIN_ABS:g} to {MAX_ABS:g} in magnitude)"
    return None


def _show(value: Any) -> str:
    """A value as an error message quotes it: short, one line."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


Check = Callable[[Any], "str | None"]


def _type(t: type, name: str) -> Check:
    def check(v: Any) -> str | None:
        ok = isinstance(v, t) and (t is bool or not isinstance(v, bool))
        return None if ok else f"expected {name}, got {_show(v)}"
    return check


_STR, _BOOL, _DICT = _type(str, "a string"), _type(bool, "true or false"), _type(dict, "an object")


def _int(lo: int = -_U64, hi: int = _U64 - 1) -> Check:
    def check(v: Any) -> str | None:
        bad = _type(int, "an integer")(v)
        return bad or (None if lo <= v <= hi else f"{v} is out of range {lo}..{hi}")
    return check


def _optional(check: Check) -> Check:
    return lambda v: None if v is None else check(v)


def _list(item: Check) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, list):
            return f"expected a list, got {_show(v)}"
        for i, x in enumerate(v):
            bad = item(x)
            if bad:
                return f"item {i}: {bad}"
        return None
    return check


def _map(value: Check) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, dict):
            return f"expected an object, got {_show(v)}"
        for k, x in v.items():
            bad = value(x)
            if bad:
                return f"{k}: {bad}"
        return None
    return check


def _fields(spec: dict[str, Check], required: tuple[str, ...] = ()) -> Check:
    """An object whose listed keys (when present) hold what `spec` says; others are free."""
    def check(v: Any) -> str | None:
        if not isinstance(v, dict):
            return f"expected an object, got {_show(v)}"
        for k in required:
            if k not in v:
                return f"missing {k!r}"
        for k, x in v.items():
            if k in spec:
                bad = spec[k](x)
                if bad:
                    return f"{k}: {bad}"
        return None
    return check


_COUNT = _int(0)
_SYMBOL = _fields({"symbol": _STR, "dso": _STR, "percent": number_problem, "kernel": _BOOL,
                   "samples": _COUNT}, required=("symbol", "dso", "percent", "kernel"))
# hotloop computes a summary and counts counters itself: finite (or null, not counted)
# is all a reader needs of them
_SUMMARY = _fields({"n": _COUNT, **{k: _optional(finite_problem) for k in
                                    ("median", "mean", "stdev", "cv", "min", "max")},
                    "counters": _map(_optional(finite_problem))})     # files before 0.2
_COUNTERS = _map(_optional(finite_problem))
# What each field of each line may hold, by the dataclass's field name.
_SPECS: dict[type, dict[str, Check]] = {
    Started: {"header": _DICT, "result_file": _STR},
    RunSample: {"index": _int(), "value": number_problem, "ops": _COUNT, "bytes": _COUNT,
                "ns": _COUNT, "cycles": _COUNT, "extra": _map(number_problem),
                "warmup": _BOOL, "variant": _STR},
    HotSymbols: {"symbols": _list(_SYMBOL), "scope": lambda v: _STR(v) or (
                     None if v in ("window", "run", "session") else f"unknown scope {_show(v)}"),
                 "window": _int(), "samples": _COUNT, "variant": _STR},
    Warning: {"message": _STR, "variant": _STR},
    Finished: {"summary": _SUMMARY, "variant": _STR, "counters": _COUNTERS},
    Failed: {"message": _STR, "run": _int(), "signal": _STR, "interrupted": _BOOL,
             "bad_input": _BOOL, "variant": _STR},
}

# The fields a line must have: those without a default.
_REQUIRED: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING) for cls in _SPECS}


def from_json(obj: Any) -> Event:
    """Build an event from a parsed JSON line; ValueError (saying which field and why)
    if it is not one, so no consumer ever sees a field of the wrong type."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected an object, got {_show(obj)}")
    kind = obj.get("type")
    cls = _TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown type {_show(kind)}" if "type" in obj else "no \"type\"")
    spec, required = _SPECS[cls], _REQUIRED[cls]
    for name in required:
        if name not in obj:
            raise ValueError(f"{kind} line without {name!r}")
    args = {k: v for k, v in obj.items() if k in spec}      # unknown keys: a newer writer
    for name, value in args.items():
        bad = spec[name](value)
        if bad:
            raise ValueError(f"{kind} line: {name}: {bad}")
    if cls is HotSymbols:
        args["symbols"] = tuple(HotSymbol(**{k: v for k, v in s.items()
                                             if k in ("symbol", "dso", "percent", "kernel",
                                                      "samples")})
                                for s in args["symbols"])
    if cls is Finished and "counters" not in args and "counters" in args["summary"]:
        # files written before counters had a field of their own kept them in the summary
        args["summary"] = dict(args["summary"])
        args["counters"] = args["summary"].pop("counters")
    if cls is RunSample:            # -0.0 reads as 0.0: a sign on nothing is noise
        args["value"] = args["value"] + 0.0
    return cls(**args)
