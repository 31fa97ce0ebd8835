"""The perf runs of one annotation: each kept window unpacked (bounded) into a temporary
directory for as long as perf reads it, `perf script` counting a symbol's samples in it by
address, `perf annotate` disassembling it; all of them ended at once when annotate is
interrupted or one fails.
"""
from __future__ import annotations

import contextlib
import gzip
import itertools
import os
import subprocess
import threading
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.host.procs import child_setup
from hotloop.perf.script import FIELDS, SAMPLE, UNNAMED

ANNOTATE_TIMEOUT_S = 120.0
# perf data gzips to about a ninth of its size (kept runs here): a window that unpacks to
# far more than its size on disk is not what hotloop kept (a gzip bomb), and is cut off
# before it fills $TMPDIR; small windows may always take the floor
EXPANSION = 32
EXPANSION_FLOOR = 32 << 20
CHUNK = 1 << 20                         # unpacked a chunk at a time: a stop is seen between


class Stopped(Exception):
    """A perf thread's work abandoned: annotate was interrupted, or another file failed."""


@dataclass
class Counts:
    """One perf.data file's samples of the symbol: {(DSO path, offset in it): samples}, and
    every DSO its samples fell in (to say which binary is gone or rebuilt when none is the
    symbol's)."""
    hits: Counter[tuple[str, int]] = field(default_factory=Counter)
    seen: set[str] = field(default_factory=set)


class PerfRuns:
    """perf runs of one annotation: from a temporary directory of the decompressed files,
    at idle priority on the spare CPUs when a run is going on (`background`)."""

    def __init__(self, perf: str, tmp: str, vmlinux: str | None,
                 background: set[int] | None) -> None:
        self.perf, self.tmp, self.vmlinux = perf, tmp, vmlinux
        self.idle = background is not None
        self._names = itertools.count()       # the decompressed files' (threads share it)
        # the CPUs the workload leaves free (none free: all of them, at idle priority)
        self.cpus = set(os.sched_getaffinity(0)) - background if background else None
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[str]] = set()

    @contextlib.contextmanager
    def plain(self, data: Path) -> Iterator[Path]:
        """The file perf reads: a kept one is gzipped once the run is over, and is unpacked
        for as long as perf reads it (all of a run's at once could be gigabytes), up to
        EXPANSION times its size."""
        if data.suffix != ".gz":
            yield data
            return
        plain = Path(self.tmp) / f"{next(self._names)}-{data.stem}"
        try:
            try:
                limit = max(EXPANSION_FLOOR, EXPANSION * data.stat().st_size)
                with gzip.open(data, "rb") as src, open(plain, "wb") as dst:
                    written = 0
                    while chunk := src.read(CHUNK):
                        self._check()
                        written += len(chunk)
                        if written > limit:
                            raise HotloopError(
                                f"{data}: expands beyond {limit >> 20} MB, {EXPANSION} times "
                                f"its size (perf data gzips to about a ninth): not the perf "
                                f"data hotloop kept; not unpacked further")
                        dst.write(chunk)
            except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
                raise HotloopError(f"{data}: cannot decompress: {e}") from None
            yield plain
        finally:
            plain.unlink(missing_ok=True)

    def _check(self) -> None:
        if self.stopped.is_set():
            raise Stopped()

    def stop(self) -> None:
        """End every perf and unpacking under way (annotate interrupted, or failed)."""
        self.stopped.set()
        with self._lock:
            for proc in self._procs:
                with contextlib.suppress(OSError):
                    proc.kill()

    def run(self, argv: list[str], data: Path) -> subprocess.CompletedProcess[str]:
        if self.vmlinux:
            argv = [*argv, "--vmlinux", self.vmlinux]
        try:
            with self._lock:
                self._check()
                proc = subprocess.Popen(
                    [self.perf, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, errors="replace", stdin=subprocess.DEVNULL,
                    preexec_fn=child_setup(os.getpid(), self.idle, self.cpus or None))
                self._procs.add(proc)
        except OSError as e:            # no fork, no memory: one line, never a traceback
            raise HotloopError(f"{data}: cannot start perf {argv[0]}: "
                               f"{e.strerror or e}") from None
        try:
            out, err = proc.communicate(timeout=ANNOTATE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise HotloopError(f"{data}: perf {argv[0]} took over "
                               f"{ANNOTATE_TIMEOUT_S:g} s") from None
        finally:
            with self._lock:
                self._procs.discard(proc)
        self._check()                   # killed by stop(): its output is not an answer
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def count(self, data: Path, symbol: str, kernel: bool | None,
              run: tuple[frozenset[int], frozenset[str]]) -> Counts:
        """The samples of `symbol` in one file, by address, of the run's processes: its
        workers' pids, or their names (inherited by what they fork per run); all when
        neither is known (the whole CPUs perf sampled may have run another user's copy of
        the workload).  A user-space symbol is counted without the kernel's symbol table
        (/proc/kallsyms: most of perf's time per file)."""
        pids, comms = run
        argv = ["script", "-F", FIELDS, "-G"]
        if kernel is False:
            argv += ["--kallsyms", os.devnull]
        with self.plain(data) as plain:
            done = self.run([*argv, "-i", str(plain)], data)
        counts = Counts()
        for line in done.stdout.splitlines():
            m = SAMPLE.match(line)
            named = m is not None
            if m is None and (m := UNNAMED.match(line)) is None:
                continue
            if (pids or comms) and int(m.group(2)) not in pids and m.group(1) not in comms:
                continue
            dso = m.group(6) if named else m.group(4)
            counts.seen.add(dso)
            if named and m.group(4) == symbol:
                counts.hits[(dso, int(m.group(5), 16))] += 1
        if done.returncode != 0 and not counts.hits:
            said = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
            raise HotloopError(f"{data}: perf cannot read it: "
                               f"{said[-1] if said else f'exit status {done.returncode}'}")
        return counts
