"""The compare screen: pick result files, see verdicts, histograms and the symbol diff.

The files are the results directory's, as `hotloop.results.index` lists them (newest first,
each named without its timestamp prefix: the date has a column), read in a thread.
Below 130 columns the verdict table keeps metric, change, CI and a short verdict; the row under
the cursor is spelled out in full beneath it.
The user picks two or more sides (space or enter starts a side with the file under
the cursor; the first side is the baseline) and may add more sessions to the last
side (`a`: the sessions of one kernel, say; the first column shows each file's
side), then presses `c`; `hotloop.analysis.compare` does
the statistics in a thread (it imports scipy, so it is imported only once this
screen opens, never at the console's launch).  Anything that cannot be compared
(a file that is not a result, different workloads) is one line at the top.
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static, TabbedContent, TabPane

from hotloop import paths, results
from hotloop.console.widgets.compare_histogram import CompareHistogram
from hotloop.console.widgets.file_rows import FILTER_HINT, row, shown
from hotloop.console.widgets.symbol_diff import SymbolDiff
from hotloop.errors import HotloopError
from hotloop.results.index import Entry, scan
from hotloop.visible import cut, visible

if TYPE_CHECKING:
    from hotloop.analysis.comparison import Comparison, MetricDelta, Pair

METRIC_WIDTH = 21
WIDE_FROM = 130                 # columns for the whole verdict table
NARROW_METRIC = 16


def ci_text(low: float | None, high: float | None) -> str:
    """The 95% CI of the % change, compact: "[-52.7, -36.4]"."""
    if low is None or high is None:
        return "-"
    return f"[{low:+.1f}, {high:+.1f}]"


def verdict_text(m: MetricDelta, short: bool = False) -> Text:
    from hotloop.render import verdicts  # with the comparison's statistics: not at start
    style = {"good": "bold green", "bad": "bold red"}.get(verdicts.tone(m) or "", "dim")
    return Text(verdicts.word(m, short=short), style=style)


class CompareScreen(Screen[None]):
    """Pick files from `results_dir`, compare them; escape goes back to the console."""

    blocks_console = True           # the console's run/stop/save keys are off here

    BINDINGS = [
        Binding("space", "pick", "Pick", id="compare.pick"),
        Binding("a", "add", "Add session", id="compare.add"),
        Binding("c", "compare", "Compare", id="compare.run"),
        Binding("m", "mail", "Mail text", id="compare.mail"),
        Binding("slash", "filter", "Filter", id="compare.filter", show=False),
        Binding("escape", "back", "Back", id="compare.back"),
        Binding("1", "tab('tab-files')", "Files", show=False),
        Binding("2", "tab('tab-table')", "Table", show=False),
        Binding("3", "tab('tab-hist')", "Histogram", show=False),
        Binding("4", "tab('tab-symbols')", "Symbols", show=False),
    ]

    DEFAULT_CSS = """
    CompareScreen { layout: vertical; }
    CompareScreen #compare-status { height: auto; max-height: 4; padding: 0 1;
                                    background: $panel; }
    /* an error names files by their paths, which can be long: it is read whole */
    CompareScreen #compare-status.-error { color: $error; text-style: bold; max-height: 8; }
    CompareScreen TabbedContent { height: 1fr; }
    CompareScreen TabPane { padding: 0; height: 1fr; }
    CompareScreen #compare-files, CompareScreen #compare-table, CompareScreen #compare-symbols {
        height: 1fr;
    }
    CompareScreen #compare-sides { height: auto; padding: 0 1; color: $text-muted; }
    CompareScreen #compare-warnings-box { height: auto; max-height: 45%; }
    CompareScreen #compare-warnings { height: auto; padding: 0 1; color: $warning; }
    CompareScreen #compare-table { min-height: 6; }
    CompareScreen #compare-detail { height: auto; max-height: 3; padding: 0 1;
                                    color: $text-muted; }
    CompareScreen #table-box { height: 1fr; }
    CompareScreen #compare-filter { display: none; height: 1; border: none; padding: 0 1; }
    CompareScreen #compare-filter.-on { display: block; }
    """

    def __init__(self, results_dir: Path, sides: list[list[Path]] | None = None) -> None:
        super().__init__()
        self.results_dir = Path(results_dir)
        # picked and compared once the list is read: a series' kernels, just run
        self.preset = [list(side) for side in sides or []]
        self.entries: list[Entry] = []
        self.shown: list[Entry] = []          # the rows the filter keeps, in the list's order
        self.loaded = False
        self.sides: list[list[Path]] = []     # in pick order: [0] is the baseline
        self.comparison: Comparison | None = None
        self.read: list[list[results.Result]] = []      # the compared sides' results, for the mail
        self.mailed: Path | None = None         # where `m` saved the mail text last
        self.error = ""
        self.busy = False
        self.narrow: bool | None = None       # the columns the tables have now
        self.details: list[str] = []            # the verdict table's rows, spelled out

    # --- layout ---------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("reading the results directory…", id="compare-status", markup=False)
        with TabbedContent(initial="tab-files"):
            with TabPane("1 files", id="tab-files"):
                yield Input(placeholder=FILTER_HINT, id="compare-filter")
                yield DataTable(id="compare-files", cursor_type="row", zebra_stripes=True)
            with TabPane("2 table", id="tab-table"), Vertical(id="table-box"):
                yield Static("", id="compare-sides", markup=False)
                # scrolls (tab to it) when the warnings are more than the room they get
                with VerticalScroll(id="compare-warnings-box"):
                    yield Static("", id="compare-warnings", markup=False)
                yield DataTable(id="compare-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="compare-detail", markup=False)
            with TabPane("3 histogram", id="tab-hist"):
                yield CompareHistogram(id="compare-hist")
            with TabPane("4 symbols", id="tab-symbols"):
                yield SymbolDiff(id="symbol-diff")
        yield Footer()

    def on_mount(self) -> None:
        files = self.query_one("#compare-files", DataTable)
        files.add_column("#", key="pick", width=4)
        # what tells the files apart first: the plan/variant (no timestamp), label, date
        for key, label in (("file", "file"), ("label", "label"), ("date", "date"),
                           ("runs", "runs"), ("partial", ""), ("workload", "workload"),
                           ("params", "params")):
            files.add_column(label, key=key)
        self._columns(self.size.width < WIDE_FROM)
        self._empty_results()
        files.focus()
        self._warm_compare()
        self._load()

    def _columns(self, narrow: bool) -> None:
        """The verdict and symbol tables' columns for this width (their rows are redone)."""
        self.narrow = narrow
        table = self.query_one("#compare-table", DataTable)
        table.clear(columns=True)
        cols = (("metric", "metric"), ("change", "change"), ("ci", "95% CI %"),
                ("verdict", "verdict")) if narrow else \
            (("metric", "metric"), ("change", "change"), ("verdict", "verdict"),
             ("baseline", "baseline"), ("new", "new"), ("ci", "95% CI %"), ("p", "p"))
        for key, label in cols:
            table.add_column(label, key=key)
        self.query_one("#compare-detail", Static).display = narrow

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < WIDE_FROM
        if narrow != self.narrow:
            self._columns(narrow)
            if self.comparison is not None:
                self._show(self.comparison)

    # --- the file list ----------------------------------------------------------

    @work(thread=True, exclusive=True, group="compare-warm")
    def _warm_compare(self) -> None:
        """Import the comparison (scipy) now, while the user picks files."""
        with contextlib.suppress(Exception):    # cannot load (ulimit -v): said on comparing
            import hotloop.analysis.compare  # noqa: F401

    @work(thread=True, exclusive=True, group="compare-load")
    def _load(self) -> None:
        entries = scan(self.results_dir)
        self.app.call_from_thread(self._fill, entries)

    def _fill(self, entries: list[Entry]) -> None:
        self.entries = entries
        self._list()
        self.loaded = True
        if entries:
            self._say(f"{len(entries)} files in {self.results_dir}: space/enter picks "
                      f"(the first is the baseline), c compares, / filters, esc goes back")
        else:
            self._say(f"no result files in {self.results_dir} yet: run something first")
        listed = {e.path for e in entries}
        if self.preset and all(p in listed for side in self.preset for p in side):
            self.sides = self.preset
            self._mark_picks()
            self.action_compare()
        elif self.preset:           # compared on fewer sessions, it would say nothing of it
            self._say("the series' files have changed since it ran: pick its sides "
                      "(space/enter, a adds a session), c compares", error=True)

    def _list(self) -> None:
        """The file list's rows: the entries the filter keeps, each marked if picked."""
        words = self.query_one("#compare-filter", Input).value
        self.shown = shown(self.entries, words)
        table = self.query_one("#compare-files", DataTable)
        table.clear()
        for e in self.shown:
            table.add_row("", *row(e), key=str(e.path))
        self._mark_picks()

    def action_filter(self) -> None:
        self.action_tab("tab-files")
        box = self.query_one("#compare-filter", Input)
        box.add_class("-on")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "compare-filter" and self.loaded:
            self._list()
            n = len(self.shown)
            self._say(f"{n} of {len(self.entries)} files match {event.value!r}"
                      if event.value.strip() else f"{len(self.entries)} files")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "compare-filter":
            event.stop()
            self._end_filter(clear=False)

    def _end_filter(self, clear: bool) -> None:
        """Back to the list; the filter stays shown while it holds words."""
        box = self.query_one("#compare-filter", Input)
        if clear:
            box.value = ""
            self._list()
        box.set_class(bool(box.value.strip()), "-on")
        self.query_one("#compare-files", DataTable).focus()

    def _say(self, text: str, error: bool = False) -> None:
        status = self.query_one("#compare-status", Static)
        status.update(visible(text))
        status.set_class(error, "-error")
        self.error = text if error else ""

    @property
    def picked(self) -> list[Path]:
        """Every picked file, side by side."""
        return [p for side in self.sides for p in side]

    def _mark_picks(self) -> None:
        table = self.query_one("#compare-files", DataTable)
        order = {p: i for i, side in enumerate(self.sides) for p in side}
        for e in self.shown:
            i = order.get(e.path)
            mark = "" if i is None else ("base" if i == 0 else str(i + 1))
            table.update_cell(str(e.path), "pick", Text(mark, style="bold reverse")
                              if mark else "")

    def _picked_status(self) -> None:
        if not self.sides:
            self._say("space/enter picks a side (the first is the baseline), a adds a session "
                      "to the last side, c compares")
            return
        parts = [f"{'base' if i == 0 else i + 1}: " + (self._short(side[0]) if len(side) == 1
                                                        else f"{len(side)} sessions")
                 for i, side in enumerate(self.sides)]
        more = "c compares" if len(self.sides) > 1 else "pick a side to compare with it"
        self._say(f"{' · '.join(parts)} · a adds a session to side "
                  f"{'base' if len(self.sides) == 1 else len(self.sides)} · {more}")

    def _short(self, path: Path) -> str:
        return next((e.name for e in self.entries if e.path == path and e.name), path.name)

    def _drop(self, path: Path) -> bool:
        for side in self.sides:
            if path in side:
                side.remove(path)
                self.sides = [s for s in self.sides if s]
                return True
        return False

    def toggle(self, path: Path) -> None:
        """A picked file leaves its side; another starts a new side."""
        if not self._drop(path):
            self.sides.append([path])
        self._mark_picks()
        self._picked_status()

    def add(self, path: Path) -> None:
        """The file joins the last side as one more of its sessions."""
        if not self._drop(path):
            if self.sides:
                self.sides[-1].append(path)
            else:
                self.sides.append([path])
        self._mark_picks()
        self._picked_status()

    def _cursor_path(self) -> Path | None:
        table = self.query_one("#compare-files", DataTable)
        if not table.has_focus or not self.shown or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row].path

    def action_pick(self) -> None:
        path = self._cursor_path()
        if path is not None:
            self.toggle(path)

    def action_add(self) -> None:
        path = self._cursor_path()
        if path is not None:
            self.add(path)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "compare-files":
            return
        event.stop()
        if event.row_key.value is not None:
            self.toggle(Path(event.row_key.value))

    # --- comparing ---------------------------------------------------------------

    def action_compare(self) -> None:
        if self.busy:
            return
        if len(self.sides) < 2:
            self._say("pick two or more sides first (space or enter on a row)", error=True)
            return
        self.busy = True
        self._say(f"comparing {len(self.sides)} sides, {len(self.picked)} files…")
        self._compare([list(side) for side in self.sides])

    @work(thread=True, exclusive=True, group="compare-run")
    def _compare(self, sides: list[list[Path]]) -> None:
        comp: Comparison | None = None
        error = ""
        try:
            from hotloop.analysis import compare
            self.read = [[results.read(p) for p in side] for side in sides]
            comp = compare.compare_sides(self.read,
                                         [",".join(str(p) for p in side) for side in sides])
        except HotloopError as e:
            error = str(e)
        except Exception as e:  # noqa: BLE001 - a compare bug is one line, not a crash
            error = f"compare failed: {type(e).__name__}: {e}"
        self.app.call_from_thread(self._compared, comp, error)

    def _compared(self, comp: Comparison | None, error: str) -> None:
        self.busy = False
        if comp is None:
            self.comparison = None
            self._empty_results()
            self._say(" ".join(error.split()), error=True)
            return
        self.comparison = comp
        self._show(comp)
        warn = f" · {len(comp.warnings)} warning{'s' * (len(comp.warnings) != 1)}" \
            if comp.warnings else ""
        if symbols := self.query_one(SymbolDiff).summary():
            warn += f" · {symbols}"
        self._say(f"{comp.workload} · {comp.metric} ({'higher' if comp.higher_is_better else 'lower'}"
                  f" is better) · baseline {comp.baseline.name}{warn} · "
                  f"1-4 switch tabs, esc back")
        self.action_tab("tab-table")

    def _empty_results(self) -> None:
        self.query_one("#compare-sides", Static).update("pick files on the first tab, then c")
        self.query_one("#compare-warnings", Static).update("")
        self.query_one("#compare-table", DataTable).clear()
        self.query_one(SymbolDiff).show(None)
        self.query_one("#compare-detail", Static).update("")
        self.details = []
        self.query_one(CompareHistogram).show(None)

    def _show(self, comp: Comparison) -> None:
        sides = []
        from hotloop.render.compare_formats.shared import noise_line
        for s in comp.sides:
            tag = "baseline" if s.index == 0 else f"[{s.index}]"
            runs = f"{s.runs} runs" if s.sessions == 1 else f"{s.sessions} sessions, {s.runs} runs"
            sides.append(f"{tag} {s.name} ({s.label or '-'}, {runs}"
                         + (", PARTIAL" if s.partial else "") + ")")
        self.query_one("#compare-sides", Static).update(
            " · ".join(sides) + (f"\n{noise_line(comp)}" if noise_line(comp) else ""))
        from hotloop.render.warning_words import advice  # a command on lines of its own
        self.query_one("#compare-warnings", Static).update(
            "\n".join(f"! {advice(w)}" for w in comp.warnings))
        table = self.query_one("#compare-table", DataTable)
        table.clear()
        narrow = bool(self.narrow)
        self.details = []
        blank = [""] * (len(table.columns) - 1)
        for p in comp.pairs:
            if len(comp.pairs) > 1:
                table.add_row(Text(f"{p.new.name} vs {p.baseline.name}", style="bold"), *blank)
                self.details.append(f"{p.new.name} vs {p.baseline.name}")
            self.details += self._metric_rows(table, p, narrow)
        self._detail(table.cursor_row)
        self.query_one(CompareHistogram).show(comp)
        self.query_one(SymbolDiff).show(comp)

    @staticmethod
    def _metric_rows(table: DataTable, p: Pair, narrow: bool = False) -> list[str]:
        """A row per metric (narrow: metric, change, CI, short verdict); each row's whole
        story as one line, for the detail under the table."""
        from hotloop.render import verdicts
        from hotloop.render.units import number, p_value, pct
        details = []
        for i, m in enumerate(p.metrics):
            t = m.test
            name = Text(cut(m.metric, NARROW_METRIC if narrow else METRIC_WIDTH),
                        style="bold" if i == 0 else "")
            change = Text(pct(t.change_pct), justify="right")
            ci = ci_text(t.ci_low, t.ci_high)
            if narrow:
                table.add_row(name, change, ci, verdict_text(m, short=True))
            else:
                table.add_row(name, change, verdict_text(m),
                              Text(number(t.baseline, m.unit), justify="right"),
                              Text(number(t.new, m.unit), justify="right"),
                              ci, p_value(t.p_value))
            tested = (f", 95% CI {ci} %, p {p_value(t.p_value)}"   # no test: no interval
                      if t.ci_low is not None else "")
            details.append(f"{m.metric}: {number(t.baseline, m.unit)} → "
                           f"{number(t.new, m.unit)} ({pct(t.change_pct)}{tested}): "
                           f"{verdicts.word(m)}")
        return details

    def _detail(self, row: int) -> None:
        details = self.details
        self.query_one("#compare-detail", Static).update(
            visible(details[row]) if 0 <= row < len(details) else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "compare-table":
            self._detail(event.cursor_row)

    # --- navigation ----------------------------------------------------------------

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        target = {"tab-files": "#compare-files", "tab-table": "#compare-table",
                  "tab-symbols": "#compare-symbols"}.get(tab)
        if target:
            self.query_one(target).focus()
        else:           # the histogram: nothing to focus, and none left on a hidden tab
            self.set_focus(None)

    def action_mail(self) -> None:
        """The comparison shown as `compare --format mail` prints it: saved beside the
        results (a file to attach or `cat`) and copied to the terminal's clipboard (OSC 52,
        which many terminals take, over SSH too)."""
        if self.comparison is None or self.busy:
            self._say("compare first (c): the mail text is of the comparison shown", error=True)
            return
        from hotloop.render import mail
        text = mail.compare_mail(self.comparison, self.read)
        stem = self.results_dir / time.strftime("compare-%Y%m%d-%H%M%S")
        try:
            path = paths.new_file(stem, ".mail.txt", text)
        except OSError as e:
            self._say(f"mail text copied; not saved: {stem}.mail.txt: {e.strerror}",
                      error=True)
        else:
            self.mailed = path
            self._say(f"mail text (72 columns) copied to the clipboard and saved: {path}")
        self.app.copy_to_clipboard(text)

    def on_symbol_diff_annotate(self, message: SymbolDiff.Annotate) -> None:
        """`a`/`enter` on a symbol: its instructions on both sides' hottest sessions."""
        from hotloop.console.screens.symbol_pair import SymbolPairScreen
        self.app.push_screen(SymbolPairScreen.of(message.row))

    def action_back(self) -> None:
        if self.query_one("#compare-filter", Input).has_focus:    # esc leaves the filter
            self._end_filter(clear=True)
            return
        self.dismiss(None)
