"""The live view: the distribution, the stats, the hot symbols and the run-by-run chart over
the log, drawn from the live model of the run (hotloop.console.live) by the screen's timer.

The stats redraw at most at that timer's rate, the charts at a rate their cost allows.
"""
from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.containers import Grid, Vertical

from hotloop import events as ev
from hotloop.console.live import LiveRun
from hotloop.console.widgets.log import LogPanel
from hotloop.console.widgets.plots import DriftPlot, HistogramPlot
from hotloop.console.widgets.stats_panel import StatsPanel
from hotloop.console.widgets.symbols import HINT, SymbolsTable

REDRAW_S = 0.1                  # stats: at most 10 redraws a second, however fast runs arrive
PLOT_BUDGET = 0.03              # charts: at most ~3% of a CPU, so their rate adapts to their cost
PLOT_MAX_S = 1.0                # ...but at least one chart redraw a second


class LiveView(Vertical):

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._plots_at = 0.0            # when the charts were last redrawn
        self._plots_due = False
        self._clock_at = 0.0

    def compose(self) -> ComposeResult:
        # a grid, so that a narrow screen can give the symbols the wide column
        # (app.tcss places the four panels: row-major, by their spans)
        with Grid(id="live-top"):
            yield HistogramPlot(id="histogram")
            yield StatsPanel(id="stats")
            yield SymbolsTable(id="symbols")
            yield DriftPlot(id="drift")
        yield LogPanel(id="log")

    def on_mount(self) -> None:
        self.query_one(SymbolsTable).border_subtitle = HINT
        titles = {"#histogram": "distribution", "#drift": "run by run", "#stats": "stats",
                  "#symbols": "hot symbols", "#log": "log"}
        for sel, title in titles.items():
            self.query_one(sel).border_title = title

    def clear_for(self, live: LiveRun) -> None:
        """A session about to start: its panels cleared."""
        symbols = self.query_one(SymbolsTable)
        symbols.show_message("perf: waiting for the first window…" if live.perf
                             else "perf is off for this run")
        symbols.border_title = "hot symbols" if live.perf else "hot symbols · off"
        self.redraw(live, plots=True)

    def show_symbols(self, hot: ev.HotSymbols) -> None:
        table = self.query_one(SymbolsTable)
        if hot.dropped:
            # dropped unread (perf script fell behind): the last window read stays, and the
            # title says this one's fate; with none read yet, the reason is the panel's
            shown = table.latest
            if shown is not None and shown.symbols and shown.scope == "window":
                table.border_title = (f"hot symbols · window {shown.window} · "
                                      f"{hot.window} dropped unread")
            else:
                table.show_message(f"perf window {hot.window} {hot.dropped}")
                table.border_title = f"hot symbols · window {hot.window}"
            return
        table.show(hot)
        where = "whole run" if hot.scope == "session" else f"window {hot.window}"
        table.border_title = f"hot symbols · {where}"

    def plot_interval(self) -> float:
        """Seconds between chart redraws: what their last render cost, over the budget."""
        cost = self.query_one(HistogramPlot).cost + self.query_one(DriftPlot).cost
        return min(PLOT_MAX_S, max(REDRAW_S, cost / PLOT_BUDGET))

    def tick(self, live: LiveRun) -> bool:
        """What changed in `live` since the last tick, drawn; whether anything had."""
        now = time.monotonic()
        changed = live.dirty
        if changed:
            live.dirty = False
            self._plots_due = True
            self.redraw(live, plots=False)
        elif live.running and now - self._clock_at >= 0.5:
            self._clock_at = now
            self.query_one(StatsPanel).show(live)   # the clock and time left move on
        if self._plots_due and (not live.running or now - self._plots_at >= self.plot_interval()):
            self.redraw(live, plots=True)
        return changed

    def redraw(self, live: LiveRun | None, plots: bool) -> None:
        self.query_one(StatsPanel).show(live)
        if plots:
            self._plots_at = time.monotonic()
            self._plots_due = False
            self.query_one(HistogramPlot).show(live)
            self.query_one(DriftPlot).show(live)
