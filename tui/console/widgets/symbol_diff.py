"""The compare screen's symbol tab: the differential profile (analysis.symdiff) of each pair.

Above the table, each pair's change explained: its worker CPU time per op split into the
symbols that moved most and the rest, adding up exactly.  A row a symbol: its cost per op on
each side, the change in ns/op and in %, the change's interval (% of the baseline's cost,
adjusted for the symbols tested: analysis.symdiff) and the word.  Rows are sorted by |change
in ns/op|, the symbols that took or gave back the most time first ("where did the time go"),
not by % (a tiny symbol's +80% moves nothing).  A called row (costlier, cheaper after the
false discovery rate's control) is bold and marked ▲ or ▼ in its first column, so it reads
on a terminal without colours.  Below
the table, the cursor row in full (its names, both costs, p and q); `a` or `enter`
annotates it, side by side (screens/symbol_pair).

The symbol's name comes first: beyond the change, its % and the word, the columns join (the
interval, the word in full, the sides' costs, q, the DSO) only while the name keeps
NAME_KEEP columns; the row in full beneath says what has none.  Sessions without a cost per
op (no task-clock: older files, perf stat off) get the shares of samples as before.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from hotloop.analysis.symbols import SymbolDelta, SymbolVerdict
from hotloop.render.compare_formats.symbols import MORE_SAMPLES
from hotloop.render.symbol_names import dso_name
from hotloop.render.units import p_value
from hotloop.visible import cut, visible

if TYPE_CHECKING:
    from hotloop.analysis.comparison import Comparison, Pair
    from hotloop.analysis.symbols import Explained

SYMBOL_MIN = 18
SYMBOL_MAX = 44
# The name is what a kernel developer greps for: the columns beyond the change, its % and the
# word join in this order only while the symbol column keeps NAME_KEEP columns (a name of
# 34, __kmalloc_node_track_caller_noprof, after "▲ [k] "); what has no column is in the row
# in full under the table
NAME_KEEP = 40
OPTIONAL = ((("ci", "interval %", 15),), (("word", "verdict", 19),),
            (("base", "baseline", 8), ("new", "new", 8)), (("q", "q", 7),),
            (("dso", "dso", 14),))
SCROLLBAR = 2
MARK = {SymbolVerdict.COSTLIER: "▲", SymbolVerdict.CHEAPER: "▼"}
CALLED_STYLE = {SymbolVerdict.COSTLIER: "bold red", SymbolVerdict.CHEAPER: "bold green"}
SORTED_BY = "by |Δ ns/op|"
NO_SYMBOLS = "no perf symbols in both files (run with perf on)"


@dataclass(frozen=True)
class Row:
    """What a table row shows: a pair's symbol (None: the pair's heading) and, on a row
    under a merged symbol, the one name of it that row is."""
    pair: Pair
    delta: SymbolDelta | None
    name: str = ""

    @property
    def symbol(self) -> str:
        """The name to annotate: the row's one name, or the symbol's."""
        return self.name or (self.delta.symbol if self.delta else "")


def ns(v: float | None, signed: bool = False, decimals: int | None = None) -> str:
    """A cost per op in a cell: 4 significant digits up to 1000, none after the point past."""
    if v is None:
        return "-"
    if decimals is None:
        a = abs(v)
        decimals = 0 if a >= 1000 else 1 if a >= 100 else 2 if a >= 1 or a == 0 else 3
    return f"{v:+.{decimals}f}" if signed else f"{v:.{decimals}f}"


def explained_text(e: Explained) -> str:
    """"+12.4 ns/op (812.0 → 824.4): read_zero +9.1 [+7.9, +10.3], ..., the rest +0.6":
    the pair's worker CPU ns/op change, its top symbols' changes with their intervals
    in ns/op, and the rest, on one number of decimals so the parts visibly add up."""
    top = max([abs(e.change), abs(e.rest_change),
               *(abs(r.change_ns or 0.0) for r in e.top)])
    d = 1 if top >= 10 else 2 if top >= 1 else 3
    parts = []
    for r in e.top:
        part = f"{visible(r.symbol)} {ns(r.change_ns, True, d)}"
        if r.ci_ns is not None:
            lo, hi = r.ci_ns
            part += f" [{lo:+.{d}f}, {hi:+.{d}f}]"
        parts.append(part)
    return (f"{e.change:+.{d}f} ns/op CPU ({e.baseline_ns_per_op:.{d}f} → "
            f"{e.new_ns_per_op:.{d}f}): " + ", ".join(parts)
            + f", the rest {e.rest_change:+.{d}f}")


def word(d: SymbolDelta, short: bool = False) -> str:
    if short and d.verdict is SymbolVerdict.CANT_TELL:
        return "can't tell"             # its width: the wide table's
    return d.word


def detail_text(row: Row) -> str:
    """A row's whole story, one line: names, DSO, the costs, change, interval, p, q, word."""
    d = row.delta
    if d is None:
        return f"{row.pair.new.name} vs {row.pair.baseline.name}"
    names = row.name or ", ".join(d.names)
    where = f"{visible(names)} in {dso_name(d.dso)}"
    if d.baseline_ns_per_op is None:
        return (f"{where}: {d.baseline_pct:.2f}% → {d.new_pct:.2f}% of samples "
                f"({d.delta:+.2f} pp) · a annotates")
    ci = f", interval [{d.ci_low:+.1f}, {d.ci_high:+.1f}] % (adjusted)" \
        if d.ci_low is not None and d.ci_high is not None else ""
    tested = f", p {d.p_value:.3g}, q {d.q_value:.3g}" \
        if d.p_value is not None and d.q_value is not None else ""
    change = f"{d.change_pct:+.1f}%" if d.change_pct is not None else "-"
    why = f" ({d.why})" if d.why else ""
    if d.verdict is SymbolVerdict.CANT_TELL and d.p_value is not None:  # how to tell
        why = f" ({d.why + '; ' if d.why else ''}{MORE_SAMPLES})"
    return (f"{where}: {ns(d.baseline_ns_per_op)} → {ns(d.new_ns_per_op)} ns/op "
            f"({ns(d.change_ns, True)}, {change}{ci}{tested}), samples a session "
            f"{d.samples_baseline:.0f} → {d.samples_new:.0f}: {word(d)}{why} · a annotates")


