"""A comparison in five formats, a module each: text, md, org, csv and json (what they say
alike: shared).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from hotloop.analysis import compare
from hotloop.analysis.comparison import Comparison
from hotloop.errors import HotloopError
from hotloop.render.compare_formats.csv import render_csv
from hotloop.render.compare_formats.json import document, render_json
from hotloop.render.compare_formats.md import render_md
from hotloop.render.compare_formats.org import render_org
from hotloop.render.compare_formats.text import render_text

FORMATS = ("text", "md", "org", "csv", "json")
__all__ = ["FORMATS", "document", "main_compare", "render"]     # document: json's dict


_RENDERERS: dict[str, Callable[[Comparison], str]] = {"md": render_md, "org": render_org, "csv": render_csv,
              "json": render_json}


def render(comp: Comparison, fmt: str = "text", width: int | None = None) -> str:
    """The comparison in a format; text in lines of at most `width` columns (default: the
    terminal's)."""
    if fmt == "text":
        return render_text(comp, width)
    renderer = _RENDERERS.get(fmt)
    if renderer is None:
        raise HotloopError(f"compare: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return renderer(comp)


def main_compare(paths: Sequence[str | Path], fmt: str = "text",
                 noise_file: Path | None = None) -> str:
    """What `hotloop compare A B C --format F [--noise FILE]` prints."""
    if fmt not in FORMATS:
        raise HotloopError(f"compare: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return render(compare.load_and_compare(paths, noise_file), fmt)
