"""The console's log: warnings, errors and what a run did, wrapped at the panel's width.

A RichLog renders each line once, at max(its width, `min_width`, 78 by default) and never
again: in an 80-column terminal the panel is narrower than that, so the ends of wrapped
lines were cut off ("sampl|falls" lost "ing"), and a line written before a resize kept
its old wrapping.  This one wraps at the width it has and writes its lines again when
that width changes.
"""
from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.events import Resize
from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import RichLog

from hotloop.visible import visible

MAX_LINES = 500


class LogPanel(RichLog):
    DEFAULT_CSS = """
    LogPanel { overflow-x: hidden; overflow-y: scroll; }
    """
    # A line grows the log's virtual size, for which Textual lays the whole screen out (one
    # of the longest stalls after `r`, 30-190 ms here).  The panel's own size never changes
    # with its lines, and its scrollbar is always there (overflow-y: scroll), so a line only
    # has to repaint the panel and move the scrollbar's thumb.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)

    def watch_virtual_size(self, size: Size) -> None:
        bar = self.vertical_scrollbar
        bar.window_virtual_size = size.height
        bar.window_size = self.scrollable_content_region.height
        self.refresh()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, wrap=True, markup=False, max_lines=MAX_LINES, min_width=1)
        self.entries: deque[Text] = deque(maxlen=MAX_LINES)
        self._wrapped_at = 0            # the width the lines on screen were wrapped at

    def add(self, text: Text) -> None:
        self.entries.append(text)
        self.write(text)

    def say(self, text: str, level: str = "info") -> None:
        """A line of the console's: "warning: " or "error: " first, in the theme's colour."""
        colour = {"warning": "warning", "error": "error", "success": "success"}.get(level)
        style = ""
        if colour:
            style = self.app.theme_variables.get(colour, "") or ""
        prefix = {"warning": "warning: ", "error": "error: "}.get(level, "")
        # a workload's error text may hold an ESC or newlines: shown, never obeyed
        self.add(Text(prefix + visible(text), style=style))

    def on_resize(self, event: Resize) -> None:
        width = self.scrollable_content_region.width
        if self._wrapped_at and width and width != self._wrapped_at:
            self.clear()
            for text in self.entries:
                self.write(text)
        if width:
            self._wrapped_at = width
