"""The console's compare screen, driven with Pilot on result files with known numbers.

Two zero_null results (5 runs each, 512-byte and 16 KiB blocks: the bigger blocks move far
more bytes a second, so the verdict is "faster", with one session a side and no
calibration too, beyond any session's offset, on these numbers whatever the machine is doing) and a syscall result (another workload), forged as `hotloop run` writes them
(tests/forge.py), made once per module and copied into each test's results directory.  The
screen is the real one; the files need no run (tests/e2e/test_run.py runs the real thing).
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import forge
import pytest
from test_app import wait_for
from textual.content import Content
from textual.widgets import DataTable, Static

from hotloop.console.app import HotloopApp
from hotloop.console.screens.compare import CompareScreen
from hotloop.console.widgets.compare_histogram import CompareHistogram

SIZE = (80, 24)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("made")
    small = forge.NS_512 * 3000 // 20000                    # count=3000
    return {
        "small": forge.zero_null(base / "bs512.jsonl", small, count=3000, n=5),
        "big": forge.zero_null(base / "bs16k.jsonl", small * 8, count=3000, n=5,
                               block_size=16384),
        "syscall": forge.write(base / "syscall.jsonl",
                               forge.header(forge.SYSCALL, {"call": "getppid", "loops": 100000},
                                            runs=5),
                               [forge.run(i, "ns/op", ops=100000, ns=round(
                                   9_000_000 * forge.JITTER[i])) for i in range(5)]),
    }


def results_dir(isolated: Path, files: list[Path]) -> Path:
    """Copy `files` in, the first the oldest (the screen lists newest first)."""
    out = isolated / "results"
    out.mkdir(exist_ok=True)
    for i, f in enumerate(files):
        dest = out / f.name
        shutil.copyfile(f, dest)
        os.utime(dest, (1_700_000_000 + i * 60, 1_700_000_000 + i * 60))
    return out


async def open_compare(pilot, app: HotloopApp, n: int) -> CompareScreen:
    await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10, "a plan loaded")
    await pilot.press("c")
    await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                   10, "the compare screen and its file list")
    screen = app.screen
    assert isinstance(screen, CompareScreen)
    assert len(screen.entries) == n
    return screen


async def pick(pilot, screen: CompareScreen, name: str, key: str = "space") -> None:
    """Move the file list's cursor to `name` with the arrow keys and pick it."""
    table = screen.query_one("#compare-files", DataTable)
    row = [e.path.name for e in screen.entries].index(name)
    while table.cursor_row != row:
        await pilot.press("down" if table.cursor_row < row else "up")
    before = [list(side) for side in screen.sides]
    await pilot.press(key)
    await wait_for(pilot, lambda: screen.sides != before, 5, f"{name} (un)picked")


async def compared(pilot, screen: CompareScreen) -> None:
    """`c` on the sides picked, and the comparison (or its error) back from its thread."""
    await pilot.press("c")
    await wait_for(pilot, lambda: screen.comparison is not None or screen.error, 30,
                   "the comparison")


def status(screen: CompareScreen) -> str:
    return str(screen.query_one("#compare-status", Static).render())


