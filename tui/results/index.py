"""The results directory as a list: every result file under it (`**/*.jsonl`: the sessions
`hotloop calibrate` keeps in results/<time>-calibrate-PLAN/<kernel>/ and a series' too), newest
first, each named by what matters (plan, variant, its subdirectory) without the timestamp
prefix.  The console's compare screen lists them; `hotloop list plans` looks through them for
each plan's last measured time.

A file is listed from its first line (the header, checked as the reader checks it) and its
last (`finished` says how many runs, `failed` how many before it), never its run lines: 5,000
files list in about a second.  What each file gave is kept in a small index in the cache
directory, keyed by path, size and mtime, so a file unchanged since is not opened again.
A file without its last line (a crash's, or one being written) has its runs counted by their
text, not parsed.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from hotloop.paths import cache_dir
from hotloop.record import FORMAT
from hotloop.visible import visible

_HEADER_READ = 1 << 20                  # a header line is a few KB; more is not a header
_TAIL_READ = 1 << 16                    # a last line is a summary: far less than this
_CHUNK = 1 << 20
# in every measured run's line, as hotloop's writer puts it (and json.dumps by default)
_RUN_MARKS = (b'"warmup":false', b'"warmup": false')
INDEX_VERSION = 1


@dataclass
class Entry:
    """One file of the results directory, as listed (or why it is not a result)."""
    path: Path
    mtime: float
    name: str = ""                  # what the list shows: see `short_name`
    error: str = ""
    workload: str = "?"
    header_label: str = ""          # the header's label and variant
    params: str = ""                # k=v k=v
    time: str = ""                  # the header's: when it ran
    runs: int | None = None         # None: not a result
    partial: bool = False           # no `finished` line (failed, crashed or being written)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def label(self) -> str:
        return "not a result" if self.error else self.header_label or "-"

    @property
    def date(self) -> str:
        """When it ran, to the second: two sessions of a plan a minute apart (a series,
        calibrate) have the same name and label, and only this tells them apart (in the
        same second the file names do: NAME-2)."""
        stamp = self.time
        if len(stamp) >= 19 and stamp[4] == "-":            # 2026-11-30T01:23:45+0000
            return f"{stamp[5:10]} {stamp[11:19]}"
        return time.strftime("%m-%d %H:%M:%S", time.localtime(self.mtime))

    def matches(self, words: str) -> bool:
        """Whether every word of `words` is in what the list shows of it (any case)."""
        shown = " ".join((self.name, self.path.name, self.label, self.date, self.workload,
                          self.params)).lower()
        return all(w in shown for w in words.lower().split())


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
    return [(p, mtime) for p, mtime, _, _ in _files(directory)]


def _files(directory: Path) -> list[tuple[Path, float, int, int]]:
    """`files`, with each one's size and mtime in ns (the index's key)."""
    try:
        found = [p for p in directory.glob("**/*.jsonl")]
    except OSError:
        return []
    out = []
    for p in found:
        try:
            st = p.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            out.append((p, st.st_mtime, st.st_size, st.st_mtime_ns))
    out.sort(key=lambda f: (f[1], f[0].name), reverse=True)
    return out


def _last_line(fh: BinaryIO, size: int) -> bytes:
    """The file's last non-empty line (at most _TAIL_READ bytes of it)."""
    start = max(0, size - _TAIL_READ)
    fh.seek(start)
    tail = fh.read(size - start).rstrip(b"\n")
    cut = tail.rfind(b"\n")
    return tail[cut + 1:] if cut >= 0 or start == 0 else b""


def _count_runs(fh: BinaryIO) -> int:
    """The measured runs of a file without its last line, by their text (not parsed)."""
    fh.seek(0)
    n, carry = 0, b""
    while chunk := fh.read(_CHUNK):
        block = carry + chunk
        n += sum(block.count(mark) for mark in _RUN_MARKS)
        carry = block[-(len(_RUN_MARKS[0]) - 1):]   # shorter than a mark: none counted twice
    return n


def _text(obj: Any, *keys: str) -> str:
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj if isinstance(obj, str) else ""


