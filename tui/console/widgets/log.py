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
from textual.widgets import RichLog

MAX_LINES = 500


class LogPanel(RichLog):
    DEFAULT_CSS = """
    LogPanel { scrollbar-gutter: stable; overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, wrap=True, markup=False, max_lines=MAX_LINES, min_width=1)
        self.entries: deque[Text] = deque(maxlen=MAX_LINES)
        self._wrapped_at = 0            # the width the lines on screen were wrapped at

    def add(self, text: Text) -> None:
        self.entries.append(text)
        self.write(text)

    def on_resize(self, event: Resize) -> None:
        width = self.scrollable_content_region.width
        if self._wrapped_at and width and width != self._wrapped_at:
            self.clear()
            for text in self.entries:
                self.write(text)
        if width:
            self._wrapped_at = width
