"""What `hotloop compare` prints and draws: the comparison of the sides in a format, or,
where each of two sides holds several variants, the before/after table a row a variant
(analysis.matched); the SVG picture of the same."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hotloop.analysis import compare, matched
from hotloop.analysis.comparison import Comparison
from hotloop.render import compare_formats, mail, svg
from hotloop.render.compare_formats import variants
from hotloop.results import Result


def output(sides: Sequence[Sequence[Result]], given: Sequence[str], fmt: str,
           noise: Path | None, pair_sessions: bool, width: int,
           picture: Path | None = None, primary: str | None = None
           ) -> tuple[list[tuple[str, Comparison]], str]:
    """(each comparison made, named by its variant or "" for a plain one; the text to
    print), the SVG written to `picture` when asked; `primary` the metric judged first
    (--metric; default the workload's)."""
    m = matched.match(sides, given, pair_sessions, noise, primary)
    if m is not None:
        if fmt == "mail":
            # the plan again: each variant of the before side, its sessions
            out = variants.render_mail(m, mail.reproduce(m.before_sessions, mail.WIDTH - 2),
                                       mail.measured(sides, [m.before, m.after],
                                                     variants=len(m.variants)))
        else:
            out = variants.render(m, fmt, width)
        if picture is not None:
            svg.save(picture, svg.coloured(variants.render_text(m, svg.WIDE)),
                     "hotloop compare " + " ".join(Path(f).name for f in given))
        return list(zip(m.variants, m.comparisons)), out
    comp = compare.compare_sides(sides, given, noise, pair_sessions=pair_sessions,
                                 primary=primary)
    out = mail.compare_mail(comp, sides) if fmt == "mail" else \
        compare_formats.render(comp, fmt, width=width)
    if picture is not None:             # the text's histogram, each side's mark its colour
        lines = svg.coloured(compare_formats.render(comp, "text", width=svg.WIDE))
        svg.save(picture, lines, "hotloop compare " + " ".join(Path(f).name for f in given))
    return [("", comp)], out
