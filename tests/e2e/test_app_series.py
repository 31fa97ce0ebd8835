"""A series in the console, driven with Pilot: the form's second kernel and session count,
the header naming the kernel and session as each runs, the files, and stop keeping the
sessions done.  Real sessions, workers and compiler; runs are tiny."""
from __future__ import annotations

import asyncio
from pathlib import Path

from forms import fill_form
from test_app import SIZE, log_text, picked, set_choice, wait_for

from hotloop import results
from hotloop.console.app import HotloopApp
from hotloop.console.screens.compare import CompareScreen
from hotloop.console.widgets.params import NO_KERNEL

KERNELS = """
[kernel.k1]
label = "k one"
[kernel.k2]
label = "k two"
"""


def _profiles(tmp: Path) -> Path:
    d = tmp / "profiles"
    d.mkdir()
    (d / "k.toml").write_text(KERNELS)
    return d


def _status(app: HotloopApp) -> str:
    return str(app.query_one("#status").content)


async def _compared(pilot, app: HotloopApp) -> CompareScreen:
    """c just after a series: its sides compared at once, two sessions each."""
    await pilot.press("c")
    await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen)
                   and (app.screen.comparison is not None or app.screen.error), 60,
                   "the series compared")
    screen = app.screen
    assert isinstance(screen, CompareScreen) and not screen.error, screen.error
    assert [side.sessions for side in screen.comparison.sides] == [2, 2]
    return screen


async def _series_form(pilot, app: HotloopApp, msgs: str, runs: str, sessions: str) -> None:
    await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
    await fill_form(pilot, app, kernel="k1", kernel2="k2", sessions=sessions, param_msgs=msgs,
                    runs=runs, warmup="0", perf="off")
    assert app.main_screen.form.series == (["k1", "k2"], int(sessions))


def test_the_console_runs_a_series_and_names_its_session(isolated: Path, leftovers) -> None:
    seen: set[str] = set()

    async def series(app: HotloopApp, pilot, out: Path) -> Path:
        await _series_form(pilot, app, "2000", "3", "2")
        draw = app.main_screen._status

        def status() -> None:       # every header drawn, not those a poll happens to catch
            draw()
            seen.update(part for part in ("k1 · session 1 of 2", "k2 · session 1 of 2",
                                          "k2 · session 2 of 2", "k1 · session 2 of 2")
                        if part in _status(app))
        app.main_screen._status = status        # type: ignore[method-assign]
        await pilot.press("r")
        await wait_for(pilot, lambda: "series done" in log_text(app), 240, "the series done")
        assert not app.main_screen.controller.running
        text = log_text(app)
        (d,) = list(out.iterdir())
        for k in ("k1", "k2"):
            files = sorted((d / k).glob("*.jsonl"))
            assert [f.name for f in files] == ["s01.jsonl", "s02.jsonl"]
            for i, f in enumerate(files, 1):
                r = results.read(f)
                assert r.finished is not None and r.header.kernel.name == k
                assert r.header.batch is not None and r.header.batch.session == i
        order = [ln.split(":")[0] for ln in text.splitlines() if ln.startswith(("k1 s", "k2 s"))]
        assert order == ["k1 s01", "k2 s01", "k2 s02", "k1 s02"], text
        assert f"c compares them here, or: hotloop compare {d}/k1/ {d}/k2/" in text
        return d

    async def compare_after(app: HotloopApp, pilot, d: Path) -> None:
        # c, just after the series: its kernels are the sides
        screen = await _compared(pilot, app)
        assert screen.sides == [sorted((d / k).glob("*.jsonl")) for k in ("k1", "k2")]
        await pilot.press("escape")

    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(profiles=[_profiles(isolated)], results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            d = await series(app, pilot, out)
            await compare_after(app, pilot, d)
            # a session gone since: nothing compared on fewer sessions without a word
            gone = d / "k2" / "s02.jsonl"
            gone.rename(gone.with_suffix(".moved"))
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen)
                           and app.screen.loaded, 30, "the picker")
            assert app.screen.sides == [] and app.screen.comparison is None
            assert "the series' files have changed since it ran" in app.screen.error
            await pilot.press("escape")
            # a single session after it: c is the plain picker again, nothing picked
            await fill_form(pilot, app, kernel2=NO_KERNEL, sessions="1")
            assert app.main_screen.form.series is None
            await pilot.press("r")
            await wait_for(pilot, lambda: not app.main_screen.controller.running and app.main_screen.controller.series_sides is None, 120,
                           "a single run")
            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen)
                           and app.screen.loaded, 30, "the picker")
            assert app.screen.sides == []
    asyncio.run(go())
    # the header followed the sessions (a short one may end before a redraw names it, but none
    # is named wrong)
    assert seen and seen <= {"k1 · session 1 of 2", "k2 · session 1 of 2",
                             "k2 · session 2 of 2", "k1 · session 2 of 2"}
    assert leftovers() == []


