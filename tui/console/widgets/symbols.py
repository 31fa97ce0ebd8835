"""Hot symbols from perf: the latest window while running, the whole run at the end."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from hotloop import events as ev

TOP = 25


class SymbolsTable(DataTable):
    DEFAULT_CSS = """
    SymbolsTable { height: 1fr; min-height: 3; overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True, show_cursor=False)
        self.latest: ev.HotSymbols | None = None
        self.placeholder = "no samples yet"

    def on_mount(self) -> None:
        self.add_column("%", key="pct", width=5)
        self.add_column("", key="kind", width=3)
        self.add_column("symbol", key="symbol")
        self.show_message("perf: no samples yet")

    def show_message(self, text: str) -> None:
        self.latest = None
        self.clear()
        self.add_row("", "", Text(text, style="dim"))

    def show(self, hot: ev.HotSymbols) -> None:
        self.latest = hot
        self.clear()
        room = max(10, self.size.width - 17)   # the other columns, padding, scrollbar
        for s in hot.symbols[:TOP]:
            name = s.symbol if len(s.symbol) <= room else s.symbol[:room - 1] + "…"
            self.add_row(Text(f"{s.percent:5.1f}", justify="right"),
                         Text("[k]" if s.kernel else "[.]", style="bold" if s.kernel else ""),
                         Text(name))
        if not hot.symbols:
            self.add_row("", "", Text("no samples in this window", style="dim"))

    def on_resize(self) -> None:
        if self.latest is not None:
            self.show(self.latest)
