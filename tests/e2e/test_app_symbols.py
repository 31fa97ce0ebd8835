"""The compare screen's symbol tab on sessions forged with known samples and task-clock (the
differential profile, issue #32), and `a` on a row: the symbol annotated on both sides'
hottest sessions, here and on a real run's perf data (tests/e2e/test_annotate.py's loop).

Three sessions a side of zero_null, 120000 ops each (forge.zero_null's 6 runs of 20000):
the baseline's worker takes 120 ms of task-clock (1000 ns/op), the new side's 130 (1083);
read_zero (GCC's .isra.0 clone in the baseline's build, plain in the new one) goes from 30%
to 42% of the samples (300 to 455 ns/op: costlier, called), clear_user from 20% to 12%
(200 to 130: cheaper, called), do_syscall_64 and write_null
keep their cost per op though their shares fall, a symbol of 5 samples a session is too few
to tell, and one sampled only on the new side is new.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import forge
import pytest
from test_app import wait_for
from test_app_compare import SIZE, compared, open_compare, pick, results_dir, status
from textual.widgets import DataTable, Static

from hotloop.console.app import HotloopApp
from hotloop.console.screens.compare import CompareScreen
from hotloop.console.screens.symbol_pair import SymbolPairScreen
from hotloop.console.widgets.symbol_diff import SymbolDiff

KERNEL = "[kernel.kallsyms]"
CLOCK = {"base": (120.0, 121.0, 119.0, 120.5, 119.5),
         "new": (130.0, 131.0, 129.0, 130.5, 129.5)}
# samples a session, of 1000 of the worker's
SAMPLES: dict[str, dict[str, tuple[int, ...]]] = {
    "base": {"read_zero.isra.0": (300, 305, 296, 302, 298),
             "do_syscall_64": (250, 248, 252, 251, 249),
             "clear_user": (200, 198, 202, 199, 201), "write_null": (100, 102, 99, 101, 100),
             "tiny": (5, 6, 4, 5, 5)},
    "new": {"read_zero": (420, 425, 416, 422, 418), "do_syscall_64": (231, 229, 233, 230, 232),
            "clear_user": (120, 122, 118, 121, 119), "write_null": (92, 94, 91, 91, 94),
            "tiny": (5, 5, 6, 4, 5), "fresh": (30, 31, 29, 30, 30)},
}


def hot(samples: dict[str, int], total: int = 1000) -> dict[str, Any]:
    syms = [{"symbol": name, "dso": KERNEL, "kernel": True, "samples": n,
             "percent": round(100 * n / total, 4)} for name, n in samples.items()]
    return {"type": "hot_symbols", "symbols": syms, "scope": "session", "window": 0,
            "samples": total, "variant": ""}


def symbol_sessions(directory: Path, n: int = 3, series: str = "") -> list[Path]:
    """base1..n and new1..n (the new side's hottest for read_zero: new2, 425 samples); or,
    given a `series` id, its sessions k1/s01..s0n and k2/s01..s0n, a kernel a side."""
    out = []
    for k, side in enumerate(("base", "new")):
        for i in range(n):
            kw: dict[str, Any] = {}
            path = directory / f"{side}{i + 1}.jsonl"
            if series:
                path = directory / f"k{k + 1}" / f"s{i + 1:02d}.jsonl"
                kw["head"] = forge.header(
                    kernel={"name": f"k{k + 1}", "summary": "", "label": f"k{k + 1}",
                            "sysctl": {}, "expect": {}, "origin": ""},
                    label=f"k{k + 1}", batch={"id": series, "interleaved": False,
                                              "variants": 2, "session": i + 1})
            out.append(forge.zero_null(
                path, round(forge.NS_512 * (1 + i / 200) * (0.98 if k else 1.0)),
                more=[hot({name: v[i] for name, v in SAMPLES[side].items()})],
                counters={"task-clock": CLOCK[side][i]}, **kw))
    return out


def cells(table: DataTable, row: int) -> list[str]:
    return [str(c) for c in table.get_row_at(row)]


async def picked_sides(pilot, app: HotloopApp, n: int, base: list[str], new: list[str]):
    """The compare screen with `base` and `new` picked as two sides, compared."""
    screen = await open_compare(pilot, app, n)
    for side in (base, new):
        await pick(pilot, screen, side[0])
        for name in side[1:]:
            await pick(pilot, screen, name, "a")
    await compared(pilot, screen)
    assert screen.error == ""
    return screen


def test_the_symbol_tab_sorts_by_change_per_op_marks_called_rows_and_explains(
        isolated: Path) -> None:
    async def go() -> None:
        out = results_dir(isolated, symbol_sessions(isolated / "made"))
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await picked_sides(pilot, app, 6, ["base1.jsonl", "base2.jsonl",
                                                        "base3.jsonl"],
                                        ["new1.jsonl", "new2.jsonl", "new3.jsonl"])
            await pilot.press("4")
            diff = screen.query_one(SymbolDiff)
            table = screen.query_one("#compare-symbols", DataTable)
            await wait_for(pilot, lambda: table.row_count > 0, 5, "symbol rows")
            assert screen.focused is table
            # 80 columns: the name first; the interval, the sides' costs and q give way to the
            # change, its % and the word (the row in full under the table says them)
            assert [str(k.value) for k in table.columns] == ["symbol", "change", "pct", "word"]
            assert "by |Δ ns/op|" in str(table.columns[table.ordered_columns[0].key].label)
            rows = [cells(table, i) for i in range(table.row_count)]
            # by |change in ns/op|: read_zero +155, clear_user -70, fresh +32.5 (new), tiny
            # (can't tell), write_null -0.3, do_syscall_64 +0.25; the called ones marked.  The
            # % is of the symbol's part, the session's scale removed: read_zero's +51.7%
            # against the rest of the profile (its ns/op +51.6%)
            assert [r[0].split()[-2 if r[0].endswith("+1") else -1] for r in rows] == [
                "read_zero", "read_zero", "read_zero.isra.0", "clear_user", "fresh", "tiny",
                "write_null", "do_syscall_64"]
            assert rows[0] == ["▲ [k] read_zero +1", "+155.0", "+51.7%", "costlier"]
            assert rows[1][0].strip() == "read_zero" and rows[2][0].strip() == "read_zero.isra.0"
            assert rows[3] == ["▼ [k] clear_user", "-69.98", "-34.8%", "cheaper"]
            assert rows[4] == ["  [k] fresh", "+32.51", "-", "new"]
            assert rows[5][0] == "  [k] tiny" and rows[5][-1] == "can't tell"
            assert rows[6][-1] == rows[7][-1] == "can't tell"
            # the called rows are bold (the marker and bold read without colours)
            first = table.get_row_at(0)
            assert "bold" in str(first[0].style) and "bold" in str(first[1].style)
            assert "bold" not in str(table.get_row_at(6)[0].style)
            explained = str(screen.query_one("#symbol-explained", Static).render())
            assert explained.startswith("+83.3 ns/op CPU (1000.0 → 1083.3): read_zero "
                                        "+155.0 [+124.3, +188.5], clear_user -70.0 [")
            assert explained.endswith(", the rest -34.7")
            # the cursor row in full under the table
            detail = str(screen.query_one("#symbol-detail", Static).render())
            assert detail.startswith("read_zero, read_zero.isra.0 in kernel: 300.4 → 455.4 "
                                     "ns/op (+155.0, +51.7%, interval [+41.4, +62.8] % (adjusted), p ")
            assert "costlier · a annotates" in detail
            await pilot.press("down", "down", "down")
            detail = str(screen.query_one("#symbol-detail", Static).render())
            assert detail.startswith("clear_user in kernel: 200.0 → 130.0")
            # the footer offers a; the sessions were not recorded with perf data: each
            # side's hottest session is named, and why it cannot annotate, in one line
            assert screen.active_bindings["a"].binding.id == "compare.symbol.annotate"
            await pilot.press("up", "up", "up", "a")
            await wait_for(pilot, lambda: isinstance(app.screen, SymbolPairScreen)
                           and all(app.screen.messages), 30, "both sides said")
            pair = app.screen
            assert pair.wanted.symbol == "read_zero"
            base, new = pair.pane_text(0), pair.pane_text(1)
            assert base.startswith("baseline: results/base2.jsonl, 305 samples of "
                                   "read_zero.isra.0"), base
            assert "new: results/new2.jsonl, 425 samples of read_zero" in new
            for said in pair.messages:
                assert said.endswith("perf was off for this run: nothing to annotate")
                assert "\n" not in said
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is screen, 5, "back to compare")
            # enter on a name under the merged row: that name, on the side that sampled it
            await pilot.press("down", "down", "enter")
            await wait_for(pilot, lambda: isinstance(app.screen, SymbolPairScreen)
                           and all(app.screen.messages), 30, "both sides said")
            assert app.screen.wanted.name == "read_zero.isra.0"
            assert app.screen.messages[1].startswith("read_zero.isra.0: not sampled on this "
                                                     "side (3 sessions)")
            await pilot.press("escape")
            assert diff.selected() is not None
    asyncio.run(go())


def test_c_after_a_series_compares_its_sessions_paired_with_the_symbol_table(
        isolated: Path) -> None:
    """What `c` opens once the console's series is done (controller.series_sides, as
    test_app_series.py's real series sets it): its kernels' sessions compared, paired by
    round, the symbol tab's rows tested on the pairs and the status line pointing at them."""
    async def go() -> None:
        out = isolated / "results"
        d = out / "2026-11-30T080000-zero_null"
        files = symbol_sessions(d, n=5, series="ser1")
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10, "a plan")
            app.main_screen.controller.series_sides = [files[:5], files[5:]]
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen)
                           and (app.screen.comparison is not None or app.screen.error), 30,
                           "the series compared")
            screen = app.screen
            assert not screen.error, screen.error
            assert screen.comparison.pairs[0].method == "pairs"
            assert "4 symbols: 1 costlier, 1 cheaper" in status(screen)
            await pilot.press("4")
            diff = screen.query_one(SymbolDiff)
            table = screen.query_one("#compare-symbols", DataTable)
            await wait_for(pilot, lambda: table.row_count > 0, 5, "symbol rows")
            first = cells(table, 0)
            assert first[0] == "▲ [k] read_zero +1" and first[-1] == "costlier"
            assert diff.rows[0].delta.method == "pairs"
            assert [r.delta.symbol for r in diff.rows
                    if r.delta and r.delta.significant and not r.name] == \
                ["read_zero", "clear_user", "fresh"]     # new, 30 a session against none
            explained = str(screen.query_one("#symbol-explained", Static).render())
            assert explained.startswith("+83.3 ns/op CPU (1000.0 → 1083.3): read_zero +")
            # the hottest sessions are the series' own: k1/s02 (305 samples), k2/s02 (425)
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, SymbolPairScreen)
                           and all(app.screen.messages), 30, "both sides said")
            assert app.screen.pane_text(0).startswith("baseline: k1/s02.jsonl, 305 samples")
            assert app.screen.pane_text(1).startswith("new: k2/s02.jsonl, 425 samples")
    asyncio.run(go())


