"""Result files: JSON Lines, one event a line, appended as events arrive.

The first line is the `started` event with the header, then one line per
repetition, per hot-symbol window and per warning, and a `finished` (with
the summary) or `failed` line at the end.  A file without that last line is
what a crash leaves: it reads back as partial, with every run it holds.
"""
from __future__ import annotations

import json
import os
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
        self._f.write(json.dumps(ev.to_json(event), separators=(",", ":"), default=str) + "\n")
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


def read(path: Path) -> Result:
    """Read a result file; HotloopError (one line) if it is not one."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise HotloopError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    result: Result | None = None
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = ev.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError):
            if no == len(lines) and result is not None:
                break                   # a line cut short by a crash: keep the rest
            raise HotloopError(f"{path}:{no}: not a hotloop result line") from None
        if result is None:
            if not isinstance(event, ev.Started):
                raise HotloopError(f"{path}:{no}: not a hotloop result (no header line)")
            result = Result(path, event.header)
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