def test_compare_two_files_verdict_histogram_and_back(isolated: Path,
                                                      made: dict[str, Path]) -> None:
    async def go() -> None:
        out = results_dir(isolated, [made["small"], made["big"]])
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 2)
            files = screen.query_one("#compare-files", DataTable)
            assert [e.path.name for e in screen.entries] == ["bs16k.jsonl", "bs512.jsonl"]
            assert str(files.get_cell(str(out / "bs512.jsonl"), "workload")) == "zero_null"
            assert str(files.get_cell(str(out / "bs512.jsonl"), "runs")) == "5"
            await pick(pilot, screen, "bs512.jsonl", "enter")      # the baseline
            await pick(pilot, screen, "bs16k.jsonl", "space")
            assert [p.name for p in screen.picked] == ["bs512.jsonl", "bs16k.jsonl"]
            assert str(files.get_cell(str(out / "bs512.jsonl"), "pick")) == "base"
            assert str(files.get_cell(str(out / "bs16k.jsonl"), "pick")) == "2"
            await compared(pilot, screen)
            assert screen.error == ""
            table = screen.query_one("#compare-table", DataTable)
            await wait_for(pilot, lambda: table.row_count > 0, 5, "table rows")
            # 80 columns: metric, change, CI and verdict; the row in full beneath the table
            assert list(table.columns) == ["metric", "change", "ci", "verdict"]
            first = dict(zip(table.columns, (str(c) for c in table.get_row_at(0))))
            assert first["metric"] == "bytes/s"                # the primary metric first
            # one session a side, this machine not calibrated: a change far beyond any
            # session's offset is called all the same, saying the bound it beat
            assert first["verdict"] == "faster (beyond offsets)"
            assert first["change"].startswith("+")
            detail = str(screen.query_one("#compare-detail", Static).render())
            assert detail.startswith("bytes/s: ") and "→" in detail and "p " in detail
            assert ": faster: beyond any session's offset (up to 25% a session)" in detail
            metrics = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert "ns/op" in metrics
            warnings = str(screen.query_one("#compare-warnings", Static).render())
            assert "params.block_size 512 -> 16384" in warnings
            # the histogram: both files on the shared buckets, 5 runs each
            hist = screen.query_one(CompareHistogram)
            series = hist.series()
            assert list(series) == ["bs512", "bs16k"]
            assert [sum(v) for v in series.values()] == [5, 5]
            # its keys move the verdicts' cursor (focus lands after the call that asks it)
            await wait_for(pilot, lambda: screen.focused is table, 5, "the verdicts focused")
            await pilot.press("3")
            await wait_for(pilot, lambda: hist.is_mounted and hist.display
                           and hist.size.width > 0, 5, "histogram tab")
            await pilot.press("4")
            syms = screen.query_one("#compare-symbols", DataTable)
            assert "no perf symbols" in " ".join(str(syms.get_row_at(i)[0])
                                                 for i in range(syms.row_count))
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is app.main_screen, 5, "back")
            assert app.main_screen.check_action("run", ()) is True
    run(go())


def test_symbols_tab_shows_a_function_renamed_across_builds_as_one_row(
        isolated: Path) -> None:
    """read_zero is GCC's .isra.0 clone in the baseline's build, plain in the new one: one row
    of the symbols tab (+1: one more name), its names dim beneath it; a row of one name as
    before.  These files have no task-clock: the rows are shares of samples."""
    def clones(name: str, pcts: list[float], names: list[str]) -> Path:
        return forge.zero_null(isolated / "made" / name, forge.NS_512,
                               more=[forge.symbols(pcts, names=names)])
    async def go() -> None:
        out = results_dir(isolated, [
            clones("isra.jsonl", [40.0, 20.0], ["read_zero.isra.0", "write_null"]),
            clones("plain.jsonl", [35.0, 25.0], ["read_zero", "write_null"])])
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 2)
            await pick(pilot, screen, "isra.jsonl", "enter")       # the baseline
            await pick(pilot, screen, "plain.jsonl", "space")
            await compared(pilot, screen)
            assert screen.error == ""
            await pilot.press("4")
            syms = screen.query_one("#compare-symbols", DataTable)
            rows = [[str(c).strip() for c in syms.get_row_at(i)] for i in range(syms.row_count)]
            assert rows == [["[k] read_zero +1", "40.00%", "35.00%", "-5.00", "kernel"],
                            ["read_zero", "", "", "", ""],
                            ["read_zero.isra.0", "", "", "", ""],
                            ["[k] write_null", "20.00%", "25.00%", "+5.00", "kernel"]]
    run(go())


