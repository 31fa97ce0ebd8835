"""The perf recorder: sampled hot symbols and counters of a running session.

Everything here drives the real `perf` binary (linux-perf); nothing imports the UI.

Recording model (see `PerfRecorder`): one `perf record` attached to the worker's pids,
started with events disabled and enabled over a `--control` pipe (so `start()` returns
only once sampling really runs), writing `--switch-output=signal` files. We rotate the
output ourselves with SIGUSR2 every `window_s` seconds and on `cut()`, and learn that a
window file is complete from perf's "[ perf record: Dump FILE ]" line on stderr. Each
finished file is summarised by `perf report` at idle priority and parsed into
`HotSymbol`s. A `perf stat` runs alongside for counters.
"""
from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hotloop import events as ev
from hotloop.events import HotSymbol
from hotloop.host.procs import child_setup, time_scale
from hotloop.perf.parse import aggregate, parse_report, parse_stat_csv, report_argv
from hotloop.perf.probe import (
    CALL_GRAPHS,
    DEFAULT_CALL_GRAPH,
    DEFAULT_FREQUENCY,
    DEFAULT_WINDOW_S,
    PERF_MISSING,
    STAT_EVENTS,
    find_perf,
    system_wide_allowed,
)

# Defaults from benchmarks/perf_overhead.py on a 2-core KVM guest: workload CPU time per
# repetition +1.2..1.8% at 999 Hz, +4..6% at 1999 Hz, +12..15% at 3999 Hz (perf's default).


# --------------------------------------------------------------------------- recorder

@dataclass
class PerfWindow:
    """One completed window: the symbols sampled between two output rotations.

    `run` is how many `cut()` calls happened before this window closed, i.e. the
    0-based repetition it belongs to when the session cuts at the end of each one.
    `start`/`end` are seconds since recording started.
    """
    index: int
    run: int
    symbols: list[HotSymbol]
    samples: int
    start: float
    end: float
    path: str | None = None


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


DUMP_RE = re.compile(r"\[ perf record: Dump (.+?) \]")
def _remove_stale_dirs() -> None:
    """Remove temp dirs left by a hotloop that was SIGKILLed (its pid is in the name)."""
    tmp = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for name in os.listdir(tmp):
            m = re.fullmatch(r"hotloop-perf-(\d+)-\w+", name)
            if m and not os.path.exists(f"/proc/{m.group(1)}"):
                shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)


def _killpg(proc: asyncio.subprocess.Process | None, sig: int = signal.SIGKILL) -> None:
    if proc is None or proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)        # started with start_new_session: pgid == pid