def _count(obj: Any, *keys: str) -> int | None:
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return max(obj, 0) if isinstance(obj, int) and not isinstance(obj, bool) else None


def _header(e: Entry, line: bytes) -> str:
    """What the list shows of a header line, into `e`; or why it is no header.  The fields
    shown are taken, not the whole header checked (1-3 ms a file here): a file is read and
    checked whole when it is compared."""
    try:
        obj = json.loads(line)
    except ValueError:
        return "not a hotloop result line (not JSON)"
    if not isinstance(obj, dict) or obj.get("type") != "started" \
            or not isinstance(obj.get("header"), dict):
        return "not a hotloop result (no header line)"
    h = obj["header"]
    fmt = h.get("format", 1)
    if isinstance(fmt, int) and fmt > FORMAT:
        return (f"result format {fmt}, and this hotloop reads up to format {FORMAT}: read it "
                f"with a newer hotloop")
    e.workload = visible(_text(h, "workload", "name")) or "?"
    e.header_label = " · ".join(x for x in (_text(h, "label"), _text(h, "variant")) if x)
    params = h.get("params")
    e.params = " ".join(f"{k}={v}" for k, v in params.items()) \
        if isinstance(params, dict) else ""
    e.time = _text(h, "time")
    return ""


def _listed(e: Entry) -> Entry:
    """`e` filled from its file's first and last lines (errors kept, not raised)."""
    path = e.path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        e.error = f"{path}: cannot read: {err.strerror or err}"
        return e
    with open(fd, "rb") as fh:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                e.error = f"{path}: not a regular file, not a hotloop result"
                return e
            first = fh.readline(_HEADER_READ)
            bad = _header(e, first)
            if bad:
                e.error = f"{path}:1: {bad}"
                return e
            last: Any = None
            if fh.tell() < st.st_size:
                with contextlib.suppress(ValueError):   # cut short: no last line
                    last = json.loads(_last_line(fh, st.st_size))
            kind = last.get("type") if isinstance(last, dict) else None
            n = _count(last, "summary", "n") if kind == "finished" else \
                _count(last, "run") if kind == "failed" else None
            if n is not None:
                e.runs, e.partial = n, kind != "finished"
            else:
                e.runs, e.partial = _count_runs(fh), True
        except (OSError, UnicodeDecodeError) as err:
            e.error = f"{path}: cannot read: {getattr(err, 'strerror', None) or err}"
    return e


def _index_file(directory: Path) -> Path:
    key = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    return cache_dir() / "results-index" / f"{key}.json"


_FIELDS = ("name", "error", "workload", "header_label", "params", "time", "runs", "partial")


def _load_index(where: Path) -> dict[str, list[object]]:
    try:
        doc = json.loads(where.read_text())
        files = doc.get("files")
        if doc.get("version") == INDEX_VERSION and isinstance(files, dict):
            return files
    except (OSError, ValueError, AttributeError):
        pass
    return {}


def _save_index(where: Path, files: dict[str, list[object]]) -> None:
    """Best effort: a cache that cannot be written is only slower next time."""
    with contextlib.suppress(OSError):
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = where.with_name(f"{where.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": INDEX_VERSION, "files": files}))
        os.replace(tmp, where)


def scan(directory: Path, cached: bool = True) -> list[Entry]:
    """Every result file of `directory` (see `files`), newest first, each listed from its
    first and last lines (errors kept, not raised), or from the index when its size and
    mtime are the same as when it was last listed."""
    where = _index_file(directory)
    old = _load_index(where) if cached else {}
    new: dict[str, list[object]] = {}
    entries = []
    for p, mtime, size, mtime_ns in _files(directory):
        key = str(p)
        e = Entry(p, mtime)
        got = old.get(key)
        if isinstance(got, list) and len(got) == 2 + len(_FIELDS) \
                and got[:2] == [size, mtime_ns]:
            for f, v in zip(_FIELDS, got[2:]):
                setattr(e, f, v)
        else:
            e = _listed(e)
        e.name = short_name(p, directory)
        new[key] = [size, mtime_ns, *(getattr(e, f) for f in _FIELDS)]
        entries.append(e)
    if cached and new != old:
        _save_index(where, new)
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
