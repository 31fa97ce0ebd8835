"""Reports as SVG pictures: the text report drawn by Rich's recording console (no plotting
stack), the histogram bars in colour.  `show --svg` and `compare --svg` write them."""
from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from hotloop.errors import HotloopError, RunFailed
from hotloop.render.histograms import MARKS

COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "red")   # a side each, in order
MIN_WIDTH, MAX_WIDTH = 60, 200
WIDE = 120                              # the text a picture draws is laid out this wide


def check_target(path: Path) -> None:
    """Before any work: an --svg file needs a directory to go to (one line, exit 2)."""
    if path.is_dir():
        raise HotloopError(f"--svg {path}: is a directory, not a file")
    if not path.parent.is_dir():
        raise HotloopError(f"--svg {path}: no such directory {path.parent}")


def picture(lines: Sequence[str | Text], title: str) -> str:
    """The lines as an SVG document (a terminal window, as wide as the widest line)."""
    width = max([MIN_WIDTH, *(len(str(ln)) + 2 for ln in lines)])
    console = Console(record=True, width=min(MAX_WIDTH, width), file=io.StringIO(),
                      force_terminal=True, color_system="truecolor", soft_wrap=False)
    for line in lines:
        # plain text is printed as it is: "[k] do_syscall_64" is no markup
        console.print(line if isinstance(line, Text) else Text(line), overflow="ignore",
                      crop=False)
    return console.export_svg(title=title)


# The differential profile's words (compare_formats.symbols), as the console colours a change
WORDS = {r"\bcostlier\b": "bold red", r"\bcheaper\b": "bold green", r"\bnew\b$": "yellow",
         r"\bgone\b$": "yellow"}


def coloured(text: str, colour: str = COLOURS[0]) -> list[Text]:
    """A text report's lines, its bars (█) in a colour, a symbol row's word in its own."""
    out = []
    for line in text.splitlines():
        t = Text(line)
        t.highlight_regex("█+", colour)
        for i, sign in enumerate(MARKS[1:4], 1):    # a comparison's later sides' bars
            t.highlight_regex(f"{re.escape(sign)}+", COLOURS[i % len(COLOURS)])
        if line.startswith("  [k] ") or line.startswith("  [.] "):
            for pattern, style in WORDS.items():
                t.highlight_regex(pattern, style)
        out.append(t)
    return out


def save(path: Path, lines: Sequence[str | Text], title: str) -> None:
    check_target(path)
    try:
        path.write_text(picture(lines, title), encoding="utf-8")
    except OSError as e:               # a full disk is no bad usage: exit 1, as for results
        raise RunFailed(f"--svg {path}: cannot write: {e.strerror}") from None
