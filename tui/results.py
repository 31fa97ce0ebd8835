"""Result files: JSON Lines, one event a line, appended as events arrive.

The first line is the `started` event with the header, then one line per
repetition, per hot-symbol window and per warning, and a `finished` (with
the summary) or `failed` line at the end.  A file without that last line is
what a crash leaves: it reads back as partial, with every run it holds.
"""
from __future__ import annotations

import json
import math
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui import events as ev
from tui.errors import HotloopError
from tui.stats import Summary, summarize


def default_path(plan_name: str, directory: Path = Path("results")) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = directory / f"{stamp}-{plan_name}.jsonl"
    n = 1
    while path.exists():                # two sessions in the same second
        n += 1
        path = directory / f"{stamp}-{plan_name}-{n}.jsonl"
    return path


def _finite(obj: Any) -> Any:
    """`obj` with every NaN or infinity replaced by null (not counted)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _line(obj: dict[str, Any]) -> str:
    """One result line.  NaN and Infinity are not JSON: a run's figures are checked
    before they get here (session.metric_value), and a perf counter that is NaN was
    not counted, so it is written as null."""
    try:
        text = json.dumps(obj, separators=(",", ":"), default=str, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(obj), separators=(",", ":"), default=str, allow_nan=False)
    return text + "\n"


class Writer:
    """Appends events to a result file, each line flushed as it comes."""

    def __init__(self, path: Path):
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(path, "w", encoding="utf-8")    # one session, one file
        except OSError as e:
            raise HotloopError(f"{path}: cannot write the result file: {e.strerror}") from None

    def write(self, event: ev.Event) -> None:
        self._f.write(_line(ev.to_json(event)))
        self._f.flush()

    def close(self) -> None:
        if not self._f.closed:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()


@dataclass
class Result:
    """A result file read back."""
    path: Path
    header: dict[str, Any]
    runs: list[ev.RunSample] = field(default_factory=list)
    warmups: list[ev.RunSample] = field(default_factory=list)
    windows: list[ev.HotSymbols] = field(default_factory=list)
    session_symbols: ev.HotSymbols | None = None
    warnings: list[str] = field(default_factory=list)
    finished: ev.Finished | None = None
    failed: ev.Failed | None = None

    @property
    def partial(self) -> bool:
        return self.finished is None

    @property
    def values(self) -> list[float]:
        return [r.value for r in self.runs]

    @property
    def summary(self) -> Summary | None:
        return summarize(self.values)

    @property
    def workload(self) -> dict[str, Any]:
        return self.header.get("workload", {})


_S, _I, _B = ev._STR, ev._int(), ev._BOOL
# The header fields readers use, with what they must hold when present (a header
# may lack some: an older writer; it may have more: a newer one).
HEADER = ev._fields({
    "hotloop": _S, "time": _S, "host": _S, "kernel_release": _S, "kernel_version": _S,
    "arch": _S, "cmdline": _S, "cpu_model": _S, "cpus": _I, "mitigations": _S,
    "vulnerabilities": ev._DICT, "sysctl": ev._DICT, "python": _S, "label": _S,
    "variant": _S, "compiler": _S, "cflags": ev._list(_S), "source_sha256": _S,
    "workload": ev._fields({"name": _S, "source": _S, "summary": _S, "metric": _S,
                            "unit": _S, "higher_is_better": _B, "procs": _I}),
    "params": ev._map(lambda v: None if isinstance(v, (int, str)) and not isinstance(v, bool)
                      else f"expected an integer or a string, got {ev._show(v)}"),
    "cpu": ev._fields({"name": _S, "cpus": ev._list(_I), "sched": _S, "priority": _I,
                       "nice": _I, "governor": ev._optional(_S), "boost": ev._optional(_B),
                       "cflags": ev._list(_S), "isolated": _B, "strict": _B}),
    "kernel": ev._fields({"name": _S, "label": _S, "sysctl": ev._DICT, "expect": ev._DICT}),
    "plan": ev._fields({"name": _S, "workload": _S, "cpu": _S, "kernel": _S, "runs": _I,
                        "warmup": _I, "perf": _B, "perf_freq": _I, "call_graph": _S,
                        "timeout": ev.finite_problem, "processes": _I}),
})


def _no_constant(token: str) -> Any:
    # json.loads takes NaN and Infinity, which are not JSON and which hotloop never writes
    raise ValueError(f"{token} is not JSON (hotloop never writes it: an edited file?)")


def _open_regular(path: Path) -> str:
    """The text of a regular file: a FIFO would block, /dev/zero would never end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise HotloopError(f"{path}: not a regular file, not a hotloop result")
            return f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise HotloopError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") \
            from None


def read(path: Path) -> Result:
    """Read a result file; HotloopError (one line: file, line, what is wrong) if it is
    not one.  Every field of what comes back has the type hotloop writes, and every
    number is finite, so no consumer needs to check."""
    lines = _open_regular(path).split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    result: Result | None = None
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_no_constant)
        except json.JSONDecodeError:
            if no == len(lines) and result is not None:
                break                   # a line cut short by a crash: keep the rest
            raise HotloopError(f"{path}:{no}: not a hotloop result line (not JSON)") from None
        except (ValueError, RecursionError) as e:
            why = str(e) if isinstance(e, ValueError) else "nested too deep"
            raise HotloopError(f"{path}:{no}: not a hotloop result line: {why}") from None
        try:
            event = ev.from_json(obj)
            bad = HEADER(event.header) if isinstance(event, ev.Started) else None
        except ValueError as e:
            raise HotloopError(f"{path}:{no}: not a hotloop result line: {e}") from None
        if bad:
            raise HotloopError(f"{path}:{no}: not a hotloop result line: header: {bad}")
        if result is None:
            if not isinstance(event, ev.Started):
                raise HotloopError(f"{path}:{no}: not a hotloop result (no header line)")
            result = Result(path, event.header)
        elif isinstance(event, ev.Started):
            raise HotloopError(f"{path}:{no}: a second header line: two runs wrote this file")
        elif isinstance(event, ev.RunSample):
            (result.warmups if event.warmup else result.runs).append(event)
        elif isinstance(event, ev.HotSymbols):
            if event.scope == "session":
                result.session_symbols = event
            else:
                result.windows.append(event)
        elif isinstance(event, ev.Warning):
            result.warnings.append(event.message)
        elif isinstance(event, ev.Finished):
            result.finished = event
        elif isinstance(event, ev.Failed):
            result.failed = event
    if result is None:
        raise HotloopError(f"{path}: empty, not a hotloop result")
    return result
