"""The live charts: the distribution of the primary metric and its run-by-run drift."""
from __future__ import annotations

import math
import time

from plotext._dict import themes as plotext_themes
from rich.text import Text
from textual.worker import Worker, WorkerState
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot

from hotloop.console.live import LiveRun
from hotloop.render.units import axis_scale, width_decimals


def _label(x: float) -> str:
    """Tick text: as short as the value allows."""
    if x == 0:
        return "0"
    if abs(x) >= 100 or float(x).is_integer():
        return f"{x:.0f}"
    return f"{x:.3g}"


class _LivePlot(PlotextPlot):
    """A plot of a LiveRun, redrawn on demand (`show`), never from a timer of its own.

    The figure is set up on the event loop (cheap: the LiveRun is read there, where it
    changes) and plotext builds it in a thread: 20-60 ms a chart on an idle CPU, and two or
    three times that while the workload and perf start on a 2-CPU machine, which on the
    loop froze the clock and the keys as run 1 arrived.  One build at a time per chart
    (its plotext figure is not shared); a `show` meanwhile is built after it."""

    DEFAULT_CSS = """
    _LivePlot { height: 1fr; min-height: 5; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.live: LiveRun | None = None
        self.cost = 0.0                 # CPU seconds the last figure took (plotext is not free)
        self.shown_n = -1               # runs in the figure on screen (-1: none built yet)
        self._text = Text()
        self._building = False
        self._worker: Worker | None = None
        self._due = True                # a figure waits to be built

    @property
    def settled(self) -> bool:
        """The figure on screen is the last one asked for (a hidden chart waits to be shown)."""
        return not self._building and not (self._due and self.is_on_screen)

    def show(self, live: LiveRun | None) -> None:
        self.live = live
        self._due = True
        self._build()

    def on_mount(self) -> None:         # PlotextPlot's own only repaints the old figure
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.show(self.live))

    def on_resize(self) -> None:        # also how a chart shown again hears of it
        self._due = True
        self._build()

    def render(self) -> Text:
        return self._text

    def _build(self) -> None:
        size = self.size
        if self._building or not self.is_on_screen or size.width < 1 or size.height < 1:
            return                      # built when the running one ends, or when shown
        self._due = False
        live = self.live
        n = live.n if live is not None else 0
        message = self.empty(live)
        if message is not None:         # nothing to plot: the message alone, no plotext
            row, col = (size.height - 1) // 2, max(0, (size.width - len(message)) // 2)
            self._text = Text("\n" * row + " " * col + message)
            self.cost, self.shown_n = 0.0, n
            self.refresh()
            return
        assert live is not None         # every chart has its message for no run
        start = time.thread_time()
        plt = self.plt
        try:                            # a value the figure cannot take: said, not fatal
            plt.clear_figure()
            plt.frame(False)
            self.draw(plt, live)
            plt.plotsize(size.width, size.height)
            plt._set_size(size.width, size.height)      # as PlotextPlot.render does
            theme = self._get_plotext_theme_name(self.app.theme)
            if theme not in plotext_themes:
                self._register_theme(self.app.theme)
            plt.theme(theme)
        except Exception as e:  # noqa: BLE001 - a chart must not take the console down
            self._failed(e)
            return
        set_up = time.thread_time() - start

        def build() -> tuple[Text, float, int]:     # its own CPU: waits for the GIL are not
            t = time.thread_time()                  # what the redraw budget is about
            return Text.from_ansi(plt.build()), set_up + time.thread_time() - t, n
        self._building = True
        self._worker = self.run_worker(build, thread=True, group="plot", exit_on_error=False)

    def _failed(self, error: BaseException) -> None:
        self._text = Text(f"chart failed: {error}", style="red")
        self.refresh()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._worker or event.state not in (
                WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return                      # not this chart's current build, or not ended
        event.stop()
        self._building = False
        self._worker = None
        built = event.worker.result
        if event.state == WorkerState.SUCCESS and built is not None:
            self._text, self.cost, self.shown_n = built
            self.refresh()
        elif event.state == WorkerState.ERROR:      # plotext's own failure: said, not fatal
            self._failed(event.worker.error or RuntimeError("unknown"))
        if self._due and event.state != WorkerState.CANCELLED:     # not when shutting down
            self._build()

    def empty(self, live: LiveRun | None) -> str | None:  # pragma: no cover - abstract
        """What the chart says instead of a figure, or None when there is one to draw."""
        raise NotImplementedError

    def draw(self, plt: Plot, live: LiveRun) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class HistogramPlot(_LivePlot):
    """How the repetitions so far spread over the primary metric, unit on the x axis."""

    def buckets_target(self) -> int:
        n = self.live.n if self.live else 0
        return max(4, min(max(4, (self.size.width - 8) // 4), 3 * math.ceil(math.sqrt(n))))

    def empty(self, live: LiveRun | None) -> str | None:
        if live is None:
            return "press r to run"
        if live.n:
            return None
        # a run that ended with no runs (its C did not build, its setup failed) waits no more
        return "no runs: the log says why" if not live.running else "waiting for the first run…"

    def draw(self, plt: Plot, live: LiveRun) -> None:
        buckets = live.histogram(self.buckets_target())
        scale, unit = axis_scale(buckets[-1].high, live.unit)
        width = (buckets[0].high - buckets[0].low) / scale
        # Bucket k is drawn at x = k with width 0.8 of the spacing, and edge j at x = j - 0.5,
        # the real values only in the tick labels.  Plotting at the values themselves made
        # plotext (whose bar width is in data units) fill a bar hundreds of plot widths
        # wide when there is one bucket 0.005 units wide: quadratic, 0.4-90 s of blocked
        # event loop on the first run.  Here the x range is always k bucket spacings.
        k = len(buckets)
        ys = [b.count for b in buckets]
        plt.bar(list(range(k)), ys, width=0.8, marker="hd")
        edges = [b.low / scale for b in buckets] + [buckets[-1].high / scale]
        room = max(2, (self.size.width - 8) // 8)    # ticks that fit side by side
        step = max(1, math.ceil(len(edges) / room))
        at = list(range(len(edges)))[::step]
        decimals = width_decimals(width)
        plt.xticks([j - 0.5 for j in at], [f"{edges[j]:.{decimals}f}" for j in at])
        top = max(ys)
        ystep = max(1, math.ceil(top / max(1, (self.size.height - 4) // 2)))
        plt.yticks(list(range(0, top + 1, ystep)))
        plt.ylim(0, top)
        plt.xlim(-0.5, k - 0.5)
        plt.xlabel(f"{unit}  (n={live.n})")


class DriftPlot(_LivePlot):
    """Run by run, so a trend (thermal, caches, a noisy neighbour) shows."""

    DEFAULT_CSS = """
    DriftPlot { height: 7; min-height: 5; }
    """

    def empty(self, live: LiveRun | None) -> str | None:
        return "run by run" if live is None or live.n < 2 else None

    def draw(self, plt: Plot, live: LiveRun) -> None:
        d = live.drift(max(2, 2 * (self.size.width - 8)))
        s = live.summary()
        assert s is not None
        scale, unit = axis_scale(max(abs(s.max), abs(s.min)), live.unit)
        ys = [y / scale for y in d.ys]
        plt.plot(d.xs, ys, marker="braille")
        plt.hline(s.median / scale)
        lo, hi = min(ys), max(ys)
        plt.yticks([lo, hi], [_label(lo), _label(hi)])
        n = live.n
        plt.xticks([1, n], ["1", str(n)])
        self.border_title = f"run by run · {unit}"
