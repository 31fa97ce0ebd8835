"""The typed events a session streams to its consumers (results file, CLI, TUI).

Every event turns into one JSON object with a "type" key (`to_json`) and back
(`from_json`), which is also the shape of the lines in a result file.
"""
from __future__ import annotations

import dataclasses
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
    summary: dict[str, Any]
    variant: str = ""


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


def from_json(obj: dict[str, Any]) -> Event:
    """Build an event from a parsed JSON line; KeyError/TypeError if it is not one."""
    obj = dict(obj)
    cls = _TYPES[obj.pop("type")]
    if cls is HotSymbols:
        obj["symbols"] = tuple(HotSymbol(**s) for s in obj.get("symbols", ()))
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in obj.items() if k in names})
