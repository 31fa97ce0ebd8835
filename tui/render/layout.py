"""Text that fits: the terminal's width, paragraphs wrapped to it, tables that give up their
least important columns first, and the one escaping rule for text read from a file.

The rule: every string that comes from a result file (a name, a label, a header value, a
symbol, a warning quoting one) is made `visible` where it enters a line (a cell, a title, a
note), before lines are joined; a newline in it is then the two characters `\\n`, never a
new row.  Joining lines and escaping them after (visible_lines) cannot tell a newline of the
file from one of the layout: every text format escapes first.
"""
from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence

from hotloop.visible import cut, visible

FALLBACK = 80                           # neither COLUMNS nor a terminal says
NARROWEST = 40                          # below this a table cannot be read anyway
UNBOUNDED = 100_000                     # a width no line reaches: a renderer asked for none


def safe(text: object) -> str:
    """A string from a file as it may enter a line: one line, inert."""
    return visible(str(text))


def terminal_width() -> int:
    """COLUMNS, else the terminal's width, else 80 (a pipe, a file)."""
    return max(NARROWEST, shutil.get_terminal_size((FALLBACK, 24)).columns)


def wrap(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    """A paragraph in lines of at most `width` columns: `first` (default `indent`) before
    the first line, `indent` before the others; a word longer than a line is broken."""
    lead = indent if first is None else first
    if len(lead) + len(text) <= width:
        return [lead + text]
    return textwrap.wrap(text, width=width, initial_indent=lead, subsequent_indent=indent,
                         break_long_words=True, break_on_hyphens=False) or [lead]


def bound(lines: Sequence[str], width: int) -> list[str]:
    """Every line in `width` columns: a line still too long (a table's row that cannot
    narrow further) is cut with an ellipsis."""
    return [ln if len(ln) <= width else cut(ln, width) for ln in lines]


def _widths(rows: Sequence[Sequence[str]], cols: Sequence[int]) -> list[int]:
    return [max(len(r[i]) for r in rows) for i in cols]


def table(rows: Sequence[Sequence[str]], right: set[int], width: int | None = None,
          drop: Sequence[int] = (), squeeze: Sequence[int] = (), indent: str = "  ",
          gap: str = "  ", least: int = 8) -> list[str]:
    """Aligned columns (`right`: the right-aligned ones; rows[0] the header).  Wider than
    `width`, it drops the columns of `drop` in that order, then cuts the cells of the
    columns of `squeeze`, in that order, with an ellipsis (never below `least` columns,
    nor below the header's word), until it fits."""
    if not rows:
        return []
    cols = list(range(len(rows[0])))

    def total(keep: list[int], widths: list[int]) -> int:
        return len(indent) + sum(widths) + len(gap) * (len(keep) - 1)

    widths = _widths(rows, cols)
    if width is not None:
        for d in drop:
            if total(cols, widths) <= width:
                break
            if d in cols:
                k = cols.index(d)
                cols.pop(k)
                widths.pop(k)
        for s in squeeze:
            over = total(cols, widths) - width
            if over <= 0:
                break
            if s in cols:
                k = cols.index(s)
                floor = max(least, len(rows[0][s]))
                widths[k] = max(floor, widths[k] - over)
    out = []
    for r in rows:
        cells = []
        for c, w in zip(cols, widths):
            cell = cut(r[c], w)
            cells.append(cell.rjust(w) if c in right else cell.ljust(w))
        out.append((indent + gap.join(cells)).rstrip())
    return out
