"""The results directory as a list: every result file under it (`**/*.jsonl`: the sessions
`hotloop calibrate` keeps in results/<time>-calibrate-PLAN/<kernel>/ and a series' too), newest
first, each named by what matters (plan, variant, its subdirectory) without the timestamp
prefix.  The console's compare screen lists them; `hotloop list plans` looks through them for
each plan's last measured time.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.results.reader import Result, read

_HEADER_READ = 1 << 20                  # a header line is a few KB; more is not a header


@dataclass
class Entry:
    """One file of the results directory, read back (or why it could not be)."""
    path: Path
    mtime: float
    result: Result | None = None
    error: str = ""
    name: str = ""                  # what the list shows: see `short_name`

    @property
    def workload(self) -> str:
        return self.result.workload.name if self.result else "?"

    @property
    def label(self) -> str:
        if self.result is None:
            return "not a result"
        h = self.result.header
        return " · ".join(x for x in (h.label, h.variant) if x) or "-"

    @property
    def params(self) -> str:
        params = self.result.header.params if self.result else {}
        return " ".join(f"{k}={v}" for k, v in params.items())

    @property
    def date(self) -> str:
        """When it ran, to the second: two sessions of a plan a minute apart (a series,
        calibrate) have the same name and label, and only this tells them apart (in the
        same second the file names do: NAME-2)."""
        stamp = self.result.header.time if self.result else ""
        if len(stamp) >= 19 and stamp[4] == "-":            # 2026-11-30T01:23:45+0000
            return f"{stamp[5:10]} {stamp[11:19]}"
        return time.strftime("%m-%d %H:%M:%S", time.localtime(self.mtime))


_STAMP = re.compile(r"^\d{8}-\d{6}-")


def short_name(path: Path, directory: Path) -> str:
    """results/20261130-034502-calibrate-quick/20261130-034512-quick-2.jsonl ->
    'calibrate-quick/quick-2': the plan (and variant) first, no timestamp prefix."""
    try:
        rel = path.relative_to(directory)
    except ValueError:
        rel = Path(path.name)
    parts = list(rel.parent.parts) + [rel.name.removesuffix(".jsonl")]
    return "/".join(_STAMP.sub("", part) or part for part in parts)


def files(directory: Path) -> list[tuple[Path, float]]:
    """Every `*.jsonl` in `directory` and its subdirectories with its mtime, newest first (a
    file gone meanwhile is left out)."""
    try:
        found = [p for p in directory.glob("**/*.jsonl") if p.is_file()]
    except OSError:
        return []
    out = []
    for p in found:
        try:
            out.append((p, p.stat().st_mtime))
        except OSError:
            continue
    out.sort(key=lambda f: (f[1], f[0].name), reverse=True)
    return out


def scan(directory: Path) -> list[Entry]:
    """Every result file of `directory` (see `files`), newest first, each read (errors kept,
    not raised)."""
    entries = []
    for p, mtime in files(directory):
        e = Entry(p, mtime, name=short_name(p, directory))
        try:
            e.result = read(p)
        except HotloopError as err:
            e.error = str(err)
        entries.append(e)
    return entries


def plan_of(path: Path) -> str | None:
    """The plan a result file's header names, from its first line alone (reading the whole
    file would check every run); None when that line names none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            first = json.loads(fh.readline(_HEADER_READ))
        name = first["header"]["plan"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return name if isinstance(name, str) else None
