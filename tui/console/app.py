"""The Textual console: pick a plan, run it, watch it live.

One more consumer of the session's event stream (like the headless reporter):
the session runs in an async Textual worker, feeds a plain `LiveRun` model,
and a 10 Hz timer redraws whatever changed, so thousands of runs a second
cost a handful of redraws.  Stop and quit call `Session.stop()` and wait for
the worker, so no process outlives the console.

`c` opens the compare screen on the results directory (hotloop.analysis.compare and scipy
load only then).  A run whose kernel/CPU profile would change the system asks
first (a modal listing each change); only a yes runs with `apply_system`.

On a real terminal a watchdog thread (hotloop.console.watchdog) takes SIGHUP and SIGTERM and
watches the terminal itself: when it goes away, the run is ended from that thread,
since Textual's writes can then block the event loop for good.
"""
from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import Worker, WorkerState

from hotloop import catalog, results
from hotloop import events as ev
from hotloop.catalog import Catalog, Plan, ResolvedPlan
from hotloop.console.commands import HotloopCommands
from hotloop.console.live import LiveRun
from hotloop.console.messages import (
    CatalogPicked,
    FormChanged,
    LogLine,
    SeriesEnded,
    SessionEnded,
    SymbolsArrived,
)
from hotloop.console.screens.save import SavePlanScreen
from hotloop.console.watchdog import Watchdog
from hotloop.console.widgets.catalog_tree import CatalogTree
from hotloop.console.widgets.footer import ConsoleFooter
from hotloop.console.widgets.log import LogPanel
from hotloop.console.widgets.params import ParamsForm
from hotloop.console.widgets.plots import DriftPlot, HistogramPlot
from hotloop.console.widgets.stats_panel import StatsPanel
from hotloop.console.widgets.symbols import SymbolsTable
from hotloop.errors import HotloopError
from hotloop.record import Header
from hotloop.render.units import si
from hotloop.results.perf_data import perf_dir
from hotloop.run import series, start
from hotloop.run.preflight import preflight, system_settings
from hotloop.run.remote import RemoteSession
from hotloop.run.session import Session
from hotloop.run.vm import VmSession
from hotloop.visible import visible

DEFAULT_PLAN = "quick"
REDRAW_S = 0.1                  # stats: at most 10 redraws a second, however fast runs arrive
PLOT_BUDGET = 0.03              # charts: at most ~3% of a CPU, so their rate adapts to their cost
PLOT_MAX_S = 1.0                # ...but at least one chart redraw a second
STOP_GRACE_S = 3.0              # then the worker is cancelled (the session kills its group)
CONSOLE_ACTIONS = ("run", "stop", "save", "toggle_view", "compare", "annotate")
WIDE_FROM = 110                 # columns: setup and live side by side; below, one at a time
ROOMY_FROM = 120                # columns: the hot symbols' panel wide enough to name DSOs


