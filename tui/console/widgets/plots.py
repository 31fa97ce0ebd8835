"""The live charts: the distribution of the primary metric and its run-by-run drift."""
from __future__ import annotations

import math
import time

from textual_plotext import PlotextPlot

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
    """A plot of a LiveRun, redrawn on demand (`show`), never from a timer of its own."""

    DEFAULT_CSS = """
    _LivePlot { height: 1fr; min-height: 5; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.live: LiveRun | None = None
        self.cost = 0.0                 # seconds the last render took (plotext is not free)

    def show(self, live: LiveRun | None) -> None:
        self.live = live
        self.refresh()

    def on_resize(self) -> None:
        self.refresh()

    def render(self):
        start = time.perf_counter()
        plt = self.plt
        plt.clear_figure()
        plt.frame(False)
        self.draw(plt, self.live)
        out = super().render()
        self.cost = time.perf_counter() - start
        return out

    def draw(self, plt, live: LiveRun | None) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _empty(self, plt, text: str) -> None:
        plt.xticks([])
        plt.yticks([])
        plt.text(text, 0.5, 0.5, alignment="center")
        plt.xlim(0, 1)
        plt.ylim(0, 1)


class HistogramPlot(_LivePlot):
    """How the repetitions so far spread over the primary metric, unit on the x axis."""

    def buckets_target(self) -> int:
        n = self.live.n if self.live else 0
        return max(4, min(max(4, (self.size.width - 8) // 4), 3 * math.ceil(math.sqrt(n))))

    def draw(self, plt, live: LiveRun | None) -> None:
        if live is None or not live.n:
            self._empty(plt, "press r to run" if live is None else "waiting for the first run…")
            return
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

    def draw(self, plt, live: LiveRun | None) -> None:
        if live is None or live.n < 2:
            self._empty(plt, "run by run")
            return
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
