"""Which of a long session's perf windows annotate counts: all of them up to MOST_WINDOWS, else
an even spread of those holding the symbol, so that annotating one symbol of an 8-hour session
takes seconds, not an hour.
"""
from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

# Windows counted at most, an even spread of those holding the symbol: perf script takes about
# 0.12 s of CPU a window, so every window of an 8-hour session (32,000) took an hour; 48 of
# them take seconds, and a hot symbol's shares barely move (benchmarks/annotate_speed.py).
MOST_WINDOWS = 48


def spread(files: list[Path], holding: Collection[int] | None = None,
           most: int = MOST_WINDOWS) -> tuple[list[Path], int]:
    """The files to count, and of how many they are an even spread (0: all those holding
    it): every file up to `most`; beyond, `most` spread evenly over those whose window (the
    file's place, as the result's window lines number them) holds the symbol (`holding`, the
    windows whose line lists it; a file past the last line may hold it; windows numbered
    beyond the files, some removed, and the index is not used)."""
    if len(files) <= most:
        return files, 0
    pool = files
    if holding and max(holding) < len(files):
        last = max(holding)
        pool = [f for i, f in enumerate(files) if i in holding or i > last]
    if len(pool) <= most:
        return pool, 0
    step = len(pool) / most
    return [pool[int(k * step)] for k in range(most)], len(pool)
