"""Reading result files back: every line decoded and checked (`decode_line`, the one reader
of result lines, of files and of a remote session's stream), gathered into a `Result`.

A file without its last line (`finished` or `failed`) is what a crash leaves: it reads back
as partial, with every run it holds.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotloop import events as ev
from hotloop.errors import HotloopError
from hotloop.record import Header, NewerFormat, WorkloadInfo
from hotloop.results.runs import Runs
from hotloop.stats import Summary, summarize
from hotloop.visible import visible


@dataclass
class Result:
    """A result file read back, or a session's events collected as they come."""
    path: Path
    header: Header
    runs: Runs = field(default_factory=Runs)        # columns, not an object a run
    warmups: list[ev.RunSample] = field(default_factory=list)
    # the perf windows' and runs' hot symbols: held as they come from a session; read from a
    # file only when asked for (`windows`), since show and compare never do (32,000 windows,
    # 8 hours, were 370 MB)
    _windows: list[ev.HotSymbols] | None = field(default_factory=list, repr=False)
    session_symbols: ev.HotSymbols | None = None
    warnings: list[str] = field(default_factory=list)
    perf_starts: list[ev.PerfStart] = field(default_factory=list)   # a line a worker's perf
    finished: ev.Finished | None = None
    failed: ev.Failed | None = None
    digest: str = ""                    # sha256 of the file as read: a session's identity
    perf_windows: int = 0               # perf window lines in the file (read or not)

    def add(self, event: ev.Event) -> None:
        """One more event of the session (the header came first: `header`)."""
        if isinstance(event, ev.RunSample):
            (self.warmups if event.warmup else self.runs).append(event)
        elif isinstance(event, ev.HotSymbols):
            if event.scope == "session":
                self.session_symbols = event
            elif self._windows is not None:
                self._windows.append(event)
        # Messages carry a workload's error text: one line and inert (an ESC, a
        # newline shown as \x1b, \n) for every reader that prints them.
        elif isinstance(event, ev.Warning):
            self.warnings.append(visible(event.message))
        elif isinstance(event, ev.PerfStart):
            self.perf_starts.append(dataclasses.replace(event, message=visible(event.message)))
        elif isinstance(event, ev.Finished):
            self.finished = event
        elif isinstance(event, ev.Failed):
            self.failed = dataclasses.replace(event, message=visible(event.message))

    @property
    def perf_not_started(self) -> str | None:
        """Why perf, asked for, did not start (a worker's first such line), or None: it
        started, was not asked for, or the file says nothing (before format 4)."""
        return next((p.message or "no reason given" for p in self.perf_starts
                     if not p.started), None) if self.header.perf else None

    @property
    def symbols_missing(self) -> str:
        """Why the file has no hot symbols of the whole session, "" when it has them: perf
        off, perf not started, or a session that perf sampled but that never reached its end
        (killed, or still running), whose windows were never summed."""
        if self.session_symbols is not None:
            return ""
        if not self.header.perf:
            return "perf was off"
        if self.perf_not_started:
            return f"perf did not start ({self.perf_not_started})"
        n = self.perf_windows
        if n and self.finished is None and self.failed is None:
            return (f"perf ran ({n} window{'s' * (n != 1)} in the file), but the session has "
                    f"no last line (killed, or still running): its hot symbols are summed at "
                    f"its end")
        return "perf sampled nothing of the worker"

    @property
    def windows(self) -> list[ev.HotSymbols]:
        """The hot symbols of each perf window and run (not the session's), in order: read
        from the file the first time they are asked for."""
        if self._windows is None:
            self._windows = [e for _, e in _events(self.path, want_windows=True)
                             if isinstance(e, ev.HotSymbols) and e.scope != "session"]
        return self._windows

    @property
    def partial(self) -> bool:
        return self.finished is None

    @property
    def values(self) -> list[float]:
        """Every run's value, in order, as a list (`runs.values`: the array they are held in,
        8 bytes a run, not a list's 32)."""
        return self.runs.values.tolist()

    @property
    def summary(self) -> Summary | None:
        return summarize(self.values)

    @property
    def workload(self) -> WorkloadInfo:
        return self.header.workload


def _no_constant(token: str) -> Any:
    # json.loads takes NaN and Infinity, which are not JSON and which hotloop never writes
    raise ValueError(f"{token} is not JSON (hotloop never writes it: an edited file?)")


