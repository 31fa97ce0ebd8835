"""A session: one resolved plan, run in worker processes, as a stream of events.

The session is the only place that knows how a run happens: it builds the
workload, applies the profile's system settings, starts `python -m hotloop.run.worker`
(one after another when the runs are spread over several) in its own process
group, attaches perf, turns the worker's JSON lines and perf's windows into
typed events, appends each to the result file as it arrives, and yields it to
the consumer (the headless reporter or the TUI).  Whatever happens (a normal
end, a crash, a timeout, Ctrl-C, stop()), the worker's whole process group is
killed and the system restored before the stream ends.  No wait on the worker is
without a deadline, and `abandon()` ends a session from another thread when the
event loop itself is stuck (the console's terminal went away).
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import os
import platform
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotloop import __version__, paths
from hotloop import events as ev
from hotloop.catalog import ResolvedPlan, Workload
from hotloop.errors import HotloopError
from hotloop.host.changes import (
    Applied,
    Change,
    apply,
    describe_changes,
    plan_changes,
    show_original,
)
from hotloop.host.cpus import format_cpu_list
from hotloop.host.doctor import capabilities
from hotloop.host.facts import check_expect, kernel_facts
from hotloop.host.journal import describe_held, held_elsewhere
from hotloop.host.settings import read_sysctl
from hotloop.host.sysfs import SystemSettingError
from hotloop.perf.parse import aggregate
from hotloop.perf.probe import find_perf, recording_warnings
from hotloop.perf.recorder import PerfRecorder, PerfResult
from hotloop.results import Writer
from hotloop.run import build, protocol
from hotloop.run.protocol import WorkerSpec
from hotloop.stats import median_ci_pct, summarize

UNTIL_CI_MIN_RUNS = 10                  # until_ci: never stop on fewer runs than this
SETUP_GRACE = 30.0                      # seconds for Python start-up and hl_setup
WINDOW_TOP = 30                         # symbols kept per perf window and per run
SESSION_TOP = 100                       # symbols kept for the whole session
REAP_S = 5.0                            # how long a killed worker may take to be reaped
OUTPUT_KEPT = 4096                      # bytes of the workload's own output kept, its tail
LINE_SHOWN = 200                        # characters of one output line in a message
ABANDON_WAIT_S = 5.0                    # abandon(): how long the loop may hold the end lock


def metric_value(w: Workload, run: protocol.Run) -> float:
    """The workload's primary metric from one run's counters; ValueError for a run
    that reported no such figure, or an extra that is no measurement (NaN, infinite,
    out of range: the run fails rather than record what no reader can use)."""
    for name, x in run.extra.items():
        bad = ev.number_problem(x)
        if bad:
            raise ValueError(f"extra {name!r} from hl_add_extra: {bad}")
    per_op = w.metric in ("ns/op", "cycles/op", "ops/s")
    if per_op and not run.ops or not run.ns:
        raise ValueError(f"the workload reported {run.ops} ops in {run.ns} ns: "
                         f"no {w.metric} (hl_run must fill res->ops and res->ns)")
    if w.metric == "cycles/op" and not run.cycles:
        raise ValueError("no cycles/op: this CPU has no TSC for hl_clock to read")
    match w.metric:
        case "bytes/s":
            return run.bytes * 1e9 / run.ns
        case "ops/s":
            return run.ops * 1e9 / run.ns
        case "ns/op":
            return run.ns / run.ops
        case "cycles/op":
            return run.cycles / run.ops
    try:
        return float(run.extra[w.metric])
    except KeyError:
        raise ValueError(f"the workload reported no extra metric {w.metric!r} with "
                         f"hl_add_extra (its extras: {', '.join(run.extra) or 'none'})"
                         ) from None


def _plain(obj: Any) -> Any:
    return json.loads(json.dumps(dataclasses.asdict(obj), default=str))


@dataclass(frozen=True)
class Preflight:
    """What a run would change on the system (needs consent) and what it skips."""
    changes: list[Change]
    warnings: list[str]

    def refusal(self) -> str:
        return describe_changes(self.changes)


def preflight(rp: ResolvedPlan) -> Preflight:
    """Check the kernel profile's expectations and plan its system changes.

    Touches nothing; HotloopError (exit 2) for a profile that cannot run here,
    or whose settings another running hotloop holds (and will restore mid-run)."""
    k, cpu = rp.kernel, rp.cpu
    owner, held = held_elsewhere(k.sysctl, cpu.governor is not None,
                                        cpu.boost is not None, cpu.cpus)
    if held:
        raise HotloopError(describe_held(owner, held))
    try:
        changes, warnings = plan_changes(k.sysctl, cpu.governor, cpu.boost,
                                                cpu.cpus, strict=cpu.strict)
        mismatches = check_expect(k.expect)
    except SystemSettingError as e:
        raise HotloopError(f"{k.origin or cpu.origin}: {e}") from None
    if mismatches:
        raise HotloopError(f"{k.origin}: [kernel.{k.name}] expect: {'; '.join(mismatches)}")
    if cpu.isolated:
        isolated = next((c.value for c in capabilities() if c.name == "isolated cpus"),
                        None) or []
        outside = [c for c in cpu.cpus if c not in isolated]
        if outside or not cpu.cpus:
            msg = (f"[cpu.{cpu.name}] isolated: CPUs {format_cpu_list(outside)} are not "
                   f"in isolcpus/nohz_full" if cpu.cpus else
                   f"[cpu.{cpu.name}] isolated: the profile pins to no CPU")
            if cpu.strict:
                raise HotloopError(f"{cpu.origin}: {msg}")
            warnings.append(msg + "; other tasks may share them")
    return Preflight(changes, warnings)


def header(rp: ResolvedPlan, built: build.Built, variant: str = "",
           sysctl: dict[str, Any] | None = None,
           batch: dict[str, Any] | None = None) -> dict[str, Any]:
    w = rp.workload
    facts = kernel_facts()
    return {
        "hotloop": __version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "host": socket.gethostname(),
        "kernel_release": facts["release"],
        "kernel_version": facts["version"],
        "arch": facts["machine"],
        "cmdline": facts["cmdline"],
        "cpu_model": facts["cpu_model"],
        "cpus": os.cpu_count() or 1,
        "mitigations": facts["mitigations"],
        "vulnerabilities": facts["vulnerabilities"],
        "sysctl": sysctl or {},
        "python": platform.python_version(),
        "plan": _plain(rp.plan),
        "workload": {"name": w.name, "source": str(w.source), "summary": w.summary,
                     "metric": w.metric, "unit": w.unit,
                     "higher_is_better": w.higher_is_better, "procs": w.procs},
        "params": dict(rp.params),
        "cpu": _plain(rp.cpu),
        "kernel": _plain(rp.kernel),
        "label": rp.kernel.label or rp.kernel.name,
        "variant": variant,
        "compiler": built.compiler,
        "cflags": list(built.cflags),
        "source_sha256": built.source_sha256,
        # The variants of one interleaved batch share an id: compare pairs their runs by round.
        "batch": batch,
    }


async def _send(proc: asyncio.subprocess.Process, line: bytes) -> None:
    """A line to the worker; one that has died is noticed by its reader, not here."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(line)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass


