"""Hot symbols from perf: the latest window while running, the whole run at the end.

A new window comes every ~2 s while perf runs.  Clearing and refilling the table changed
its size (rows, the width of the symbol column) and so laid the whole screen out again,
two or three times per window (the table, then its scrollbar), on the event loop.  Here
the symbol column has a fixed width (what the panel has room for) and a window with as
many rows as the last only updates the cells that changed: a repaint of this panel, no
layout.  The table always has TOP rows (blank ones after the last symbol), so that holds
for a message and for a window with fewer symbols too.
"""
from __future__ import annotations

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from hotloop import events as ev
from hotloop.perf.buildid import KERNEL_DSO
from hotloop.render.report import dso_name, symbol_name

TOP = 25
OTHER_COLUMNS = 14      # the % and kind columns, and the three columns' cell padding
SCROLLBAR = 3           # a name is cut this much shorter: the scrollbar is over the column
SYMBOL, KIND = ColumnKey("symbol"), ColumnKey("kind")
# With room (a table this wide: a terminal of 120 columns, or the narrow layout's wide
# column), the kind column also names the DSO: "[.] libc.so.6", "[k] nf_tables" (a
# module; the kernel proper is "[k]" alone).
WITH_DSO = 48            # the symbol keeps 20 columns beside the DSO
KIND_WITH_DSO = 14

Cell = str | Text


class SymbolsTable(DataTable):
    DEFAULT_CSS = """
    SymbolsTable { height: 1fr; min-height: 3; overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True, show_cursor=False)
        self.latest: ev.HotSymbols | None = None
        self.placeholder = "no samples yet"
        self._room = 0                  # the symbol column's width (set from the panel's)
        self._kind = 0                  # the kind column's: 3, or KIND_WITH_DSO

    def on_focus(self) -> None:
        self.show_cursor = True         # the row `enter` annotates

    def on_blur(self) -> None:
        self.show_cursor = False

    def symbol_at(self, row: int) -> ev.HotSymbol | None:
        """The symbol a row shows (its full name: the cell may be cut), None on a message."""
        hot = self.latest
        return hot.symbols[row] if hot is not None and 0 <= row < len(hot.symbols) else None

    def on_mount(self) -> None:
        self.add_column("%", key="pct", width=5)
        self.add_column("", key="kind", width=self.kind_width())
        self.add_column("symbol", key="symbol", width=self.room())
        self.show_message("perf: no samples yet")

    def room(self) -> int:
        """The symbol column's width: the panel's less the other columns (a message in it
        shows in full up to there, as it did when the column took its content's width)."""
        return max(10 + SCROLLBAR, self.size.width - OTHER_COLUMNS - (self.kind_width() - 3))

    def kind_width(self) -> int:
        return KIND_WITH_DSO if self.size.width >= WITH_DSO else 3

    def show_message(self, text: str) -> None:
        self.latest = None
        self._fill([("", "", Text(text, style="dim"))])

    def show(self, hot: ev.HotSymbols) -> None:
        self.latest = hot
        room = (self._room or self.room()) - SCROLLBAR
        rows: list[tuple[Cell, Cell, Cell]] = []
        kind = self._kind or self.kind_width()
        for s in hot.symbols[:TOP]:
            rows.append((Text(f"{s.percent:5.1f}", justify="right"),
                         Text(_cut(("[k]" if s.kernel else "[.]")
                                   + (f" {dso_name(s)}" if kind > 3 and
                                      s.dso != KERNEL_DSO else ""), kind),
                              style="bold" if s.kernel else ""),
                         Text(_cut(symbol_name(s), room))))
        if not hot.symbols:
            rows.append(("", "", Text("no samples in this window", style="dim")))
        self._fill(rows)

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
        room, kind = self.room(), self.kind_width()
        if room == self._room and kind == self._kind or SYMBOL not in self.columns:
            return
        self._room, self._kind = room, kind
        for key, width in ((SYMBOL, room), (KIND, kind)):
            column = self.columns[key]
            column.width = width
            column.auto_width = False
        self._require_update_dimensions = True
        self._update_count += 1             # the rows' render caches
        self.refresh()
        if self.latest is not None:
            self.show(self.latest)          # names cut to the new width


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"
