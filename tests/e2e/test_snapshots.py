"""The console as it looks, kept as SVG snapshots (pytest-textual-snapshot) at 80x24 (an SSH
terminal) and 120x36: the setup view on the bundled plans, and the compare screen on two
result files of the first release (tests/e2e/data, so the numbers never change).

After a deliberate change of the layout: `pytest tests/e2e/test_snapshots.py
--snapshot-update`, and look at the new pictures before committing them.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from test_app import wait_for
from test_app_compare import open_compare, pick, results_dir

from hotloop.console.app import HotloopApp

DATA = Path(__file__).resolve().parent / "data"
SIZES = [(80, 24), (120, 36)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_setup_view(snap_compare, size):
    app = HotloopApp()

    async def loaded(pilot):
        await wait_for(pilot, lambda: app.form.base is not None, 10, "a plan loaded")

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
