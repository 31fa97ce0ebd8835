"""The console's own screen: the catalogue and the form (setup), the live panels, the status
row, the log, and the keys that run, stop, save, compare and annotate.

The runs themselves are the run controller's (hotloop.console.controller): its worker feeds
a plain `LiveRun` model, and a 10 Hz timer here redraws whatever changed, so thousands of
runs a second cost a handful of redraws.  `c` opens the compare screen on the results
directory (hotloop.analysis.compare and scipy load only then).  A run whose kernel/CPU
profile would change the system asks first (a modal listing each change); only a yes runs
with `apply_system`.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import DataTable

from hotloop import catalog
from hotloop import events as ev
from hotloop.catalog import Catalog, Plan
from hotloop.console.controller import RunController
from hotloop.console.messages import (
    BisectEnded,
    CatalogPicked,
    FormChanged,
    LiveEnded,
    LiveStarted,
    LogLine,
    SeriesEnded,
    SessionEnded,
    SymbolsArrived,
)
from hotloop.console.screens.save import SavePlanScreen, free_name, save_as
from hotloop.console.widgets.catalog_tree import CatalogTree
from hotloop.console.widgets.footer import ConsoleFooter
from hotloop.console.widgets.live_view import REDRAW_S, LiveView
from hotloop.console.widgets.log import LogPanel
from hotloop.console.widgets.params import ParamsForm
from hotloop.console.widgets.status import StatusRow
from hotloop.console.widgets.symbols import SymbolsTable
from hotloop.errors import HotloopError
from hotloop.results.perf_data import perf_dir
from hotloop.visible import visible

DEFAULT_PLAN = "quick"
CONSOLE_ACTIONS = ("run", "stop", "save", "toggle_view", "compare", "annotate", "bisect")
WIDE_FROM = 110                 # columns: setup and live side by side; below, one at a time


class MainScreen(Screen[None]):
    BINDINGS = [
        Binding("r", "run", "Run", id="run"),
        Binding("x", "stop", "Stop", id="stop"),
        Binding("w", "save", "Save plan", id="save"),
        Binding("c", "compare", "Compare", id="compare"),
        Binding("a", "annotate", "Annotate", id="annotate"),
        Binding("v", "toggle_view", "View", id="view"),     # the status line: "v live"
        # the footer has no room at 80 columns: the palette names it with its key
        Binding("b", "bisect", "Bisect", id="bisect", show=False),
        Binding("escape", "leave_field", "Leave field", id="leave", show=False),
    ]

    def __init__(self, profiles: list[Path], results_dir: Path) -> None:
        super().__init__()
        self.profiles = list(profiles)
        self.results_dir = Path(results_dir)
        self.cat: Catalog | None = None
        self.controller = RunController(self, self.results_dir)
        # made now, not composed later: the form is there to ask (`form.base is None` until
        # a plan loads) before the screen has composed
        self.form = ParamsForm(id="params")
        self.live_view = LiveView(id="live")
        self.view = "setup"
        self._form_plan: tuple[Plan, bool] | None = None    # the status line's, until FormChanged
        self._views_shown = False       # both views are laid out once before one is hidden
        self.loaded = asyncio.Event()   # the catalogue and the first plan: the console is up

    # --- layout ----------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusRow("hotloop", id="status")
        with Horizontal(id="main"):
            with Vertical(id="setup"):
                yield CatalogTree(id="catalog")
                yield self.form
            yield self.live_view
        yield ConsoleFooter()

    def on_mount(self) -> None:
        tree = self.query_one(CatalogTree)
        tree.border_title = "catalogue"
        self.form.border_title = "parameters"
        self.add_class("-view-setup")
        # after the first layout, so that the log has a width and writes its lines now
        self.call_after_refresh(self._views_ready)
        self.set_interval(REDRAW_S, self._tick)
        tree.focus()
        # in a worker: the screen meanwhile lays out and shows its footer's keys
        self.run_worker(self._load(), group="load")

    async def _load(self) -> None:
        """The catalogue in its tree, the first plan in the form; `loaded` then."""
        try:
            await self._load_catalogue()
        finally:
            self.loaded.set()

    async def _load_catalogue(self) -> None:
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
        self.query_one(CatalogTree).fill(self.cat)
        first = (("plan", DEFAULT_PLAN) if DEFAULT_PLAN in self.cat.plans else
                 ("plan", next(iter(self.cat.plans))) if self.cat.plans else
                 ("workload", next(iter(self.cat.workloads))) if self.cat.workloads else None)
        if first:
            await self.pick(*first)
        self.query_one(CatalogTree).focus()

    @property
    def console_blocked(self) -> bool:
        """A screen of ours (compare, consent, save) is on top: the console's keys rest."""
        from textual.command import CommandPalette
        for screen in reversed(self.app.screen_stack):
            if isinstance(screen, CommandPalette):
                continue
            return bool(getattr(screen, "blocks_console", False))
        return False

    @property
    def narrow(self) -> bool:
        return self.has_class("-narrow")

    # --- the catalogue and the form ----------------------------------------------

    async def pick(self, kind: str, name: str) -> None:
        """Show a catalogue entry: plans and workloads load the form, profiles set it."""
        cat = self.cat
        if cat is None:
            return
        self.query_one(CatalogTree).point_at(kind, name)
        try:
            if kind == "plan":
                variants = cat.variants(cat.plans[name])
                await self.form.load(cat, variants[0][1])
                if len(variants) > 1:
                    self.log_line(self.form.show_batch(name, variants))
            elif kind == "workload":
                await self.form.load(cat, Plan(name=name, workload=name))
            elif kind in ("cpu", "kernel"):
                self.form.choose_profile(cat, kind, name)
        except HotloopError as e:
            self.log_line(str(e), "error")
        self._form_plan = None
        self._status()

    async def on_catalog_picked(self, message: CatalogPicked) -> None:
        await self.pick(message.kind, message.name)

    def on_form_changed(self, message: FormChanged) -> None:
        self._form_plan = None
        self._status()

    def action_leave_field(self) -> None:
        focused = self.focused
        if focused is not None and self.form in focused.ancestors:
            self.query_one(CatalogTree).focus()

    # --- running -----------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in CONSOLE_ACTIONS and self.console_blocked:
            return False
        running = self.controller.running
        if action in ("run", "bisect"):
            return None if running or self.cat is None else True
        if action == "stop":
            return True if running else None
        if action == "toggle_view":
            return self.narrow
        if action == "annotate":        # shown always, enabled once there is a symbol
            return True if self._annotatable() is not None else None
        return True

    def action_run(self) -> None:
        cat = self.cat
        if self.controller.running or cat is None:
            return
        host = self.form.host
        if self.form.series is not None:
            self.run_series_asked(host)
            return
        try:
            plan = self.form.build()
            rp, changes = self.controller.check_run(cat, plan, host)
        except (ValueError, HotloopError) as e:
            self.cannot_run(e)
            return
        if not changes:
            self.started(self.controller.start_run(cat, rp, host=host))
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.log_line(f"consent given: {', '.join(changes)} (restored after the run)",
                              "warning")
                self.started(self.controller.start_run(cat, rp, apply_system=True, host=host))
            else:
                self.log_line(f"not run: kernel profile {rp.kernel.name} would change "
                              f"{', '.join(changes)}; nothing was changed", "warning")
                self.notify("not run: nothing was changed on the system", timeout=4)

        from hotloop.console.screens.consent import ConsentScreen
        self.app.push_screen(ConsentScreen(plan.name, rp.kernel.name, changes), answered)

    def run_series_asked(self, host: str | None) -> None:
        """`r` with a second kernel, a variant (vs) or more than one session: a series here,
        after the consent its kernels' system changes need."""
        asked = self.form.series
        assert asked is not None and self.cat is not None
        kernels, n = asked
        try:
            plan = self.form.build()
            run, changes = self.controller.check_series(self.cat, plan, kernels, n, host,
                                                        self.form.vs)
        except (ValueError, HotloopError) as e:
            self.cannot_run(e)
            return
        if not changes:
            self.started(self.controller.start_series(run))
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.log_line(f"consent given: {', '.join(changes)} (restored after each "
                              f"session)", "warning")
                self.started(self.controller.start_series(run, apply_system=True))
            else:
                self.log_line(f"not run: the series' profiles would change "
                              f"{', '.join(changes)}; nothing was changed", "warning")

        from hotloop.console.screens.consent import ConsentScreen
        self.app.push_screen(ConsentScreen(plan.name, ", ".join(sorted({rp.kernel.name for rp in
                                                                  run.resolved.values()})),
                                             changes),
                             answered)

    def started(self, started: bool) -> None:
        if not started:
            return
        if self.narrow:
            self.set_view("live")
        self.refresh_bindings()

    def cannot_run(self, e: Exception) -> None:
        self.log_line(f"cannot run: {' '.join(str(e).split())}", "error")
        self.notify(f"cannot run: {visible(str(e))}", severity="error", timeout=4, markup=False)

    def on_live_started(self, message: LiveStarted) -> None:
        self.live_view.clear_for(message.live)

    def on_live_ended(self, message: LiveEnded) -> None:
        self._redraw(plots=True)

    def on_session_ended(self, message: SessionEnded) -> None:
        live = self.controller.live
        if live is not None and live.perf and self.query_one(SymbolsTable).latest is None:
            self.query_one(SymbolsTable).show_message("perf: no samples")
        self._redraw(plots=True)
        self.refresh_bindings()

    def on_series_ended(self, message: SeriesEnded) -> None:
        self._redraw(plots=True)
        self.refresh_bindings()

    def action_bisect(self) -> None:
        """`b`: the revision of the repository here that changed the form's plan's speed."""
        if not self.controller.running and self.cat is not None and self.form.base is not None:
            from hotloop.console.screens.bisect import ask_bisect  # off the launch path
            ask_bisect(self)

    def on_bisect_ended(self, message: BisectEnded) -> None:
        self._redraw(plots=True)
        self.refresh_bindings()
        if message.text:
            from hotloop.console.screens.bisect import BisectReportScreen
            self.app.push_screen(BisectReportScreen(message.text, message.mail,
                                                    Path(message.state) / "reports"))

    async def action_stop(self) -> None:
        await self.controller.stop(wait=False)

    # --- hot symbols and annotating -------------------------------------------------

    def on_symbols_arrived(self, message: SymbolsArrived) -> None:
        hot = message.symbols
        could = self._annotatable() is not None
        self.live_view.show_symbols(hot)
        if (self._annotatable() is not None) != could:
            self.refresh_bindings()         # `a` in the footer: enabled, or not

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
        table = self.query_one(SymbolsTable)
        live = self.controller.live
        if table.latest is None or live is None or not live.result_file:
            return None
        return table.selected()

    def _annotate(self, sym: ev.HotSymbol | None) -> None:
        hot = self.query_one(SymbolsTable).latest
        live = self.controller.live
        if hot is None or sym is None or live is None or not live.result_file:
            return
        from hotloop.console.screens.annotation import AnnotationScreen  # off the launch path
        from hotloop.perf.annotate import nothing_to_annotate
        unavailable = nothing_to_annotate(sym) or self.controller.perf_elsewhere(sym.symbol)
        background = self.controller.perf_keeps_off()
        self.app.push_screen(AnnotationScreen(sym, perf_dir(Path(live.result_file)),
                                              whole_run=hot.scope == "session",
                                              build_ids=hot.build_ids, binaries=hot.binaries,
                                              pids=hot.pids, comms=hot.comms,
                                              background=background,
                                              unavailable=unavailable))

    # --- comparing and saving ----------------------------------------------------------

    def action_compare(self) -> None:
        """The compare screen on the results directory (the comparison and scipy load only then)."""
        if self.console_blocked:
            return
        from hotloop.console.screens.compare import (
            CompareScreen,  # not on the launch path
        )
        self.app.push_screen(CompareScreen(self.results_dir, self.controller.series_sides))

    def action_save(self) -> None:
        if self.cat is None or self.form.base is None:
            return
        bad = self.form.errors()
        if bad:
            self.notify(visible("fix the parameters first: " + "; ".join(bad)),
                        severity="error", markup=False)
            return
        self.app.push_screen(SavePlanScreen(free_name(self.cat, self.form.base.name),
                                            self._save_as), self._saved)

    def _save_as(self, name: str) -> str | None:
        """Save the form as plan `name`; an error message, or None once saved."""
        assert self.cat is not None
        try:
            path = save_as(self.cat, self.form.build(name), self.form.base, name)
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
        self.query_one(CatalogTree).fill(self.cat)
        await self.pick("plan", name)
        self.query_one(CatalogTree).focus()

    # --- views -------------------------------------------------------------------

    def set_view(self, view: str) -> None:
        self.view = view
        # The classes say which view is up, and style nothing: a class on the screen restyles
        # every widget (70-190 ms at 80-100 columns, on the event loop at `r`); `display` on
        # the two containers is one layout.
        self.update_classes({"-view-setup": view == "setup",
                             "-view-live": view == "live"}, update=False)
        self._show_view(self.app.size.width)
        if self.narrow:
            if view == "setup":
                self.query_one(CatalogTree).focus()
            else:
                self.query_one(SymbolsTable).focus()
        self._status()

    def action_toggle_view(self) -> None:
        self.set_view("live" if self.view == "setup" else "setup")

    def _views_ready(self) -> None:
        self._views_shown = True
        self._show_view(self.app.size.width)

    def _show_view(self, width: int) -> None:
        """Wide: setup and live side by side; narrow: the current view only."""
        if not self._views_shown:
            return
        narrow = width < WIDE_FROM
        for name in ("setup", "live"):
            box = self.query_one(f"#{name}", Vertical)
            show = not narrow or self.view == name
            if box.display != show:
                box.display = show

    def on_resize(self, event: events.Resize) -> None:
        self._show_view(event.size.width)
        self.call_after_refresh(self.refresh_bindings)
        self.call_after_refresh(self._status)

    # --- drawing -----------------------------------------------------------------

    def _tick(self) -> None:
        try:
            self._tick_once()
        except NoMatches:       # shutting down: the panels are already gone
            pass

    def _tick_once(self) -> None:
        live = self.controller.live
        if live is not None and self.live_view.tick(live):
            self._status()

    def _redraw(self, plots: bool) -> None:
        self.live_view.redraw(self.controller.live, plots)

    def _status(self) -> None:
        """The status row, for what the form would run and how the run goes."""
        c = self.controller
        self.query_one(StatusRow).show(self._status_plan(), self.form.host,
                                       c.series_at if c.series is not None else None,
                                       c.live, self.narrow, self.view)

    def _status_plan(self) -> tuple[Plan, bool] | None:
        """The form's plan and whether it was edited: built and resolved once per change of
        the form (FormChanged, a pick), not on every tick of a run."""
        base = self.form.base
        if base is None:
            return None
        if self._form_plan is None or self._form_plan[0].name != base.name:
            self._form_plan = self.form.built()
        return self._form_plan

    def log_line(self, text: str, level: str = "info") -> None:
        self.query_one(LogPanel).say(text, level)

    def on_log_line(self, message: LogLine) -> None:
        self.log_line(message.text, message.level)