def test_sessions_marked_into_sides(isolated: Path, made: dict[str, Path]) -> None:
    """Two sessions a side: space starts a side, `a` adds a session to the last one."""
    async def go() -> None:
        sessions = []
        small = forge.NS_512 * 3000 // 20000
        for name, ns, bs in (("small", small, 512), ("big", small * 8, 16384)):
            # a second session 1% apart (a copy would count once: the same session)
            again = forge.zero_null(isolated / f"{made[name].stem}-again.jsonl",
                                    ns * 101 // 100, count=3000, n=5, block_size=bs)
            sessions += [made[name], again]
        out = results_dir(isolated, sessions)
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 4)
            await pick(pilot, screen, "bs512.jsonl")
            await pick(pilot, screen, "bs512-again.jsonl", "a")
            await pick(pilot, screen, "bs16k.jsonl")
            await pick(pilot, screen, "bs16k-again.jsonl", "a")
            assert [[p.name for p in side] for side in screen.sides] == [
                ["bs512.jsonl", "bs512-again.jsonl"], ["bs16k.jsonl", "bs16k-again.jsonl"]]
            files = screen.query_one("#compare-files", DataTable)
            assert str(files.get_cell(str(out / "bs512-again.jsonl"), "pick")) == "base"
            assert str(files.get_cell(str(out / "bs16k-again.jsonl"), "pick")) == "2"
            assert "2 sessions" in status(screen)
            await compared(pilot, screen)
            assert screen.error == ""
            comp = screen.comparison
            assert [s.sessions for s in comp.sides] == [2, 2]
            sides = str(screen.query_one("#compare-sides", Static).render())
            assert "2 sessions, 10 runs" in sides
            assert "session noise: measured from the sides' own sessions" in sides
            table = screen.query_one("#compare-table", DataTable)
            await wait_for(pilot, lambda: table.row_count > 0, 5, "table rows")
            verdict = list(table.columns).index("verdict")
            assert str(table.get_row_at(0)[verdict]) == "faster"
            # space on a picked file takes it out of its side
            await pilot.press("1")
            await pick(pilot, screen, "bs16k-again.jsonl", "space")
            await wait_for(pilot, lambda: len(screen.sides[1]) == 1, 5, "a session dropped")
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is app.main_screen, 5, "back")
    run(go())


def test_calibrate_sessions_listed_by_name_and_a_long_error_wraps(
        isolated: Path, made: dict[str, Path]) -> None:
    """`hotloop calibrate` keeps its sessions in results/<time>-calibrate-PLAN/: they are listed,
    named by plan and subdirectory without the timestamps; a side mixing workloads is refused
    in words that wrap rather than run off the right edge (130 columns)."""
    async def go() -> None:
        out = results_dir(isolated, [made["small"], made["syscall"]])
        calib = out / "20261130-034502-calibrate-quick"
        calib.mkdir()
        shutil.copyfile(made["big"], calib / "20261130-034512-quick-2.jsonl")
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=(130, 36)) as pilot:
            screen = await open_compare(pilot, app, 3)
            files = screen.query_one("#compare-files", DataTable)
            inside = str(calib / "20261130-034512-quick-2.jsonl")
            assert str(files.get_cell(inside, "file")) == "calibrate-quick/quick-2"
            assert str(files.get_cell(str(out / "bs512.jsonl"), "file")) == "bs512"
            assert list(files.columns)[:4] == ["pick", "file", "label", "date"]
            await pick(pilot, screen, "bs512.jsonl")
            await pick(pilot, screen, "syscall.jsonl", "a")       # a mixed side
            await pick(pilot, screen, "20261130-034512-quick-2.jsonl")
            assert "calibrate-quick/quick-2" in status(screen)
            await pilot.press("c")
            await wait_for(pilot, lambda: screen.error, 30, "the mixed side refused")
            bar = screen.query_one("#compare-status", Static)
            await pilot.pause()
            wrapped = Content(screen.error).wrap(bar.content_region.width)
            assert len(screen.error) > bar.content_region.width and len(wrapped) > 1
            assert bar.content_region.height >= len(wrapped)       # every line on screen
            assert status(screen).split() == screen.error.split()
    run(go())


def test_compare_refuses_with_one_line(isolated: Path, made: dict[str, Path]) -> None:
    async def go() -> None:
        out = results_dir(isolated, [made["small"], made["syscall"]])
        (out / "notes.jsonl").write_text("this is not a result\n")
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 3)
            await pick(pilot, screen, "bs512.jsonl")
            await pilot.press("c")                              # one file: not enough
            await wait_for(pilot, lambda: "two or more" in screen.error, 5, "too few")
            await pick(pilot, screen, "syscall.jsonl")
            await pilot.press("c")
            await wait_for(pilot, lambda: "cannot be compared" in screen.error, 30,
                           "different workloads refused")
            assert "\n" not in screen.error and "syscall" in screen.error
            assert "cannot be compared" in status(screen)
            assert screen.comparison is None
            await pilot.press("space")                          # unpick syscall
            await pick(pilot, screen, "notes.jsonl")
            await pilot.press("c")
            await wait_for(pilot, lambda: "not a hotloop result" in screen.error, 30,
                           "not a result")
            assert "\n" not in screen.error
            assert app.is_running and app.screen is screen
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is app.main_screen, 5, "back")
    run(go())


