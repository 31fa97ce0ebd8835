"""A recording in windows: perf record's output rotated (SIGUSR2) every `window_s` seconds and
at each `cut()` of a window open MIN_WINDOW_S or more, each completed file read by one `perf
script` at idle priority (perf/script.py) into `HotSymbol`s, by run (each sample's time against
the cuts' times), as a `PerfWindow`, and into the session's samples by address when its data
is kept (perf/addrs.py); a kept file then handed to `keep` (gzipped at once, within the
session's budget), so nothing is left to compress when the run ends.  Each file counts against
that budget from the moment perf dumps it: when the reports fall behind, one dropped unread to
keep within it is a window with no symbols that says so (`dropped`).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hotloop.events import HotSymbol
from hotloop.host.procs import time_scale
from hotloop.perf import addrs
from hotloop.perf.control import kill_and_wait, killpg, spawn
from hotloop.perf.keep import DROPPED_UNREAD, WINDOW_FILE, KeptWindows
from hotloop.perf.record import PerfRecord
from hotloop.perf.script import read_window, script_argv

# A cut closes its window only once it is this old: each window costs perf record a read of
# /proc/kallsyms (70 ms of CPU here) and its report a perf script (0.1-0.15 s), so runs of
# 0.1 s, a window each, paid 2 s of CPU in 10 runs; a window's samples go to their runs by
# time either way.  A run of 0.5 s or more still ends its own window, for the live panel.
MIN_WINDOW_S = 0.5


@dataclass
class PerfWindow:
    """One completed window: the symbols sampled between two output rotations.

    `run` is how many `cut()` calls happened before this window closed, i.e. the
    0-based repetition it belongs to when the session cuts at the end of each one; `runs`
    its symbols by the run each sample fell in (several runs when short ones share a
    window).  `start`/`end` are seconds since recording started.  `dropped`: why it has no
    symbols though it may have had samples (dropped unread, to keep within the budget),
    else "".
    """
    index: int
    run: int
    symbols: list[HotSymbol]
    samples: int
    start: float
    end: float
    path: str | None = None
    dropped: str = ""
    runs: dict[int, list[HotSymbol]] = field(default_factory=dict)


class Windows:
    """The windows of one `PerfRecord`: when to rotate, which file is which run's, and each
    file's report.  `out` yields each PerfWindow as it completes, then None."""

    def __init__(self, record: PerfRecord, *, window_s: float, keep: bool,
                 warn: Callable[[str], None],
                 on_window: Callable[[PerfWindow], Any] | None = None,
                 kept: KeptWindows | None = None, base: int = 0) -> None:
        self.record = record
        self.window_s = window_s
        self.keep = keep                    # the files stay (--keep-perf), else each goes once read
        # where a kept file goes once read; either way, what holds the files on disk (those
        # waiting for their report too) to the budget
        self.kept = kept
        self.base = base                    # the session's windows before this recording's
        self._warn = warn
        self.on_window = on_window
        self.directory: str | None = None
        self.kallsyms: str | None = None    # a copy of /proc/kallsyms for the reports
        self.preexisting: set[str] = set()  # in a kept directory before this run: not ours
        self.out: asyncio.Queue[PerfWindow | None] = asyncio.Queue()
        self.done: list[PerfWindow] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.run = 0
        self.cuts: list[int] = []           # when each run ended, CLOCK_MONOTONIC ns
        self.ending = False                 # the runs are over: reports need not yield
        self._script: asyncio.subprocess.Process | None = None   # the report running
        # (the window's number in this recording, its file, when it closed)
        self._paths: asyncio.Queue[tuple[int, str, float] | None] = asyncio.Queue()
        self._seen: set[str] = set()
        self._pending_since: float | None = None   # a SIGUSR2 sent, its Dump not seen yet
        self._pending_runs: list[int] = []
        self._last_rotate = 0.0
        self._t0 = 0.0
        self._reporter: asyncio.Task[None] | None = None
        # kept files to compress: apart from the reports, which must not wait on gzip
        self._kept_paths: asyncio.Queue[tuple[int, str]] = asyncio.Queue()
        self._compressor: asyncio.Task[None] | None = None

    def begin(self) -> None:
        """Sampling runs: the first window opens now."""
        self._t0 = self._last_rotate = time.monotonic()
        self._reporter = asyncio.create_task(self._report_loop())
        self.tasks.append(self._reporter)
        if self.keep and self.kept is not None:
            self._compressor = asyncio.create_task(self._compress_loop())
            self.tasks.append(self._compressor)
        self.tasks.append(asyncio.create_task(self._timer_loop()))

    def cut(self) -> None:
        """A repetition ended: its window closes now if open MIN_WINDOW_S or more (else the
        next run's samples share it, told apart by time)."""
        self.cuts.append(time.monotonic_ns())
        if time.monotonic() - self._last_rotate >= MIN_WINDOW_S:
            self.rotate()
        self.run += 1

    def rotate(self) -> None:
        """Ask perf for a new output file (SIGUSR2), unless one is already in flight."""
        p = self.record.proc
        if p is None or p.returncode is not None or self.record.stopping:
            return
        now = time.monotonic()
        # perf drops a SIGUSR2 that arrives mid-rotation; resend only if one looks lost.
        if self._pending_since is not None and now - self._pending_since < 1.0:
            return
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGUSR2)
            if self._pending_since is None:
                self._pending_runs.append(self.run)
            self._pending_since = now
            self._last_rotate = now

    async def _timer_loop(self) -> None:
        while not self.record.stopping:
            delay = self._last_rotate + self.window_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(min(delay, self.window_s))
                continue
            self.rotate()
            await asyncio.sleep(0.05)

    def dumped(self, path: str) -> None:
        """perf says it completed `path`: the rotation in flight is done."""
        self._pending_since = None
        self._queue_path(path)

    def _queue_path(self, path: str) -> None:
        if path in self._seen:
            return
        index = len(self._seen)             # in order: each queued path becomes a window
        self._seen.add(path)
        if self.kept is not None:           # on disk: counted from now
            self.kept.dumped(self.base + index, path)
        self._paths.put_nowait((index, path, time.monotonic() - self._t0))

    def sweep(self) -> None:
        """Queue every file perf wrote that no Dump line announced (perf gone, or ending)."""
        if not self.directory:
            return
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(self.directory)):
                if WINDOW_FILE.fullmatch(name) and name not in self.preexisting:
                    self._queue_path(os.path.join(self.directory, name))

    async def finish(self, quick: bool = False) -> None:
        """perf has ended: report the files left, the last window's too; `quick`: none of
        them (a quit: a loaded machine's backlog of reports is not waited for)."""
        self.ending = True
        _unidle(self._script)               # begun beside the runs: it need not yield now
        self.sweep()
        self._paths.put_nowait(None)
        if quick and self._reporter is not None:
            self._reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reporter
        elif self._reporter is not None:
            try:
                await asyncio.wait_for(self._reporter, 30 * time_scale())   # a VM's: longer
            except asyncio.TimeoutError:
                self._warn("perf: summarising the last windows timed out")
        if self.keep and self.kept is not None and self.directory:
            # the windows summarised since the tally's last write, on disk before the end
            await addrs.recorded(self.kept, self.directory).flush()
        if self._compressor is not None:
            # what it has not reached (a window or two) is the recorder's to finish, here and
            # now rather than at idle priority: KeptWindows.settle
            self._compressor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._compressor

    async def _report_loop(self) -> None:
        start = 0.0
        while True:
            item = await self._paths.get()
            if item is None:
                return
            index, path, end = item
            run = self._pending_runs.pop(0) if self._pending_runs else self.run
            kept, dropped = self.kept, ""
            symbols: list[HotSymbol] = []
            runs: dict[int, list[HotSymbol]] = {}
            if kept is not None and not kept.take(self.base + index):
                dropped = DROPPED_UNREAD                    # its file is gone already
            else:
                symbols, runs = await self._report(path, run)
                if kept is not None:
                    kept.done_reading(self.base + index)
            w = PerfWindow(index=index, run=run, symbols=symbols,
                           samples=sum(s.samples for s in symbols), start=round(start, 3),
                           end=round(end, 3), path=path if self.keep and not dropped else None,
                           dropped=dropped, runs=runs)
            start = end
            self.done.append(w)
            if not self.keep and not dropped:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                if kept is not None:
                    kept.discard(self.base + index)
            self.out.put_nowait(w)
            if self.on_window is not None:
                try:
                    self.on_window(w)
                except Exception as e:  # noqa: BLE001
                    self._warn(f"perf window callback failed: {e}")
            if self._compressor is not None and not dropped:    # compressed as the next fills
                self._kept_paths.put_nowait((self.base + w.index, path))

    async def _compress_loop(self) -> None:
        assert self.kept is not None
        while True:
            index, path = await self._kept_paths.get()
            await self.kept.add(index, path, self.record.cpus)

    async def _report(self, path: str, run: int
                      ) -> tuple[list[HotSymbol], dict[int, list[HotSymbol]]]:
        """The window's hot symbols, whole and by run (`run`: the window's, for samples with
        no time), and its samples by address added to the session's tally when its data is
        kept (perf/addrs.py): one `perf script` gives them all."""
        rec = self.record
        assert rec.perf
        proc = None
        try:
            # idle priority while the runs go on: summarising must not steal CPU from the
            # measured workload; once they are over, the backlog is all the session waits
            # for, where a loaded machine gave an idle one no CPU (still off the workload's
            # CPUs: an interleaved session's may still be running there)
            argv = script_argv(rec.perf, path, self.kallsyms)
            proc = self._script = await spawn(argv, rec.cpus, stdout=subprocess.PIPE,
                                              idle=not self.ending)
            if self.ending:                 # (ended as it started)
                _unidle(proc)
            out, err = await asyncio.wait_for(proc.communicate(), 20 * time_scale())
        except asyncio.TimeoutError:
            killpg(proc)
            self._warn(f"perf script timed out on {os.path.basename(path)}; window skipped")
            return [], {}
        except asyncio.CancelledError:
            await kill_and_wait(proc)
            raise
        except OSError as e:
            self._warn(f"perf script failed: {e}")
            return [], {}
        text = out.decode(errors="replace")
        if proc.returncode != 0 and not text.strip():
            msg = err.decode(errors="replace").strip().splitlines()
            self._warn(f"perf script failed on {os.path.basename(path)}: "
                       f"{msg[-1] if msg else proc.returncode}")
            return [], {}
        window = read_window(text, rec.comm, frozenset(rec.pids), self.cuts, run)
        if self.keep and self.kept is not None and self.directory:
            tally = addrs.recorded(self.kept, self.directory)
            tally.warn = self._warn
            tally.add(os.path.basename(path), self.base + len(self.done), window.addresses)
            await tally.maybe_write()
        return window.symbols, window.runs


def _unidle(proc: asyncio.subprocess.Process | None) -> None:
    """A report begun at idle priority back to normal, where this process may (root, or
    RLIMIT_NICE): on a loaded machine an idle one gets no CPU."""
    if proc is None or proc.returncode is not None:
        return
    with contextlib.suppress(OSError):
        os.sched_setscheduler(proc.pid, os.SCHED_OTHER, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, proc.pid, 0)