class HotloopApp(App[None]):
    TITLE = "hotloop"
    CSS_PATH = Path(__file__).parent / "app.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_FROM, "-wide"), (ROOMY_FROM, "-roomy")]
    COMMANDS = App.COMMANDS | {HotloopCommands}
    BINDINGS = [
        Binding("r", "run", "Run", id="run"),
        Binding("x", "stop", "Stop", id="stop"),
        Binding("w", "save", "Save plan", id="save"),
        Binding("c", "compare", "Compare", id="compare"),
        Binding("a", "annotate", "Annotate", id="annotate"),
        Binding("v", "toggle_view", "View", id="view"),     # the status line: "v live"
        Binding("q", "quit", "Quit", id="quit"),
        Binding("escape", "leave_field", "Leave field", id="leave", show=False),
    ]


    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Textual's own "Screenshot" writes to ~/Downloads and fails where that does not exist;
        # the palette's "Save screenshot" (commands.py) writes beside the results and says where.
        yield from (c for c in super().get_system_commands(screen) if c.title != "Screenshot")

    def __init__(self, profiles: list[Path] | None = None,
                 results_dir: Path = Path("results")) -> None:
        super().__init__()
        self.profiles = list(profiles or [])
        self.results_dir = Path(results_dir)
        self.cat: Catalog | None = None
        self.live: LiveRun | None = None
        self.session: Session | RemoteSession | VmSession | None = None
        self.series: series.Series | None = None     # a series running (run --sessions)
        self.series_at: tuple[series.Slot, int] | None = None   # its session, of how many
        # the last series' sessions, a side a kernel: what `c` compares until the next run
        self.series_sides: list[list[Path]] | None = None
        self.worker: Worker | None = None
        self.view = "setup"
        self._affinity: set[int] | None = None
        self._stop_asked = False        # the user stopped the session being run
        self._plots_at = 0.0            # when the charts were last redrawn
        self._plots_due = False
        self._clock_at = 0.0
        self._form_plan: tuple[Plan, bool] | None = None    # the status line's, until FormChanged
        self._views_shown = False       # both views are laid out once before one is hidden
        self.watchdog: Watchdog | None = None

    # --- layout ----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("hotloop", id="status")
        with Horizontal(id="main"):
            with Vertical(id="setup"):
                yield CatalogTree(id="catalog")
                yield ParamsForm(id="params")
            with Vertical(id="live"):
                # a grid, so that a narrow screen can give the symbols the wide column
                # (app.tcss places the four panels: row-major, by their spans)
                with Grid(id="live-top"):
                    yield HistogramPlot(id="histogram")
                    yield StatsPanel(id="stats")
                    yield SymbolsTable(id="symbols")
                    yield DriftPlot(id="drift")
                yield LogPanel(id="log")
        yield ConsoleFooter()

    async def on_mount(self) -> None:
        self._q("#symbols").border_subtitle = "a: annotate"
        titles = {"#catalog": "catalogue", "#params": "parameters", "#histogram": "distribution",
                  "#drift": "run by run", "#stats": "stats", "#symbols": "hot symbols",
                  "#log": "log"}
        for sel, title in titles.items():
            self._q(sel).border_title = title
        loop = asyncio.get_running_loop()
        if self.is_headless:        # run_test: no terminal to lose, the process not ours
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self._on_signal, sig)
        else:
            self.watchdog = Watchdog(loop, _terminal_fds(), quit=self._on_signal,
                                     abandon=self._abandon_run, stop_grace=STOP_GRACE_S)
            self.watchdog.install()
        self.main_screen.add_class("-view-setup")
        # after the first layout, so that the log has a width and writes its lines now
        self.call_after_refresh(self._views_ready)
        self.set_interval(REDRAW_S, self._tick)
        try:
            self.cat = catalog.load(self.profiles, skip_bad=True)
        except HotloopError as e:
            self.cat = Catalog()
            self.cat.errors.append(str(e))
        for error in self.cat.errors:       # shown on the first screen, not only the log
            self.log_line(f"left out: {error}", "error")
            self.notify(visible(error), title="profile left out", severity="error",
                        timeout=15, markup=False)       # "[cpu.c]" is no markup
        if not (self.cat.plans or self.cat.workloads):
            self._status()
            return
        self._q(CatalogTree).fill(self.cat)
        first = (("plan", DEFAULT_PLAN) if DEFAULT_PLAN in self.cat.plans else
                 ("plan", next(iter(self.cat.plans))) if self.cat.plans else
                 ("workload", next(iter(self.cat.workloads))) if self.cat.workloads else None)
        if first:
            await self.pick(*first)
        self._q(CatalogTree).focus()
        self.call_after_refresh(self._settle_heap)

    def _settle_heap(self) -> None:
        """What is alive once the console is up (the app, its widgets, the catalogue: 100k
        objects) leaves the garbage collector's view.  A full collection walks every tracked
        object: 140 ms with those here, a stall whenever one comes (the longest after `r`
        in a benchmark, 600 ms, was one); frozen, it walks only what came since.  Collected
        first, so no garbage is kept frozen.  Once: a run adds few long-lived objects, and a
        dialog alive at a later freeze would never be collected once closed."""
        gc.collect()
        gc.freeze()

    def on_unmount(self) -> None:
        gc.unfreeze()       # the process may go on without us (tests, an embedding)

    @property
    def main_screen(self):
        """The console's own screen (not a dialog or the palette above it)."""
        return self.screen_stack[0]

    def _q(self, selector, expect_type=None):
        """query_one on the console's own screen, whatever dialog is above it."""
        if not self.screen_stack:
            raise NoMatches("no screen")
        screen = self.screen_stack[0]
        return screen.query_one(selector) if expect_type is None else \
            screen.query_one(selector, expect_type)

    @property
    def console_blocked(self) -> bool:
        """A screen of ours (compare, consent, save) is on top: the console's keys rest."""
        from textual.command import CommandPalette
        for screen in reversed(self.screen_stack):
            if isinstance(screen, CommandPalette):
                continue
            return bool(getattr(screen, "blocks_console", False))
        return False

    @property
    def narrow(self) -> bool:
        return self.main_screen.has_class("-narrow")

    # --- the catalogue and the form ----------------------------------------------

    @property
    def form(self) -> ParamsForm:
        return self._q(ParamsForm)

    async def pick(self, kind: str, name: str) -> None:
        """Show a catalogue entry: plans and workloads load the form, profiles set it."""
        cat = self.cat
        if cat is None:
            return
        tree = self._q(CatalogTree)
        tree.point_at(kind, name)
        try:
            if kind == "plan":
                variants = cat.variants(cat.plans[name])
                await self.form.load(cat, variants[0][1])
                if len(variants) > 1:
                    self.batch_note(name, variants)
            elif kind == "workload":
                await self.form.load(cat, Plan(name=name, workload=name))
            elif kind in ("cpu", "kernel"):
                self.form.set_choice(kind, name)
                if kind == "cpu":
                    cpu = cat.cpus[name]
                    self.form.hint(f"cpu {name}: {cpu.summary} (cpus "
                                   f"{','.join(map(str, cpu.cpus)) or 'any'}, sched {cpu.sched})")
                else:
                    self.form.hint(f"kernel {name}: {cat.kernels[name].summary}")
        except HotloopError as e:
            self.log_line(str(e), "error")
        self._form_plan = None
        self._status()

    def batch_note(self, name: str, variants: list[tuple[str, Plan]]) -> None:
        """A plan with list params is a batch: the form holds its first variant."""
        labels = ", ".join(label for label, _ in variants)
        keys = sorted({k for _, v in variants for k in v.params
                       if v.params[k] != variants[0][1].params[k]})
        note = (f"{name} is a batch of {len(variants)} variants ({labels}); the form holds "
                f"the first, change {', '.join(keys) or 'the params'} for another; run them "
                f"all headless with `hotloop run {name}`")
        self.form.hint(note)
        self.log_line(note)

    async def on_catalog_picked(self, message: CatalogPicked) -> None:
        await self.pick(message.kind, message.name)

    def on_form_changed(self, message: FormChanged) -> None:
        self._form_plan = None
        self._status()

    def on_input_submitted(self, event) -> None:
        if self.form in event.input.ancestors:
            self.screen.focus_next()

    def action_leave_field(self) -> None:
        focused = self.focused
        if focused is not None and self.form in focused.ancestors:
            self._q(CatalogTree).focus()

    # --- running -----------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.state in (WorkerState.PENDING,
                                                                 WorkerState.RUNNING)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in CONSOLE_ACTIONS and self.console_blocked:
            return False
        if action == "run":
            return None if self.running or self.cat is None else True
        if action == "stop":
            return True if self.running else None
        if action == "toggle_view":
            return self.narrow
        if action == "annotate":        # shown always, enabled once there is a symbol
            return True if self._annotatable() is not None else None
        return True

    def action_run(self) -> None:
        if self.running or self.cat is None:
            return
        host = self.form.host
        if self.form.series is not None:
            self.run_series_asked(host)
            return
        try:
            plan = self.form.build()
            # on a host, its own catalogue fits the CPU profile to its CPUs, and its own
            # state tells what would change: here, what the profiles would set
            rp = self.cat.resolve(plan, here=host is None)
            changes = [c.describe() for c in preflight(rp).changes] if host is None \
                else [f"{setting} on {host}" for setting in system_settings(rp)]
            if rp.kernel.image:
                changes = []        # a VM of the session's own: its sysctls are applied there
        except (ValueError, HotloopError) as e:
            self._cannot_run(e)
            return
        if not changes:
            self.start_run(rp, host=host)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.log_line(f"consent given: {', '.join(changes)} (restored after the run)",
                              "warning")
                self.start_run(rp, apply_system=True, host=host)
            else:
                self.log_line(f"not run: kernel profile {rp.kernel.name} would change "
                              f"{', '.join(changes)}; nothing was changed", "warning")
                self.notify("not run: nothing was changed on the system", timeout=4)

        from hotloop.console.screens.consent import ConsentScreen
        self.push_screen(ConsentScreen(plan.name, rp.kernel.name, changes), answered)

    def run_series_asked(self, host: str | None) -> None:
        """`r` with a second kernel or more than one session: a series here, after the
        consent its kernels' system changes need."""
        asked = self.form.series
        assert asked is not None and self.cat is not None
        kernels, n = asked
        try:
            if host is not None:
                raise HotloopError("a series runs on this machine (host: this machine)")
            series.directory_names(kernels)
            series.check_sessions(n, len(kernels))
            plan = self.form.build()
            rps = {k: self.cat.resolve(replace(plan, kernel=k)) for k in kernels}
            # an image kernel's sysctls are its VM's own, applied there unasked
            changes = list(dict.fromkeys(c.describe() for k in kernels if not rps[k].kernel.image
                                         for c in preflight(rps[k]).changes))
        except (ValueError, HotloopError) as e:
            self._cannot_run(e)
            return
        if not changes:
            self.start_series(plan, rps, n)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.log_line(f"consent given: {', '.join(changes)} (restored after each "
                              f"session)", "warning")
                self.start_series(plan, rps, n, apply_system=True)
            else:
                self.log_line(f"not run: the series' kernel profiles would change "
                              f"{', '.join(changes)}; nothing was changed", "warning")

        from hotloop.console.screens.consent import ConsentScreen
        self.push_screen(ConsentScreen(plan.name, ", ".join(kernels), changes), answered)

    def start_series(self, plan: Plan, rps: dict[str, ResolvedPlan], n: int,
                     apply_system: bool = False) -> None:
        """Start a series: n sessions of each kernel of `rps`, alternating, the live view
        following the session that runs."""
        if self.running or self.cat is None:
            return
        chosen = start.Choices(apply_system=apply_system, on_exists="refuse")
        kernels = list(rps)
        try:
            sp = series.plan(kernels, n, series.new_directory(plan.name, self.results_dir))
        except HotloopError as e:
            self.log_line(f"cannot run: {e}", "error")
            return
        self.series_sides = None
        self.series = series.Series(sp, lambda slot: start.here(
            rps[slot.kernel], slot.path, chosen, variant=slot.kernel))
        self.log_line(f"series {plan.name}: {', '.join(kernels)}, {n} session"
                      f"{'s' * (n != 1)} each, alternating → {sp.directory}")
        self._away_from(rps[kernels[0]].cpu.cpus)
        self.worker = self.run_series(self.series, rps)
        if self.narrow:
            self.set_view("live")
        self.refresh_bindings()

    def _cannot_run(self, e: Exception) -> None:
        self.log_line(f"cannot run: {' '.join(str(e).split())}", "error")
        self.notify(f"cannot run: {visible(str(e))}", severity="error", timeout=4, markup=False)

    def _new_live(self, rp: ResolvedPlan) -> LiveRun:
        """The live model of a session about to start, the panels cleared for it."""
        plan = rp.plan
        self.live = LiveRun(plan.name, plan.runs, plan.warmup, rp.workload.unit,
                            rp.workload.higher_is_better, plan.perf, plan.until_ci)
        if rp.kernel.image:
            self.live.state = "booting"         # its VM, until the guest's header
        symbols = self._q(SymbolsTable)
        symbols.show_message("perf: waiting for the first window…" if plan.perf
                             else "perf is off for this run")
        self._q("#symbols").border_title = "hot symbols" if plan.perf else \
            "hot symbols · off"
        self._redraw(plots=True)
        return self.live

    @work(exclusive=True, group="session", exit_on_error=False)
    async def run_series(self, s: series.Series, rps: dict[str, ResolvedPlan]) -> None:
        """Drive a series to its end, each session's events into its own live model."""
        live: LiveRun | None = None
        stopped = False
        try:
            async for e in s.events():
                if isinstance(e, series.Begins):
                    self.series_at = (e.slot, s.plan.sessions)
                    rp = rps[e.slot.kernel]
                    live = self._new_live(rp)
                    self.log_line(f"{e.slot.kernel} · session {e.slot.session} of "
                                  f"{s.plan.sessions}{_in_vm(rp)} → {e.slot.path}")
                elif isinstance(e, series.Ends):
                    if live is not None:
                        live.end("finished" if isinstance(e.end, ev.Finished) else
                                 "stopped" if isinstance(e.end, ev.Failed)
                                 and e.end.interrupted else "failed")
                        self._session_line(e.slot, e.end, live)
                    self.session = None
                    self._redraw(plots=True)
                elif live is not None:
                    self.session = s.current  # type: ignore[assignment]
                    await self._feed(e, live)
        except asyncio.CancelledError:
            stopped = True
            raise
        except HotloopError as e:             # e.g. the workload does not compile
            self.post_message(LogLine(str(e), "error"))
        except Exception as e:  # noqa: BLE001 - a session bug must not kill the console
            self.post_message(LogLine(f"session error: {type(e).__name__}: {e}", "error"))
        finally:
            if live is not None and live.running:
                live.end("stopped")
            self.session = None
            s.set_aside()
            done = {k: sum(1 for x in s.done if x.kernel == k) for k in s.plan.kernels}
            self.post_message(SeriesEnded(str(s.plan.directory), done,
                                          [f"{x.kernel} s{x.session:02d}" for x in s.failed],
                                          stopped or s.stopped))

    def _session_line(self, slot: series.Slot, end: ev.Event | None, live: LiveRun) -> None:
        name = f"{slot.kernel} s{slot.session:02d}"
        s = live.summary()
        if isinstance(end, ev.Finished) and s is not None:
            self.log_line(f"{name}: {si(s.median, live.unit)} median, {s.n} runs", "success")
        elif isinstance(end, ev.Failed) and end.interrupted:
            self.log_line(f"{name}: stopped", "warning")
        else:
            why = end.message if isinstance(end, ev.Failed) else "no result"
            self.log_line(f"{name}: failed: {why}", "error")

    def on_series_ended(self, message: SeriesEnded) -> None:
        counts = ", ".join(f"{k} {n}" for k, n in message.done.items())
        state = "stopped" if message.stopped else "done"
        self.log_line(f"series {state}: sessions finished: {counts} → {message.directory}",
                      "warning" if message.stopped or message.failed else "success")
        if message.failed:
            self.log_line(f"failed: {', '.join(message.failed)} (set aside)", "error")
        if len(message.done) > 1 and all(message.done.values()):
            dirs = " ".join(f"{message.directory}/{k}/" for k in message.done)
            self.log_line(f"c compares them here, or: hotloop compare {dirs}")
            self.series_sides = [sorted(Path(message.directory, k).glob("*.jsonl"))
                                 for k in message.done]
        self.series = None
        self._restore_affinity()
        self._redraw(plots=True)
        self.refresh_bindings()

    def start_run(self, rp: ResolvedPlan, apply_system: bool = False,
                  host: str | None = None) -> None:
        """Start a session of `rp` (system changes only with `apply_system`, the user's yes),
        here or on a [host.NAME] over SSH."""
        if self.running or self.cat is None:
            return
        plan = rp.plan
        chosen = start.Choices(apply_system=apply_system)
        if host is not None and rp.kernel.image:
            # there it would run that host's own kernel, silently
            self.log_line(f"not run: kernel profile {rp.kernel.name} boots {rp.kernel.image} "
                          f"in a VM on this machine, not on {host}", "error")
            return
        if host is None:
            path = results.default_path(plan.name, self.results_dir)
            self.session = start.here(rp, path, chosen)
        else:
            path = results.default_path(f"{plan.name}-{host}", self.results_dir)
            self.session = start.there(self.cat.hosts[host], plan, path, chosen)
        self.series_sides = None
        live = self._new_live(rp)
        self.log_line(f"run {plan.name}: {rp.workload.name}, {plan.runs} runs "
                      f"(+{plan.warmup} warmup), cpu {rp.cpu.name}"
                      + (f", on {host} over SSH" if host else "") + _in_vm(rp) + f" → {path}")
        if host is None:
            self._away_from(rp.cpu.cpus)
        self.worker = self.run_session(self.session, live)
        if self.narrow:
            self.set_view("live")
        self.refresh_bindings()

    @work(exclusive=True, group="session", exit_on_error=False)
    async def run_session(self, session: Session | RemoteSession | VmSession,
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
        except HotloopError as e:             # e.g. the workload does not compile
            self.post_message(LogLine(str(e), "error"))
        except Exception as e:  # noqa: BLE001 - a session bug must not kill the console
            self.post_message(LogLine(f"session error: {type(e).__name__}: {e}", "error"))
        finally:
            live.end(outcome)
            path = session.result_file         # gone when nothing ran (bad input)
            self.post_message(SessionEnded(outcome, str(path) if path.exists() else "",
                                           live.n))

    _since_yield = 0

    async def _feed(self, event: ev.Event, live: LiveRun) -> str | None:
        """One event of the session that runs into its live model and the panels; the
        session's outcome once it ends."""
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
                self.post_message(LogLine(
                    f"the VM is up: kernel {h.kernel_release} ({h.kernel.name}), "
                    f"{vm.accel}, {vm.cpus} vCPUs", "info"))
            live.dirty = True
            self.find_noise(live, event.header)
        elif isinstance(event, ev.HotSymbols):
            self.post_message(SymbolsArrived(event))
        elif isinstance(event, ev.Warning):
            self.post_message(LogLine(event.message, "warning"))
        elif isinstance(event, ev.Finished):
            return "finished"
        elif isinstance(event, ev.Failed):
            if not event.interrupted:
                self.post_message(LogLine(event.message, "error"))
            return "stopped" if event.interrupted else "failed"
        return None

    @work(thread=True, group="noise")
    def find_noise(self, live: LiveRun, header: Header) -> None:
        """The calibrated session noise of what runs (for the stats panel's "detect")."""
        from hotloop.analysis import noise
        profile, _ = noise.find(header)
        found = profile.metrics.get(header.workload.metric) if profile is not None else None
        if found is not None:
            live.noise = found
            live.dirty = True

    def on_symbols_arrived(self, message: SymbolsArrived) -> None:
        hot = message.symbols
        could = self._annotatable() is not None
        self._q(SymbolsTable).show(hot)
        if (self._annotatable() is not None) != could:
            self.refresh_bindings()         # `a` in the footer: enabled, or not
        where = "whole run" if hot.scope == "session" else f"window {hot.window}"
        self._q("#symbols").border_title = f"hot symbols · {where}"

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """`enter` on a hot symbol: its instructions (the latest window while the run goes
        on, the whole run once the panel shows the whole run)."""
        table = event.data_table
        if isinstance(table, SymbolsTable) and not self.console_blocked:
            self._annotate(table.symbol_at(event.cursor_row))

    def action_annotate(self) -> None:
        """`a`, wherever the focus is: the hot symbols' cursor row (the top one at first)."""
        self._annotate(self._annotatable())

    def _annotatable(self) -> ev.HotSymbol | None:
        """The symbol `a` would annotate, None when there is none (no run, no samples)."""
        table = self._q(SymbolsTable)
        if table.latest is None or self.live is None or not self.live.result_file:
            return None
        return table.selected()

    def _annotate(self, sym: ev.HotSymbol | None) -> None:
        hot = self._q(SymbolsTable).latest
        if hot is None or sym is None or self.live is None or not self.live.result_file:
            return
        from hotloop.console.screens.annotation import AnnotationScreen  # off the launch path
        from hotloop.perf.annotate import nothing_to_annotate
        session = self.session
        unavailable = nothing_to_annotate(sym)
        if isinstance(session, RemoteSession) and not unavailable:
            unavailable = (f"{sym.symbol}: the run's perf data is on {session.host.name}: "
                           f"annotate it there once the run is over (hotloop annotate "
                           f"RESULT {sym.symbol})")
        # while it runs, perf keeps off the workload's CPUs, at idle priority
        background = set(session.rp.cpu.cpus) if isinstance(session, Session) \
            and self.live.running else None
        self.push_screen(AnnotationScreen(sym, perf_dir(Path(self.live.result_file)),
                                          whole_run=hot.scope == "session",
                                          build_ids=hot.build_ids, binaries=hot.binaries,
                                          pids=hot.pids, comms=hot.comms,
                                          background=background,
                                          unavailable=unavailable))

    def on_session_ended(self, message: SessionEnded) -> None:
        live = self.live
        s = live.summary() if live else None
        unit = live.unit if live else ""
        if message.outcome == "finished" and s is not None:
            self.log_line(f"done: {s.n} runs, median {si(s.median, unit)}, "
                          f"CV {s.cv * 100:.2f}% → {message.result_file}", "success")
        elif message.outcome == "stopped":
            kept = f"; {message.runs} runs kept in {message.result_file}" \
                if message.result_file else ""
            self.log_line(f"stopped{kept}", "warning")
        else:
            self.log_line(f"failed after {message.runs} runs"
                          + (f"; see {message.result_file}" if message.result_file else ""),
                          "error")
        if live is not None and live.perf and self._q(SymbolsTable).latest is None:
            self._q(SymbolsTable).show_message("perf: no samples")
        self._restore_affinity()
        self._redraw(plots=True)
        self.refresh_bindings()

    async def action_stop(self) -> None:
        await self.stop_run(wait=False)

    async def stop_run(self, wait: bool = True) -> None:
        """Stop the session; with `wait`, return once its worker (and processes) are gone."""
        worker, session = self.worker, self.session
        if self.series is not None and worker is not None and self.running:
            # a series: no session after this one, the one running ended as a stop does
            self.log_line("stopping the series: the sessions done are kept", "warning")
            self.series.stop()
            if session is None or not session.pids:
                worker.cancel()
            waiter = asyncio.ensure_future(self._await_worker(worker))
            if wait:
                await waiter
            return
        if worker is None or session is None or not self.running:
            return
        self.log_line("stopping…" if not isinstance(session, RemoteSession) else
                      f"stopping: {session.host.name} ends its run and restores its system "
                      f"(up to {session.host.stop_wait:g} s)", "warning")
        self._stop_asked = True
        session.stop()
        if not session.pids:                  # not started yet: nothing for stop() to kill
            worker.cancel()
        waiter = asyncio.ensure_future(self._await_worker(worker))
        if wait:
            await waiter

    async def _await_worker(self, worker: Worker) -> None:
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

    async def action_quit(self) -> None:
        await self.stop_run(wait=True)
        self.exit()

    def _abandon_run(self, message: str, signame: str) -> None:
        """From the watchdog's thread: end the run without the event loop."""
        session = self.session
        if session is not None:
            session.abandon(message, signame)

    @property
    def exit_status(self) -> int:
        """128 + the signal once one came or the terminal went, else the app's code."""
        if self.watchdog is not None and self.watchdog.status is not None:
            return self.watchdog.status
        return self.return_code or 0

    def _on_signal(self, signum: int) -> None:
        """SIGTERM/SIGHUP (a dropped SSH session): quit as `q` does, run stopped first."""
        async def quit_cleanly() -> None:
            await self.stop_run(wait=True)
            self.exit(return_code=128 + signum)
        self.run_worker(quit_cleanly(), group="signal", exclusive=True)

    # --- comparing -----------------------------------------------------------------

    def action_compare(self) -> None:
        """The compare screen on the results directory (the comparison and scipy load only then)."""
        if self.console_blocked:
            return
        from hotloop.console.screens.compare import (
            CompareScreen,  # not on the launch path
        )
        self.push_screen(CompareScreen(self.results_dir, self.series_sides))

    # --- saving ------------------------------------------------------------------

    def action_save(self) -> None:
        if self.cat is None or self.form.base is None:
            return
        bad = self.form.errors()
        if bad:
            self.notify(visible("fix the parameters first: " + "; ".join(bad)),
                        severity="error", markup=False)
            return
        base = self.form.base.name
        taken = {*self.cat.plans, *self.cat.workloads}
        suggestion, n = base, 1
        while suggestion in taken:          # a workload's own name is no plan's
            n += 1
            suggestion = f"{base}-{n}"
        self.push_screen(SavePlanScreen(suggestion, self._save_as), self._saved)

    def _save_as(self, name: str) -> str | None:
        """Save the form as plan `name`; an error message, or None once saved."""
        assert self.cat is not None
        try:
            plan = self.form.build(name)
            base = self.form.base
            summary = plan.summary if base is not None and base.name == name else \
                f"saved from {base.name if base else plan.workload} in the console"
            plan = replace(plan, summary=summary, origin="")
            path = catalog.save_plan(plan, cat=self.cat)
        except (ValueError, HotloopError) as e:
            return str(e)
        self.log_line(f"saved plan {name} to {path}", "success")
        return None

    async def _saved(self, name: str | None) -> None:
        if name is None:
            return
        try:
            self.cat = catalog.load(self.profiles, skip_bad=True)
        except HotloopError as e:
            self.log_line(str(e), "error")
            return
        self._q(CatalogTree).fill(self.cat)
        await self.pick("plan", name)
        self._q(CatalogTree).focus()

    # --- views -------------------------------------------------------------------

    def set_view(self, view: str) -> None:
        self.view = view
        # The classes say which view is up, and style nothing: a class on the screen restyles
        # every widget (70-190 ms at 80-100 columns, on the event loop at `r`); `display` on
        # the two containers is one layout.
        self.main_screen.update_classes({"-view-setup": view == "setup",
                                         "-view-live": view == "live"}, update=False)
        self._show_view(self.size.width)
        if self.narrow:
            if view == "setup":
                self._q(CatalogTree).focus()
            else:
                self._q(SymbolsTable).focus()
        self._status()

    def action_toggle_view(self) -> None:
        self.set_view("live" if self.view == "setup" else "setup")

    def _views_ready(self) -> None:
        self._views_shown = True
        self._show_view(self.size.width)

    def _show_view(self, width: int) -> None:
        """Wide: setup and live side by side; narrow: the current view only."""
        if not self._views_shown:
            return
        narrow = width < WIDE_FROM
        for name in ("setup", "live"):
            box = self._q(f"#{name}")
            show = not narrow or self.view == name
            if box.display != show:
                box.display = show

    def on_resize(self, event) -> None:
        self._show_view(event.size.width)
        self.call_after_refresh(self.refresh_bindings)
        self.call_after_refresh(self._status)

    # --- drawing -----------------------------------------------------------------

    def plot_interval(self) -> float:
        """Seconds between chart redraws: what their last render cost, over the budget."""
        cost = self._q(HistogramPlot).cost + self._q(DriftPlot).cost
        return min(PLOT_MAX_S, max(REDRAW_S, cost / PLOT_BUDGET))

    def _tick(self) -> None:
        try:
            self._tick_once()
        except NoMatches:       # shutting down: the panels are already gone
            pass

    def _tick_once(self) -> None:
        live = self.live
        if live is None:
            return
        now = time.monotonic()
        if live.dirty:
            live.dirty = False
            self._plots_due = True
            self._redraw(plots=False)
            self._status()
        elif live.running and now - self._clock_at >= 0.5:
            self._clock_at = now
            self._q(StatsPanel).show(live)   # the clock and time left move on
        if self._plots_due and (not live.running or now - self._plots_at >= self.plot_interval()):
            self._redraw(plots=True)

    def _redraw(self, plots: bool) -> None:
        live = self.live
        self._q(StatsPanel).show(live)
        if plots:
            self._plots_at = time.monotonic()
            self._plots_due = False
            self._q(HistogramPlot).show(live)
            self._q(DriftPlot).show(live)

    def _status(self) -> None:
        """One row that fits the terminal: what the form would run (on which host), how the
        run goes, the view key.  Short of room, the CPU profile goes first, then the
        workload, then the separators narrow, then the number of runs, then a host's long
        name is cut, and the plan's last; never a series' session, the run's progress nor
        the view key."""
        plans: list[tuple[str, str]] = []       # the plan's part, most to least said
        form_plan = self._status_plan()
        if form_plan is not None:
            plan, edited = form_plan
            host = self.form.host
            name, on = f"{plan.name}{'*' if edited else ''}", f" · on {host}" if host else ""
            runs = f"{plan.runs} runs"
            plans = [(f"{name} · {plan.workload} · ", f"cpu {plan.cpu} · {runs}{on}"),
                     (f"{name} · {plan.workload} · ", f"{runs}{on}"),
                     (f"{name} · ", f"{runs}{on}"), (name, on)]
            if self.narrow:
                plans = plans[1:]
        tail: list[str] = []
        if self.series is not None and self.series_at is not None:
            slot, n = self.series_at
            tail.append(f"{slot.kernel} · session {slot.session} of {n}")
        live = self.live
        if live is not None:
            tail.append({"building": "building", "booting": "booting",
                         "running": f"running {live.n}/{live.runs}",
                         "finished": f"done {live.n}/{live.runs}",
                         "stopped": f"stopped {live.n}/{live.runs}",
                         "failed": "failed"}[live.state])
        if self.narrow:
            tail.append(f"v {'live' if self.view == 'setup' else 'setup'}")
        text = status_row(plans, tail, self.size.width - 2, dim_last=self.narrow)
        status = self._q("#status", Static)
        if status.content != text:          # one row, docked: no layout of the screen
            status.update(text, layout=False)

    def _status_plan(self) -> tuple[Plan, bool] | None:
        """The form's plan and whether it was edited: built and resolved once per change of
        the form (FormChanged, a pick), not on every tick of a run."""
        form = self.form
        if form.base is None:
            return None
        if self._form_plan is None or self._form_plan[0].name != form.base.name:
            try:
                plan = form.build()
                self._form_plan = (plan, self._edited(plan, form.base))
            except (ValueError, HotloopError):
                self._form_plan = (form.base, True)
        return self._form_plan

    def _edited(self, plan: Plan, base: Plan) -> bool:
        """Whether the form differs from the plan it was loaded from (params resolved)."""
        if self.cat is None:
            return False
        a, b = self.cat.resolve(plan), self.cat.resolve(base)
        return a.params != b.params or replace(plan, params={}) != replace(base, params={})

    def log_line(self, text: str, level: str = "info") -> None:
        colour = {"warning": "warning", "error": "error", "success": "success"}.get(level)
        style = ""
        if colour:
            style = self.theme_variables.get(colour, "") or ""
        prefix = {"warning": "warning: ", "error": "error: "}.get(level, "")
        # a workload's error text may hold an ESC or newlines: shown, never obeyed
        self._q(LogPanel).add(Text(prefix + visible(text), style=style))

    def on_log_line(self, message: LogLine) -> None:
        self.log_line(message.text, message.level)

    # --- keeping off the worker's CPUs ---------------------------------------------

    def _away_from(self, cpus: tuple[int, ...]) -> None:
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

    def _restore_affinity(self) -> None:
        if self._affinity is not None:
            try:
                os.sched_setaffinity(0, self._affinity)
            except OSError:
                pass
            self._affinity = None


def _terminal_fds() -> list[int]:
    """The descriptors Textual reads keys from and draws on."""
    fds = []
    for f in (sys.__stdin__, sys.__stdout__, sys.__stderr__):
        try:
            if f is not None:
                fds.append(f.fileno())
        except (OSError, ValueError):
            pass
    return fds


SEPARATORS = ("  │  ", " │ ")


def status_row(plans: list[tuple[str, str]], tail: list[str], room: int,
               dim_last: bool = False) -> Text:
    """The status row in `room` columns: "hotloop", the first of `plans` (each a head and an
    end, most to least said) that fits, and `tail` (the run's progress, the view key), the
    separators narrowed if need be.  When none fits, the last one's end (a host's long
    name) is cut, down to 12 columns, then its head: the tail is never cut."""
    def width(sep: str, plan: tuple[str, str] | None) -> int:
        return len("hotloop") + sum(len(sep) + len(t) for t in tail) + \
            (len(sep) + len(plan[0]) + len(plan[1]) if plan else 0)
    choice = next(((sep, plan) for sep in SEPARATORS for plan in plans
                   if width(sep, plan) <= room), None)
    if choice is None and plans:
        sep, (head, end) = SEPARATORS[-1], plans[-1]
        spare = room - width(sep, ("", ""))
        end = _cut(end, max(min(len(end), 12), spare - len(head)))     # the host's name first
        choice = sep, (_cut(head, max(0, spare - len(end))), end)
    sep, plan = choice if choice is not None else (
        next((s for s in SEPARATORS if width(s, None) <= room), SEPARATORS[-1]), None)
    text = Text("hotloop", style="bold")
    if plan is not None:
        text.append(sep + plan[0] + plan[1])
    for i, t in enumerate(tail):
        text.append(sep)
        text.append(t, style="dim" if dim_last and i == len(tail) - 1 else "")
    return text


def _in_vm(rp: ResolvedPlan) -> str:
    """What a session's log line adds when its kernel profile boots a VM."""
    return f", in a VM booting {rp.kernel.image}" if rp.kernel.image else ""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(0, width - 1)] + "…" if width else ""
