"""The README's pictures, made by the real console on this machine: a real `quick` run, and the
compare screen on two real sessions, calibrated.  `python docs/screenshots.py` rewrites
docs/*.svg.

Everything runs in a temporary directory with its own config and state, so the pictures show
the bundled plans only; the build cache is the user's (compiling is the slow part).
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hotloop.console.app import HotloopApp
from hotloop.console.screens.compare import CompareScreen
from hotloop.console.widgets.plots import DriftPlot, HistogramPlot

DOCS = Path(__file__).resolve().parent
SIZE = (120, 36)


async def until(pilot, predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: timed out waiting for {what}")
        await pilot.pause(0.1)


async def live(results: Path) -> None:
    """The console after a quick run: distribution, drift, stats, hot symbols, log."""
    app = HotloopApp(results_dir=results)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.form.base is not None, 30, "the quick plan")
        await pilot.press("r")
        runs = app.main_screen.controller
        await until(pilot, lambda: runs.live is not None and not runs.running, 300, "the run")
        await pilot.pause(1.5)                  # the charts' last redraw, built in threads
        charts = [app.query_one(HistogramPlot), app.query_one(DriftPlot)]
        await until(pilot, lambda: all(c.settled for c in charts), 30, "the charts")
        app.save_screenshot(str(DOCS / "screenshot.svg"))


async def compare(results: Path) -> None:
    """The compare screen: zero_null with 512 B against 4096 B blocks, its table tab."""
    app = HotloopApp(results_dir=results)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.main_screen.form.base is not None, 30, "the console")
        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.loaded,
                    30, "the compare screen")
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        for _ in screen.entries:                # pick every file, the oldest first (baseline)
            await pilot.press("space")
            await pilot.press("down")
        await pilot.press("c")
        await until(pilot, lambda: screen.comparison is not None, 60, "the comparison")
        await pilot.pause(0.5)
        app.save_screenshot(str(DOCS / "compare.svg"))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_STATE_HOME", "state")):
            os.environ[var] = str(home / sub)
        results = home / "results"
        asyncio.run(live(home / "live"))
        # calibrated, as docs/comparing.md asks: one session a side is then called, not only a
        # direction ("faster?"); its sessions kept out of the results the screen lists
        calibration = home / "calibration"
        calibration.mkdir()
        subprocess.run([sys.executable, "-m", "hotloop", "calibrate", "zero_null", "--runs", "8",
                        "--sessions", "8", "--param", "block_size=512", "--param",
                        "count=100000"], check=True, capture_output=True, cwd=calibration)
        for block in ("4096", "512"):           # listed newest first: 512, the baseline, on top
            subprocess.run([sys.executable, "-m", "hotloop", "run", "zero_null", "--runs", "8",
                            "--param", f"block_size={block}", "--param", "count=100000",
                            "--out", str(results / f"zero_null-{block}.jsonl")],
                           check=True, capture_output=True)
            time.sleep(1.1)                     # distinct modification times
        asyncio.run(compare(results))
    print(f"wrote {DOCS / 'screenshot.svg'} and {DOCS / 'compare.svg'}")


if __name__ == "__main__":
    main()