def _lines(path: Path, digest: Any = None) -> Iterator[tuple[int, bytes]]:
    """(number, line) of a regular file, a line at a time (a FIFO would block, /dev/zero
    would never end); `digest` (a hashlib object) sees every byte."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise HotloopError(f"{path}: cannot read: {e.strerror or e}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise HotloopError(f"{path}: not a regular file, not a hotloop result")
    with open(fd, "rb") as f:
        try:
            for no, line in enumerate(f, 1):
                if digest is not None:
                    digest.update(line)
                yield no, line
        except OSError as e:
            raise HotloopError(f"{path}: cannot read: {e.strerror or e}") from None


def run_problem(result: Result, run: ev.RunSample) -> str | None:
    """Why a run line cannot be the next of this session: its number out of turn, or a value
    its own counters do not give (an edited file), or None."""
    if not run.warmup and run.index != len(result.runs):
        return f"run {run.index} where run {len(result.runs)} comes next"
    if run.warmup and run.index >= 0:
        return f"a warmup numbered {run.index} (warmups count down from -1)"
    try:
        want = ev.metric_value(result.workload.metric, run.ops, run.bytes, run.ns, run.cycles,
                               run.extra)
    except ValueError as e:
        return f"value: {e}"
    if abs(run.value - want) > 1e-9 * abs(want):
        return (f"value {run.value:g} is not the {result.workload.metric} of its counters "
                f"({want:g})")
    return None


class NotJson(ValueError):
    pass


def decode_line(line: str | bytes) -> ev.Event:
    """One result line as its event, every field checked (a header's too); NotJson, or
    ValueError saying what is wrong.  The one reader of result lines: files, and the events
    a remote session streams."""
    try:
        obj = json.loads(line, parse_constant=_no_constant)
    except json.JSONDecodeError:
        raise NotJson("not JSON") from None
    except RecursionError:
        raise ValueError("nested too deep") from None
    return ev.from_json(obj)


# a perf window's line as hotloop's writer puts it (compact JSON; a string holding these
# would have its quotes escaped)
_WINDOW, _WINDOW_SCOPE = b'{"type":"hot_symbols"', b'"scope":"window"'


def _events(path: Path, digest: Any = None, want_windows: bool = True,
            counted: list[int] | None = None) -> Iterator[tuple[int, ev.Event]]:
    """The file's events, each line checked; HotloopError (one line: file, line, what is
    wrong) at the first that is not one.  A line that is not JSON is what a crash cut
    short when it is the last: the events before it stand.  Without `want_windows`, a perf
    window's line is skipped unparsed (32,000 of them, 8 hours, took half a minute to
    check), and checked when `Result.windows` asks for them."""
    cut: str | None = None
    for no, raw in _lines(path, digest):
        if not raw.strip():
            continue
        if cut is not None:             # a line after one that was not JSON
            raise HotloopError(cut)
        if not want_windows and raw.startswith(_WINDOW) and _WINDOW_SCOPE in raw:
            if counted is not None:     # `counted[0]`: the windows passed over
                counted[0] += 1
            continue                    # a perf window's, as hotloop writes it: not parsed
        try:
            line = raw.decode("utf-8")
            event = decode_line(line)
        except UnicodeDecodeError as e:
            raise HotloopError(f"{path}: cannot read: {e}") from None
        except NewerFormat as e:
            raise HotloopError(f"{path}: {e}") from None
        except NotJson:
            if no == 1:
                raise HotloopError(f"{path}:{no}: not a hotloop result line (not JSON)") \
                    from None
            cut = f"{path}:{no}: not a hotloop result line (not JSON)"
            continue
        except ValueError as e:
            raise HotloopError(f"{path}:{no}: not a hotloop result line: {e}") from None
        if isinstance(event, ev.HotSymbols) and event.scope == "window" and counted is not None:
            counted[0] += 1
        if not want_windows and isinstance(event, ev.HotSymbols) and event.scope != "session":
            continue
        yield no, event


def windows_holding(path: Path, symbol: str) -> set[int]:
    """The perf windows whose line lists `symbol` among their hottest: annotate's index of
    which windows to count.  A byte search for the name first, so only those lines are
    parsed (the file was checked when it was read)."""
    name = json.dumps(symbol, separators=(",", ":")).encode()
    out: set[int] = set()
    for _, line in _lines(path):
        if name not in line or b'"hot_symbols"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("scope") == "window" \
                and isinstance(obj.get("window"), int) \
                and any(isinstance(s, dict) and s.get("symbol") == symbol
                        for s in obj.get("symbols") or ()):
            out.add(obj["window"])
    return out


def read(path: Path, windows: bool = False) -> Result:
    """Read a result file; HotloopError (one line: file, line, what is wrong) if it is
    not one.  Every field of what comes back has the type hotloop writes, and every
    number is finite, so no consumer needs to check.  The file is read a line at a time and
    its runs held as columns (`Runs`); its perf windows' lines are left in the file, and
    checked, when `Result.windows` asks for them (or `windows`: read now)."""
    digest = hashlib.sha256()
    result: Result | None = None
    counted = [0]
    for no, event in _events(path, digest, want_windows=windows, counted=counted):
        if result is None:
            if not isinstance(event, ev.Started):
                raise HotloopError(f"{path}:{no}: not a hotloop result (no header line)")
            result = Result(path, event.header, _windows=[] if windows else None)
        elif isinstance(event, ev.Started):
            raise HotloopError(f"{path}:{no}: a second header line: two runs wrote this file")
        elif result.finished is not None or result.failed is not None:
            raise HotloopError(f"{path}:{no}: not a hotloop result line: a line after the "
                               f"session's last")
        else:
            bad = run_problem(result, event) if isinstance(event, ev.RunSample) else None
            if bad:
                raise HotloopError(f"{path}:{no}: not a hotloop result line: {bad}")
            result.add(event)
    if result is None:
        raise HotloopError(f"{path}: empty, not a hotloop result")
    result.digest = digest.hexdigest()
    result.perf_windows = counted[0]
    return result