def test_compare_from_the_palette_and_empty_dir(isolated: Path) -> None:
    async def go() -> None:
        from textual.command import CommandPalette
        app = HotloopApp(results_dir=isolated / "nothing-here")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            assert any(b.id == "compare" for b in app.main_screen.BINDINGS)
            await pilot.press("ctrl+p")
            await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), 5)
            await pilot.press(*"compare res")
            await wait_for(pilot, lambda: "Compare results" in str(
                app.screen.query_one("CommandList").get_option_at_index(0).prompt), 5)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen)
                           and app.screen.loaded, 5, "compare screen from the palette")
            assert "no result files" in status(app.screen)
            await pilot.press("r")                  # the console's keys rest here
            await pilot.pause()
            assert app.main_screen.controller.worker is None
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is app.main_screen, 5)
    run(go())


@pytest.mark.parametrize("module", ["hotloop.console.app", "hotloop.cli"])
def test_console_launch_does_not_import_scipy(module: str) -> None:
    """The console and the command line (the entry point of list, show, completion) start
    without scipy (0.8 s): only compare and calibrate load it."""
    code = (f"import sys, {module}; "
            "print('scipy' in sys.modules, 'hotloop.analysis.compare' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.split() == ["False", "False"], done.stderr


def run(coro) -> None:
    asyncio.run(coro)


def test_sessions_of_one_plan_a_minute_apart_read_apart(isolated: Path) -> None:
    """Two sessions of a plan in the same minute (a series' turns) have the same name and
    label: the date column tells them apart, to the second."""
    async def go() -> None:
        out = isolated / "results"
        out.mkdir()
        for stamp, iso in (("20261202-081005", "2026-12-02T08:10:05+0000"),
                           ("20261202-081047", "2026-12-02T08:10:47+0000")):
            forge.zero_null(out / f"{stamp}-quick.jsonl", forge.NS_512, n=3,
                            head=forge.header(time=iso, label="stock"))
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 2)
            files = screen.query_one("#compare-files", DataTable)
            rows = [" ".join(str(files.get_cell(str(e.path), key)) for key in
                             ("file", "label", "date")) for e in screen.entries]
            assert rows == ["quick stock 12-02 08:10:47", "quick stock 12-02 08:10:05"], rows
    run(go())


def test_a_latency_in_nanoseconds_reads_in_seconds_as_the_command_line_says(
        isolated: Path) -> None:
    """tcp_rr's lat_p50_ns counts nanoseconds: 39.5e6 of them read "39.5 ms" in the verdict
    table's detail, as `hotloop show` says it (not "39.5 Mns")."""
    from hotloop.render.report import extra_si

    def session(path: Path, lat: float) -> Path:
        runs = [forge.run(i, "bytes/s", ops=20000, bytes=20000 * 512,
                          ns=round(forge.NS_512 * forge.JITTER[i]),
                          extra={"lat_p50_ns": lat * forge.JITTER[i]}) for i in range(5)]
        return forge.write(path, forge.header(params={"block_size": 512, "count": 20000,
                                                      "spin": 0}, runs=5), runs)

    async def go() -> None:
        out = isolated / "results"
        session(out / "a.jsonl", 39.5e6)
        session(out / "b.jsonl", 41.0e6)
        os.utime(out / "a.jsonl", (1_700_000_000, 1_700_000_000))     # the older: first
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 2)
            await pick(pilot, screen, "a.jsonl")
            await pick(pilot, screen, "b.jsonl")
            await compared(pilot, screen)
            table = screen.query_one("#compare-table", DataTable)
            row = [str(table.get_row_at(i)[0]) for i in range(table.row_count)].index(
                "lat_p50_ns")
            table.move_cursor(row=row)
            detail = screen.query_one("#compare-detail", Static)
            await wait_for(pilot, lambda: str(detail.render()).startswith("lat_p50_ns: "), 5)
            said = str(detail.render())
            assert said.startswith(f"lat_p50_ns: {extra_si('lat_p50_ns', 39.5e6)} → "), said
            assert said.startswith("lat_p50_ns: 39.5 ms → 41.0 ms "), said
    run(go())


