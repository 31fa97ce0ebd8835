"""The console's quit (`q`) in the middle of a perf session, for real: what it must leave
(the file complete and saying it stopped, the system as it was, no process of the session's
alive, the perf data compressed or being so by the one finisher it may hand it to), whatever
the time it takes, which benchmarks/quit_time.py measures."""
from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import tagged_pids
from test_app import SIZE, wait_for

from hotloop import catalog, results
from hotloop import events as ev
from hotloop.console.app import HotloopApp
from hotloop.console.live import LiveRun
from hotloop.console.widgets.symbols import SymbolsTable
from hotloop.host.journal import journal_path
from hotloop.host.settings import read_sysctl, sysctl_path
from hotloop.perf.probe import find_perf

SYSCTL = "net.core.busy_poll"
PROFILE = """
[kernel.quit-poll]
label = "stock + busy_poll 13"
sysctl = { "net.core.busy_poll" = 13 }
"""


@pytest.fixture
def busy_poll(isolated: Path) -> Iterator[str]:
    """The harmless sysctl the session changes (the test holds SYSCTL_LOCK, as every test of
    conftest's SYSCTLS does); put back whatever happens."""
    path = sysctl_path(SYSCTL)
    if not (path.exists() and os.access(path, os.W_OK)):
        pytest.skip(f"{SYSCTL} is not writable here")
    original = read_sysctl(SYSCTL)
    assert original != "13", "a previous run left busy_poll changed"
    try:
        yield original
    finally:
        path.write_text(original)


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.skipif(find_perf() is None, reason="perf is not installed")
def test_q_in_a_perf_session_leaves_the_file_whole_the_system_back_and_nothing_running(
        isolated: Path, busy_poll: str, leftovers) -> None:
    prof = isolated / "prof"
    prof.mkdir()
    (prof / "k.toml").write_text(PROFILE)
    cat = catalog.load([prof])
    plan = catalog.with_overrides(cat.plan_for("zero_null"), runs=100_000, warmup=0,
                                  perf=True, kernel="quit-poll", params={"count": 200_000})
    rp = cat.resolve(plan)
    out = isolated / "results"
    entries = isolated / "state" / "hotloop" / "perf-open"
    running: list[str] = []

    async def go() -> None:
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            ctl = app.main_screen.controller
            assert ctl.start_run(cat, rp, apply_system=True)
            # a few runs, and windows compressed as the session goes: a quit mid-way
            await wait_for(pilot, lambda: ctl.live is not None and ctl.live.n >= 3
                           and any(out.glob("*.perf/*.gz")), 240, "runs and windows")
            assert read_sysctl(SYSCTL) == "13"
            running.extend(comm(p) for p in tagged_pids())
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, 60, "the app to exit")
    asyncio.run(go())
    # the session had its worker and both perfs (record and stat) running when q came
    assert running.count("perf") >= 2, running
    # the system as it was, the result file whole, its one last line saying it stopped
    assert read_sysctl(SYSCTL) == busy_poll
    assert not journal_path().exists()
    result = next(out.glob("*.jsonl"))
    rows = [line for line in result.read_text().splitlines() if line]
    assert sum('"type":"failed"' in r or '"type":"finished"' in r for r in rows) == 1
    res = results.read(result)
    assert res.failed is not None and res.failed.interrupted
    assert len(res.runs) >= 3 and res.windows
    # no process of the session's is left: the worker and perf went with the quit; a
    # finisher it may have handed the last windows to (a loaded machine) goes once they
    # are compressed, letting go of the session's entry
    deadline = time.monotonic() + 120
    while list(entries.glob("*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list(entries.glob("*"))
    assert leftovers() == []
    # and what perf wrote is all compressed, the window it may not have finished removed
    perf = [f.name for f in out.glob("*.perf/perf.data*")]
    assert perf and all(n.endswith(".gz") for n in perf), sorted(perf)


def test_a_sessions_hot_symbols_panel_shows_windows_then_the_whole_run_never_one_run(
        isolated: Path) -> None:
    # At a session's end its per-run summaries (one a run: hundreds) go to the file, not to
    # the panel, which would draw each to overdraw it at once; the whole run's replaces the
    # last window's.
    def hot(scope: str, window: int, name: str) -> ev.HotSymbols:
        return ev.HotSymbols((ev.HotSymbol(name, "[kernel.kallsyms]", 90.0, True),),
                             scope=scope, window=window)

    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            ctl, table = app.main_screen.controller, app.query_one(SymbolsTable)
            live = LiveRun("zero_null", 3, 0, "B/s", True, perf=True)
            shown: list[str] = []           # what the panel drew, in turn
            draw = table.show
            table.show = lambda hot: (shown.append(hot.scope), draw(hot))[1]  # type: ignore
            await ctl._feed(hot("window", 7, "k_window"), live)
            for run in range(3):
                assert await ctl._feed(hot("run", run, f"k_run{run}"), live) is None
            await ctl._feed(hot("session", 0, "k_whole"), live)
            # messages are handled in turn: once the whole run's is drawn, so is any before it
            await wait_for(pilot, lambda: table.latest is not None
                           and table.latest.scope == "session", 5, "the whole run's")
            assert shown == ["window", "session"]
            assert table.border_title == "hot symbols · whole run"
    asyncio.run(go())
