"""The numbers: runs done, CV (prominent), how well the median is known, median, mean and
stdev, range, the smallest change compare would find against another session like it ("?"
where that is a direction on an assumed noise, not a call; "too noisy to call" beyond
stats.TOO_NOISY_PCT, as compare says it), time left."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import ProgressBar, Static

from hotloop.console.live import LiveRun
from hotloop.render.units import duration, figure, si, si_range, too_noisy
from hotloop.stats import TOO_NOISY_PCT

CV_GOOD, CV_FAIR = 0.02, 0.05          # below 2%: steady; above 5%: noisy


def _rows(markup: str, width: int) -> int:
    """Rows `markup` takes once wrapped at `width` cells (as the Static wraps it)."""
    return len(Content.from_markup(markup).wrap(width))


class StatsPanel(Vertical):
    DEFAULT_CSS = """
    StatsPanel { height: auto; }
    StatsPanel #stats-runs { height: 1; }
    StatsPanel ProgressBar { height: 1; }
    StatsPanel ProgressBar Bar { width: 1fr; }
    StatsPanel ProgressBar Bar > .bar--bar { color: $accent; }
    StatsPanel #stats-cv { height: 1; text-style: bold; padding: 0 1; margin: 0 0 0 0; }
    StatsPanel #stats-cv.-good { background: $success 25%; }
    StatsPanel #stats-cv.-fair { background: $warning 30%; }
    StatsPanel #stats-cv.-noisy { background: $error 30%; }
    StatsPanel #stats-numbers { height: auto; }
    """

    def compose(self) -> ComposeResult:
        yield Static("no run yet: press r", id="stats-runs", markup=True)
        yield ProgressBar(total=1, show_eta=False, show_percentage=False, id="stats-bar")
        yield Static("CV  –", id="stats-cv")
        yield Static("\n".join(self._row(k, "–") for k in self.ROWS), id="stats-numbers",
                     markup=True)

    @staticmethod
    def _set(widget: Static, text: str) -> None:
        """Update only on a change, and lay the screen out again only when the number of
        lines changes: a layout of the whole console costs 30-150 ms, and the clock
        alone updates this panel twice a second."""
        old = str(widget.content)
        if old != text:
            height = widget.styles.height
            if height is not None and not height.is_auto:   # a fixed height: never
                widget.update(text, layout=False)
                return
            width = widget.content_region.width
            widget.update(text, layout=width <= 0 or _rows(old, width) != _rows(text, width))

    ROWS = ("median", "mean", "stdev", "range", "detect", "time")

    @staticmethod
    def _row(name: str, value: str) -> str:
        return f"[dim]{name:<7}[/dim]{value}"

    @staticmethod
    def _level(widget: Static, level: str) -> None:
        levels = ("-good", "-fair", "-noisy")
        if any(widget.has_class(x) != (x == level) for x in levels):
            widget.update_classes({x: x == level for x in levels})

    def show(self, live: LiveRun | None) -> None:
        runs = self.query_one("#stats-runs", Static)
        bar = self.query_one("#stats-bar", ProgressBar)
        cv = self.query_one("#stats-cv", Static)
        numbers = self.query_one("#stats-numbers", Static)
        if live is None:
            self._set(runs, "no run yet: press [b]r[/b]")
            bar.update(total=1, progress=0)
            self._set(cv, "CV  –")
            self._level(cv, "")
            # the rows a run fills in, empty: their number does not change at `r` (a layout)
            self._set(numbers, "\n".join(self._row(k, "–") for k in self.ROWS))
            return
        state = {"building": "building", "booting": "booting the VM", "running": "running",
                 "finished": "done", "stopped": "stopped", "failed": "failed"}[live.state]
        warm = ""
        if live.warmup and live.warmups_done < live.warmup and not live.n:
            warm = f" · warmup {live.warmups_done}/{live.warmup}"
        target = ""
        left = live.runs_to_target()
        if left is not None:
            target = (f" · ±{live.until_ci:g}% reached" if left == 0 else
                      f" · ±{live.until_ci:g}% in ~{left}")
        self._set(runs, f"runs [b]{live.n}/{live.runs}[/b]  [dim]{state}{warm}{target}[/dim]")
        bar.update(total=max(1, live.runs), progress=live.n)
        s = live.summary()
        if s is None:
            self._set(cv, "CV  –")
            self._level(cv, "")
        else:
            known = live.precision_pct()
            self._set(cv, f"CV  {s.cv * 100:.2f}%"
                      + (f"  median ±{known:.2g}%" if known is not None else ""))
            level = "-good" if s.cv < CV_GOOD else "-fair" if s.cv < CV_FAIR else "-noisy"
            self._level(cv, level if s.n > 1 else "")
        u = live.unit

        row = self._row
        lines = []
        if s is not None:
            lines += [row("median", f"[b]{si(s.median, u)}[/b]"), row("mean", si(s.mean, u)),
                      row("stdev", si(s.stdev, u)), row("range", si_range(s.min, s.max, u))]
        else:
            lines += [row(k, "–") for k in ("median", "mean", "stdev", "range")]
        found = live.detectable()
        if found is None:
            lines.append(row("detect", "–"))
        elif live.noise is None and not live.noisier_than_offsets():
            # not calibrated: compare calls only beyond any session's offset
            # (a doubling or a halving): a figure, not "too noisy"; calibrating lowers it
            lines.append(row("detect", f"≥{figure(found)}% [dim]no calibration[/dim]"))
        elif found > TOO_NOISY_PCT:     # "≥4266%" told a newcomer nothing: say what it means
            lines.append(row("detect", too_noisy()))
        else:                           # the smallest change compare would find vs another
            # the line fits the narrow panel's 28 columns up to 9999%
            lines.append(row("detect", f"≥{figure(found)}% [dim]calibrated[/dim]"))
        eta = live.eta()
        when = duration(live.elapsed())
        if eta is not None:
            when += f" · {duration(eta)} left"
        lines.append(row("time", when))
        self._set(numbers, "\n".join(lines))
