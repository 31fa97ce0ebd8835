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
import dataclasses
import functools
import os
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from pathlib import Path
from typing import Any

from hotloop import events as ev
from hotloop.catalog import ResolvedPlan, process_shares
from hotloop.errors import HotloopError
from hotloop.host.changes import (
    Applied,
    apply,
)
from hotloop.host.facts import kernel_facts
from hotloop.host.procs import time_scale
from hotloop.host.sysfs import SystemSettingError
from hotloop.paths import source_digest
from hotloop.perf.buildid import binaries, build_ids, mapped_files, read_ids
from hotloop.perf.probe import find_perf, recording_warnings
from hotloop.perf.recorder import PerfRecorder, PerfResult, merge
from hotloop.record import Batch, Stop, Summary, SysctlState
from hotloop.results import Writer
from hotloop.results.perf_data import claim_perf_dir, perf_dir, prune_perf_data
from hotloop.run import build, preflight, protocol
from hotloop.run.process import REAP_S, WorkerProcess
from hotloop.run.protocol import WorkerSpec
from hotloop.stats import UNTIL_CI_MIN_RUNS, median_ci_pct, summarize

SETUP_GRACE = 30.0 * time_scale()       # Python start-up and hl_setup (in a VM: slower)
WINDOW_TOP = 30                         # symbols kept per perf window and per run
SESSION_TOP = 100                       # symbols kept for the whole session
ABANDON_WAIT_S = 5.0                    # abandon(): how long the loop may hold the end lock