def _changed_during(during: dict[str, str | None]) -> list[str]:
    """The profile's sysctls that no longer read as the header's "during" says,
    read at the end of the run before restoring (another program changed them)."""
    out = []
    for name, was in during.items():
        try:
            now: str | None = read_sysctl(name)
        except SystemSettingError:
            now = None
        if now != was:
            show = [show_original(v) if v is not None else "unreadable"
                    for v in (was, now)]
            out.append(f"sysctl {name} changed during the run: {show[0]} at its start, "
                       f"{show[1]} at its end; the header's \"during\" does not hold for "
                       f"every run")
    return out


class _WorkerProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's own, plus `exited`, set when the worker process itself ends:
    Process.wait() also waits for its pipes, which helpers it forked may hold open."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


def _restore(applied: Applied) -> list[str]:
    """Put the system back; what was restored, or why it could not be."""
    try:
        return applied.restore()
    except SystemSettingError as e:
        return [f"restore failed: {e}"]


class Session:
    """Run `rp` once; iterate `events()` to drive it."""

    def __init__(self, rp: ResolvedPlan, result_file: Path, variant: str = "",
                 apply_system: bool = False, gate: asyncio.Queue[None] | None = None,
                 keep_perf: bool = False, on_exists: str = "rename"):
        self.rp = rp
        self.on_exists = on_exists           # result_file taken: rename, refuse, replace
        self.keep_perf = keep_perf           # keep perf.data beside the result file
        self.counters: dict[str, float | None] = {}
        self.apply_system = apply_system     # the user's consent to system changes
        # With a gate, every repetition waits for a token: interleave.py hands
        # them out so that several sessions take turns, one run at a time.
        self.gate = gate
        self.result_file = result_file
        self.variant = variant
        self.batch: dict[str, Any] | None = None     # set by interleave(): {id, interleaved}
        self.pids: list[int] = []        # worker and its helper processes, once ready
        self.comm = ""                   # the worker's process name, inherited by its children
        self._perf_results: list[PerfResult] = []
        self._windows = 0                # perf windows of earlier workers, to number on
        self._perf_said: set[str] = set()
        self._tearing_down = False       # the worker is past its last run
        self._proc: asyncio.subprocess.Process | None = None
        self._exited: asyncio.Future[None] | None = None    # the worker process ended
        self._group_gone: object = None  # the worker whose group was killed once reaped
        self._stopping = False
        self._output = b""               # the tail of the workload's stdout and stderr
        self._output_bytes = 0
        self._notes: collections.deque[str] = collections.deque(maxlen=3)
        # The end of the session (restore, last line) happens once, on the event loop
        # or in abandon() from another thread, whichever comes first: both hold _end,
        # and nothing is written once _over.
        self._end = threading.Lock()
        self._over = False
        self._writer: Writer | None = None
        self._applied: Applied | None = None
        self._started = False            # the header line is in the file
        self._final: ev.Event | None = None     # the last line, once known
        self._runs: list[float] = []
        self._next_check = UNTIL_CI_MIN_RUNS    # until_ci: when the runs are next checked
        self._target_met = False

    def stop(self) -> None:
        """End the run now: no run after this reaches the file or the consumer.  The
        stream ends with Failed(interrupted=True), or Finished when every run was in."""
        self._stopping = True
        self._kill()

    def _kill(self) -> None:
        """SIGKILL the worker's whole process group, helpers included, even once the
        worker itself has exited (they keep its group).  Safe from any thread."""
        proc = self._proc
        if proc is None or proc is self._group_gone:
            return
        reaped = proc.returncode is not None
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if reaped:          # the group is empty for good: its number may be reused
            self._group_gone = proc

    def abandon(self, message: str, signame: str = "") -> None:
        """End the session from another thread, for when its event loop may never run
        again (the console lost its terminal): kill the worker's process group, restore
        the system and write the last line (the session's own if it was known, else
        Failed(message, interrupted)), once; nothing the loop does after is written."""
        if self._over:
            return                      # ended already, its processes with it
        self._stopping = True
        self._kill()                    # first: whatever holds the lock, the run stops
        # The loop holds _end for a line or a restore, never longer unless it is stuck
        # there (a signal handler of Textual's blocked on the dead terminal, between two
        # bytecodes, so no line is half written): then go on without it.
        locked = self._end.acquire(timeout=ABANDON_WAIT_S)
        try:
            if self._over:
                return
            self._over = True
            applied, self._applied = self._applied, None
            messages = _restore(applied) if applied is not None else []
            writer = self._writer
            if writer is None:
                return
            if self._started:
                for m in messages:
                    writer.try_write(ev.Warning(m, variant=self.variant))
                writer.try_write(self._final or ev.Failed(
                    message, run=len(self._runs), signal=signame, interrupted=True,
                    variant=self.variant))
            writer.close()
        finally:
            if locked:
                self._end.release()

    def _write(self, event: ev.Event, last: bool = False, quiet: bool = False) -> bool:
        """Append to the result file unless the session has ended (abandon()).  WriteFailed
        the first time a line cannot be written, unless `quiet` (on the way out, when a
        cancel or a failure is already being reported)."""
        with self._end:
            if self._over or self._writer is None:
                return False
            if quiet:
                self._writer.try_write(event)
            else:
                self._writer.write(event)
            self._started = self._started or isinstance(event, ev.Started)
            self._over = last               # the last line: nothing after it
            return True

    def _put_back(self) -> list[str]:
        """Restore the system, once, whichever of the loop and abandon() comes first."""
        with self._end:
            applied, self._applied = self._applied, None
            return _restore(applied) if applied is not None else []

    async def events(self) -> AsyncIterator[ev.Event]:
        """Build, apply system settings, run; bad input raises HotloopError first.

        The stream (and the result file) ends with Finished or Failed; the
        system is restored before that last event."""
        rp, v = self.rp, self.variant
        pre = preflight(rp)
        if pre.changes and not self.apply_system:
            raise HotloopError(pre.refusal())
        built = await asyncio.to_thread(build.build, rp.workload.source, rp.cpu.cflags,
                                        rp.workload.name)
        # Asked once per process: probing starts perf a few times.
        perf_notes = await asyncio.to_thread(recording_warnings, rp.plan.call_graph) \
            if rp.plan.perf and find_perf() is not None else []
        if self._stopping:                  # stopped while the workload compiled
            return
        # HotloopError if it cannot be created; the name it got (another when taken)
        writer = Writer(self.result_file, self.on_exists)
        self.result_file = writer.path
        names = list(rp.kernel.sysctl)
        before = kernel_facts(names)["sysctl"]
        with self._end:                     # abandon() sees the changes with their restore
            if self._over:                  # abandoned while the workload compiled
                writer.discard()
                return
            try:
                applied = apply(pre.changes)
            except SystemSettingError as e:
                writer.discard()            # nothing ran: nothing kept, an old file intact
                raise HotloopError(str(e)) from None
            self._writer, self._applied = writer, applied
        runs = self._runs
        final: ev.Event | None = None
        during: dict[str, str | None] = {}
        drive = self._drive(built, runs)

        def note(message: str, quiet: bool = False) -> ev.Warning:
            event = ev.Warning(message, variant=v)
            self._write(event, quiet=quiet)     # WriteFailed: the run stops, as on a crash
            return event
        try:
            during = kernel_facts(names)["sysctl"]
            sysctl = {n: {"before": before[n], "during": during[n]} for n in names}
            started = ev.Started(header(rp, built, v, sysctl, self.batch),
                                 str(self.result_file))
            self._write(started)
            yield started
            for message in [*applied.recovered, *rp.warnings, *pre.warnings,
                            *(f"perf: {m}" for m in perf_notes),
                            *(f"applied {c.describe()}" for c in applied.changes)]:
                yield note(message)
            async for event in drive:
                if isinstance(event, (ev.Finished, ev.Failed)):
                    final = self._final = event     # after the restore: the last line
                    continue
                if isinstance(event, ev.RunSample) and self._stopping:
                    continue                # stop means stop, however many are buffered
                self._write(event)
                yield event
            self._kill()
            for message in [*_changed_during(during), *self._put_back()]:
                yield note(message)
            if final is not None:
                self._write(final, last=True)
                yield final
        except (asyncio.CancelledError, GeneratorExit):
            # Cancelled while running, or closed by a consumer that went away.
            self._kill()
            for message in [*_changed_during(during), *self._put_back()]:
                note(message, quiet=True)
            self._write(ev.Failed("interrupted", run=len(runs), interrupted=True, variant=v),
                        last=True, quiet=True)
            raise
        finally:
            await drive.aclose()            # left mid-stream (a write failed): perf, worker
            self._kill()
            await self._reap()
            for message in self._put_back():    # a no-op when already restored
                note(message, quiet=True)
            with self._end:
                self._over = True
                if isinstance(final, ev.Failed) and final.bad_input and not runs \
                        or not self._started:
                    writer.discard()        # nothing ran: nothing kept, an old file intact
                else:
                    writer.close()
        if writer.error is not None:        # the last lines may not be on disk
            raise writer.error

    async def _spawn(self, built: build.Built, runs: int,
                     first: int) -> asyncio.subprocess.Process:
        rp = self.rp
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(paths.ROOT),
                                                          env.get("PYTHONPATH")]))
        loop = asyncio.get_running_loop()
        pipe = asyncio.subprocess.PIPE
        transport, protocol = await loop.subprocess_exec(
            lambda: _WorkerProtocol(1 << 20, loop), sys.executable, "-m", "hotloop.run.worker",
            stdin=pipe, stdout=pipe, stderr=pipe, start_new_session=True, env=env)
        proc = asyncio.subprocess.Process(transport, protocol, loop)
        spec = WorkerSpec(parent=os.getpid(), workload=rp.workload.name,
                          module_path=str(built.path), module_name=built.module_name,
                          params=dict(rp.params), cpus=list(rp.cpu.cpus), sched=rp.cpu.sched,
                          priority=rp.cpu.priority, nice=rp.cpu.nice, runs=runs, first=first,
                          warmup=rp.plan.warmup, step=self._stepped)
        assert proc.stdin is not None
        self._exited = protocol.exited
        self._output, self._output_bytes = b"", 0
        self._notes.clear()
        self._proc = proc
        if self._stopping:                  # stop() came while the worker started
            self._kill()
        await _send(proc, spec.line())
        return proc

    async def _reap(self) -> None:
        """Wait for the (killed) worker, but not forever: asyncio's wait() also waits
        for its pipes, which a paused reader may never drain."""
        if self._proc is not None and self._proc.returncode is None:
            try:
                await asyncio.wait_for(asyncio.shield(self._proc.wait()), REAP_S)
            except asyncio.TimeoutError:
                pass

    async def _wait_exit(self, timeout: float) -> bool:
        """Whether the worker process has ended within `timeout`, open pipes or not."""
        if self._exited is None:
            return True
        done, _ = await asyncio.wait({self._exited}, timeout=timeout)
        return bool(done)

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        """The workload's stdout and stderr, in chunks: a line of any length (2 MiB of
        printf without a newline) is read on, never left to fill the pipe; the tail is
        kept for messages."""
        while chunk := await stream.read(1 << 16):
            self._output_bytes += len(chunk)
            self._output = (self._output + chunk)[-OUTPUT_KEPT:]

    def _output_tail(self, n: int = 3) -> str:
        """The last lines of the workload's output and of hotloop's notes on the worker."""
        text = self._output.decode(errors="replace")
        lines = [*(ln.strip() for ln in text.splitlines() if ln.strip()), *self._notes][-n:]
        return "; ".join(ln if len(ln) <= LINE_SHOWN else "…" + ln[-LINE_SHOWN:] for ln in lines)

    def _output_warning(self) -> ev.Warning | None:
        """Output beyond what is kept is said once, with its tail, not silently lost."""
        if self._output_bytes <= OUTPUT_KEPT:
            return None
        return ev.Warning(f"the workload wrote {self._output_bytes:,} bytes to stdout/stderr "
                          f"(hotloop keeps the last {OUTPUT_KEPT:,}): {self._output_tail(1)}",
                          variant=self.variant)

    async def _read_worker(self, stream: asyncio.StreamReader,
                           inbox: asyncio.Queue[tuple[str, Any]]) -> None:
        while True:
            try:
                line = await stream.readline()
            except ValueError:              # over the 1 MiB limit: dropped, read on
                self._notes.append("garbled worker line: over 1 MiB")
                continue
            if not line:
                break
            try:
                msg = protocol.decode(line)
            except ValueError:
                self._notes.append(f"garbled worker line: {line[:80]!r}")
                continue
            await inbox.put(("worker", msg))
        await inbox.put(("eof", None))

    def _start_perf(self, inbox: asyncio.Queue[tuple[str, Any]]) -> PerfRecorder:
        plan = self.rp.plan
        keep = self.result_file.with_suffix(".perf") if self.keep_perf else None
        return PerfRecorder(
            self.pids, frequency=plan.perf_freq, call_graph=plan.call_graph, keep_dir=keep,
            cpus=self.rp.cpu.cpus, comm=self.comm,
            on_window=lambda w, base=self._windows: inbox.put_nowait(("window", (base, w))),
            on_warning=lambda m: inbox.put_nowait(("warning", m)))

    async def _stop_perf(self, rec: PerfRecorder | None, first_run: int) -> None:
        """Stop one worker's recording and keep its result, run numbers made global."""
        if rec is None:
            return
        result = await rec.stop()
        self._windows += rec.windows_done
        result.runs = {first_run + i: syms for i, syms in result.runs.items()}
        self._perf_results.append(result)

    def _perf_events(self) -> list[ev.Event]:
        """The per-run and whole-session hot symbols, and the counters, of every worker."""
        done, self._perf_results = self._perf_results, []
        if not done:
            return []
        v = self.variant
        out: list[ev.Event] = [
            ev.HotSymbols(tuple(syms[:WINDOW_TOP]), scope="run", window=run,
                          samples=sum(s.samples for s in syms), variant=v)
            for r in done for run, syms in sorted(r.runs.items())]
        if any(r.samples for r in done):
            out.append(ev.HotSymbols(
                tuple(aggregate(r.symbols for r in done)[:SESSION_TOP]),
                scope="session", samples=sum(r.samples for r in done), variant=v))
        # Counts add up over the workers; one that could not count makes it unknown.
        names = dict.fromkeys(k for r in done for k in r.counters)
        self.counters = {k: None if any(r.counters.get(k) is None for r in done)
                         else sum(r.counters[k] for r in done) for k in names}
        cycles = self.counters.get("cycles")
        if "ipc" in self.counters and cycles:
            self.counters["ipc"] = (self.counters.get("instructions") or 0) / cycles
        for r in done:
            if r.data_dir:
                out.append(ev.Warning(f"perf data kept in {r.data_dir} (perf report -i FILE)",
                                      variant=v))
                break
        return out

    async def _drive(self, built: build.Built, runs: list[float]) -> AsyncGenerator[ev.Event, None]:
        """The plan's runs spread over `processes` workers, one after the other: a
        process's memory layout shifts its results a little (pyperf does the same)."""
        rp, v = self.rp, self.variant
        n, k = divmod(rp.plan.runs, rp.plan.processes)
        shares = [n + (i < k) for i in range(rp.plan.processes) if n + (i < k)]
        for share in shares:
            if rp.plan.until_ci is not None and runs and self._known_well(runs, force=True):
                break                       # until_ci: the median is known well enough
            if self._stopping:              # stop() between two workers
                for e in self._perf_events():
                    yield e
                yield ev.Failed("stopped by the user", run=len(runs), interrupted=True,
                                variant=v)
                return
            async for event in self._drive_worker(built, runs, share):
                if isinstance(event, ev.Failed):
                    for e in self._perf_events():
                        yield e
                    yield event
                    return
                yield event
        for e in self._perf_events():
            yield e
        s = summarize(runs)
        summary: dict[str, Any] = s.to_json() if s else {}
        if rp.plan.until_ci is not None:    # why the session stopped where it did
            met = self._known_well(runs, force=True)
            summary["stop"] = {"reason": "until_ci" if met else "runs",
                               "target_pct": rp.plan.until_ci,
                               "ci_pct": median_ci_pct(sorted(runs)), "runs": len(runs)}
        yield ev.Finished(summary, variant=v, counters=self.counters)

    async def _drive_worker(self, built: build.Built, runs: list[float],
                            share: int) -> AsyncIterator[ev.Event]:
        """One worker process doing `share` of the runs; ends quietly when it is done,
        with a Failed event when not."""
        rp, v = self.rp, self.variant
        first = len(runs)
        loop = asyncio.get_running_loop()
        self._proc = proc = await self._spawn(built, share, first)
        self._tearing_down = False
        assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
        # One inbox for the worker's lines and perf's windows: both reach the
        # consumer as they come; only the worker's lines reset the timeout.
        inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        drain = asyncio.create_task(self._drain_stderr(proc.stderr))
        tasks = [drain, asyncio.create_task(self._read_worker(proc.stdout, inbox))]
        # The worker's own end, apart from its pipes' (helpers it forked may hold those).
        assert self._exited is not None
        self._exited.add_done_callback(lambda _: inbox.put_nowait(("exit", None)))
        deadline = loop.time() + rp.plan.timeout * (1 + rp.plan.warmup) + SETUP_GRACE
        warmups_left = rp.plan.warmup
        rec: PerfRecorder | None = None
        getter: asyncio.Future[tuple[str, Any]] | None = None

        async def go() -> None:
            if self.gate is not None:
                await self.gate.get()
            await _send(proc, protocol.GO)
        try:
            if self._stepped and warmups_left:
                await go()
                deadline = loop.time() + rp.plan.timeout + SETUP_GRACE
            while True:
                # asyncio.wait, not wait_for: on 3.11 wait_for loses a cancel (Ctrl-C)
                # that arrives as the queue hands over an item.
                getter = getter or asyncio.ensure_future(inbox.get())
                done, _ = await asyncio.wait({getter}, timeout=deadline - loop.time())
                if self._stopping:          # stop(): nothing from this worker counts now,
                    ended = await self._ended(len(runs))    # however much is buffered
                    await self._stop_perf(rec, first)
                    rec = None
                    if ended is not None:
                        yield ended
                    return
                if not done:
                    self._kill()
                    await self._stop_perf(rec, first)
                    what = "the worker's teardown" if self._tearing_down else \
                        f"run {len(runs) + 1}"
                    yield ev.Failed(f"{what}: no result within the timeout of "
                                    f"{rp.plan.timeout:g}s; worker killed", run=len(runs),
                                    signal="SIGKILL", variant=v)
                    return
                source, msg = getter.result()
                getter = None
                if source == "exit":
                    # The worker is gone: helpers it forked without hl_child_init must not
                    # outlive it, and their copies of its pipes would hold the stream
                    # open; what it wrote before it went is still read after this.
                    self._kill()
                    continue
                if source == "window":
                    base, w = msg
                    yield ev.HotSymbols(tuple(w.symbols[:WINDOW_TOP]), window=base + w.index,
                                        samples=w.samples, variant=v)
                    continue
                if source == "warning":
                    if msg not in self._perf_said:     # once a session, not once a worker
                        self._perf_said.add(msg)
                        yield ev.Warning(f"perf: {msg}", variant=v)
                    continue
                if source == "eof":
                    ended = await self._ended(len(runs))
                    await self._stop_perf(rec, first)
                    rec = None
                    if (said := await self._output_said(drain)) is not None:
                        yield said
                    if ended is not None:
                        yield ended
                    return
                deadline = loop.time() + rp.plan.timeout
                match msg:
                    case protocol.Run():
                        try:
                            value = metric_value(rp.workload, msg)
                        except ValueError as e:
                            yield ev.Failed(f"run {len(runs) + 1}: {e}", run=len(runs),
                                            variant=v)
                            return
                        index = msg.index
                        if not msg.warmup:
                            index += first
                            runs.append(value)
                            if rec is not None:
                                rec.cut()       # a window ends with each repetition
                        else:
                            warmups_left -= 1
                        yield ev.RunSample(index=index, value=value, ops=msg.ops,
                                           bytes=msg.bytes, ns=msg.ns, cycles=msg.cycles,
                                           extra=msg.extra, warmup=msg.warmup, variant=v)
                        last = len(runs) - first == share
                        # until_ci: checked after the last run too, so the record says
                        # whether the target was met; END only where runs are left to skip
                        early = not msg.warmup and self._known_well(runs, force=last) \
                            and not last
                        if last or early:               # its last run: stop perf, then
                            self._tearing_down = True           # let the worker tear down
                            await self._stop_perf(rec, first)
                            rec = None
                            await _send(proc, protocol.END if early else protocol.GO)
                            deadline = loop.time() + rp.plan.timeout
                        elif self._stepped and (warmups_left or len(runs) > first):
                            await go()
                            deadline = loop.time() + rp.plan.timeout
                    case protocol.Ready():
                        self.pids = [msg.pid, *msg.pids]
                        self.comm = msg.comm
                        if rp.plan.perf:
                            rec = self._start_perf(inbox)
                            await rec.start()   # False: no perf here; a warning says why
                        await go()
                        deadline = loop.time() + rp.plan.timeout
                    case protocol.Note():
                        yield ev.Warning(msg.message, variant=v)
                    case protocol.Failed():
                        await self._wait_exit(rp.plan.timeout)  # its teardown: the run's timeout
                        self._kill()                            # then it and its helpers go
                        await self._stop_perf(rec, first)
                        rec = None
                        yield ev.Failed(msg.message, run=msg.run + first if msg.run >= 0
                                        else msg.run, bad_input=msg.bad_input, variant=v)
                        return
                    case protocol.Finished():
                        await self._wait_exit(rp.plan.timeout)  # only Python's exit is left
                        self._kill()                            # helpers it left behind
                        if (said := await self._output_said(drain)) is not None:
                            yield said
                        return
        finally:
            if getter is not None:
                getter.cancel()
            if rec is not None:
                rec.kill()                  # a no-op once stopped
            self._kill()                    # its group; a no-op once killed after the reap
            await self._reap()              # while the readers still drain its pipes
            for t in tasks:
                t.cancel()

    @property
    def _stepped(self) -> bool:
        """Whether the worker waits for a line before every repetition: to take turns
        (interleaving) or to be told to end early (until_ci)."""
        return self.gate is not None or self.rp.plan.until_ci is not None

    def _known_well(self, runs: list[float], force: bool = False) -> bool:
        """until_ci: whether the median's 95% interval is now within the target.  Checked
        on a schedule (every 2% more runs), so a million runs are not sorted a million
        times, and whenever `force`d (a worker's last run, the session's end)."""
        target = self.rp.plan.until_ci
        if target is None or len(runs) < UNTIL_CI_MIN_RUNS \
                or (len(runs) < self._next_check and not force):
            return self._target_met
        self._next_check = len(runs) + max(1, len(runs) // 50)
        known = median_ci_pct(sorted(runs))
        self._target_met = known is not None and known <= target
        return self._target_met

    async def _output_said(self, drain: asyncio.Task[None]) -> ev.Warning | None:
        """Once the worker's group is gone its output ends: a warning if it was long."""
        await asyncio.wait({drain}, timeout=REAP_S)
        return self._output_warning()

    async def _ended(self, done: int) -> ev.Failed | None:
        """The worker's stream ended without a last word (or stop() came): say how it
        died; None when it was stopped after its last run, when nothing was lost."""
        assert self._proc is not None
        if not await self._wait_exit(REAP_S):   # its stdout closed, yet it runs on
            self._kill()
            await self._wait_exit(REAP_S)
        self._kill()                            # whatever it forked goes with it
        if self._stopping:
            return None if self._tearing_down else ev.Failed(
                "stopped by the user", run=done, interrupted=True, variant=self.variant)
        code = self._proc.returncode
        if code is None:
            name, why = "SIGKILL", "worker did not end; killed"
        elif code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:                  # a real-time signal has no name
                name = f"signal {-code}"
            why = f"worker killed by {name}"
        else:
            name, why = "", f"worker exited with status {code}"
        tail = self._output_tail()
        what = "the worker's teardown" if self._tearing_down else f"run {done + 1}"
        return ev.Failed(f"{what}: {why}" + (f" ({tail})" if tail else ""),
                         run=done, signal=name, variant=self.variant)