class SymbolDiffTable(DataTable):
    """The rows; `a`/`enter` asks for the cursor row's annotation (SymbolDiff.Annotate)."""

    BINDINGS = [Binding("a", "annotate", "Annotate", id="compare.symbol.annotate"),
                Binding("enter", "annotate", "Annotate", show=False)]

    def action_annotate(self) -> None:
        parent = self.parent
        while parent is not None and not isinstance(parent, SymbolDiff):
            parent = parent.parent
        if parent is not None:
            parent.annotate(self.cursor_row)


class SymbolDiff(Vertical):
    """The explained changes, the table (id compare-symbols) and the cursor row in full."""

    class Annotate(Message):
        """Annotate `row.symbol` of `row.pair`'s two sides."""

        def __init__(self, row: Row) -> None:
            super().__init__()
            self.row = row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.comparison: Comparison | None = None
        self.rows: list[Row] = []           # one per table row
        self.layout_width = 0               # the width the columns were made for
        self.costs = True                   # cost columns (else the shares of samples)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="symbol-explained-box"):
            yield Static("", id="symbol-explained", markup=False)
        yield SymbolDiffTable(id="compare-symbols", cursor_type="row", zebra_stripes=True)
        yield Static("", id="symbol-detail", markup=False)

    @property
    def table(self) -> SymbolDiffTable:
        return self.query_one(SymbolDiffTable)

    def _width(self) -> int:
        return self.size.width or self.app.size.width

    def show(self, comp: Comparison | None) -> None:
        """The comparison's symbol diffs (None: nothing compared)."""
        self.comparison = comp
        self.costs = comp is not None and all(p.explained is not None for p in comp.pairs
                                              if p.symbols)
        self._columns()
        table = self.table
        table.clear()
        self.rows = []
        explained = []
        blank = [""] * (len(table.columns) - 1)
        for p in comp.pairs if comp else ():
            several = len(comp.pairs) > 1 if comp else False
            head = f"{p.new.name} vs {p.baseline.name}"
            if several or not p.symbols:
                self._add(Row(p, None), Text(visible(head), style="bold"), *blank)
            if not p.symbols:
                self._add(Row(p, None), Text(NO_SYMBOLS, style="dim"), *blank)
                continue
            said = explained_text(p.explained) if p.explained is not None else \
                p.symbol_note or "no cost per op: shares of samples"
            explained.append(f"{head}: {said}" if several else said)
            self._symbol_rows(p)
        self.query_one("#symbol-explained", Static).update(
            "\n".join(explained) if comp else "")
        self._detail()

    def _symbol_rows(self, p: Pair) -> None:
        rows = sorted(p.symbols or (), key=lambda d: (
            d.change_ns is None, -abs(d.change_ns if d.change_ns is not None else d.delta),
            d.symbol))
        room = self._symbol_room()
        for d in rows:
            called = d.significant and d.verdict in MARK
            mark = MARK[d.verdict] if called and d.verdict else " "
            kind = "[k]" if d.kernel else "[.]"
            held = f" +{len(d.names) - 1}" if d.merged else ""
            name = cut(visible(d.symbol), max(4, room - 6 - len(held)))
            style = CALLED_STYLE.get(d.verdict, "") if called and d.verdict else ""
            first = Text(f"{mark} {kind} {name}{held}", style=style)
            self._add(Row(p, d), first, *self._cells(d, called))
            for n in d.names if d.merged else ():       # the clones added up above
                self._add(Row(p, d, n), Text(f"      {cut(visible(n), room - 6)}", style="dim"),
                          *[""] * (len(self.table.columns) - 1))

    def _cells(self, d: SymbolDelta, called: bool) -> list[str | Text]:
        keys = [str(k.value) for k in self.table.columns]
        if not self.costs:
            cells: dict[str, str | Text] = {
                "base": Text(f"{d.baseline_pct:.2f}%", justify="right"),
                "new": Text(f"{d.new_pct:.2f}%", justify="right"),
                "delta": Text(f"{d.delta:+.2f}", justify="right",
                              style="green" if d.delta < 0 else "red" if d.delta > 0 else ""),
                "dso": Text(cut(dso_name(d.dso), 14), style="dim")}
            return [cells[k] for k in keys[1:]]
        bold = "bold" if called else ""
        ci = f"[{d.ci_low:+.1f}, {d.ci_high:+.1f}]" \
            if d.ci_low is not None and d.ci_high is not None else "-"
        cells = {
            "base": Text(ns(d.baseline_ns_per_op), justify="right"),
            "new": Text(ns(d.new_ns_per_op), justify="right"),
            "change": Text(ns(d.change_ns, True), justify="right", style=bold),
            "pct": Text(f"{d.change_pct:+.1f}%" if d.change_pct is not None else "-",
                        justify="right"),
            "ci": Text(ci, justify="right"),
            "word": Text(word(d, short=self.table.columns[ColumnKey("word")].width < 19),
                         style=CALLED_STYLE.get(d.verdict, "") if called and d.verdict
                         else "" if d.verdict is not SymbolVerdict.CANT_TELL else "dim"),
            "q": Text(p_value(d.q_value), justify="right"),
            "dso": Text(cut(dso_name(d.dso), 14), style="dim")}
        return [cells[k] for k in keys[1:]]

    def _add(self, row: Row, *cells: str | Text) -> None:
        self.rows.append(row)
        self.table.add_row(*cells)

    def _column_set(self) -> list[tuple[str, str, int]]:
        """(key, label, width) of the columns after the symbol's, for this width."""
        if not self.costs:
            return [("base", "baseline %", 10), ("new", "new %", 7), ("delta", "delta", 6),
                    ("dso", "dso", 14)]
        cols = {"change": ("Δ ns/op", 8), "pct": ("vs rest", 7), "word": ("verdict", 11)}
        room = self._width() - 2 - SCROLLBAR - sum(w + 2 for _, w in cols.values())
        for group in OPTIONAL:
            more = sum(width - cols[key][1] if key in cols else width + 2
                       for key, _, width in group)
            if room - more < NAME_KEEP:
                break
            cols.update({key: (label, width) for key, label, width in group})
            room -= more
        order = ("base", "new", "change", "pct", "ci", "word", "q", "dso")
        return [(k, *cols[k]) for k in order if k in cols]

    def _symbol_room(self) -> int:
        others = sum(w + 2 for _, _, w in self._column_set())
        return max(SYMBOL_MIN, min(SYMBOL_MAX, self._width() - others - 2 - SCROLLBAR))

    def _columns(self) -> None:
        table = self.table
        table.clear(columns=True)
        self.layout_width = self._width()
        table.add_column(f"symbol {SORTED_BY}" if self.costs else "symbol", key="symbol",
                         width=self._symbol_room())
        for key, label, width in self._column_set():
            table.add_column(label, key=key, width=width)

    def on_resize(self, event: events.Resize) -> None:
        # the columns and the names' room follow the width (a few dozen rows: cheap)
        if event.size.width and event.size.width != self.layout_width and \
                self.comparison is not None:
            self.show(self.comparison)

    def _detail(self) -> None:
        row = self.table.cursor_row
        self.query_one("#symbol-detail", Static).update(
            detail_text(self.rows[row]) if 0 <= row < len(self.rows) else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()                # enter is the table's annotate binding; a click too
        self.annotate(event.cursor_row)

    def annotate(self, at: int) -> None:
        """Ask for the row's annotation: a symbol's row (a heading is nothing to annotate)."""
        if 0 <= at < len(self.rows) and self.rows[at].delta is not None:
            self.post_message(self.Annotate(self.rows[at]))

    def summary(self) -> str:
        """What the symbol tab found, for the screen's status line: "4 symbols: 1 costlier,
        1 cheaper" ("" when it called none)."""
        pairs = [p for p in self.comparison.pairs if p.explained] if self.comparison else []
        if not pairs:
            return ""
        called = [d.verdict for p in pairs for d in p.symbols or () if d.significant]
        said = ", ".join(f"{n} {v.value}" for v in (SymbolVerdict.COSTLIER,
                                                     SymbolVerdict.CHEAPER)
                         if (n := called.count(v)))
        return f"4 symbols: {said}" if said else ""

    def selected(self) -> Row | None:
        row = self.table.cursor_row
        return self.rows[row] if 0 <= row < len(self.rows) else None