def test_stop_ends_the_series_and_keeps_the_sessions_done(isolated: Path, leftovers) -> None:
    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(profiles=[_profiles(isolated)], results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await _series_form(pilot, app, "20000", "40", "3")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.main_screen.controller.series_at is not None
                           and app.main_screen.controller.series_at[0].position >= 1, 240, "the second session")
            await pilot.press("x")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 30, "the series stopped")
            assert "series stopped" in log_text(app)
        (d,) = list(out.iterdir())
        kept = sorted(d.glob("*/*.jsonl"))
        # the first session is kept, complete; nothing after the one stopped started
        assert d / "k1" / "s01.jsonl" in kept
        for f in kept:
            assert results.read(f).finished is not None, f
        started = kept + sorted(d.glob("*/*.stopped"))
        assert 1 <= len(started) <= 3
        for f in d.glob("*/*.stopped"):
            r = results.read(f)
            assert r.failed is not None and r.failed.interrupted
    asyncio.run(go())
    assert leftovers() == []


REFUSER_C = r"""
#include "hotloop.h"

void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env,
               char *err, size_t errlen)
{
    (void)p; (void)n; (void)env;
    hl_bad_param(err, errlen, "calls", "refused by the workload");
    return NULL;
}
int hl_run(void *state, struct hl_result *res, char *err, size_t errlen)
{ (void)state; (void)res; (void)err; (void)errlen; return 0; }
int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state) { (void)state; }
"""
REFUSER_TOML = """
[workload.refuser]
source = "refuser.c"
summary = "a setup that refuses every value"
metric = "ns/op"
params.calls = { default = 1, min = 1, help = "refused whatever it is" }
"""


def test_a_series_every_session_would_refuse_leaves_nothing(isolated: Path, leftovers) -> None:
    """The console starts a series through the launcher, as the command line does: a plan its
    workload refuses (bad input) ends the series at its first session, says why, and leaves
    no empty series directory behind."""
    profiles = _profiles(isolated)
    (profiles / "refuser.c").write_text(REFUSER_C)
    (profiles / "refuser.toml").write_text(REFUSER_TOML)

    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(profiles=[profiles], results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await picked(pilot, app, "refuser")
            await fill_form(pilot, app, kernel="k1", kernel2="k2", sessions="2", runs="3",
                            warmup="0", perf="off")
            assert app.main_screen.form.series == (["k1", "k2"], 2)
            await pilot.press("r")
            await wait_for(pilot, lambda: "series not run" in log_text(app), 120,
                           "the series refused")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 10)
            text = log_text(app)
            assert "calls: refused by the workload" in text, text
            assert "removed)" in text, text
            assert "series done" not in text and "(set aside)" not in text, text
            assert not out.exists() or list(out.iterdir()) == []
    asyncio.run(go())
    assert leftovers() == []


def test_the_console_runs_a_series_of_two_param_values(isolated: Path, leftovers) -> None:
    """The form's vs field: the zero-to-null dd test at block sizes 512 (the form's, listed
    too, as `run --param block_size=512,4096` would be) and 4096, their sessions
    alternating, one directory each, then c compares them paired."""
    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(profiles=[_profiles(isolated)], results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await picked(pilot, app, "zero_null")
            await fill_form(pilot, app, param_count="2000", param_block_size="512", runs="3",
                            warmup="0", perf="off", vs="block_size=512,4096", sessions="2")
            assert app.main_screen.form.series == (["default"], 2)
            assert app.main_screen.form.vs == "block_size=512,4096"
            await pilot.press("r")
            await wait_for(pilot, lambda: "series done" in log_text(app), 240, "the series done")
            text = log_text(app)
            (d,) = list(out.iterdir())
            for name, size in (("block_size=512", 512), ("block_size=4096", 4096)):
                files = sorted((d / name).glob("*.jsonl"))
                assert [f.name for f in files] == ["s01.jsonl", "s02.jsonl"], text
                for i, f in enumerate(files, 1):
                    r = results.read(f)
                    assert r.finished is not None and r.header.variant == name
                    assert r.header.params["block_size"] == size
                    assert r.header.batch is not None and r.header.batch.session == i
            order = [ln.split(":")[0] for ln in text.splitlines()
                     if ln.startswith("block_size=") and ln.split(":")[0].endswith(("s01", "s02"))]
            assert order == ["block_size=512 s01", "block_size=4096 s01", "block_size=4096 s02",
                             "block_size=512 s02"], text
            assert (f"c compares them here, or: hotloop compare {d}/block_size=512/ "
                    f"{d}/block_size=4096/") in text
            screen = await _compared(pilot, app)
            assert [side.name for side in screen.comparison.sides] == [
                "block_size=512", "block_size=4096"]
            await pilot.press("escape")
            # a second kernel too: refused in one line, nothing started
            await set_choice(pilot, app, "kernel2", "k2")
            await pilot.press("r")
            await wait_for(pilot, lambda: "cannot run: --sessions alternates kernels or "
                           "variants, not both" in log_text(app), 10, "the refusal")
            assert not app.main_screen.controller.running
            assert len(list(out.iterdir())) == 1
    asyncio.run(go())
    assert leftovers() == []
