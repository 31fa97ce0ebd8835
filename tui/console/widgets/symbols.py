"""Hot symbols from perf: the latest window while running, the whole run at the end.

A new window comes every ~2 s while perf runs.  Clearing and refilling the table changed
its size (rows, the width of the symbol column) and so laid the whole screen out again,
two or three times per window (the table, then its scrollbar), on the event loop.  Here
the symbol column has a fixed width (what the panel has room for) and a window with as
many rows as the last only updates the cells that changed: a repaint of this panel, no
layout.  The table always has TOP rows (blank ones after the last symbol), so that holds
for a message and for a window with fewer symbols too.

With room, a symbol that is not the kernel proper's also names its DSO, at the right of
its cell ("memcpy … libc.so.6", "nft_do_chain … nf_tables"): the name comes first (the
DSO is cut before it is), and a kernel row's name has the whole width.  The cursor row
is the one `a` (anywhere) or `enter` (here) annotates; when its name is cut to fit, the
panel's bottom border spells it out whole (in place of "a: annotate").
"""
from __future__ import annotations

import textwrap

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from hotloop import events as ev
from hotloop.perf.buildid import KERNEL_DSO
from hotloop.render.symbol_names import dso_name, symbol_name
from hotloop.visible import cut, visible

TOP = 25
OTHER_COLUMNS = 14      # the % and kind columns, and the three columns' cell padding
SCROLLBAR = 1           # a name is cut this much shorter: the scrollbar (2) is over its
                        # column's last column and right padding
SYMBOL = ColumnKey("symbol")
# With room (a table this wide: the live side's whole width from 110 columns, the narrow
# layout's wide column from 82), a name's cell also holds its DSO, which keeps at least
# DSO_KEEP columns of it when the name is long.
WITH_DSO = 48
DSO_KEEP = 9
HINT = "a: annotate"            # the bottom border, unless the cursor row's name is cut

Cell = str | Text


class SymbolsTable(DataTable):
    # The cursor row (what `a` annotates) is reversed when the panel has focus, as Textual
    # shows a focused cursor at all: a background colour alone is lost on a terminal of
    # few or no colours (NO_COLOR, a monochrome theme), and the zebra rows look alike there.
    DEFAULT_CSS = """
    SymbolsTable { height: 1fr; min-height: 3; overflow-x: hidden; }
    SymbolsTable:focus > .datatable--cursor { text-style: bold reverse; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True, show_cursor=False)
        self.latest: ev.HotSymbols | None = None
        self.placeholder = "no samples yet"
        self._room = 0                  # the symbol column's width (set from the panel's)
        self.message = ""               # shown instead of symbols (latest is None then)
        self._cut: list[bool] = []      # per row shown: its name cut to fit its cell

    def selected(self) -> ev.HotSymbol | None:
        """The symbol `a` annotates: the cursor row's (the top one until it is moved)."""
        return self.symbol_at(self.cursor_row) or self.symbol_at(0)

    def symbol_at(self, row: int) -> ev.HotSymbol | None:
        """The symbol a row shows (its full name: the cell may be cut), None on a message."""
        hot = self.latest
        return hot.symbols[row] if hot is not None and 0 <= row < len(hot.symbols) else None

    def on_mount(self) -> None:
        self.add_column("%", key="pct", width=5)
        self.add_column("", key="kind", width=3)
        self.add_column("symbol", key="symbol", width=self.room())
        self.show_message("perf: no samples yet")

    def room(self) -> int:
        """The symbol column's width: the panel's less the other columns (a message in it
        shows in full up to there, as it did when the column took its content's width)."""
        return max(10 + SCROLLBAR, self.size.width - OTHER_COLUMNS)

    def show_message(self, text: str) -> None:
        """`text` in the symbol column, wrapped there: read whole at any width."""
        self.latest = None
        self.message = text
        self.show_cursor = False
        self._cut = []
        self._say_cursor()
        lines = textwrap.wrap(text, max(1, (self._room or self.room()) - SCROLLBAR))[:TOP]
        self._fill([("", "", Text(line, style="dim")) for line in lines])

    def show(self, hot: ev.HotSymbols) -> None:
        self.latest = hot
        room = (self._room or self.room()) - SCROLLBAR
        dsos = self.size.width >= WITH_DSO
        rows: list[tuple[Cell, Cell, Cell]] = []
        self._cut = []
        for s in hot.symbols[:TOP]:
            name = symbol_name(s)
            cell = name_cell(name, dso_name(s.dso) if dsos and s.dso != KERNEL_DSO else "", room)
            self._cut.append(not cell.plain.startswith(name))
            rows.append((Text(f"{s.percent:5.1f}", justify="right"),
                         Text("[k]" if s.kernel else "[.]", style="bold" if s.kernel else ""),
                         cell))
        if not hot.symbols:
            rows.append(("", "", Text("no samples in this window", style="dim")))
        self.show_cursor = bool(hot.symbols)    # the row `a` and `enter` annotate
        self._fill(rows)
        self._say_cursor()

    def _say_cursor(self) -> None:
        """The bottom border: the cursor row's whole name when its cell cuts it (80x24 has
        room for 31 columns of it, 120x40 for 65), else the key that annotates it."""
        row = self.cursor_row if self.symbol_at(self.cursor_row) is not None else 0
        sym = self.symbol_at(row)
        cut_here = sym is not None and row < len(self._cut) and self._cut[row]
        # Text: a symbol's "[...]" is no markup, and a name's control characters show inert
        said: str | Text = Text(visible(symbol_name(sym))) if sym is not None and cut_here \
            else HINT
        if str(self.border_subtitle) != str(said):
            self.border_subtitle = said

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._say_cursor()

    def _fill(self, rows: list[tuple[Cell, Cell, Cell]]) -> None:
        """Show `rows`, padded with blank ones to TOP: the table always has as many rows
        (and so its scrollbar, where the panel is shorter), so a window, a message or the
        first window after one updates cells in place: a repaint, never a layout (which
        `r` and the first window paid twice, 30-200 ms each on a busy machine)."""
        rows = rows + [("", "", "")] * (TOP - len(rows))
        if self.row_count != len(rows) or len(self.columns) != 3:
            self.clear()
            for row in rows:
                self.add_row(*row)
            return
        for y, row in enumerate(rows):
            for x, value in enumerate(row):
                at = Coordinate(y, x)
                if self.get_cell_at(at) != value:
                    self.update_cell_at(at, value)

    def on_resize(self) -> None:
        room = self.room()
        if room == self._room or SYMBOL not in self.columns:
            return
        self._room = room
        column = self.columns[SYMBOL]
        column.width = room
        column.auto_width = False
        self._require_update_dimensions = True
        self._update_count += 1             # the rows' render caches
        self.refresh()
        if self.latest is not None:
            self.show(self.latest)          # names cut to the new width
        elif self.message:
            self.show_message(self.message)     # wrapped again


def name_cell(name: str, dso: str, width: int) -> Text:
    """A symbol's cell, `width` wide at most: its name, and its DSO (if any) at the right,
    dim; a long name keeps DSO_KEEP columns for the DSO, the rest is the name's."""
    if not dso:
        return Text(cut(name, width))
    dso = cut(dso, max(DSO_KEEP, width - len(name) - 1))
    name = cut(name, width - len(dso) - 1)
    if width - len(name) - len(dso) < 1:        # too narrow for both: the name alone
        return Text(cut(name, width))
    return Text.assemble(name, " " * (width - len(name) - len(dso)), (dso, "dim"))
