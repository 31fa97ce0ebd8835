"""The console's runs: a session or a series in a Textual worker, its live model, stop and
abandon, and the console kept off the workload's CPUs.

No widget here: what the UI should show goes to it as messages (hotloop.console.messages)
posted to the node that owns the controller (the main screen), whose workers these are.
The live model (`live`) is read by that screen's redraw timer; the worker only feeds it,
so thousands of runs a second cost a handful of redraws.
"""
from __future__ import annotations

import asyncio
import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.dom import DOMNode
from textual.worker import Worker, WorkerState

from hotloop import events as ev
from hotloop.catalog import Catalog, Plan, ResolvedPlan
from hotloop.console.live import LiveRun
from hotloop.console.messages import (
    LiveEnded,
    LiveStarted,
    LogLine,
    SeriesEnded,
    SessionEnded,
    SymbolsArrived,
)
from hotloop.errors import HotloopError
from hotloop.record import Header
from hotloop.render.units import si
from hotloop.run import launch, series, start, variants
from hotloop.run.series_run import SeriesOutcome, SeriesRequest, SeriesRun, SeriesSide
from hotloop.run.sessionlike import SessionLike

if TYPE_CHECKING:
    from hotloop.run.bisect_run import BisectRun  # scipy: loaded when one starts

STOP_GRACE_S = 3.0              # then the worker is cancelled (the session kills its group)


