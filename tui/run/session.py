"""A session: one resolved plan, run in worker processes, as a stream of events.

The session is the only place that knows how a run happens: it builds the
workload, applies the profile's system settings, starts `python -m hotloop.run.worker`
(one after another when the runs are spread over several: drive.py) in its own process
group, attaches perf (recording.py), turns the worker's JSON lines and perf's windows into
typed events, appends each to the result file as it arrives, and yields it to
the consumer (the headless reporter or the TUI).  Whatever happens (a normal
end, a crash, a timeout, Ctrl-C, stop()), the worker's whole process group is
killed and the system restored before the stream ends.  No wait on the worker is
without a deadline, and `abandon()` ends a session from another thread when the
event loop itself is stuck (the console's terminal went away: teardown.py).
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from hotloop import events as ev
from hotloop.catalog import ResolvedPlan
from hotloop.errors import HotloopError
from hotloop.host.facts import kernel_facts
from hotloop.paths import source_digest
from hotloop.perf.probe import find_perf, recording_warnings
from hotloop.record import Batch, SysctlState
from hotloop.results import Writer
from hotloop.results.perf_data import claim_perf_dir, perf_dir
from hotloop.run import build, preflight
from hotloop.run.drive import Driver
from hotloop.run.pinned import Pinned
from hotloop.run.recording import Recording
from hotloop.run.teardown import Teardown


class Session:
    """Run `rp` once; iterate `events()` to drive it."""

    def __init__(self, rp: ResolvedPlan, result_file: Path, variant: str = "",
                 apply_system: bool = False, gate: asyncio.Queue[None] | None = None,
                 keep_perf: bool = True, on_exists: str = "rename",
                 mirror: Callable[[ev.Event], None] | None = None,
                 pinned: Pinned | None = None):
        self.rp = rp
        self.pinned = pinned                 # a series' builds: its first session's, run by all
        self.on_exists = on_exists           # result_file taken: rename, refuse, replace
        self.apply_system = apply_system     # the user's consent to system changes
        self.result_file = result_file
        self.variant = variant
        self.batch: Batch | None = None     # set by interleave()
        self.interrupted_by = ""         # the signal that cancelled the session, if one did
        self.stopped_because = ""        # what did, when no signal (its output closed)
        self._recording = Recording(rp, variant, result_file, keep_perf)
        self._driver = Driver(rp, variant, self._recording, gate)
        self._teardown = Teardown(mirror)

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

    @property
    def stop_elsewhere(self) -> float:
        return 0.0                      # its stop is this machine's (sessionlike)

    @property
    def perf_elsewhere(self) -> str:
        return ""

    @property
    def cpus_here(self) -> tuple[int, ...]:
        return self.rp.cpu.cpus

    @property
    def gate(self) -> asyncio.Queue[None] | None:
        """With a gate, every repetition waits for a token: interleave.py hands them out so
        that several sessions take turns, one run at a time."""
        return self._driver.gate

    @gate.setter
    def gate(self, gate: asyncio.Queue[None] | None) -> None:
        self._driver.gate = gate

    @property
    def pids(self) -> list[int]:
        """The worker and its helper processes, once ready."""
        return self._driver.pids

    @property
    def comm(self) -> str:
        """The worker's process name, inherited by its children."""
        return self._driver.comm

    def stop(self, quick: bool = False) -> None:
        """End the run now: no run after this reaches the file or the consumer.  The
        stream ends with Failed(interrupted=True), or Finished when every run was in.
        `quick` (the console quitting): perf's windows not summarised yet are not waited
        for, only compressed, so the stop does not wait on a loaded machine's reports."""
        if quick:
            self._recording.quick = True
        # perf signalled with the worker's kill: they end together, not one after the other
        self._recording.interrupt()
        self._driver.stop()

    def abandon(self, message: str, signame: str = "") -> None:
        """End the session from another thread, for when its event loop may never run
        again (the console lost its terminal): kill the worker's process group, restore
        the system and write the last line (the session's own if it was known, else
        Failed(message, interrupted)), once; nothing the loop does after is written."""
        if self._teardown.over:
            return                      # ended already, its processes with it
        self._driver.stop()             # first: whatever holds the lock, the run stops
        self._teardown.abandon(message, signame, self._driver.runs, self.variant)

    def _write(self, event: ev.Event, last: bool = False, quiet: bool = False) -> ev.Event:
        """Append to the result file (Teardown.write); the header names the file it went
        to, which becomes the session's."""
        event = self._teardown.write(event, last, quiet)
        writer = self._teardown.writer
        if isinstance(event, ev.Started) and writer is not None:
            self.result_file = self._recording.result_file = writer.path
        return event

    def _build(self) -> tuple[build.Built, str | None]:
        """The workload's build: compiled now, or in a series the series' own (run.pinned),
        with a warning when its source has changed since."""
        w, cflags = self.rp.workload, self.rp.cpu.cflags
        if self.pinned is None:
            return build.build(w.source, cflags, w.name), None
        return self.pinned.get(w.source, cflags, w.name)

    async def events(self) -> AsyncIterator[ev.Event]:
        """Build, apply system settings, run; bad input raises HotloopError first.

        The stream (and the result file) ends with Finished or Failed; the
        system is restored before that last event."""
        rp, v = self.rp, self.variant
        driver, recording, teardown = self._driver, self._recording, self._teardown
        pre = preflight.preflight(rp)
        if pre.changes and not self.apply_system:
            raise HotloopError(pre.refusal())
        built, edited = await asyncio.to_thread(self._build)
        await asyncio.to_thread(source_digest)     # for the header: read once, off the loop
        # Asked once per process: probing starts perf a few times.
        perf_notes = await asyncio.to_thread(recording_warnings, rp.plan.call_graph) \
            if rp.plan.perf and find_perf() is not None else []
        if driver.stopping:                 # stopped while the workload compiled
            return
        # HotloopError if it cannot be created; the name it got (another when taken)
        writer = Writer(self.result_file, self.on_exists)
        self.result_file = recording.result_file = writer.path
        kept = None
        if recording.keep and rp.plan.perf:
            # beside a regular file only (never /dev/null.perf), in a directory of hotloop's
            kept = claim_perf_dir(writer.path, create=False) if writer.regular else \
                f"{writer.path} is not a regular file"
            recording.keep = kept is None
        names = list(rp.kernel.sysctl)
        before = kernel_facts(names)["sysctl"]
        applied = teardown.begin(writer, pre.changes)
        if applied is None:                 # abandoned while the workload compiled
            return
        runs = driver.runs
        final: ev.Event | None = None
        during: dict[str, str | None] = {}
        drive = driver.drive(built)

        def note(message: str, quiet: bool = False) -> ev.Warning:
            event = ev.Warning(message, variant=v)
            self._write(event, quiet=quiet)     # WriteFailed: the run stops, as on a crash
            return event
        try:
            during = kernel_facts(names)["sysctl"]
            sysctl = {n: SysctlState(before[n], during[n]) for n in names}
            header = preflight.header(rp, built, v, sysctl, self.batch)
            if rp.plan.perf and recording.keep:     # beside the file: it moves with it
                header = dataclasses.replace(header, perf_data=perf_dir(self.result_file).name)
            started = self._write(ev.Started(header, str(self.result_file)))
            yield started
            for message in [*applied.recovered, *([edited] if edited else []),
                            *rp.warnings, *pre.warnings,
                            *([f"perf data not kept: {kept}"] if kept else []),
                            *(f"perf: {m}" for m in perf_notes),
                            *(f"applied {c.describe()}" for c in applied.changes)]:
                yield note(message)
            async for event in drive:
                if isinstance(event, (ev.Finished, ev.Failed)):
                    final = teardown.final = event      # after the restore: the last line
                    continue
                if isinstance(event, ev.RunSample) and driver.stopping:
                    continue                # stop means stop, however many are buffered
                self._write(event)
                yield event
            driver.kill()
            for message in [*preflight.changed_during(during), *teardown.put_back(),
                            *recording.finish()]:
                yield note(message)
            if final is not None:
                self._write(final, last=True)
                yield final
        except (asyncio.CancelledError, GeneratorExit):
            # Cancelled while running, or closed by a consumer that went away.
            driver.kill()
            for e in recording.so_far():    # a stopped session is a complete one
                self._write(e, quiet=True)
            for message in [*preflight.changed_during(during), *teardown.put_back()]:
                note(message, quiet=True)
            self._write(ev.Failed(f"interrupted: {self.stopped_because}" if self.stopped_because
                                  else "interrupted", run=len(runs), signal=self.interrupted_by,
                                  interrupted=True, variant=v),
                        last=True, quiet=True)
            raise
        finally:
            driver.kill()
            try:
                await drive.aclose()        # left mid-stream (a write failed): perf, worker
                await driver.reap()
            finally:
                # Even when a second signal cancels the waits above: the system restored and
                # the file closed, without waiting for anything.
                for message in teardown.put_back():     # a no-op when already restored
                    note(message, quiet=True)
                # stopped or cancelled: perf is gone, its last window or two are compressed
                # here (small: each window was as it completed) and the data held to budget
                recording.finish()
                # nothing ran: nothing kept, an old file intact
                teardown.close(discard=isinstance(final, ev.Failed) and final.bad_input
                               and not runs)
        if writer.error is not None:        # the last lines may not be on disk
            raise writer.error