class Session:
    """Run `rp` once; iterate `events()` to drive it."""

    def __init__(self, rp: ResolvedPlan, result_file: Path, variant: str = "",
                 apply_system: bool = False, gate: asyncio.Queue[None] | None = None,
                 keep_perf: bool = True, on_exists: str = "rename",
                 mirror: Callable[[ev.Event], None] | None = None):
        self.rp = rp
        self.mirror = mirror                 # sees each line the result file gets, as it does
        self.on_exists = on_exists           # result_file taken: rename, refuse, replace
        self.keep_perf = keep_perf           # keep perf.data beside the result file
        self.counters: dict[str, float | None] = {}
        self.apply_system = apply_system     # the user's consent to system changes
        # With a gate, every repetition waits for a token: interleave.py hands
        # them out so that several sessions take turns, one run at a time.
        self.gate = gate
        self.result_file = result_file
        self.variant = variant
        self.batch: Batch | None = None     # set by interleave()
        self.pids: list[int] = []        # worker and its helper processes, once ready
        self.comm = ""                   # the worker's process name, inherited by its children
        self._perf_results: list[PerfResult] = []
        self._windows = 0                # perf windows of earlier workers, to number on
        self._perf_said: set[str] = set()
        self._mapped: dict[str, str] = {}   # {path: build id} of what the workers mapped
        self._all_pids: list[int] = []      # every worker's and helper's, for annotate
        self._comms: list[str] = []         # and their names, which what they fork inherits
        self._tearing_down = False       # the worker is past its last run
        self._worker: WorkerProcess | None = None
        self._stopping = False
        self.interrupted_by = ""         # the signal that cancelled the session, if one did
        self.stopped_because = ""        # what did, when no signal (its output closed)
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

    @property
    def title(self) -> str:
        """What the session is called where several run: its variant, else its plan."""
        return self.variant or self.rp.plan.name

    @property
    def machine(self) -> str:
        """Where it runs: "" for here."""
        return ""

    @property
    def until_ci(self) -> float | None:
        return self.rp.plan.until_ci

    def stop(self) -> None:
        """End the run now: no run after this reaches the file or the consumer.  The
        stream ends with Failed(interrupted=True), or Finished when every run was in."""
        self._stopping = True
        self._kill()

    def _kill(self) -> None:
        """SIGKILL the worker's whole process group, helpers included, even once the
        worker itself has exited (they keep its group).  Safe from any thread."""
        worker = self._worker
        if worker is not None:
            worker.kill()

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
            messages = preflight.restore(applied) if applied is not None else []
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

    def _write(self, event: ev.Event, last: bool = False, quiet: bool = False) -> ev.Event:
        """Append to the result file unless the session has ended (abandon()).  WriteFailed
        the first time a line cannot be written, unless `quiet` (on the way out, when a
        cancel or a failure is already being reported).  The event as written: the header
        names the file it went to (another, if the chosen name was taken meanwhile)."""
        with self._end:
            if self._over or self._writer is None:
                return event
            if quiet:
                self._writer.try_write(event)
            else:
                event = self._writer.write(event)
            if isinstance(event, ev.Started):
                self.result_file = self._writer.path
            if self.mirror is not None:
                self.mirror(event)
            self._started = self._started or isinstance(event, ev.Started)
            self._over = last               # the last line: nothing after it
            return event

    def _put_back(self) -> list[str]:
        """Restore the system, once, whichever of the loop and abandon() comes first."""
        with self._end:
            applied, self._applied = self._applied, None
            return preflight.restore(applied) if applied is not None else []

    async def events(self) -> AsyncIterator[ev.Event]:
        """Build, apply system settings, run; bad input raises HotloopError first.

        The stream (and the result file) ends with Finished or Failed; the
        system is restored before that last event."""
        rp, v = self.rp, self.variant
        pre = preflight.preflight(rp)
        if pre.changes and not self.apply_system:
            raise HotloopError(pre.refusal())
        built = await asyncio.to_thread(build.build, rp.workload.source, rp.cpu.cflags,
                                        rp.workload.name)
        await asyncio.to_thread(source_digest)     # for the header: read once, off the loop
        # Asked once per process: probing starts perf a few times.
        perf_notes = await asyncio.to_thread(recording_warnings, rp.plan.call_graph) \
            if rp.plan.perf and find_perf() is not None else []
        if self._stopping:                  # stopped while the workload compiled
            return
        # HotloopError if it cannot be created; the name it got (another when taken)
        writer = Writer(self.result_file, self.on_exists)
        self.result_file = writer.path
        kept = None
        if self.keep_perf and rp.plan.perf:
            # beside a regular file only (never /dev/null.perf), in a directory of hotloop's
            kept = claim_perf_dir(writer.path, create=False) if writer.regular else \
                f"{writer.path} is not a regular file"
            self.keep_perf = kept is None
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
            sysctl = {n: SysctlState(before[n], during[n]) for n in names}
            header = preflight.header(rp, built, v, sysctl, self.batch)
            if rp.plan.perf and self.keep_perf:     # beside the file: it moves with it
                header = dataclasses.replace(header, perf_data=perf_dir(self.result_file).name)
            started = self._write(ev.Started(header, str(self.result_file)))
            yield started
            for message in [*applied.recovered, *rp.warnings, *pre.warnings,
                            *([f"perf data not kept: {kept}"] if kept else []),
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
            for message in [*preflight.changed_during(during), *self._put_back(),
                            *self._prune()]:
                yield note(message)
            if final is not None:
                self._write(final, last=True)
                yield final
        except (asyncio.CancelledError, GeneratorExit):
            # Cancelled while running, or closed by a consumer that went away.
            self._kill()
            for message in [*preflight.changed_during(during), *self._put_back()]:
                note(message, quiet=True)
            self._write(ev.Failed(f"interrupted: {self.stopped_because}" if self.stopped_because
                                  else "interrupted", run=len(runs), signal=self.interrupted_by,
                                  interrupted=True, variant=v),
                        last=True, quiet=True)
            raise
        finally:
            self._kill()
            try:
                await drive.aclose()        # left mid-stream (a write failed): perf, worker
                await self._reap()
            finally:
                # Even when a second signal cancels the waits above: the system restored and
                # the file closed, without waiting for anything.
                for message in self._put_back():    # a no-op when already restored
                    note(message, quiet=True)
                with self._end:
                    self._over = True
                    if isinstance(final, ev.Failed) and final.bad_input and not runs \
                            or not self._started:
                        writer.discard()    # nothing ran: nothing kept, an old file intact
                    else:
                        writer.close()
        if writer.error is not None:        # the last lines may not be on disk
            raise writer.error

    async def _spawn(self, built: build.Built, runs: int, first: int) -> WorkerProcess:
        rp = self.rp
        worker = await WorkerProcess.start()
        self._worker = worker
        if self._stopping:                  # stop() came while the worker started
            worker.kill()
        await worker.send_spec(WorkerSpec(
            parent=os.getpid(), workload=rp.workload.name, module_path=str(built.path),
            module_name=built.module_name, params=dict(rp.params), cpus=list(rp.cpu.cpus),
            sched=rp.cpu.sched, priority=rp.cpu.priority, nice=rp.cpu.nice, runs=runs,
            first=first, warmup=rp.plan.warmup, step=self._stepped))
        return worker

    def _prune(self) -> list[str]:
        """Older runs' perf data beyond the plan's budget for the results directory: removed,
        oldest first (never a result file, never this run's)."""
        if not (self.keep_perf and self.rp.plan.perf):
            return []
        budget = self.rp.plan.perf_keep_mb
        gone = prune_perf_data(self.result_file.parent, budget * 1_000_000,
                               perf_dir(self.result_file))
        return [f"perf data of {len(gone)} older run{'' if len(gone) == 1 else 's'} removed "
                f"({', '.join(d.name for d in gone[:3])}{'...' if len(gone) > 3 else ''}): "
                f"the perf data in {self.result_file.parent} keeps within {budget} MB "
                f"(plan key perf_keep_mb)"] if gone else []

    async def _reap(self) -> None:
        if self._worker is not None:
            await self._worker.reap()

    def _start_perf(self, inbox: asyncio.Queue[tuple[str, Any]]) -> PerfRecorder:
        plan = self.rp.plan
        why = claim_perf_dir(self.result_file) if self.keep_perf else None
        if why:                         # taken since the session started
            self.keep_perf = False
            inbox.put_nowait(("warning", f"data not kept: {why}"))
        keep = perf_dir(self.result_file) if self.keep_perf else None
        return PerfRecorder(
            self.pids, frequency=plan.perf_freq, call_graph=plan.call_graph, keep_dir=keep,
            compress="gzip",
            cpus=self.rp.cpu.cpus, comm=self.comm,
            on_window=functools.partial(self._on_window, inbox, self._windows),
            on_warning=lambda m: inbox.put_nowait(("warning", m)))

    @staticmethod
    def _on_window(inbox: asyncio.Queue[tuple[str, Any]], base: int, window: Any) -> None:
        # `base`: the windows of earlier workers when this one started, to number on
        inbox.put_nowait(("window", (base, window)))

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
        events, self.counters = merge(done, self.variant, WINDOW_TOP, SESSION_TOP)
        return [dataclasses.replace(e, build_ids=build_ids(
                    (s.dso for s in e.symbols), self._mapped),
                    binaries=binaries((s.dso for s in e.symbols), self._mapped),
                    pids=tuple(dict.fromkeys(self._all_pids)),
                    comms=tuple(dict.fromkeys(self._comms)))
                if isinstance(e, ev.HotSymbols) and e.scope == "session" else e
                for e in events]

    async def _drive(self, built: build.Built, runs: list[float]) -> AsyncGenerator[ev.Event, None]:
        """The plan's runs spread over `processes` workers, one after the other: a
        process's memory layout shifts its results a little (pyperf does the same)."""
        rp, v = self.rp, self.variant
        for share in process_shares(rp.plan.runs, rp.plan.processes):
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
        stop = None
        if rp.plan.until_ci is not None:    # why the session stopped where it did
            met = self._known_well(runs, force=True)
            stop = Stop("until_ci" if met else "runs", rp.plan.until_ci,
                        median_ci_pct(sorted(runs)), len(runs))
        summary = Summary(s.n, s.median, s.mean, s.stdev, s.cv, s.min, s.max, stop) if s \
            else Summary(stop=stop)
        yield ev.Finished(summary, variant=v, counters=self.counters)

    async def _drive_worker(self, built: build.Built, runs: list[float],
                            share: int) -> AsyncIterator[ev.Event]:
        """One worker process doing `share` of the runs; ends quietly when it is done,
        with a Failed event when not."""
        rp, v = self.rp, self.variant
        first = len(runs)
        loop = asyncio.get_running_loop()
        try:
            worker = await self._spawn(built, share, first)
        except OSError as e:            # out of file descriptors or processes: the run's end
            yield ev.Failed(f"run {len(runs) + 1}: cannot start the worker process: "
                            f"{e.strerror or e}", run=len(runs), variant=v)
            return
        self._tearing_down = False
        # One inbox for the worker's lines and perf's windows: both reach the
        # consumer as they come; only the worker's lines reset the timeout.
        inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        drain = asyncio.create_task(worker.drain_output())
        tasks = [drain, asyncio.create_task(worker.read_lines(inbox))]
        # The worker's own end, apart from its pipes' (helpers it forked may hold those).
        worker.exited.add_done_callback(lambda _: inbox.put_nowait(("exit", None)))
        deadline = loop.time() + rp.plan.timeout * (1 + rp.plan.warmup) + SETUP_GRACE
        warmups_left = rp.plan.warmup
        rec: PerfRecorder | None = None
        getter: asyncio.Future[tuple[str, Any]] | None = None

        async def go() -> None:
            if self.gate is not None:
                await self.gate.get()
            await worker.send(protocol.GO)
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
                            value = preflight.metric_value(rp.workload, msg)
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
                            await worker.send(protocol.END if early else protocol.GO)
                            deadline = loop.time() + rp.plan.timeout
                        elif self._stepped and (warmups_left or len(runs) > first):
                            await go()
                            deadline = loop.time() + rp.plan.timeout
                    case protocol.Ready():
                        self.pids = [msg.pid, *msg.pids]
                        self._all_pids += self.pids
                        self._comms.append(msg.comm)
                        self.comm = msg.comm
                        # set up: the binaries its samples will be in, as they are now
                        mapped = {p for pid in self.pids for p in mapped_files(pid)}
                        self._mapped.update(await asyncio.to_thread(
                            read_ids, mapped - self._mapped.keys()))
                        if rp.plan.perf:
                            rec = self._start_perf(inbox)
                            await rec.start()   # False: no perf here; a warning says why
                        await go()
                        deadline = loop.time() + rp.plan.timeout
                    case protocol.Note():
                        yield ev.Warning(msg.message, variant=v)
                    case protocol.Failed():
                        await worker.wait_exit(rp.plan.timeout)  # its teardown: the run's timeout
                        self._kill()                            # then it and its helpers go
                        await self._stop_perf(rec, first)
                        rec = None
                        yield ev.Failed(msg.message, run=msg.run + first if msg.run >= 0
                                        else msg.run, bad_input=msg.bad_input, variant=v)
                        return
                    case protocol.Finished():
                        await worker.wait_exit(rp.plan.timeout)  # only Python's exit is left
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
        lost = self._worker.output_lost() if self._worker is not None else None
        return ev.Warning(lost, variant=self.variant) if lost else None

    async def _ended(self, done: int) -> ev.Failed | None:
        """The worker's stream ended without a last word (or stop() came): say how it
        died; None when it was stopped after its last run, when nothing was lost."""
        worker = self._worker
        assert worker is not None
        if not await worker.wait_exit(REAP_S):  # its stdout closed, yet it runs on
            worker.kill()
            await worker.wait_exit(REAP_S)
        worker.kill()                           # whatever it forked goes with it
        if self._stopping:
            return None if self._tearing_down else ev.Failed(
                "stopped by the user", run=done, interrupted=True, variant=self.variant)
        name, why = worker.death()
        tail = worker.output_tail()
        what = "the worker's teardown" if self._tearing_down else f"run {done + 1}"
        return ev.Failed(f"{what}: {why}" + (f" ({tail})" if tail else ""),
                         run=done, signal=name, variant=self.variant)
