"""Which perf windows annotate counts of a long session (perf/spread.py): all up to
MOST_WINDOWS, else an even spread of those the result's window lines say hold the symbol."""
from __future__ import annotations

from pathlib import Path

import forge

from hotloop.perf.spread import MOST_WINDOWS, spread
from hotloop.results.reader import windows_holding

FILES = [Path(f"perf.data.{i:05d}.gz") for i in range(1000)]


def test_a_short_session_counts_every_window():
    assert spread(FILES[:MOST_WINDOWS], {3}) == (FILES[:MOST_WINDOWS], 0)


def test_a_long_one_counts_an_even_spread_of_the_windows_holding_the_symbol():
    holding = set(range(0, 900, 3))             # 300 windows of 900 numbered hold it
    got, of = spread(FILES, holding)
    assert of == 300 + 102 and len(got) == MOST_WINDOWS    # and the 102 after the last
    index = [FILES.index(f) for f in got]
    assert index == sorted(index) and index[0] == 0 and index[-1] > 897
    assert all(i in holding or i > 897 for i in index)
    pool = [i for i in range(1000) if i in holding or i > 897]
    at = [pool.index(i) for i in index]         # even over the windows holding it
    assert {b - a for a, b in zip(at, at[1:])} <= {8, 9}
    got, of = spread(FILES, {5, 7})             # window 6 does not hold it
    assert of == 994 and got[0] == FILES[5] and FILES[6] not in got
    # few enough holding it: all of those, none else
    few = spread(FILES[:60], {1, 2, 59})
    assert few == ([FILES[1], FILES[2], FILES[59]], 0)


def test_windows_numbered_beyond_the_files_are_no_index():
    got, of = spread(FILES[:100], {150})
    assert of == 100 and len(got) == MOST_WINDOWS


def test_the_index_is_the_window_lines_listing_the_symbol(tmp_path):
    lines = [forge.symbols([60.0, 30.0], scope="window", window=i,
                           names=["hl_run" if i % 2 else "other", "x"]) for i in range(10)]
    lines.append(forge.symbols([60.0], scope="run", window=1, names=["hl_run"]))
    f = forge.zero_null(tmp_path / "w.jsonl", 100_000, more=lines)
    assert windows_holding(f, "hl_run") == {1, 3, 5, 7, 9}
    assert windows_holding(f, "hl_ru") == set()
