"""A session's runs over its worker processes: the plan's runs spread over `processes`
workers, one after the other (a process's memory layout shifts its results a little; pyperf
does the same), each started in its own process group, its lines read against the plan's
timeout, its perf recorded, and the runs checked against until_ci's target as they come.  A
worker's group is killed on every way out, and no wait on it is without a deadline.
"""
from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from hotloop import events as ev
from hotloop.catalog import ResolvedPlan, process_shares
from hotloop.host.procs import time_scale
from hotloop.perf.recorder import PerfRecorder
from hotloop.record import SessionSummary, Stop
from hotloop.run import build, preflight, protocol
from hotloop.run.process import REAP_S, WorkerProcess
from hotloop.run.protocol import WorkerSpec
from hotloop.run.recording import Recording
from hotloop.stats import UNTIL_CI_MIN_RUNS, median_ci_pct, summarize

SETUP_GRACE = 30.0 * time_scale()       # Python start-up and hl_setup (in a VM: slower)
LOW_CPU_SHARE = 0.8                     # the worker's CPU time over its wall time, said below


class Driver:
    """The runs of the session of `rp`, its perf in `recording`; `drive()` yields them as
    events.  With a `gate`, every repetition waits for a token: interleave.py hands them out
    so that several sessions take turns, one run at a time."""

    def __init__(self, rp: ResolvedPlan, variant: str, recording: Recording,
                 gate: asyncio.Queue[None] | None = None):
        self.rp = rp
        self.variant = variant
        self.recording = recording
        self.gate = gate
        self.runs: list[float] = []      # the measured runs' values, of every worker
        self.pids: list[int] = []        # worker and its helper processes, once ready
        self.comm = ""                   # the worker's process name, inherited by its children
        self.stopping = False
        self._worker: WorkerProcess | None = None
        self._tearing_down = False       # the worker is past its last run
        self._next_check = UNTIL_CI_MIN_RUNS    # until_ci: when the runs are next checked
        self._target_met = False
        self._cpu_wall = [0.0, 0.0]     # the measured runs' worker CPU ns and wall ns

    def stop(self) -> None:
        """No run after this counts; the worker's group is killed."""
        self.stopping = True
        self.kill()

    def kill(self) -> None:
        """SIGKILL the worker's whole process group, helpers included, even once the
        worker itself has exited (they keep its group).  Safe from any thread."""
        worker = self._worker
        if worker is not None:
            worker.kill()

    async def reap(self) -> None:
        if self._worker is not None:
            await self._worker.reap()

    async def drive(self, built: build.Built) -> AsyncGenerator[ev.Event, None]:
        """The plan's runs spread over `processes` workers, one after the other: a
        process's memory layout shifts its results a little (pyperf does the same)."""
        rp, v, runs = self.rp, self.variant, self.runs
        for share in process_shares(rp.plan.runs, rp.plan.processes):
            if rp.plan.until_ci is not None and runs and self._known_well(runs, force=True):
                break                       # until_ci: the median is known well enough
            if self.stopping:               # stop() between two workers
                for e in self.recording.events():
                    yield e
                yield ev.Failed("stopped by the user", run=len(runs), interrupted=True,
                                variant=v)
                return
            async for event in self._drive_worker(built, runs, share):
                if isinstance(event, ev.Failed):
                    for e in self.recording.events():
                        yield e
                    yield event
                    return
                yield event
        for e in self.recording.events():
            yield e
        if (cpu_said := self._cpu_share()) is not None:
            yield cpu_said
        s = summarize(runs)
        stop = None
        if rp.plan.until_ci is not None:    # why the session stopped where it did
            met = self._known_well(runs, force=True)
            stop = Stop("until_ci" if met else "runs", rp.plan.until_ci,
                        median_ci_pct(sorted(runs)), len(runs))
        summary = SessionSummary(s.n, s.median, s.mean, s.stdev, s.cv, s.min, s.max, stop) if s \
            else SessionSummary(stop=stop)
        yield ev.Finished(summary, variant=v, counters=self.recording.counters)

    async def _drive_worker(self, built: build.Built, runs: list[float],
                            share: int) -> AsyncIterator[ev.Event]:
        """One worker process doing `share` of the runs; ends quietly when it is done,
        with a Failed event when not."""
        rp, v = self.rp, self.variant
        first = len(runs)
        loop = asyncio.get_running_loop()
        # One inbox for the worker's lines and perf's windows: both reach the
        # consumer as they come; only the worker's lines reset the timeout.
        inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        # perf first: its own start (0.25 s at a load of 2, 0.8 s at 10) then runs while the
        # worker starts, not between its Ready and its first run; the pids come at Ready
        rec = self.recording.recorder(inbox, first) if rp.plan.perf else None
        tasks: list[asyncio.Task[None]] = []
        getter: asyncio.Future[tuple[str, Any]] | None = None
        try:
            if rec is not None:
                await rec.prepare()
            try:
                worker = await self._start(built, share, first)
            except OSError as e:        # out of file descriptors or processes: the run's end
                await self.recording.stop(rec, first)
                rec = None
                yield ev.Failed(f"run {len(runs) + 1}: cannot start the worker process: "
                                f"{e.strerror or e}", run=len(runs), variant=v)
                return
            self._tearing_down = False
            drain = asyncio.create_task(worker.drain_output())
            tasks += [drain, asyncio.create_task(worker.read_lines(inbox))]
            # The worker's own end, apart from its pipes' (helpers it forked may hold those).
            worker.exited.add_done_callback(lambda _: inbox.put_nowait(("exit", None)))
            deadline = loop.time() + rp.plan.timeout * (1 + rp.plan.warmup) + SETUP_GRACE
            warmups_left = rp.plan.warmup

            async def go() -> None:
                if self.gate is not None:
                    await self.gate.get()
                await worker.send(protocol.GO)
            if self._stepped and warmups_left:
                await go()
                deadline = loop.time() + rp.plan.timeout + SETUP_GRACE
            while True:
                # asyncio.wait, not wait_for: on 3.11 wait_for loses a cancel (Ctrl-C)
                # that arrives as the queue hands over an item.
                getter = getter or asyncio.ensure_future(inbox.get())
                done, _ = await asyncio.wait({getter}, timeout=deadline - loop.time())
                if self.stopping:           # stop(): nothing from this worker counts now,
                    ended = await self._ended(len(runs))    # however much is buffered
                    await self.recording.stop(rec, first)
                    rec = None
                    if ended is not None:
                        yield ended
                    return
                if not done:
                    self.kill()
                    await self.recording.stop(rec, first)
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
                    self.kill()
                    continue
                if source == "window":
                    yield self.recording.window(msg)
                    continue
                if source == "warning":
                    if self.recording.first_said(msg):  # once a session, not once a worker
                        yield ev.Warning(f"perf: {msg}", variant=v)
                    continue
                if source == "eof":
                    ended = await self._ended(len(runs))
                    await self.recording.stop(rec, first)
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
                            self._cpu_wall[0] += msg.extra.get(protocol.CPU_EXTRA, 0.0) * 1e9
                            self._cpu_wall[1] += msg.ns
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
                            await self.recording.stop(rec, first)
                            rec = None
                            await worker.send(protocol.END if early else protocol.GO)
                            deadline = loop.time() + rp.plan.timeout
                        elif self._stepped and (warmups_left or len(runs) > first):
                            await go()
                            deadline = loop.time() + rp.plan.timeout
                    case protocol.Ready():
                        self.pids = [msg.pid, *msg.pids]
                        self.comm = msg.comm
                        mapped = self.recording.ready(self.pids, self.comm)
                        if rec is None:
                            await mapped
                        else:                   # the binaries it mapped read meanwhile
                            rec.attach(self.pids, self.comm)
                            _, started = await asyncio.gather(mapped, self._start_perf(rec))
                            yield started
                        await go()
                        deadline = loop.time() + rp.plan.timeout
                    case protocol.Note():
                        yield ev.Warning(msg.message, variant=v)
                    case protocol.Abort():
                        await worker.wait_exit(rp.plan.timeout)  # its teardown: the run's timeout
                        self.kill()                             # then it and its helpers go
                        await self.recording.stop(rec, first)
                        rec = None
                        yield ev.Failed(msg.message, run=msg.run + first if msg.run >= 0
                                        else msg.run, bad_input=msg.bad_input, variant=v)
                        return
                    case protocol.Done():
                        await worker.wait_exit(rp.plan.timeout)  # only Python's exit is left
                        self.kill()                             # helpers it left behind
                        if (said := await self._output_said(drain)) is not None:
                            yield said
                        return
        finally:
            if getter is not None:
                getter.cancel()
            if rec is not None:
                rec.kill()                  # a no-op once stopped
            self.kill()                     # its group; a no-op once killed after the reap
            await self.reap()               # while the readers still drain its pipes
            if rec is not None:             # and perf's end, however this worker's ended (a
                await rec.reap()            # cancel mid-start or mid-stop): none is left
            for t in tasks:
                t.cancel()

    def _cpu_share(self) -> ev.Warning | None:
        """How much of a CPU the worker had over its measured runs, said when well below one
        (LOW_CPU_SHARE): its wall time then holds the time it waited for a CPU (a busy
        machine) or on its I/O, which its CPU time per op does not."""
        cpu, wall = self._cpu_wall
        # a workload of several processes waits on its helpers by design: not said
        if self.rp.workload.procs > 1 or wall <= 0 or cpu <= 0 or cpu >= LOW_CPU_SHARE * wall:
            return None
        return ev.Warning(
            f"the worker had {100 * cpu / wall:.0f}% of a CPU over its runs (CPU time "
            f"{cpu / wall:.2f} s a second of their wall time): the rest it waited, for a CPU "
            f"another task held (a busy machine) or on its own I/O; the wall-clock metrics "
            f"hold that wait and its CPU time per op (cpu_ns/op) does not: --metric cpu_ns/op "
            f"makes that the primary metric", variant=self.variant)

    async def _start_perf(self, rec: PerfRecorder) -> ev.PerfStart:
        """Start a worker's perf; what the result file records of it: whether it started
        (a header with perf on cannot say), in how long, and why not (its warning's words)."""
        begun = asyncio.get_running_loop().time()
        ok = await rec.start()          # False: no perf here; a warning says why
        # (this recorder's warnings: those of its spawn too, as the worker started)
        why = "" if ok else (rec.warnings or ["perf did not start"])[-1] \
            .removeprefix("perf record failed to start: ") \
            .removeprefix("perf record could not start: ")
        return ev.PerfStart(ok, round(asyncio.get_running_loop().time() - begun, 3), why,
                            variant=self.variant)

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
        if self.stopping:
            # stop() killed its group: it is reaped after its perf has stopped (reap(), on
            # every way out), not waited for before, so that the two end together
            worker.kill()
            return None if self._tearing_down else ev.Failed(
                "stopped by the user", run=done, interrupted=True, variant=self.variant)
        if not await worker.wait_exit(REAP_S):  # its stdout closed, yet it runs on
            worker.kill()
            await worker.wait_exit(REAP_S)
        worker.kill()                           # whatever it forked goes with it
        name, why = worker.death()
        tail = worker.output_tail()
        what = "the worker's teardown" if self._tearing_down else f"run {done + 1}"
        return ev.Failed(f"{what}: {why}" + (f" ({tail})" if tail else ""),
                         run=done, signal=name, variant=self.variant)

    async def _start(self, built: build.Built, runs: int, first: int) -> WorkerProcess:
        rp = self.rp
        worker = await WorkerProcess.start(rp.cpu.cpus[0] if rp.cpu.cpus else None)
        self._worker = worker
        if self.stopping:                   # stop() came while the worker started
            worker.kill()
        await worker.send_spec(WorkerSpec(
            parent=os.getpid(), workload=rp.workload.name, module_path=str(built.path),
            module_name=built.module_name, params=dict(rp.params), cpus=list(rp.cpu.cpus),
            sched=rp.cpu.sched, priority=rp.cpu.priority, nice=rp.cpu.nice, runs=runs,
            first=first, warmup=rp.plan.warmup, step=self._stepped))
        return worker