def test_noisy_pinned_runs_are_not_told_to_pin(isolated: Path) -> None:
    """Sessions whose runs vary by more than 10% are warned about; runs already pinned by
    their CPU profile are told to keep other work off those CPUs, not to pin."""
    async def go() -> None:
        out = isolated / "results"
        cpu = dict(forge.header()["cpu"], name="split", cpus=[1])
        spread = [4_000_000, 6_000_000, 4_200_000, 6_100_000, 5_000_000]    # CV about 18%
        for i, name in enumerate(("a.jsonl", "b.jsonl")):
            forge.zero_null(out / name, spread, head=forge.header(cpu=cpu, runs=5))
            os.utime(out / name, (1_700_000_000 + i, 1_700_000_000 + i))
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=(130, 36)) as pilot:
            screen = await open_compare(pilot, app, 2)
            await pick(pilot, screen, "a.jsonl")
            await pick(pilot, screen, "b.jsonl")
            await compared(pilot, screen)
            said = " ".join(str(screen.query_one("#compare-warnings", Static).render()).split())
            assert "within a session (above 10%)" in said, said
            assert "pins the workload" not in said
            assert "pinned to cpus 1: keep other work off them" in said
    run(go())


def test_a_file_a_run_is_writing_reads_as_running_not_a_crash(isolated: Path,
                                                              leftovers) -> None:
    """The compare screen's list says "running" of the file the console's run is writing
    (its writer holds it locked), "partial" of one a crash cut short; compare and show say
    why in those words."""
    from test_app import start_long_run

    from hotloop import results
    from hotloop.results.liveness import CRASHED, RUNNING, partial_reason

    async def go() -> None:
        out = isolated / "results"
        crashed = forge.zero_null(out / "crashed.jsonl", forge.NS_512, n=3, end=None)
        os.utime(crashed, (1_700_000_000, 1_700_000_000))
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=(120, 36)) as pilot:
            await start_long_run(pilot, app)
            live = Path(app.main_screen.controller.live.result_file)
            assert partial_reason(results.read(live)) == RUNNING
            assert partial_reason(results.read(crashed)) == CRASHED
            screen = await open_compare(pilot, app, 2)
            files = screen.query_one("#compare-files", DataTable)
            assert str(files.get_cell(str(live), "partial")) == "running"
            assert str(files.get_cell(str(crashed), "partial")) == "partial"
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is app.main_screen, 5, "back")
            await pilot.press("x")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 10,
                           "the run stopped")
        assert leftovers() == []
    run(go())


def test_the_file_list_is_filtered_as_the_user_types(isolated: Path,
                                                     made: dict[str, Path]) -> None:
    async def go() -> None:
        out = results_dir(isolated, [made["small"], made["big"], made["syscall"]])
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 3)
            files = screen.query_one("#compare-files", DataTable)
            await pilot.press("slash", "z", "e", "r", "o")
            await wait_for(pilot, lambda: files.row_count == 2, 5, "two zero_null rows")
            assert {e.path.name for e in screen.shown} == {"bs512.jsonl", "bs16k.jsonl"}
            await pilot.press("space", "1", "6", "k")       # every word must match
            await wait_for(pilot, lambda: files.row_count == 1, 5, "one row")
            assert screen.sides == []                       # typed, not a key of the list
            await pilot.press("enter")                      # back to the list, filtered
            assert files.has_focus and files.row_count == 1
            await pilot.press("space")
            assert [p.name for p in screen.picked] == ["bs16k.jsonl"]
            await pilot.press("slash", "escape")            # esc clears the filter
            await wait_for(pilot, lambda: files.row_count == 3, 5, "every row back")
            assert files.has_focus and app.screen is screen
            assert str(files.get_cell(str(out / "bs16k.jsonl"), "pick")) == "base"
    asyncio.run(go())
