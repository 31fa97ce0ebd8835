"""The console as it looks, kept as SVG snapshots (pytest-textual-snapshot) at 80x24 (an SSH
terminal) and 120x36: the setup view on the bundled plans, the live view replaying a recorded
session (its runs, warnings and whole-run hot symbols fed to the live model, its clock fixed:
no live timing), and the compare screen on two result files of the first release
(tests/e2e/data, so the numbers never change).

After a deliberate change of the layout: `pytest tests/e2e/test_snapshots.py
--snapshot-update`, and look at the new pictures before committing them.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from test_app import wait_for
from test_app_compare import open_compare, pick, results_dir

from hotloop import results
from hotloop.console.app import HotloopApp
from hotloop.console.live import LiveRun
from hotloop.console.messages import SymbolsArrived
from hotloop.console.widgets.plots import DriftPlot, HistogramPlot

DATA = Path(__file__).resolve().parent / "data"
SIZES = [(80, 24), (120, 36)]


async def charts_built(pilot, app: HotloopApp) -> None:
    """The charts build in threads: wait until those on screen show the last figure."""
    plots = [app.query_one(HistogramPlot), app.query_one(DriftPlot)]
    await wait_for(pilot, lambda: all(p.settled for p in plots), 10, "the charts built")
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_setup_view(snap_compare, size):
    app = HotloopApp()

    async def loaded(pilot):
        await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10, "a plan loaded")
        await charts_built(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=loaded)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_compare_screen(snap_compare, isolated, size):
    old = sorted(DATA.glob("*.jsonl"), reverse=True)        # 512 then 4096: the baseline first
    results_dir(isolated, old)
    app = HotloopApp()

    async def compared(pilot):
        screen = await open_compare(pilot, app, 2)
        for f in old:
            await pick(pilot, screen, f.name)
        await pilot.press("c")
        await wait_for(pilot, lambda: screen.comparison is not None, 20, "the comparison")

    assert snap_compare(app, terminal_size=size, run_before=compared)


async def replay(pilot, app: HotloopApp, path: Path) -> None:
    """Show the recorded session `path` in the live view as if it had just run there."""
    await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10, "a plan loaded")
    r = results.read(path)
    w = r.header.workload
    live = LiveRun(path.stem, len(r.runs), len(r.warmups), w.unit, w.higher_is_better,
                   perf=True)
    for sample in r.warmups:
        live.add(sample.value, warmup=True)
    for sample in r.runs:
        live.add(sample.value)
    live.end("finished")
    live.started_at, live.ended_at = 0.0, 4.2           # a fixed clock: "4.2s"
    app.main_screen.controller.live = live
    for warning in r.warnings:
        app.main_screen.log_line(warning, "warning")
    app.main_screen.log_line(f"done: {live.n} runs → {path.name}", "success")
    assert r.session_symbols is not None
    app.main_screen.on_symbols_arrived(SymbolsArrived(r.session_symbols))
    app.main_screen.set_view("live")
    app.main_screen._redraw(plots=True)
    app.main_screen._status()
    await pilot.pause()
    await charts_built(pilot, app)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_live_view(snap_compare, isolated, size):
    app = HotloopApp(results_dir=isolated / "results")

    async def replayed(pilot):
        await replay(pilot, app, DATA / "zero_null-512-v0.1.jsonl")

    assert snap_compare(app, terminal_size=size, run_before=replayed)


def test_the_symbol_tab(snap_compare, isolated):
    """The differential profile at 80x24: three forged sessions a side with known samples and
    task-clock (test_app_symbols.py), a row costlier, one cheaper, one new, one can't tell."""
    from test_app_symbols import symbol_sessions
    made = symbol_sessions(isolated / "made")
    results_dir(isolated, made)
    app = HotloopApp()

    async def compared(pilot):
        screen = await open_compare(pilot, app, 6)
        for i, f in enumerate(made):
            await pick(pilot, screen, f.name, "space" if i % 3 == 0 else "a")
        await pilot.press("c")
        await wait_for(pilot, lambda: screen.comparison is not None, 20, "the comparison")
        await pilot.press("4")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=compared)