# Kernel names as long as perf prints them: what a kernel developer greps for
LONG = ("__kmalloc_node_track_caller_noprof", "syscall_exit_to_user_mode_prepare",
        "entry_SYSCALL_64_after_hwframe")


@pytest.mark.parametrize("width, more", [(80, []), (100, ["ci"]), (120, ["ci"]),
                                         (150, ["base", "new", "ci", "q", "dso"])])
def test_the_symbol_tab_keeps_a_kernel_names_whole_first(isolated: Path, width: int,
                                                         more: list[str]) -> None:
    """The compare screen's symbol tab at 80 columns and more: each long kernel name whole in
    its cell; the other columns join only while the name keeps its room."""
    async def go() -> None:
        made = []
        for k, side in enumerate(("base", "new")):
            for i in range(3):
                samples = {name: 200 + 40 * j * k + i for j, name in enumerate(LONG)}
                made.append(forge.zero_null(
                    isolated / "made" / f"{side}{i + 1}.jsonl",
                    round(forge.NS_512 * (1 + i / 200)), more=[hot(samples)],
                    counters={"task-clock": CLOCK[side][i]}))
        out = results_dir(isolated, made)
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=(width, 24)) as pilot:
            screen = await picked_sides(pilot, app, 6, ["base1.jsonl", "base2.jsonl",
                                                        "base3.jsonl"],
                                        ["new1.jsonl", "new2.jsonl", "new3.jsonl"])
            await pilot.press("4")
            table = screen.query_one("#compare-symbols", DataTable)
            await wait_for(pilot, lambda: table.row_count > 0, 5, "symbol rows")
            names = {cells(table, i)[0].split()[-1] for i in range(table.row_count)}
            assert names == set(LONG), names
            keys = [str(k.value) for k in table.columns]
            assert keys == ["symbol", *[k for k in ("base", "new") if k in more], "change",
                            "pct", *[k for k in ("ci",) if k in more], "word",
                            *[k for k in ("q", "dso") if k in more]], keys
    asyncio.run(go())