class PerfRecorder:
    """`perf record` (+ `perf stat`) attached to a set of pids, in windows of <= 2 s.

    Usage::

        rec = PerfRecorder([worker_pid, reader_pid], frequency=999, call_graph="none",
                           keep_dir="results/x.perf")        # keep_dir: --keep-perf
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
    perf runs in its own process group with PDEATHSIG=SIGKILL, so it never outlives us.
    """

    def __init__(self, pids: Sequence[int], *, frequency: int = DEFAULT_FREQUENCY,
                 call_graph: str = DEFAULT_CALL_GRAPH, window_s: float = DEFAULT_WINDOW_S,
                 counters: bool = True, keep_dir: str | os.PathLike[str] | None = None,
                 compress: str = "",
                 event: str | None = None,
                 cpus: Sequence[int] = (), comm: str | None = None,
                 on_window: Callable[[PerfWindow], Any] | None = None,
                 on_warning: Callable[[str], Any] | None = None) -> None:
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
        # kept data: "gzip" (each file once the run is over), or "" as perf writes it.  Not
        # `perf record -z`: with --switch-output its zstd stream runs on across the files,
        # and perf (6.1) cannot read any file after the first ("failed to decompress").
        if compress not in ("", "gzip"):
            raise ValueError(f"compress must be gzip or empty, not {compress!r}")
        self.compress = compress if self.keep_dir else ""
        self.event = event
        self.on_window = on_window
        self.on_warning = on_warning
        self.warnings: list[str] = []
        self.perf = find_perf()
        self._dir: str | None = None
        self._rec: asyncio.subprocess.Process | None = None
        self._stat: asyncio.subprocess.Process | None = None
        self._ctl_w: int | None = None
        self._ack_r: int | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._reader: asyncio.Task[None] | None = None
        self._reporter: asyncio.Task[None] | None = None
        self._preexisting: set[str] = set()
        self._paths: asyncio.Queue[tuple[str, float] | None] = asyncio.Queue()
        self._out: asyncio.Queue[PerfWindow | None] = asyncio.Queue()
        self._seen: set[str] = set()
        self._pending_since: float | None = None   # a SIGUSR2 sent, its Dump not seen yet
        self._pending_runs: list[int] = []
        self._last_rotate = 0.0
        self._t0 = 0.0
        self._run = 0
        self._windows: list[PerfWindow] = []
        self._stderr_tail: list[str] = []
        self._stopping = False
        self._stopped = False
        self._started = False
        self._result: PerfResult | None = None

    # -- public ------------------------------------------------------------------------

    async def start(self) -> bool:
        """Start perf and return once sampling is enabled (True), or warn and return False."""
        if self._started:
            return self._rec is not None
        self._started = True
        if self.perf is None or not self.pids:
            self._warn(PERF_MISSING + "; running without hot symbols" if self.perf is None
                       else "perf: no pids to attach to")
            self._out.put_nowait(None)
            return False
        try:
            if self.keep_dir:
                os.makedirs(self.keep_dir, exist_ok=True)
                self._dir = self.keep_dir
            else:
                _remove_stale_dirs()
                self._dir = tempfile.mkdtemp(prefix=f"hotloop-perf-{os.getpid()}-")
            self._preexisting = set(os.listdir(self._dir))
            ok = await self._start_record()
            if ok and self.counters_enabled:
                await self._start_stat()
        except asyncio.CancelledError:
            self.kill()
            raise
        except Exception as e:  # noqa: BLE001 - perf trouble must not stop the run
            self._warn(f"perf record could not start: {e}")
            self.kill()
            ok = False
        if not ok:
            self._rec = None
            self._out.put_nowait(None)      # windows() ends at once
        return ok

    def cut(self) -> None:
        """Close the current window now (end of a repetition). Cheap and non-blocking.

        If a rotation is already in flight, the two coalesce into one window.
        """
        self._rotate()
        self._run += 1

    async def windows(self) -> AsyncIterator[PerfWindow]:
        """Yield each PerfWindow as it completes; ends once `stop()` has parsed the last."""
        while True:
            w = await self._out.get()
            if w is None:
                self._out.put_nowait(None)   # let other iterators end too
                return
            yield w

    async def stop(self, timeout: float = 3.0) -> PerfResult:
        """End perf (SIGINT, SIGKILL after `timeout`), parse the last window, aggregate."""
        if self._result is not None:
            return self._result
        self._stopping = True
        for proc in (self._stat, self._rec):    # both at once: counters and samples end together
            if proc is not None and proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
        try:
            counters: dict[str, float | None] = {}
            if self._stat is not None:
                counters = await self._stop_stat(timeout)
            if self._rec is not None:
                await self._stop_record(timeout)
            res = self._build_result(counters)
        except asyncio.CancelledError:
            self.kill()
            raise
        except Exception as e:  # noqa: BLE001
            self._warn(f"perf: error while stopping: {e}")
            self.kill()
            res = self._build_result({})
        finally:
            self._stopped = True
            self._out.put_nowait(None)
            self._cleanup_files()
        if self.compress == "gzip":
            await asyncio.to_thread(self._gzip_kept)
        self._result = res
        return res

    def _gzip_kept(self) -> None:
        """Each kept file gzipped once perf is done with it (about 5 times smaller)."""
        if not self._dir:
            return
        for name in os.listdir(self._dir):
            path = os.path.join(self._dir, name)
            if name.startswith("perf.data") and not name.endswith(".gz") \
                    and name not in self._preexisting:
                try:
                    with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    os.unlink(path)
                except OSError as e:
                    with contextlib.suppress(OSError):
                        os.unlink(path + ".gz")
                    self._warn(f"perf: {path} kept uncompressed: {e.strerror or e}")
                    return

    @property
    def windows_done(self) -> int:
        """How many windows this recording has delivered."""
        return len(self._windows)

    def kill(self) -> None:
        """Synchronously SIGKILL every perf process we started (for finally/cancel paths)."""
        for p in (self._rec, self._stat):
            _killpg(p)
        for t in self._tasks:
            if t is not asyncio.current_task():
                t.cancel()
        for fd in (self._ctl_w, self._ack_r):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ctl_w = self._ack_r = None
        self._cleanup_files()              # the temp dir only; keep_dir stays

    @property
    def pids_of_perf(self) -> list[int]:
        """pids of the running perf processes (for tests and diagnostics)."""
        return [p.pid for p in (self._rec, self._stat) if p is not None and p.returncode is None]

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

    def _record_argv(self, ctl: int, ack: int) -> list[str]:
        assert self.perf and self._dir
        target = (["-a"] + (["-C", ",".join(map(str, self.cpus))] if self.cpus else [])
                  if self.comm else ["-p", ",".join(map(str, self.pids))])
        argv = [self.perf, "record", "-F", str(self.frequency), *target,
                "-o", os.path.join(self._dir, "perf.data"), "--switch-output=signal",
                # no build-id pass at each rotation: it re-reads the file, costing CPU mid-run
                "-B", "-N",
                # start disabled; we enable over the control pipe and wait for the ack
                "-D", "-1", "--control", f"fd:{ctl},{ack}"]
        if self.event:
            argv += ["-e", self.event]
        if self.call_graph != "none":
            argv += ["--call-graph", self.call_graph]
        return argv

    async def _spawn(self, argv: list[str], pass_fds: tuple[int, ...] = (),
                     stdout: int = subprocess.DEVNULL, idle: bool = False) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
            pass_fds=pass_fds, start_new_session=True,   # own group: terminal ^C is ours to relay
            preexec_fn=child_setup(os.getpid(), idle, self._spare_cpus()))

    def _spare_cpus(self) -> set[int] | None:
        """The CPUs the workload is not pinned to, where perf should do its own work;
        None when it is not pinned or uses them all."""
        spare = os.sched_getaffinity(0) - set(self.cpus)
        return spare if self.cpus and spare else None

    async def _control(self, ctl_w: int, ack_r: int, proc: asyncio.subprocess.Process,
                       cmd: str, timeout: float | None = None) -> bool:
        """Send a --control command and wait for perf's "ack" (5 s; in an emulated VM
        longer)."""
        timeout = 5.0 * time_scale() if timeout is None else timeout
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bytes] = loop.create_future()

        def readable() -> None:
            try:
                data = os.read(ack_r, 64)
            except OSError:
                data = b""
            if not fut.done():
                fut.set_result(data)

        loop.add_reader(ack_r, readable)
        try:
            os.write(ctl_w, cmd.encode() + b"\n")
            waiter: asyncio.Future[Any] = asyncio.ensure_future(proc.wait())
            pending: set[asyncio.Future[Any]] = {fut, waiter}
            done, _ = await asyncio.wait(pending, timeout=timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            return fut in done and fut.result().startswith(b"ack")
        except OSError:
            return False
        finally:
            loop.remove_reader(ack_r)

    async def _start_record(self) -> bool:
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        try:
            self._rec = await self._spawn(self._record_argv(ctl_r, ack_w), pass_fds=(ctl_r, ack_w))
        finally:
            os.close(ctl_r)
            os.close(ack_w)
        self._ctl_w, self._ack_r = ctl_w, ack_r
        os.set_blocking(ack_r, False)
        self._reader = asyncio.create_task(self._read_stderr())
        self._tasks.append(self._reader)
        if not await self._control(ctl_w, ack_r, self._rec, "enable"):
            await asyncio.sleep(0.05)            # let stderr drain for the message
            _killpg(self._rec)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._rec.wait(), 2)
            self._warn("perf record failed to start: " + (self._tail() or "no ack from perf"))
            self._rec = None
            return False
        self._t0 = self._last_rotate = time.monotonic()
        self._reporter = asyncio.create_task(self._report_loop())
        self._tasks.append(self._reporter)
        self._tasks.append(asyncio.create_task(self._timer_loop()))
        self._tasks.append(asyncio.create_task(self._watch()))
        return True

    async def _start_stat(self) -> None:
        assert self.perf
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        argv = [self.perf, "stat", "-x", ",", "-e", ",".join(STAT_EVENTS),
                "-p", ",".join(map(str, self.pids)), "-D", "-1", "--control", f"fd:{ctl_r},{ack_w}"]
        try:
            self._stat = await self._spawn(argv, pass_fds=(ctl_r, ack_w))
        finally:
            os.close(ctl_r)
            os.close(ack_w)
        os.set_blocking(ack_r, False)
        try:
            ok = await self._control(ctl_w, ack_r, self._stat, "enable")
        finally:
            os.close(ctl_w)
            os.close(ack_r)
        if not ok:
            err = b""
            _killpg(self._stat)
            with contextlib.suppress(Exception):
                _, err = await asyncio.wait_for(self._stat.communicate(), 2)
            self._warn("perf stat failed to start, no counters: "
                       + (err.decode(errors="replace").strip().splitlines() or ["no ack"])[-1])
            self._stat = None

    def _tail(self) -> str:
        lines = [ln for ln in self._stderr_tail
                 if not ln.startswith(("Events ", "[ perf record: Woken", "[ perf record: dump"))]
        return " | ".join(lines[-3:])

    def _rotate(self) -> None:
        """Ask perf for a new output file (SIGUSR2), unless one is already in flight."""
        p = self._rec
        if p is None or p.returncode is not None or self._stopping:
            return
        now = time.monotonic()
        # perf drops a SIGUSR2 that arrives mid-rotation; resend only if one looks lost.
        if self._pending_since is not None and now - self._pending_since < 1.0:
            return
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGUSR2)
            if self._pending_since is None:
                self._pending_runs.append(self._run)
            self._pending_since = now
            self._last_rotate = now

    async def _timer_loop(self) -> None:
        while not self._stopping:
            delay = self._last_rotate + self.window_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(min(delay, self.window_s))
                continue
            self._rotate()
            await asyncio.sleep(0.05)

    async def _read_stderr(self) -> None:
        assert self._rec and self._rec.stderr
        while True:
            raw = await self._rec.stderr.readline()
            if not raw:
                return
            line = raw.decode(errors="replace").strip()
            m = DUMP_RE.search(line)
            if m:
                path = m.group(1)
                if self._dir and not os.path.isabs(path):
                    path = os.path.join(self._dir, os.path.basename(path))
                self._pending_since = None
                self._queue_path(path)
            elif line:
                self._stderr_tail = (self._stderr_tail + [line])[-20:]

    def _queue_path(self, path: str) -> None:
        if path in self._seen:
            return
        self._seen.add(path)
        self._paths.put_nowait((path, time.monotonic() - self._t0))   # when the window closed

    async def _report_loop(self) -> None:
        start = 0.0
        while True:
            item = await self._paths.get()
            if item is None:
                return
            path, end = item
            run = self._pending_runs.pop(0) if self._pending_runs else self._run
            symbols = await self._report(path)
            w = PerfWindow(index=len(self._windows), run=run, symbols=symbols,
                           samples=sum(s.samples for s in symbols), start=round(start, 3),
                           end=round(end, 3), path=path if self.keep_dir else None)
            start = end
            self._windows.append(w)
            if not self.keep_dir:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            self._out.put_nowait(w)
            if self.on_window is not None:
                try:
                    self.on_window(w)
                except Exception as e:  # noqa: BLE001
                    self._warn(f"perf window callback failed: {e}")

    async def _report(self, path: str) -> list[HotSymbol]:
        assert self.perf
        proc = None
        try:
            # idle priority: summarising must not steal CPU from the measured workload
            proc = await self._spawn(report_argv(self.perf, path, self.comm),
                                     stdout=subprocess.PIPE, idle=True)
            out, err = await asyncio.wait_for(proc.communicate(), 20)
        except asyncio.TimeoutError:
            _killpg(proc)
            self._warn(f"perf report timed out on {os.path.basename(path)}; window skipped")
            return []
        except asyncio.CancelledError:
            _killpg(proc)
            raise
        except OSError as e:
            self._warn(f"perf report failed: {e}")
            return []
        text = out.decode(errors="replace")
        if proc.returncode != 0 and not text.strip():
            msg = err.decode(errors="replace").strip().splitlines()
            self._warn(f"perf report failed on {os.path.basename(path)}: "
                       f"{msg[-1] if msg else proc.returncode}")
        return parse_report(text)

    async def _watch(self) -> None:
        assert self._rec
        rc = await self._rec.wait()
        if not self._stopping and rc != 0:
            known = rc < 0 and -rc in signal.Signals._value2member_map_
            sig = f"signal {signal.Signals(-rc).name}" if known else f"status {rc}"
            self._warn(f"perf record exited early ({sig}): {self._tail() or 'no message'}; "
                       "the run continues without hot symbols")
        # collect whatever perf wrote before it went away
        await asyncio.sleep(0.05)
        self._sweep_dir()

    def _sweep_dir(self) -> None:
        if not self._dir:
            return
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(self._dir)):
                if name.startswith("perf.data.") and name not in self._preexisting:
                    self._queue_path(os.path.join(self._dir, name))

    async def _stop_record(self, timeout: float) -> None:
        p = self._rec
        assert p is not None
        if p.returncode is None:
            try:
                await asyncio.wait_for(p.wait(), timeout)
            except asyncio.TimeoutError:
                self._warn(f"perf record ignored SIGINT for {timeout:g}s; killed (last window lost)")
                _killpg(p)
                await p.wait()
        rc = p.returncode
        said = any("exited early" in w for w in self.warnings)
        if rc not in (0, -signal.SIGINT, -signal.SIGKILL) and not said:
            self._warn(f"perf record ended with status {rc}: {self._tail() or 'no message'}")
        # stderr reader sees EOF and queues the final Dump; then queue any file it missed
        if self._reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self._reader), 2)
        self._sweep_dir()
        self._paths.put_nowait(None)
        if self._reporter is not None:
            try:
                await asyncio.wait_for(self._reporter, 30)
            except asyncio.TimeoutError:
                self._warn("perf: summarising the last windows timed out")
        self.kill()

    async def _stop_stat(self, timeout: float) -> dict[str, float | None]:
        p = self._stat
        assert p is not None
        try:
            _, err = await asyncio.wait_for(p.communicate(), timeout)
        except asyncio.TimeoutError:
            _killpg(p)
            await p.wait()
            self._warn("perf stat ignored SIGINT; killed, no counters")
            return {}
        counts = parse_stat_csv(err.decode(errors="replace"))
        if not counts:
            self._warn("perf stat produced no counts")
        return counts

    def _build_result(self, counters: dict[str, float | None]) -> PerfResult:
        runs: dict[int, list[list[HotSymbol]]] = {}
        for w in self._windows:
            if w.samples:                  # the sliver after the last cut() is usually empty
                runs.setdefault(w.run, []).append(w.symbols)
        symbols = aggregate(w.symbols for w in self._windows)
        return PerfResult(symbols=symbols, samples=sum(s.samples for s in symbols),
                          windows=len(self._windows),
                          runs={r: aggregate(lists) for r, lists in runs.items()},
                          counters=counters, warnings=list(self.warnings),
                          data_dir=self.keep_dir, frequency=self.frequency,
                          call_graph=self.call_graph)

    def _cleanup_files(self) -> None:
        if self._dir and not self.keep_dir:
            shutil.rmtree(self._dir, ignore_errors=True)


def merge(done: list[PerfResult], variant: str, run_top: int,
          session_top: int) -> tuple[list[ev.Event], dict[str, float | None]]:
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

