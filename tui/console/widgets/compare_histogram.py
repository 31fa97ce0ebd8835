"""The compare screen's histogram: the primary metric's distributions, one bar a side in
each of the comparison's shared buckets."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from textual.app import RenderResult
from textual_plotext import PlotextPlot

from hotloop.render.units import axis_scale, width_decimals

if TYPE_CHECKING:
    from hotloop.analysis.comparison import Comparison


class CompareHistogram(PlotextPlot):
    """The primary metric's distributions on the comparison's shared bucket edges."""

    DEFAULT_CSS = """
    CompareHistogram { height: 1fr; min-height: 8; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.comparison: Comparison | None = None

    def show(self, comp: Comparison | None) -> None:
        self.comparison = comp
        self.refresh()

    def series(self) -> dict[str, list[int]]:
        """Per compared file (by name): its count in each shared bucket."""
        comp = self.comparison
        if comp is None or comp.histogram is None:
            return {}
        return {s.name: [b.counts[i] for b in comp.histogram.buckets]
                for i, s in enumerate(comp.sides)}

    def on_resize(self) -> None:
        self.refresh()

    def render(self) -> RenderResult:
        plt = self.plt
        plt.clear_figure()
        plt.frame(False)
        comp = self.comparison
        hist = comp.histogram if comp is not None else None
        if comp is None or hist is None or not hist.buckets:
            plt.xticks([])
            plt.yticks([])
            plt.text("pick files and press c" if comp is None else "no runs to show",
                     0.5, 0.5, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            return super().render()
        buckets = hist.buckets
        top = max(abs(buckets[-1].high), abs(buckets[0].low))
        scale, unit = axis_scale(top, hist.unit)
        width = hist.width / scale
        decimals = width_decimals(width)
        labels = [f"{b.low / scale:.{decimals}f}-{b.high / scale:.{decimals}f}"
                  for b in buckets]
        ys = [[b.percents[i] for b in buckets] for i in range(len(comp.sides))]
        names = [f"{s.name}{' (baseline)' if s.index == 0 else ''}" for s in comp.sides]
        # each bucket k holds one bar per file, side by side within [k-0.4, k+0.4]
        n = len(names)
        slot = 0.8 / n
        for i, (name, y) in enumerate(zip(names, ys)):
            xs = [k + 1 + (i - (n - 1) / 2) * slot for k in range(len(labels))]
            plt.bar(xs, y, width=slot * 0.85, label=name)
        wide = max(len(x) for x in labels) + 2
        room = max(2, (self.size.width - 8) // wide)        # tick labels that fit
        step = max(1, math.ceil(len(labels) / room))
        ticks = [float(k) for k in range(1, len(labels) + 1)]
        plt.xticks(ticks[::step], labels[::step])
        plt.xlim(0.5, len(labels) + 0.5)
        peak = max(max(y) for y in ys) or 1.0
        # leave the top rows to the legend (one per file); ticks only up to the peak
        rows = max(4, self.size.height - 3)
        plt.ylim(0, peak * rows / max(1, rows - len(names) - 1))
        step = next(s for s in (5, 10, 20, 25, 50, 100) if peak / s <= max(2, rows // 3))
        plt.yticks([t for t in range(0, 101, step) if t <= peak + 1e-9])
        plt.xlabel(f"{hist.metric}, {unit}")
        plt.ylabel("% of runs")
        return super().render()
