"""A session's samples by address, tallied as its windows are summarised: {(DSO path, symbol,
offset): samples} over every window the session had, thinned ones too, so annotating one
symbol of an 8-hour session reads one small file and disassembles one window, not 30,000.

Kept beside the session's perf data (RESULT.perf/addrs.json.gz), rewritten whole (a temporary
file renamed over it) every few seconds and when a recording ends, so a session stopped or
killed keeps what it had summarised; the windows it lists are the ones in it, and a kept
window it does not list (summarised after its last write) is counted from the window itself.
Its size is the distinct addresses sampled, not the windows (and the windows' names).
"""
from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
import sys
import threading
import time
import weakref
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotloop.errors import HotloopError
from hotloop.perf.keep import WINDOW_FILE

FILE = "addrs.json.gz"
TEMPORARY = FILE + ".tmp"               # written, then renamed over FILE
FORMAT = 1
KIND = "hotloop samples by address"
# sane bounds: a real session samples some thousands of addresses (a large program some
# hundred thousand) in at most a few hundred thousand windows; beyond, not hotloop's file,
# or a session whose tally stopped (`full`): annotate counts its kept windows instead
MOST_ADDRESSES = 2_000_000
MOST_WINDOWS = 1_000_000
MOST_PACKED = 64 << 20
MOST_UNPACKED = 128 << 20
MOST_NAME = 4096                        # a path or a symbol's name
WRITE_EVERY_S = 5.0                     # at most this long summarised and not on disk
GZIP_LEVEL = 6


class AddrsError(HotloopError):
    """A tally file that is not one hotloop wrote: one line."""


def _durability(index: int) -> int:
    """How long window `index` survives thinning: it stays while the stride divides its
    index (perf/keep.py), the first window always."""
    return 64 if index == 0 else (index & -index).bit_length()


@dataclass
class Held:
    """Where a (DSO, symbol)'s samples are: how many windows hold it, the window with most
    of them, and the window holding it most likely still kept (thinning keeps the windows
    whose number the stride divides)."""
    windows: int
    best: str
    best_samples: int
    durable: str
    durable_index: int

    def merge(self, other: Held) -> None:
        self.windows += other.windows
        if other.best_samples > self.best_samples:
            self.best, self.best_samples = other.best, other.best_samples
        if _durability(other.durable_index) > _durability(self.durable_index):
            self.durable, self.durable_index = other.durable, other.durable_index


@dataclass
class AddressTally:
    """Samples by address over some windows (`windows`: {name: its number in the
    session}).  `full`: it passed MOST_ADDRESSES and stopped counting (not used)."""
    counts: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    windows: dict[str, int] = field(default_factory=dict)
    held: dict[tuple[str, str], Held] = field(default_factory=dict)
    full: bool = False

    def add(self, name: str, index: int, addresses: Counter[tuple[str, str, int]]) -> None:
        """Window `name` (perf.data.N), the session's `index`th, its samples by address."""
        if self.full or name in self.windows:
            return
        self.windows[name] = index
        if len(self.windows) > MOST_WINDOWS:
            self._stop()
            return
        by_symbol: Counter[tuple[str, str]] = Counter()
        for (dso, symbol, offset), n in addresses.items():
            key = (sys.intern(dso), sys.intern(symbol))
            self.counts[key + (offset,)] += n
            by_symbol[key] += n
        for key, n in by_symbol.items():
            one = Held(1, name, n, name, index)
            if key in self.held:
                self.held[key].merge(one)
            else:
                self.held[key] = one
        if len(self.counts) > MOST_ADDRESSES:
            self._stop()

    def _stop(self) -> None:
        self.full = True
        self.counts.clear()
        self.held.clear()

    def merge(self, other: AddressTally) -> None:
        """`other`'s windows added (another recording's of the same session); a window in
        both is counted once: ValueError."""
        if both := self.windows.keys() & other.windows.keys():
            raise ValueError(f"windows tallied twice: {', '.join(sorted(both)[:3])}")
        self.windows.update(other.windows)
        if self.full or other.full or len(self.windows) > MOST_WINDOWS:
            self._stop()
            return
        self.counts.update(other.counts)
        for key, h in other.held.items():
            if key in self.held:
                self.held[key].merge(h)
            else:
                self.held[key] = Held(**vars(h))
        if len(self.counts) > MOST_ADDRESSES:
            self._stop()

    def of(self, symbol: str) -> Counter[tuple[str, int]]:
        """`symbol`'s samples: {(DSO path, offset): samples}."""
        dsos = {d for d, s in self.held if s == symbol}
        return Counter({(d, off): n for (d, s, off), n in self.counts.items()
                        if s == symbol and d in dsos})

    def document(self) -> dict[str, Any]:
        """What the file holds: DSOs named once, each symbol's offsets and samples flat."""
        dsos: dict[str, int] = {}
        offsets: dict[tuple[str, str], list[int]] = {}
        for (dso, symbol, off), n in self.counts.items():
            dsos.setdefault(dso, len(dsos))
            offsets.setdefault((dso, symbol), []).extend((off, n))
        symbols = [[dsos[d], s, h.windows, h.best, h.best_samples, h.durable, h.durable_index,
                    offsets[(d, s)]]
                   for (d, s), h in self.held.items() if (d, s) in offsets]
        return {"kind": KIND, "format": FORMAT, "full": self.full,
                "windows": list(self.windows.items()), "dsos": list(dsos), "symbols": symbols}


