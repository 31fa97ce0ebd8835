"""The perf data a session keeps, bounded while it grows: each window's file gzipped as soon as
perf report has read it (by a `gzip` at nice 19 and idle I/O, off the workload's CPUs), and the
session's windows thinned to its budget as they come, so no session, however long, holds more.

The rule when the budget is reached: the kept windows are thinned evenly over the whole session
(every 2nd window, then every 4th, ...: a window stays while its number is a multiple of the
stride), the oldest going first within a pass, the first window always kept while any is.
Annotate adds the samples of every kept window: an even sample of the session keeps that the
whole session's profile, where dropping the oldest (or keeping only the first and the latest)
would make a long session's annotation that of its last minutes.  A window off the stride once
it is reached is dropped as soon as it has been summarised (its hot symbols are in the result
file either way), without being compressed.  Room is left for the window perf is writing (as
large as the last one), so the directory as a whole stays within the budget.

Every window counts from the moment perf dumps it: waiting for its report, being read, waiting
for and being compressed, kept.  When `perf script` falls behind (a machine with no idle CPU)
the windows waiting for it are thinned by the same stride before they are read: a window off
it is dropped unread (the session records it as such, with no hot symbols), so the symbols
summed are an even sample of the session too, and the report, with fewer windows to read, can
catch up.  Compressing the backlog instead would not bound it: gzip needs the CPU perf script
lacks, and the windows would have to be unzipped again to be read.  The window next to be read
is never dropped: one waiting window is no backlog.  A window a process has open (perf script,
gzip) is not dropped either; one off the stride goes once that is done.
"""
from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hotloop.host.procs import child_setup
from hotloop.perf.control import kill_and_wait, spare_cpus

GZIP_LEVEL = 6                  # gzip's own default: -9 took 3 times the CPU for 4% smaller files
WINDOW_FILE = re.compile(r"perf\.data\.[0-9]+")     # a window perf completed (rotated)
UNFINISHED = "perf.data"        # the window perf was writing when it was killed: no header
# Keeping stops once the file system's free space is below the least of this and a tenth of
# its size: the result file beside the data comes first (its lines, a window's every second)
FREE_FLOOR = 64_000_000
# what a window dropped before perf script read it says, in its place in the result file
DROPPED_UNREAD = "dropped unread: perf script fell behind (within perf_keep_mb)"


@dataclass
class KeptWindow:
    index: int                  # the window's number in the session
    path: str                   # on disk now (.gz once compressed)
    size: int


def gzip_file(path: str) -> str:
    """`path` gzipped beside it (PATH.gz) and removed, in this process; the .gz's path.  A
    .gz left half-written by a killed compressor is written again: the plain file's presence
    is what says the work is not done."""
    gz = path + ".gz"
    try:
        with open(path, "rb") as src, gzip.open(gz, "wb", compresslevel=GZIP_LEVEL) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(gz)
        raise
    os.unlink(path)
    return gz


def _gzip_argv(path: str) -> list[str]:
    found = shutil.which("gzip")
    argv = [found, "-f", f"-{GZIP_LEVEL}", "--", path] if found else [   # PATH.gz, then no PATH
        sys.executable, "-c", "import sys, hotloop.perf.keep as k; k.gzip_file(sys.argv[1])",
        path]
    ionice = shutil.which("ionice")
    return [ionice, "-c", "3", *argv] if ionice else argv     # its disk I/O: idle class


def _nice_setup(cpus: Sequence[int]) -> Callable[[], None]:
    setup = child_setup(os.getpid(), False, spare_cpus(cpus))

    def run() -> None:
        setup()
        with contextlib.suppress(OSError):
            os.nice(19)
    return run