@pytest.mark.parametrize("size", [(120, 40), (120, 36), (110, 30)])
def test_the_live_views_hot_symbols_have_the_width_and_names_are_whole(isolated: Path,
                                                                       size) -> None:
    """The live view from 110 columns: the hot symbols span the live side's width, so a long
    kernel name (and a user-space one with its DSO) is whole; the distribution beside the
    stats is the wider of the two, the stats no wider than their lines."""
    from hotloop import events as ev
    from hotloop.console.messages import SymbolsArrived
    from hotloop.console.widgets.symbols import SymbolsTable
    hot = ev.HotSymbols(tuple(ev.HotSymbol(name, KERNEL, 10.0 - i, True, 100 - i)
                              for i, name in enumerate(LONG))
                        + (ev.HotSymbol("__memmove_avx_unaligned_erms", "libc.so.6", 3.0,
                                        False, 30),), scope="session")

    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=size) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10,
                           "a plan loaded")
            app.main_screen.set_view("live")
            app.main_screen.on_symbols_arrived(SymbolsArrived(hot))
            await pilot.pause()
            table = app.query_one(SymbolsTable)
            shown = [table.get_row_at(i)[2].plain for i in range(len(hot.symbols))]
            for name, cell in zip(LONG, shown):
                assert cell.rstrip() == name, shown
            assert shown[-1].startswith("__memmove_avx_unaligned_erms ")
            assert shown[-1].rstrip().endswith("libc.so.6"), shown
            assert table.border_subtitle == "a: annotate"       # no name cut to spell out
            hist, stats = app.query_one("#histogram"), app.query_one("#stats")
            symbols = app.query_one("#symbols")
            wide = [w.outer_size.width for w in (hist, stats, symbols)]
            assert wide[0] > wide[1] <= 36 and wide[2] == wide[0] + wide[1], wide
            assert table.size.height >= 4        # a header and three rows at least
    asyncio.run(go())