def _int(v: object, low: int, high: int, what: str) -> int:
    if type(v) is not int or not low <= v <= high:
        raise ValueError(f"{what} {str(v)[:40]!r} is not a whole number from {low} to {high}")
    return v


def _name(v: object, what: str) -> str:
    if not isinstance(v, str) or not v or len(v) > MOST_NAME:
        raise ValueError(f"{what} is not a name")
    return v


def from_document(doc: object) -> AddressTally:
    """The tally a document holds; ValueError saying what is wrong with it."""
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise ValueError("not hotloop's tally of samples by address")
    if doc.get("format") != FORMAT:
        raise ValueError(f"format {str(doc.get('format'))[:20]}, not {FORMAT} (another "
                         f"version of hotloop)")
    tally = AddressTally(full=doc.get("full") is True)
    windows, dsos, symbols = doc.get("windows"), doc.get("dsos"), doc.get("symbols")
    if not (isinstance(windows, list) and isinstance(dsos, list) and isinstance(symbols, list)):
        raise ValueError("windows, dsos or symbols missing")
    if len(windows) > MOST_WINDOWS or len(dsos) > MOST_ADDRESSES \
            or len(symbols) > MOST_ADDRESSES:
        raise ValueError("more windows or symbols than any session has")
    for w in windows:
        if not isinstance(w, list) or len(w) != 2 or not isinstance(w[0], str) \
                or not WINDOW_FILE.fullmatch(w[0]):
            raise ValueError(f"window {str(w)[:60]!r} is not [perf.data.N, number]")
        tally.windows[w[0]] = _int(w[1], 0, MOST_WINDOWS * 64, "window number")
    names = [sys.intern(_name(d, "a DSO")) for d in dsos]
    for entry in symbols:
        if not isinstance(entry, list) or len(entry) != 8 or not isinstance(entry[7], list) \
                or len(entry[7]) % 2:
            raise ValueError(f"symbol entry {str(entry)[:60]!r} is not hotloop's")
        dso = names[_int(entry[0], 0, len(names) - 1, "DSO number")]
        symbol = sys.intern(_name(entry[1], "a symbol"))
        if (dso, symbol) in tally.held:
            raise ValueError(f"{symbol} in {dso} listed twice")
        best, durable = entry[3], entry[5]
        if best not in tally.windows or durable not in tally.windows:
            raise ValueError(f"{symbol}: its windows are not among the tally's")
        tally.held[(dso, symbol)] = Held(
            _int(entry[2], 1, len(tally.windows), "windows holding"), best,
            _int(entry[4], 1, 1 << 53, "samples"), durable,
            _int(entry[6], 0, MOST_WINDOWS * 64, "window number"))
        pairs = entry[7]
        for i in range(0, len(pairs), 2):
            off = _int(pairs[i], 0, (1 << 64) - 1, "offset")
            tally.counts[(dso, symbol, off)] += _int(pairs[i + 1], 1, 1 << 53, "samples")
        if len(tally.counts) > MOST_ADDRESSES:
            raise ValueError(f"more than {MOST_ADDRESSES:,} addresses")
    return tally