class RunController:
    """The session or series the console runs, one at a time; its workers run on `ui`, and
    what they have to say goes there as messages."""

    def __init__(self, ui: DOMNode, results_dir: Path) -> None:
        self.ui = ui
        self.results_dir = Path(results_dir)
        self.live: LiveRun | None = None
        self.session: SessionLike | None = None
        self.series: SeriesRun | None = None         # a series running (run --sessions)
        self.bisect: BisectRun | None = None         # a bisect running (console.bisecting)
        self.series_at: tuple[series.Slot, int] | None = None   # its session, of how many
        # the last series' sessions, a side a kernel: what `c` compares until the next run
        self.series_sides: list[list[Path]] | None = None
        self.worker: Worker[None] | None = None
        self._affinity: set[int] | None = None
        self._stop_asked = False        # the user stopped the session being run
        self._since_yield = 0

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.state in (WorkerState.PENDING,
                                                                 WorkerState.RUNNING)

    def log(self, text: str, level: str = "info") -> None:
        self.ui.post_message(LogLine(text, level))

    def failed(self, e: Exception) -> None:
        """What ended a session or series early, one line in the log: hotloop's own error as
        it says itself (the workload does not compile), any other named as a session error."""
        self.log(str(e) if isinstance(e, HotloopError)
                  else f"session error: {type(e).__name__}: {e}", "error")

    # --- one session ---------------------------------------------------------------

    def check_run(self, cat: Catalog, plan: Plan,
                  host: str | None) -> tuple[ResolvedPlan, list[str]]:
        """`plan` resolved, and what running it would change on the system (to ask first),
        by the launcher's rules; ValueError or HotloopError when it cannot run."""
        # on a host, its own catalogue fits the CPU profile to its CPUs
        rp = cat.resolve(plan, here=host is None)
        launch.check_host(rp.kernel, host)
        return rp, launch.consent([rp], host)

    def start_run(self, cat: Catalog, rp: ResolvedPlan, apply_system: bool = False,
                  host: str | None = None) -> bool:
        """Start a session of `rp` (system changes only with `apply_system`, the user's yes),
        here or on a [host.NAME] over SSH; whether it started."""
        if self.running:
            return False
        plan = rp.plan
        path = launch.result_path(plan.name, host, self.results_dir)
        self.session = launch.start_run(launch.RunRequest(
            rp, start.Choices(apply_system=apply_system),
            host=cat.hosts[host] if host is not None else None, output=path))
        self.series_sides = None
        live = self._new_live(rp)
        self.log(f"run {plan.name}: {rp.workload.name}, {plan.runs} runs "
                  f"(+{plan.warmup} warmup), cpu {rp.cpu.name}"
                  + (f", on {host} over SSH" if host else "") + _in_vm(rp) + f" → {path}")
        if host is None:
            self.away_from(rp.cpu.cpus)
        self.worker = self.ui.run_worker(self._run_session(self.session, live), group="session",
                                         exclusive=True, exit_on_error=False)
        return True

    def _new_live(self, rp: ResolvedPlan) -> LiveRun:
        """The live model of a session about to start; the UI clears its panels for it."""
        plan = rp.plan
        self.live = LiveRun(plan.name, plan.runs, plan.warmup, rp.workload.unit,
                            rp.workload.higher_is_better, plan.perf, plan.until_ci)
        if rp.kernel.image:
            self.live.state = "booting"         # its VM, until the guest's header
        self.ui.post_message(LiveStarted(self.live))
        return self.live

    async def _run_session(self, session: SessionLike,
                           live: LiveRun) -> None:
        """Drive one session to its end; the only place that reads its events."""
        outcome = "failed"
        self._stop_asked = False
        try:
            async for event in session.events():
                outcome = await self._feed(event, live) or outcome
            if self._stop_asked and live.n == 0 and outcome == "failed":
                outcome = "stopped"             # stopped before anything came (a VM booting)
        except asyncio.CancelledError:
            outcome = "stopped"
            raise
        except Exception as e:  # noqa: BLE001 - a session bug must not kill the console
            self.failed(e)
        finally:
            live.end(outcome)
            path = session.result_file         # gone when nothing ran (bad input)
            kept = str(path) if path.exists() else ""
            self._ended(outcome, kept, live)
            self.restore_affinity()
            self.ui.post_message(SessionEnded(outcome, kept, live.n))

    def _ended(self, outcome: str, result_file: str, live: LiveRun) -> None:
        """The log's last word on a session."""
        s = live.summary()
        if outcome == "finished" and s is not None:
            self.log(f"done: {s.n} runs, median {si(s.median, live.unit)}, "
                      f"CV {s.cv * 100:.2f}% → {result_file}", "success")
        elif outcome == "stopped":
            kept = f"; {live.n} runs kept in {result_file}" if result_file else ""
            self.log(f"stopped{kept}")   # asked for: news, not a warning
        else:
            self.log(f"failed after {live.n} runs"
                      + (f"; see {result_file}" if result_file else ""), "error")

    async def _feed(self, event: ev.Event, live: LiveRun) -> str | None:
        """One event of the session that runs into its live model and the UI; the session's
        outcome once it ends."""
        if isinstance(event, ev.RunSample):
            live.add(event.value, event.warmup)
            self._since_yield += 1
            if self._since_yield >= 64:       # a burst of buffered lines: let the UI in
                self._since_yield = 0
                await asyncio.sleep(0)
        elif isinstance(event, ev.Started):
            live.result_file = event.result_file
            live.state = "running"
            h, vm = event.header, event.header.vm
            if vm is not None:
                self.log(f"the VM is up: kernel {h.kernel_release} ({h.kernel.name}), "
                          f"{vm.accel}, {vm.cpus} vCPUs", "info")
            live.dirty = True
            self.ui.run_worker(partial(_find_noise, live, event.header), thread=True,
                               group="noise")
        elif isinstance(event, ev.HotSymbols):
            # the panel shows each window, then the whole run; the per-run ones (one a run,
            # all at the session's end) are the file's: drawn, each would be overdrawn at
            # once, and a quit waited 0.6 s under load for 100 of them (#34)
            if event.scope != "run":
                self.ui.post_message(SymbolsArrived(event))
        elif isinstance(event, ev.Warning):
            self.log(event.message, "warning")
        elif isinstance(event, ev.Finished):
            return "finished"
        elif isinstance(event, ev.Failed):
            if not event.interrupted:
                self.log(event.message, "error")
            return "stopped" if event.interrupted else "failed"
        return None

    # --- a series (run --sessions) ----------------------------------------------------

    def check_series(self, cat: Catalog, plan: Plan, kernels: list[str], n: int,
                     host: str | None, vs: str = "") -> tuple[SeriesRun, list[str]]:
        """A series of `plan`, n sessions of each of `kernels` (or of `plan` and the variants
        `vs` asks for: run.variants), checked and each side's plan resolved (`resolved`),
        and what they would change on the system (to ask first)."""
        run = SeriesRun(SeriesRequest(plan, tuple(kernels), n, host=host,
                                      results=self.results_dir,
                                      variants=tuple(SeriesSide(name, one) for name, one in
                                                     variants.versus(cat, plan, vs))))
        run.resolve(cat)
        return run, run.consent()

    def start_series(self, run: SeriesRun, apply_system: bool = False) -> bool:
        """Start a series (check_series'): its sessions of each side, alternating, the live
        view following the session that runs; whether it started."""
        if self.running:
            return False
        try:
            sch = run.start(apply_system)
        except HotloopError as e:
            self.log(f"cannot run: {e}", "error")
            return False
        self.series = run
        self.series_sides = None
        n, sides = sch.sessions, list(sch.variants)
        self.log(f"series {run.req.plan.name}: {', '.join(sides)}, {n} session"
                  f"{'s' * (n != 1)} each, alternating → {sch.directory}")
        self.away_from(run.resolved[sides[0]].cpu.cpus)
        self.worker = self.ui.run_worker(self._run_series(run), group="session",
                                         exclusive=True, exit_on_error=False)
        return True

    async def _run_series(self, run: SeriesRun) -> None:
        """Drive a series to its end, each session's events into its own live model."""
        live: LiveRun | None = None
        stopped = False
        try:
            async for e in run.events():
                live = await self.series_event(run, e, live)
        except asyncio.CancelledError:
            stopped = True
            raise
        except Exception as e:  # noqa: BLE001 - a session bug must not kill the console
            self.failed(e)
        finally:
            if live is not None and live.running:
                live.end("stopped")
            self.session = None
            self._series_ended(run.finish(interrupted=stopped))

    async def series_event(self, run: SeriesRun, e: series.SeriesEvent,
                            live: LiveRun | None) -> LiveRun | None:
        """One event of a series (a bisect's step is one) into its session's live model:
        the live model of the session running now."""
        if isinstance(e, series.Begins):
            n = run.schedule.sessions
            self.series_at = (e.slot, n)
            rp = run.resolved[e.slot.variant]
            live = self._new_live(rp)
            self.log(f"{e.slot.variant} · session {e.slot.session} of {n}{_in_vm(rp)} → "
                      f"{e.slot.path}")
        elif isinstance(e, series.Ends):
            if live is not None:
                live.end("finished" if isinstance(e.end, ev.Finished) else
                         "stopped" if isinstance(e.end, ev.Failed)
                         and e.end.interrupted else "failed")
                self._session_line(e.slot, e.end, live)
            self.session = None
            self.ui.post_message(LiveEnded())
        elif live is not None:
            self.session = run.current
            await self._feed(e, live)
        return live

    def _session_line(self, slot: series.Slot, end: ev.Event | None, live: LiveRun) -> None:
        name = f"{slot.variant} s{slot.session:02d}"
        s = live.summary()
        if isinstance(end, ev.Finished) and s is not None:
            self.log(f"{name}: {si(s.median, live.unit)} median, {s.n} runs", "success")
        elif isinstance(end, ev.Failed) and end.interrupted:
            self.log(f"{name}: stopped")
        else:
            why = end.message if isinstance(end, ev.Failed) else "no result"
            self.log(f"{name}: failed: {why}", "error")

    def _series_ended(self, over: SeriesOutcome) -> None:
        sp, done, stopped = over.schedule, over.counts(), over.interrupted
        failed = [f"{x.variant} s{x.session:02d}" for x in over.failed]
        directory = str(sp.directory)
        counts = ", ".join(f"{k} {n}" for k, n in done.items())
        state = "stopped" if stopped else "done"
        if over.refused is not None:        # every session would fail alike: nothing kept
            self.log(f"series not run: {over.refused}"
                      + (f" (nothing kept: {directory} removed)" if over.removed else ""),
                      "error")
        else:
            self.log(f"series {state}: sessions finished: {counts} → {directory}"
                      + (" (removed: nothing ran)" if over.removed else ""),
                      "warning" if stopped or failed else "success")
        if failed and over.refused is None:
            self.log(f"failed: {', '.join(failed)} (set aside)", "error")
        if len(done) > 1 and all(done.values()):
            dirs = " ".join(f"{sp.folder(k)}/" for k in done)
            self.log(f"c compares them here, or: hotloop compare {dirs}")
            self.series_sides = [[r.path for r in over.finished(k)] for k in done]
        self.series = None
        self.restore_affinity()
        self.ui.post_message(SeriesEnded(directory, done, failed, stopped))

    # --- annotating the run's hot symbols --------------------------------------------

    def perf_elsewhere(self, symbol: str) -> str:
        """Why `symbol` of the session cannot be annotated here ("" when it can)."""
        host = self.session.perf_elsewhere if self.session is not None else ""
        if host:
            return (f"{symbol}: the run's perf data is on {host}: annotate it "
                    f"there once the run is over (hotloop annotate RESULT {symbol})")
        return ""

    def perf_keeps_off(self) -> set[int] | None:
        """While the session runs, the CPUs perf annotate keeps off (it runs at idle
        priority too); None once it is over."""
        session = self.session
        if session is not None and session.cpus_here and self.live is not None \
                and self.live.running:
            return set(session.cpus_here)
        return None

    # --- stopping -------------------------------------------------------------------

    async def stop(self, wait: bool = True) -> None:
        """Stop the session; with `wait`, return once its worker (and processes) are gone."""
        worker, session = self.worker, self.session
        if self.bisect is not None and worker is not None and self.running:
            # no session nor build after this one: the rounds done are kept (the one running
            # ends as a series' does; a build is stopped)
            self.log("stopping the bisect: the rounds done are kept")
            self.bisect.stop()
            if wait and session is not None:
                session.stop(quick=True)
            if wait and (session is None or not session.pids):
                worker.cancel()
            waiter = asyncio.ensure_future(self._await_worker(worker))
            if wait:
                await waiter
            return
        if self.series is not None and worker is not None and self.running:
            # a series: no session after this one, the one running ended as a stop does
            self.log("stopping the series: the sessions done are kept")    # asked for
            self.series.stop()
            if wait and session is not None:
                session.stop(quick=True)        # quitting: see below
            if session is None or not session.pids:
                worker.cancel()
            waiter = asyncio.ensure_future(self._await_worker(worker))
            if wait:
                await waiter
            return
        if worker is None or session is None or not self.running:
            return
        self.log("stopping…" if not session.stop_elsewhere else
                  f"stopping: {session.machine} ends its run and restores its system "
                  f"(up to {session.stop_elsewhere:g} s)")     # the user asked: info
        self._stop_asked = True
        # quitting (q, a signal): perf's windows the reports have not reached are only
        # compressed, each window having been as it came, so the quit does not grow with
        # the session nor wait on a loaded machine's reports (#34)
        session.stop(quick=wait)
        if not session.pids:                  # not started yet: nothing for stop() to kill
            worker.cancel()
        waiter = asyncio.ensure_future(self._await_worker(worker))
        if wait:
            await waiter

    async def _await_worker(self, worker: Worker[None]) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(worker.wait()), STOP_GRACE_S)
        except asyncio.TimeoutError:
            worker.cancel()
        except Exception:  # noqa: BLE001 - cancelled or failed: it has ended either way
            pass
        try:
            await worker.wait()
        except Exception:  # noqa: BLE001
            pass

    def abandon(self, message: str, signame: str) -> None:
        """From the watchdog's thread: end the run without the event loop."""
        session = self.session
        if session is not None:
            session.abandon(message, signame)

    # --- keeping off the worker's CPUs ---------------------------------------------

    def away_from(self, cpus: tuple[int, ...]) -> None:
        """Run the console on CPUs the profile leaves free, where there are any."""
        if not cpus or not hasattr(os, "sched_setaffinity"):
            return
        try:
            mine = os.sched_getaffinity(0)
            spare = mine - set(cpus)
            if spare and spare != mine:
                os.sched_setaffinity(0, spare)
                self._affinity = mine
        except OSError:
            pass

    def restore_affinity(self) -> None:
        if self._affinity is not None:
            try:
                os.sched_setaffinity(0, self._affinity)
            except OSError:
                pass
            self._affinity = None


def _find_noise(live: LiveRun, header: Header) -> None:
    """The calibrated session noise of what runs (for the stats panel's "detect"); in a
    thread, as the noise profiles are read from disk."""
    from hotloop.analysis import noise
    profile, _ = noise.find(header)
    found = profile.metrics.get(header.workload.metric) if profile is not None else None
    if found is not None:
        live.noise = found
        live.dirty = True


def _in_vm(rp: ResolvedPlan) -> str:
    """What a session's log line adds when its kernel profile boots a VM."""
    return f", in a VM booting {rp.kernel.image}" if rp.kernel.image else ""
