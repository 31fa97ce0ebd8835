"""Histograms as text: a bar a bucket, as wide as the line allows; the sides of a comparison
on shared buckets told apart without colour, each by its own mark, named in a legend."""
from __future__ import annotations

from collections.abc import Sequence

from hotloop.analysis.comparison import SharedHistogram
from hotloop.render.layout import table
from hotloop.render.units import bucket_labels
from hotloop.visible import cut

MARKS = ("█", "░", "▒", "▓", "#", "=")     # a side each, in order: the same in every view
ASCII_MARKS = ("#", "=", "+", "*", "o", "x")  # a mail's: any font, any mail reader
BAR = 40                                # the longest bar, where there is room


def mark(i: int, marks: Sequence[str] = MARKS) -> str:
    return marks[i % len(marks)]


def bar(count: int, top: int, room: int, sign: str = "█") -> str:
    """`count` of `top` as a bar of at most `room` marks (a bucket with any count gets one)."""
    if count <= 0 or top <= 0:
        return ""
    return sign * max(1, round(room * count / top))


def legend(names: Sequence[str], width: int, marks: Sequence[str] = MARKS) -> list[str]:
    """"  █ stock   ░ patched": each side's mark, the names cut to share the line."""
    room = max(8, (width - 2) // max(1, len(names)) - 4)
    return ["  " + "   ".join(f"{mark(i, marks)} {cut(n, room)}" for i, n in enumerate(names))]


def side_rows(h: SharedHistogram, names: Sequence[str], width: int,
              marks: Sequence[str] = MARKS) -> list[str]:
    """The shared buckets: a row a bucket with each side's count, % and bar (its own mark),
    the bars as wide as `width` leaves them, a legend first."""
    labels = bucket_labels(h.buckets, h.unit)
    k = len(names)
    top = max((c for b in h.buckets for c in b.counts), default=0)
    cells = [[f"{c} ({p:.1f}%)" for c, p in zip(b.counts, b.percents)] for b in h.buckets]
    fixed = 2 + max(map(len, labels)) + sum(
        2 + max(len(r[i]) for r in cells) for i in range(k)) + 2 * k
    room = max(3, min(BAR, (width - fixed) // k))
    rows = [[lab, *cs, *(bar(c, top, room, mark(i, marks)) for i, c in enumerate(b.counts))]
            for lab, cs, b in zip(labels, cells, h.buckets)]
    # the names are the legend's: each count column is headed by its side's mark
    head = [[""] + [mark(i, marks) for i in range(k)] + [""] * k]
    out = legend(names, width, marks) if k > 1 else []
    return out + table(head + rows, right=set(range(1, k + 1)), width=width)
