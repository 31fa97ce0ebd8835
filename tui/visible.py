"""Text from outside hotloop made safe for a terminal.

A workload's error text, a result file's strings, a file name can hold an ESC
that would drive the terminal, a newline that would break a one-line message,
a bidi override that would reorder it.  `visible` shows each such character as
an escape instead (`\\x1b`, `\\n`, `\\u202e`), so what the user sees is what is
there.  Rich markup is another matter: escape it (rich.markup.escape) where
text goes through markup, or better, print it as a `Text`.
"""
from __future__ import annotations

import re

# C0 and C1 controls and DEL; line and paragraph separators; bidi embeddings,
# overrides and isolates and the direction marks
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def visible(text: str) -> str:
    """`text` with every control character written as its escape: one line, inert."""
    return _HIDDEN.sub(_escape, text)


# A spreadsheet takes a cell starting so as a formula (=HYPERLINK(...), -2+cmd|...): OWASP's
# CSV injection advice is a leading single quote, which makes it text
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_text(text: str) -> str:
    """A csv cell of text from outside hotloop (a label, a name, a file): `visible`, and never
    a formula.  Numbers are not text: they are written as numbers, a minus and all."""
    shown = visible(text)
    return "'" + shown if text.startswith(_FORMULA) or shown.startswith(_FORMULA) else shown


def visible_lines(text: str) -> str:
    """Several lines, each made `visible`: the line breaks between them stay."""
    return "\n".join(visible(line) for line in text.split("\n"))


def cut(text: str, width: int) -> str:
    """`text` in at most `width` columns: whole if it fits, else ending in an ellipsis."""
    if width <= 0:
        return ""
    return text if len(text) <= width else text[:width - 1] + "…"
