"""The perf recorder: sampled hot symbols and counters of a running session.

Everything here drives the real `perf` binary (linux-perf); nothing imports the UI.

Recording model (see `PerfRecorder`): one `perf record` of the worker's CPUs (or attached to
its pids), started with events disabled and enabled over a `--control` pipe (so `start()`
returns only once sampling really runs), writing `--switch-output=signal` files (`record`).
Sampling whole CPUs, perf needs no pid: `prepare()` spawns it as the worker starts, and
`start()`, once the worker is ready and `attach()` has handed over its pids, only enables it,
so perf's own start is not between the worker's being ready and its first run. We rotate
the output ourselves with SIGUSR2 every `window_s` seconds and on `cut()`, and learn that a
window file is complete from perf's "[ perf record: Dump FILE ]" line on stderr. Each
finished file is summarised by `perf report` at idle priority and parsed into
`HotSymbol`s (`windows`). A `perf stat` runs alongside for counters (`stat`).
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hotloop import events as ev
from hotloop.events import HotSymbol
from hotloop.host.procs import time_scale
from hotloop.perf.call_graphs import CALL_GRAPHS
from hotloop.perf.control import killpg
from hotloop.perf.keep import KeptWindows
from hotloop.perf.parse import aggregate
from hotloop.perf.probe import (
    DEFAULT_CALL_GRAPH,
    DEFAULT_FREQUENCY,
    DEFAULT_WINDOW_S,
    PERF_MISSING,
    find_perf,
    system_wide_allowed,
)
from hotloop.perf.record import PerfRecord
from hotloop.perf.script import copy_kallsyms
from hotloop.perf.stat import PerfStat
from hotloop.perf.windows import PerfWindow, Windows

# A quit waits this long for perf record to write its last window after its SIGINT (0.1 s
# when it has a CPU; seconds on a loaded machine): then it is killed, and that window's
# unfinished file removed (its samples are of the run the quit cut short, which is not kept)
QUICK_STOP_S = 0.5
# Defaults from benchmarks/perf_overhead.py on a 2-core KVM guest: workload CPU time per
# repetition +1.2..1.8% at 999 Hz, +4..6% at 1999 Hz, +12..15% at 3999 Hz (perf's default).


@dataclass
class PerfResult:
    """What `PerfRecorder.stop()` returns: the session aggregate and per-run aggregates."""
    symbols: list[HotSymbol] = field(default_factory=list)
    samples: int = 0
    windows: int = 0
    runs: dict[int, list[HotSymbol]] = field(default_factory=dict)
    counters: dict[str, float | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    data_dir: str | None = None
    frequency: int = 0
    call_graph: str = "none"


def _remove_stale_dirs() -> None:
    """Remove temp dirs left by a hotloop that was SIGKILLed (its pid is in the name)."""
    tmp = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for name in os.listdir(tmp):
            m = re.fullmatch(r"hotloop-perf-(\d+)-\w+", name)
            if m and not os.path.exists(f"/proc/{m.group(1)}"):
                shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


class PerfRecorder:
    """`perf record` (+ `perf stat`) attached to a set of pids, in windows of <= 2 s.

    Usage::

        rec = PerfRecorder([worker_pid, reader_pid], frequency=999, call_graph="none",
                           keep_dir="results/x.perf")        # keep_dir: --keep-perf
        # or, before the pids are known: PerfRecorder((), cpus=...); await rec.prepare();
        # start the worker; rec.attach(pids, comm) once it is ready
        if not await rec.start():           # False: no perf; rec.warnings says why
            ...                             # carry on without symbols
        async def consume():
            async for w in rec.windows():   # PerfWindow, as each completes; ends after stop()
                emit(HotSymbols(tuple(w.symbols[:30]), window=w.index, samples=w.samples))
        task = asyncio.create_task(consume())
        for rep in ...: run_repetition(); rec.cut()   # close the window at each rep's end
        result = await rec.stop()           # PerfResult: aggregate, per-run, counters, warnings
        await task

    Alternatively pass `on_window` / `on_warning` callbacks. Nothing raises out of the
    recorder for perf's own failures (missing, refused, crashed): they become strings in
    `warnings` (and `on_warning`), and the result is just emptier. `async with` stops it.
    The work is its collaborators': `PerfRecord` (the perf record process), `Windows` (its
    rotation and reports) and `PerfStat` (the counters); this class starts and stops them.
    """

    def __init__(self, pids: Sequence[int], *, frequency: int = DEFAULT_FREQUENCY,
                 call_graph: str = DEFAULT_CALL_GRAPH, window_s: float = DEFAULT_WINDOW_S,
                 counters: bool = True, keep_dir: str | os.PathLike[str] | None = None,
                 compress: str = "",
                 event: str | None = None,
                 cpus: Sequence[int] = (), comm: str | None = None,
                 on_window: Callable[[PerfWindow], Any] | None = None,
                 on_warning: Callable[[str], Any] | None = None,
                 kept: KeptWindows | None = None, window_base: int = 0,
                 budget_mb: int | None = None) -> None:
        if call_graph not in CALL_GRAPHS:
            raise ValueError(f"call_graph must be one of {', '.join(CALL_GRAPHS)}, not {call_graph!r}")
        self.pids = [int(p) for p in pids]
        # With `comm`, sample the CPUs (`-a -C cpus`) and keep that comm's samples:
        # per-task events (`-p`) add work to every context switch of the task,
        # which halved seqpacket's same-core rate here; per-CPU events do not.
        self.comm = comm if comm and system_wide_allowed() else None
        self.cpus = [int(c) for c in cpus]
        self.frequency = int(frequency)
        self.call_graph = call_graph
        self.window_s = min(max(float(window_s), 0.1), 2.0)
        self.counters_enabled = counters
        self.keep_dir = os.fspath(keep_dir) if keep_dir is not None else None
        # kept data: "gzip" (each file once summarised), or "" as perf writes it.  Not
        # `perf record -z`: with --switch-output its zstd stream runs on across the files,
        # and perf (6.1) cannot read any file after the first ("failed to decompress").
        if compress not in ("", "gzip"):
            raise ValueError(f"compress must be gzip or empty, not {compress!r}")
        self.compress = compress if self.keep_dir else ""
        # the session's kept windows (its budget), else this recording's own, unbounded
        self.kept = kept if kept is not None or self.keep_dir is None else KeptWindows(
            self.keep_dir, None, compress=self.compress == "gzip", warn=self._warn)
        self.event = event
        self.on_window = on_window
        self.on_warning = on_warning
        self.warnings: list[str] = []
        self.perf = find_perf()
        self._dir: str | None = None
        self._tmp: str | None = None        # this recording's own files, whatever is kept
        self._record = PerfRecord(self.perf, self.pids, cpus=self.cpus, comm=self.comm,
                                  frequency=self.frequency, call_graph=call_graph, event=event,
                                  warn=self._warn)
        # nothing kept: the windows waiting for their report held to `budget_mb` all the same
        on_disk = self.kept if self.keep_dir else KeptWindows(
            "", None if budget_mb is None else budget_mb * 1_000_000, compress=False,
            warn=self._warn, budget_mb=budget_mb)
        self._windows = Windows(self._record, window_s=self.window_s, keep=bool(self.keep_dir),
                                warn=self._warn, on_window=on_window, kept=on_disk,
                                base=window_base)
        self._stat = PerfStat(self.perf, self.pids, self.cpus, warn=self._warn)
        self._watcher: asyncio.Task[None] | None = None
        # prepare(): None not asked (or not possible: -p needs the pids), True perf record
        # spawned and waiting to be enabled, False its spawn failed (warned)
        self._early: bool | None = None
        self._symbols: asyncio.Future[str | None] | None = None    # the kallsyms copy
        self._started = False
        self._sampled = False               # start() got perf sampling
        self._running = False               # started, not stopped yet: interrupt() may signal
        self._result: PerfResult | None = None

    # -- public ------------------------------------------------------------------------

    async def prepare(self) -> None:
        """Before the pids are known (the worker not started yet): perf record spawned with
        its events off, to get ready while the worker does; `start()` then only enables it.
        Only where perf samples the whole CPUs (it needs the CPUs alone; the comm `attach`
        gives keeps the worker's samples): with `-p` it needs the pids, and `start()` does it
        all.  A spawn that fails is warned, and `start()` returns False."""
        if self._started or self._early is not None or self.perf is None \
                or not system_wide_allowed():
            return
        self.comm = self._record.comm = ""      # the whole CPUs; the worker's comm to come
        try:
            self._files()
            assert self._dir is not None
            await self._record.spawn(self._dir, self._windows.dumped)
            self._early = True
        except asyncio.CancelledError:
            self.kill()
            raise
        except Exception as e:  # noqa: BLE001 - perf trouble must not stop the run
            self._warn(f"perf record could not start: {e}")
            self.kill()
            self._record.proc = None
            self._early = False

    def attach(self, pids: Sequence[int], comm: str | None = None) -> None:
        """The worker is ready: its pids (perf stat counts them; perf record's `-p`, or the
        reports' filter with the comm), and its comm, which keeps its samples of the whole
        CPUs.  Before `start()`."""
        self.pids = self._record.pids = self._stat.pids = [int(p) for p in pids]
        if self._early is None:             # not spawned yet: the whole CPUs or `-p`, as ever
            self.comm = comm if comm and system_wide_allowed() else None
        else:                               # spawned on the whole CPUs: "" keeps the pids'
            self.comm = comm or ""
        self._record.comm = self.comm

    def _files(self) -> None:
        """Where perf writes, and the kallsyms copy begun (the windows' reports read the
        kernel's symbols from it: taken as perf starts)."""
        _remove_stale_dirs()
        self._tmp = tempfile.mkdtemp(prefix=f"hotloop-perf-{os.getpid()}-")
        if self.keep_dir:
            os.makedirs(self.keep_dir, exist_ok=True)
            self._dir = self.keep_dir
        else:
            self._dir = self._tmp
        self._windows.directory = self._dir
        self._windows.preexisting = set(os.listdir(self._dir))
        self._symbols = asyncio.ensure_future(asyncio.to_thread(copy_kallsyms, self._tmp))

    @property
    def started(self) -> bool:
        """Whether `start()` was called (perf started or failed to): its result counts."""
        return self._started

    @property
    def sampled(self) -> bool:
        """Whether perf started sampling (`start()` returned True): it may have written."""
        return self._sampled

    async def start(self) -> bool:
        """Start perf (enable the one `prepare` spawned) and return once sampling is enabled
        (True), or warn and return False."""
        if self._started:
            return self._record.proc is not None
        self._started = True
        if self.perf is None or not self.pids or self._early is False:
            if self._early is not False:    # a failed spawn was warned already
                self._warn(PERF_MISSING + "; running without hot symbols" if self.perf is None
                           else "perf: no pids to attach to")
            self.kill()
            await self.reap()               # a spawned one: ended before it is let go of
            self._record.proc = None
            self._windows.out.put_nowait(None)
            return False
        try:
            if self._early:
                ok = await self._record.enable()
            else:
                self._files()
                assert self._dir is not None
                ok = await self._record.start(self._dir, self._windows.dumped)
            assert self._symbols is not None
            self._windows.kallsyms = await self._symbols
            if ok:
                self._windows.begin()
                self._watcher = asyncio.create_task(self._record.watch(self._windows.sweep))
            if ok and self.counters_enabled:
                await self._stat.start()
            self._running = self._sampled = ok
        except asyncio.CancelledError:
            self.kill()
            raise
        except Exception as e:  # noqa: BLE001 - perf trouble must not stop the run
            self._warn(f"perf record could not start: {e}")
            self.kill()
            ok = False
        if not ok:
            await self.reap()               # one killed above: ended before it is let go of
            self._record.proc = None
            self._windows.out.put_nowait(None)      # windows() ends at once
        return ok

    def cut(self) -> None:
        """Close the current window now (end of a repetition). Cheap and non-blocking.

        If a rotation is already in flight, the two coalesce into one window.
        """
        self._windows.cut()

    async def windows(self) -> AsyncIterator[PerfWindow]:
        """Yield each PerfWindow as it completes; ends once `stop()` has parsed the last."""
        out = self._windows.out
        while True:
            w = await out.get()
            if w is None:
                out.put_nowait(None)   # let other iterators end too
                return
            yield w

    def interrupt(self) -> None:
        """Tell perf record and perf stat to end (SIGINT), both at once, and return: a stop
        signals them together with the worker's kill, and `stop()` then waits for all of it
        at once rather than in turn.  Not while perf is starting (its start would fail on
        it): `stop()` signals it then."""
        if self._running:
            self._record.interrupt()
            self._stat.interrupt()

    async def stop(self, timeout: float | None = None, quick: bool = False) -> PerfResult:
        """End perf (SIGINT, SIGKILL after `timeout`: 3 s, in an emulated VM 20 times that),
        parse the last window, aggregate; `quick` (a quit): the windows not summarised yet
        are left so (their files kept), perf record is killed QUICK_STOP_S after its SIGINT
        (a last window it had not finished is removed with the unfinished file, as any
        killed perf's), and the counters, which a stopped session does not keep, are not
        waited for beyond that either."""
        if self._result is not None:
            return self._result
        if not self._started:               # prepared only (the worker never was ready):
            self.kill()                     # nothing recorded, nothing to wait for
            await self.reap()
            self._windows.out.put_nowait(None)
            self._result = self._build_result({})
            return self._result
        timeout = 3.0 * time_scale() if timeout is None else timeout
        bound = QUICK_STOP_S * time_scale() if quick else None
        self._record.stopping = True
        rec, stat = self._record.proc, self._stat.proc
        if rec is not None:         # both at once: counters and samples end together
            self._record.interrupt()
        if stat is not None:
            self._stat.interrupt()
        try:
            counters: dict[str, float | None] = {}
            # waited for together: the longer of the two, not their sum
            stat_ends = asyncio.ensure_future(self._stat.stop(
                timeout if bound is None else bound, quiet=quick)) if stat is not None else None
            rec_ends = asyncio.ensure_future(self._record.stop(timeout, bound)) \
                if rec is not None else None
            await asyncio.gather(*(t for t in (stat_ends, rec_ends) if t is not None))
            if stat_ends is not None:
                counters = stat_ends.result()
            if rec is not None:
                await self._windows.finish(quick)
                self.kill()
            res = self._build_result(counters)
        except asyncio.CancelledError:
            self.kill()
            raise
        except Exception as e:  # noqa: BLE001
            self._warn(f"perf: error while stopping: {e}")
            self.kill()
            res = self._build_result({})
        finally:
            self._windows.out.put_nowait(None)
            self._cleanup_files()
        if self.kept is not None and self.keep_dir and not quick:   # a window or two left
            await asyncio.to_thread(self.kept.settle, self._windows.preexisting)
        self._result = res
        return res

    @property
    def windows_done(self) -> int:
        """How many windows this recording has delivered."""
        return len(self._windows.done)

    def kill(self) -> None:
        """Synchronously SIGKILL every perf process we started (for finally/cancel paths)."""
        for p in (self._record.proc, self._stat.proc):
            killpg(p)
        for t in (self._record.reader, *self._windows.tasks, self._watcher):
            if t is not None and t is not asyncio.current_task():
                t.cancel()
        self._record.close_control()
        self._cleanup_files()              # the temp dir only; keep_dir stays

    async def reap(self, timeout: float = 5.0) -> None:
        """Wait (within `timeout`) for the perf processes kill() signalled to end, their pipes
        closed: one left to the event loop's close kept its transport unfinished, and its
        finalizer raised "Event loop is closed" after the run (1 in 25 Ctrl-Cs of a series)."""
        procs = [p for p in (self._record.proc, self._stat.proc) if p is not None]
        # and the windows' tasks kill() cancelled, each ending the perf script or gzip it ran
        tasks = [t for t in self._windows.tasks if t is not asyncio.current_task()]
        waits = [asyncio.ensure_future(p.wait()) for p in procs] + tasks
        if waits:
            await asyncio.wait(waits, timeout=timeout)

    @property
    def pids_of_perf(self) -> list[int]:
        """pids of the running perf processes (for tests and diagnostics)."""
        return [p.pid for p in (self._record.proc, self._stat.proc)
                if p is not None and p.returncode is None]

    async def __aenter__(self) -> PerfRecorder:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- internals ---------------------------------------------------------------------

    def _warn(self, msg: str) -> None:
        self.warnings.append(msg)
        if self.on_warning is not None:
            with contextlib.suppress(Exception):
                self.on_warning(msg)

    def _build_result(self, counters: dict[str, float | None]) -> PerfResult:
        runs: dict[int, list[list[HotSymbol]]] = {}
        done = self._windows.done
        for w in done:                     # a window with no samples has no runs
            for run, symbols in w.runs.items():
                runs.setdefault(run, []).append(symbols)
        symbols = aggregate(w.symbols for w in done)
        return PerfResult(symbols=symbols, samples=sum(s.samples for s in symbols),
                          windows=len(done),
                          runs={r: aggregate(lists) for r, lists in runs.items()},
                          counters=counters, warnings=list(self.warnings),
                          data_dir=self.keep_dir, frequency=self.frequency,
                          call_graph=self.call_graph)

    def _cleanup_files(self) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)


def merge(done: list[PerfResult], variant: str, run_top: int,
          session_top: int | None) -> tuple[list[ev.Event], dict[str, float | None]]:
    """The recordings of a session's workers as one: hot symbols per run (their numbers already
    the session's) and of the whole session, the counters summed, and where the data was kept."""
    out: list[ev.Event] = [
        ev.HotSymbols(tuple(syms[:run_top]), scope="run", window=run,
                      samples=sum(s.samples for s in syms), variant=variant)
        for r in done for run, syms in sorted(r.runs.items())]
    if any(r.samples for r in done):
        out.append(ev.HotSymbols(tuple(aggregate(r.symbols for r in done)[:session_top]),
                                 scope="session", samples=sum(r.samples for r in done),
                                 variant=variant))
    # Counts add up over the workers; one that could not count makes it unknown.
    names = dict.fromkeys(k for r in done for k in r.counters)
    counters: dict[str, float | None] = {
        k: None if any(r.counters.get(k) is None for r in done)
        else sum(r.counters[k] or 0.0 for r in done) for k in names}
    cycles = counters.get("cycles")
    if "ipc" in counters and cycles:
        counters["ipc"] = (counters.get("instructions") or 0) / cycles
    return out, counters