async def gzip_idle(path: str, cpus: Sequence[int]) -> str:
    """`path` gzipped by a process at nice 19 (its I/O idle class) on the CPUs the workload
    does not use; the .gz's path, OSError when it failed.  Not SCHED_IDLE as perf report is:
    on a machine whose CPUs are all busy that waits for ever, and the plain windows would pile
    up beyond the budget; nice 19 still gets a sliver of a CPU."""
    proc = await asyncio.create_subprocess_exec(
        *_gzip_argv(path), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_nice_setup(cpus))
    try:
        _, err = await proc.communicate()
    except BaseException:                  # cancelled (Ctrl-C): the plain file stays
        await kill_and_wait(proc)
        raise
    if proc.returncode != 0 or not os.path.exists(path + ".gz"):
        msg = err.decode(errors="replace").strip().splitlines()
        raise OSError(msg[-1] if msg else f"gzip exited with status {proc.returncode}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return path + ".gz"


def _size(path: str) -> int:
    try:
        return os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return 0


class KeptWindows:
    """The windows one session keeps in `directory`, within `budget` bytes (None: no bound);
    `compress`: gzip each.  Shared by the recorders of a session's workers (numbered on), so
    the budget and the stride are the session's.  `warn` says the thinning, once, and the
    windows dropped unread, once.  With nothing kept (--no-keep-perf) it holds the windows
    waiting for their report to the budget all the same: `add` and `settle` are then not
    called, and a window read is `discard`ed."""

    def __init__(self, directory: str, budget: int | None, *, compress: bool = True,
                 warn: Callable[[str], None] | None = None, budget_mb: int | None = None
                 ) -> None:
        self.directory = directory
        self.budget = budget
        self.budget_mb = budget_mb
        self.compress = compress
        self.warn = warn
        self.kept: list[KeptWindow] = []
        # on disk, not kept yet: waiting for or being read, waiting for or being compressed
        self.waiting: dict[int, KeptWindow] = {}
        self.read: set[int] = set()         # of those, the windows perf report has read
        self.busy: set[int] = set()         # and those a process has open: not dropped now
        self.gone: set[int] = set()         # dropped while waiting: not to be read or kept
        self.unread = 0                     # windows dropped before perf report read them
        self.stride = 1
        self.dropped = 0
        self.compressed = 0
        self.unfinished = False         # finish_dir removed the window perf was writing
        self.writing = 0        # the room left for the window perf writes: the last one's size
        self._said = False
        self._said_unread = False
        self._failed = False
        self.full = False               # keeping stopped: the disk's free space ran low

    def dumped(self, index: int, path: str) -> None:
        """perf completed window `index` (`path`): counted from now, and the whole held to
        the budget, the windows waiting for their report among the rest."""
        size = _size(path)
        self.waiting[index] = KeptWindow(index, path, size)
        self.writing = size             # the next one is about as large
        self.thin()

    def take(self, index: int) -> bool:
        """Window `index` is to be read now (busy until `done_reading`); False when it was
        dropped unread."""
        if index in self.gone:
            self.gone.discard(index)
            return False
        self.busy.add(index)
        return True

    def done_reading(self, index: int) -> None:
        """perf report is done with window `index`: it may be dropped again."""
        self.busy.discard(index)
        self.read.add(index)

    def discard(self, index: int) -> None:
        """Window `index` is gone (read and removed: nothing kept): counted no more."""
        self.waiting.pop(index, None)
        self.busy.discard(index)
        self.read.discard(index)

    async def add(self, index: int, path: str, cpus: Sequence[int]) -> None:
        """Window `index`, its file `path` summarised: compressed and kept, or dropped when
        off the stride; then the whole kept within the budget.  Nothing when it has been
        dropped while it waited."""
        if index in self.gone:
            self.gone.discard(index)
            return                      # dropped while it waited for the compressor
        name = os.path.basename(path)
        size = _size(path)
        w = self.waiting.setdefault(index, KeptWindow(index, path, size))
        self.read.add(index)
        self.busy.add(index)            # this call's, until it is kept or dropped
        if index % self.stride or self.low():
            self._drop(w)
            return
        if self.compress and not self._failed:
            try:
                path = await gzip_idle(path, cpus)
                self.compressed += 1
                size = _size(path)
            except OSError as e:
                self._failed = True     # once: the rest stay as perf wrote them
                self._say(f"{name} kept uncompressed: {e}")
        self.discard(index)
        self.kept.append(KeptWindow(index, path, size))
        self.thin()

    def settle(self, preexisting: set[str]) -> None:
        """After perf: every window file of this session not kept yet (its compressor stopped,
        or it was never summarised) gzipped here when still plain, the unfinished one perf was
        writing when it was killed removed (it has no header; its samples were never
        summarised), and the whole thinned to the budget.  In this process: at most a window
        or two are left."""
        try:
            names = set(os.listdir(self.directory)) - preexisting
        except OSError:
            return
        self.busy.clear()               # perf report and gzip are done or stopped
        self.gone.clear()
        self.read.clear()
        known = {os.path.basename(k.path) for k in self.kept}
        waiting = {os.path.basename(w.path): w.index for w in self.waiting.values()}
        self.waiting.clear()
        nxt = max([k.index for k in self.kept] + list(waiting.values()), default=-1) + 1
        for name in sorted(names):
            plain = name.removesuffix(".gz")
            path = os.path.join(self.directory, name)
            if name == UNFINISHED:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                continue
            if not WINDOW_FILE.fullmatch(plain) or name in known \
                    or (name != plain and plain in names):    # half-written: done from plain
                continue
            index = waiting.get(plain)
            if index is None:
                index, nxt = nxt, nxt + 1
            if index % self.stride or self.low():   # off the stride: it would go at once
                self._drop(KeptWindow(index, path, 0))
                with contextlib.suppress(OSError):      # and a half-written .gz of it
                    os.unlink(os.path.join(self.directory, plain + ".gz"))
                continue
            if name == plain and self.compress and not self._failed:
                self.writing = _size(path)      # room for its .gz first
                self.thin()
                try:
                    path = gzip_file(path)
                    self.compressed += 1
                except OSError as e:
                    self._failed = True
                    self._say(f"{name} kept uncompressed: {e.strerror or e}")
            self.kept.append(KeptWindow(index, path, _size(path)))
            self.writing = 0
            self.thin()             # as it goes: a backlog never piles up past the budget
        self.kept.sort(key=lambda k: k.index)
        self.writing = 0        # perf is done: nothing more is being written
        self.thin()

    def low(self) -> bool:
        """Whether keeping has stopped, or stops now, the file system's free space below
        FREE_FLOOR or a tenth of its size (said once)."""
        if self.full:
            return True
        try:
            st = os.statvfs(self.directory)
        except OSError:
            return False
        free, floor = st.f_bavail * st.f_frsize, min(FREE_FLOOR, st.f_blocks * st.f_frsize // 10)
        if free >= floor:
            return False
        self.full = True
        n = len(self.kept)
        self._say(f"perf data no longer kept: {self.directory} has {free / 1e6:.1f} MB free, "
                  f"below the {floor / 1e6:.1f} MB kept free for the result file (the least of "
                  f"{FREE_FLOOR // 1_000_000} MB and a tenth of the file system); the "
                  f"{n} window{'s' * (n != 1)} kept so far stay{'s' * (n == 1)}, and every "
                  f"window's hot symbols stay in the result file")
        return True

    def plain_bytes(self, preexisting: set[str]) -> int:
        """How much of this session's data is still as perf wrote it."""
        try:
            names = set(os.listdir(self.directory)) - preexisting
        except OSError:
            return 0
        return sum(_size(os.path.join(self.directory, n)) for n in names
                   if WINDOW_FILE.fullmatch(n))

    def total(self) -> int:
        """The session's windows on disk, kept or not yet (perf's unfinished one aside)."""
        return sum(k.size for k in self.kept) + sum(w.size for w in self.waiting.values())

    def _droppable(self) -> list[KeptWindow]:
        """What thinning may drop now: the kept windows and those waiting, but for a window a
        process has open and the one perf report reads next (one waiting is no backlog)."""
        unread = [w for w in self.waiting.values()
                  if w.index not in self.read and w.index not in self.busy]
        nxt = min((w.index for w in unread), default=None)
        return sorted([*self.kept, *(w for w in self.waiting.values()
                                     if w.index not in self.busy and w.index != nxt)],
                      key=lambda w: w.index)

    def thin(self) -> None:
        """Within the budget, with room for the window perf is writing: what is off the
        stride dropped (a window waiting since it was reached), else the stride doubled and
        the windows off it dropped, the oldest first; when all of them would not make room
        (a window, or the windows in flight, larger than the budget), they all go.  The
        windows dropped unread said once."""
        if self.budget is None:
            return
        while self.total() + self.writing > self.budget:
            free = self._droppable()
            if not free:
                return              # in perf report's or gzip's hands: dropped once done
            gone = [w for w in free if w.index % self.stride]
            over = self.total() + self.writing - self.budget
            if not gone and (len(free) == 1 or sum(w.size for w in free) <= over):
                # nothing less would do (the windows in flight fill the budget): all of it,
                # the stride left as it is rather than doubled for nothing time after time
                gone = free
            elif not gone:
                while not any(w.index % (2 * self.stride) for w in free):
                    self.stride *= 2
                self.stride *= 2
                gone = [w for w in free if w.index % self.stride]
            unread = [w for w in gone if w.index in self.waiting and w.index not in self.read]
            if len(unread) < len(gone):
                self._said_thinning()
            for w in gone:                  # oldest first
                self._drop(w)
            if unread:
                self._said_dropped_unread(len(unread))

    def _drop(self, k: KeptWindow) -> None:
        """`k` removed: kept, or waiting (then, unless a process has it open and drops it
        itself, marked gone for whoever takes it next)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(k.path)
        if k.index in self.waiting:
            if k.index not in self.busy:
                self.gone.add(k.index)
            if k.index not in self.read:
                self.unread += 1
            self.discard(k.index)
        elif k in self.kept:
            self.kept.remove(k)
        self.dropped += 1

    def _mb(self) -> str:
        return f"{self.budget_mb} MB" if self.budget_mb is not None else f"{self.budget} bytes"

    def _said_thinning(self) -> None:
        if self._said:
            return
        self._said = True
        self._say(f"this session's perf data reached its budget of {self._mb()} (plan key "
                  f"perf_keep_mb): its windows are kept thinned evenly over the session "
                  f"(every 2nd, then every 4th..., the first always), the oldest going first; "
                  f"every window's hot symbols stay in the result file")

    def _said_dropped_unread(self, n: int) -> None:
        if self._said_unread:
            return
        self._said_unread = True
        self._say(f"report fell behind: {n} window{'s' * (n != 1)} dropped unread to "
                  f"keep within perf_keep_mb ({self._mb()}); more go, evenly over the "
                  f"session, while it stays behind, each in the result file as a window "
                  f"dropped unread, with no hot symbols")

    def _say(self, message: str) -> None:
        if self.warn is not None:
            with contextlib.suppress(Exception):
                self.warn(message)


def finish_dir(directory: str, budget: int, budget_mb: int) -> KeptWindows:
    """What a session killed before its end left in `directory`: the window files still plain
    gzipped (a half-written .gz beside one is written again), the unfinished one removed, and
    the whole thinned to `budget` by the same rule (the windows numbered as they are now)."""
    kept = KeptWindows(directory, budget, budget_mb=budget_mb)
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(directory, UNFINISHED))
        kept.unfinished = True
    try:
        names = os.listdir(directory)
    except OSError:
        return kept
    windows = sorted({n.removesuffix(".gz") for n in names
                      if WINDOW_FILE.fullmatch(n.removesuffix(".gz"))})
    for i, name in enumerate(windows):
        path = os.path.join(directory, name)
        if i % kept.stride:             # off the stride reached: it would go at once
            for p in (path, path + ".gz"):
                with contextlib.suppress(OSError):
                    os.unlink(p)
            kept.dropped += 1
            continue
        if name in names:
            try:
                path = gzip_file(path)
                kept.compressed += 1
            except OSError:
                pass                    # kept as it is
        else:
            path += ".gz"
        kept.kept.append(KeptWindow(i, path, _size(path)))
        kept.thin()                 # as it goes: never past the budget on the way
    return kept