def read(path: Path) -> AddressTally:
    """The tally in `path`; AddrsError (one line) when it is not one hotloop wrote, or
    beyond sane bounds."""
    def bad(why: str) -> AddrsError:
        return AddrsError(f"{path}: {why}; remove it to annotate from the kept windows alone")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            packed = f.read(MOST_PACKED + 1)
    except OSError as e:
        raise bad(f"cannot read it: {e.strerror or e}") from None
    if len(packed) > MOST_PACKED:
        raise bad(f"larger than {MOST_PACKED >> 20} MB, beyond any session's tally")
    try:
        unpack = zlib.decompressobj(wbits=31)        # gzip's format, bounded
        text = unpack.decompress(packed, MOST_UNPACKED)
        if unpack.unconsumed_tail:
            raise bad(f"expands beyond {MOST_UNPACKED >> 20} MB, beyond any session's tally")
        if not unpack.eof or unpack.unused_data:
            raise bad("not one whole gzip stream (cut short, or more after it)")
        return from_document(json.loads(text))
    except zlib.error as e:
        raise bad(f"cannot decompress: {e}") from None
    except (ValueError, RecursionError) as e:      # JSON, UTF-8, or what it holds
        raise bad(f"not a tally hotloop wrote: {str(e)[:120]}") from None


def write(path: Path, doc: dict[str, Any]) -> None:
    """`doc` written to `path` whole, or not at all (a temporary file renamed over it)."""
    data = gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), GZIP_LEVEL,
                         mtime=0)
    tmp = path.with_name(TEMPORARY)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class Recorded:
    """The tally of a session being recorded, written in `directory` (its kept windows')
    at most WRITE_EVERY_S after a window is added, at `flush` (a recording's end), and at
    `flush_now` (the session gone without one: Ctrl-C, or the process's exit)."""

    def __init__(self, directory: str) -> None:
        self.path = Path(directory) / FILE
        self.tally = AddressTally()
        self.warn: Callable[[str], None] | None = None
        self._dirty = False
        self._added = 0                         # windows added: what a write is as of
        self._on_disk = 0
        self._written = time.monotonic()
        self._lock = asyncio.Lock()
        self._writing = threading.Lock()        # the loop's thread and a finalizer's
        self._failed = False

    def add(self, name: str, index: int, addresses: Counter[tuple[str, str, int]]) -> None:
        self.tally.add(name, index, addresses)
        self._added += 1
        self._dirty = True

    def _write(self, doc: dict[str, Any], added: int) -> None:
        with self._writing:
            if added > self._on_disk:           # never an older tally over a newer one
                write(self.path, doc)
                self._on_disk = added

    def flush_now(self) -> None:
        """Written here and now if anything was added since: the session's recorders gone
        without a stop (Ctrl-C cancels them), or the process exiting.  Nothing to say then
        if it cannot be."""
        if self._dirty:
            self._dirty = False
            with contextlib.suppress(OSError, ValueError):
                self._write(self.tally.document(), self._added)

    async def maybe_write(self) -> None:
        """Written when the last write is WRITE_EVERY_S old (and no write is under way)."""
        if self._dirty and not self._lock.locked() \
                and time.monotonic() - self._written >= WRITE_EVERY_S:
            await self.flush()

    async def flush(self) -> None:
        """Written now, if anything was added since."""
        async with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            self._written = time.monotonic()
            doc = self.tally.document()         # here: the loop adds to it meanwhile
            try:
                await asyncio.to_thread(self._write, doc, self._added)
            except (OSError, ValueError) as e:     # a full disk; never the recorder's end
                self._dirty = True
                if not self._failed and self.warn is not None:
                    self._failed = True         # said once; tried again at the next
                    why = e.strerror if isinstance(e, OSError) and e.strerror else e
                    self.warn(f"perf: the samples by address not written ({self.path}: "
                              f"{why}): annotate counts the kept windows")


_sessions: weakref.WeakKeyDictionary[object, Recorded] = weakref.WeakKeyDictionary()


def recorded(session: object, directory: str) -> Recorded:
    """The tally of the session `session` stands for (its KeptWindows, shared by its
    workers' recorders), in `directory`; made at its first window."""
    found = _sessions.get(session)
    if found is None:
        found = _sessions[session] = Recorded(directory)
        # what a stop did not write (Ctrl-C cancels the recorders), written once the session
        # is gone, or at the process's exit
        weakref.finalize(session, found.flush_now)
    return found
