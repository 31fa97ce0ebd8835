"""The console driven as a user would, with Pilot: real session, worker and compiler.

Each test runs the app in `run_test` and waits on conditions (`wait_for`),
never on fixed sleeps.  Runs are tiny (seqpacket, a few thousand messages).
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from hotloop import results
from hotloop.console.app import HotloopApp
from hotloop.console.screens.save import SavePlanScreen
from hotloop.console.widgets.catalog_tree import CatalogTree
from hotloop.console.widgets.log import LogPanel
from hotloop.console.widgets.params import ParamInput
from hotloop.console.widgets.plots import HistogramPlot
from hotloop.console.widgets.stats_panel import StatsPanel

SIZE = (120, 36)


def run(coro) -> None:
    asyncio.run(coro)


async def wait_for(pilot, predicate: Callable[[], object], timeout: float = 20.0,
                   what: str = "") -> None:
    """Until `predicate()`, looked at every 20 ms while the app runs its own tasks.  Every
    fifth look follows a pilot.pause(), which has every widget of the screen handle what is
    queued and lays the screen out: some 10 ms of CPU however short its delay, so a pause at
    every look spent a third of a CPU on each wait of seconds (a worker's runs, a boot)."""
    deadline = time.monotonic() + timeout
    looks = 0
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        looks += 1
        if looks % 5:
            await asyncio.sleep(0.02)
        else:
            await pilot.pause(0.02)


def log_text(app: HotloopApp) -> str:
    """What the log says, a line per message (on screen each wraps at the panel's width)."""
    return "\n".join(text.plain for text in app.query_one(LogPanel).entries)


async def type_into(pilot, app: HotloopApp, key: str, text: str) -> ParamInput:
    """Focus a parameter field, clear it and type `text` key by key."""
    field = app.main_screen.form.fields[key]
    assert isinstance(field, ParamInput)
    control: Input = field.control  # type: ignore[assignment]
    control.focus()
    await pilot.pause()
    control.value = ""
    await pilot.press(*text)
    await wait_for(pilot, lambda: control.value == text, 5, f"{key} = {text}")
    return field


async def set_choice(pilot, app: HotloopApp, key: str, value: str) -> None:
    select: Select = app.main_screen.form.fields[key].control  # type: ignore[assignment]
    select.value = value
    await pilot.pause()


async def picked(pilot, app: HotloopApp, workload: str) -> None:
    """The console up, `workload` loaded in the form, the catalogue focused again."""
    await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
    await app.main_screen.pick("workload", workload)
    await wait_for(pilot, lambda: app.main_screen.form.base.workload == workload, 5, workload)
    await pilot.press("escape")


async def small_run(pilot, app: HotloopApp, msgs: str, runs: str) -> None:
    """Settings for a short, quiet run: seqpacket, no warmup, no perf."""
    await type_into(pilot, app, "param.msgs", msgs)
    await type_into(pilot, app, "runs", runs)
    await type_into(pilot, app, "warmup", "0")
    await set_choice(pilot, app, "perf", "off")
    await pilot.press("escape")                 # leave the field: keys are bindings again
    await wait_for(pilot, lambda: isinstance(app.focused, CatalogTree), 5, "tree focus")


async def start_long_run(pilot, app: HotloopApp) -> None:
    """A run of quick's seqpacket that goes on until stopped, two runs measured."""
    await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
    await small_run(pilot, app, "20000", "1000")
    await pilot.press("r")
    await wait_for(pilot, lambda: app.main_screen.controller.live is not None and app.main_screen.controller.live.n >= 2, 60,
                   "two runs measured")


def test_start_selects_quick_and_workload_from_tree(isolated: Path) -> None:
    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10, "a plan loaded")
            assert app.main_screen.form.base.name == "quick"
            tree = app.query_one(CatalogTree)
            await wait_for(pilot, lambda: tree.cursor_node is not None
                           and tree.cursor_node.data == ("plan", "quick"), 5, "cursor on quick")
            assert app.focused is tree
            assert app.main_screen.check_action("run", ()) is True
            assert "quick" in str(app.query_one("#status").render())
            # walk the tree with the keyboard to the zero_null workload and pick it
            for _ in range(40):
                if tree.cursor_node is not None and tree.cursor_node.data == ("workload",
                                                                              "zero_null"):
                    break
                await pilot.press("down")
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.main_screen.form.base is not None
                           and app.main_screen.form.base.workload == "zero_null", 5, "zero_null loaded")
            assert "param.block_size" in app.main_screen.form.fields
            assert "param.msgs" not in app.main_screen.form.fields
    run(go())


def test_edit_param_invalid_then_valid(isolated: Path) -> None:
    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            field = await type_into(pilot, app, "param.msgs", "0")
            error = field.query_one(".field-error")
            await wait_for(pilot, lambda: field.has_class("-invalid"), 5, "inline error")
            assert error.display and "below the minimum 1" in str(error.render())
            assert field.control.has_class("-invalid")
            await pilot.press("escape")
            await pilot.press("r")                      # refused: nothing starts
            await wait_for(pilot, lambda: "cannot run" in log_text(app), 5, "refusal")
            assert app.main_screen.controller.worker is None and not (isolated / "results").exists()
            await type_into(pilot, app, "param.msgs", "abc")
            await wait_for(pilot, lambda: "expected an integer" in str(error.render()), 5)
            await type_into(pilot, app, "param.msgs", "2_000")
            await wait_for(pilot, lambda: not field.has_class("-invalid"), 5, "error cleared")
            assert not error.display
            assert app.main_screen.form.build().params["msgs"] == 2000
    run(go())


def test_run_to_completion(isolated: Path, leftovers) -> None:
    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            await small_run(pilot, app, "2000", "3")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.main_screen.controller.live is not None, 5, "run started")
            await wait_for(pilot, lambda: app.main_screen.controller.live.state == "finished", 60, "run finished")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 10)
            stats = app.query_one(StatsPanel)
            await wait_for(pilot, lambda: "runs 3/3" in str(
                stats.query_one("#stats-runs").render()), 5, "stats n=3")
            assert "median" in str(stats.query_one("#stats-numbers").render())
            assert "B/s" in str(stats.query_one("#stats-numbers").render())
            plot = app.query_one(HistogramPlot)
            assert plot.live is not None and plot.live.n == 3
            assert sum(b.count for b in plot.live.histogram()) == 3
            files = list(out.glob("*-quick.jsonl"))
            assert len(files) == 1
            result = results.read(files[0])
            assert len(result.runs) == 3 and not result.partial
            # the controller's log line is a message to the screen: it may trail the run's end
            await wait_for(pilot, lambda: "done: 3 runs" in log_text(app), 10, "the done line")
        assert leftovers() == []
    run(go())


def test_stop_mid_run_keeps_measured_runs(isolated: Path, leftovers) -> None:
    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await start_long_run(pilot, app)
            await pilot.press("x")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 5, "worker ended")
            assert app.main_screen.controller.live.state == "stopped"
            measured = app.main_screen.controller.live.n
            result = results.read(next(out.glob("*.jsonl")))
            assert len(result.runs) == measured >= 2
            assert result.failed is not None and result.failed.interrupted
            assert "stopped" in log_text(app)
            assert leftovers() == []
    run(go())


def test_a_stop_the_user_asked_for_is_logged_as_news_not_a_warning(isolated: Path,
                                                                   leftovers) -> None:
    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=SIZE) as pilot:
            await start_long_run(pilot, app)
            await pilot.press("x")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 5, "worker ended")
            said = log_text(app)
            assert "stopping…" in said and "stopped; " in said and " runs kept in " in said
            assert "warning: stop" not in said, said
            assert leftovers() == []
    run(go())


def test_saving_a_workloads_settings_proposes_a_name_no_workload_has(isolated: Path) -> None:
    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=SIZE) as pilot:
            await picked(pilot, app, "zero_null")
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, SavePlanScreen), 5, "dialog")
            assert app.screen.query_one(Input).value == "zero_null-2"
    asyncio.run(go())


def test_save_plan_appears_in_catalogue(isolated: Path) -> None:
    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            await type_into(pilot, app, "param.msgs", "3000")
            await pilot.press("escape")
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, SavePlanScreen), 5, "dialog")
            name_input = app.screen.query_one(Input)
            name_input.value = ""
            await pilot.press(*"my-plan", "enter")
            await wait_for(pilot, lambda: not isinstance(app.screen, SavePlanScreen), 5)
            await wait_for(pilot, lambda: "my-plan" in app.main_screen.cat.plans, 5, "catalogue reloaded")
            saved = isolated / "config" / "hotloop" / "plans" / "my-plan.toml"
            assert saved.is_file()
            assert app.main_screen.cat.plans["my-plan"].params["msgs"] == 3000
            tree = app.query_one(CatalogTree)
            assert tree.node_for("plan", "my-plan") is not None
            await wait_for(pilot, lambda: tree.cursor_node.data == ("plan", "my-plan"), 5)
            assert app.main_screen.form.base.name == "my-plan"
            # the same name again is refused inline, and the dialog stays open
            await pilot.press("w")
            await wait_for(pilot, lambda: isinstance(app.screen, SavePlanScreen), 5)
            app.screen.query_one(Input).value = ""
            await pilot.press(*"quick", "enter")
            error = app.screen.query_one("#save-error")
            await wait_for(pilot, lambda: "already exists" in str(error.render()), 5)
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, SavePlanScreen), 5)
    run(go())


def test_quit_during_run_leaves_no_process(isolated: Path, leftovers) -> None:
    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            await small_run(pilot, app, "20000", "1000")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.main_screen.controller.live is not None and app.main_screen.controller.live.n >= 1, 60)
            assert app.screen.has_class("-view-live")       # small screen: live view
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, 10, "app exited")
        assert leftovers() == []
        result = results.read(next(out.glob("*.jsonl")))
        assert len(result.runs) >= 1
    run(go())


def test_hot_symbols_window_then_session(isolated: Path) -> None:
    """What the panel does with perf's summaries (fed directly: perf may be absent here)."""
    from hotloop import events as ev
    from hotloop.console.messages import SymbolsArrived
    from hotloop.console.widgets.symbols import TOP, SymbolsTable

    def hot(scope: str, window: int, *names: str) -> ev.HotSymbols:
        syms = tuple(ev.HotSymbol(n, "[kernel.kallsyms]" if n.startswith("k_") else "x.so",
                                  50.0 / (i + 1), n.startswith("k_"))
                     for i, n in enumerate(names))
        return ev.HotSymbols(syms, scope=scope, window=window)

    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            table = app.query_one(SymbolsTable)
            app.main_screen.post_message(SymbolsArrived(hot("window", 3, "k_sendmsg", "memcpy")))
            await wait_for(pilot, lambda: table.symbol_at(1) is not None, 5, "window rows")
            # always TOP rows: those after the last symbol are blank (no layout as they come)
            assert table.row_count == TOP and table.symbol_at(2) is None
            assert [str(c) for c in table.get_row_at(2)] == ["", "", ""]
            assert "window 3" in str(table.border_title)
            assert [str(c) for c in table.get_row_at(0)] == [" 50.0", "[k]",
                                                              "k_sendmsg"]
            user = table.get_row_at(1)
            assert str(user[1]) == "[.]"                        # 120 columns: the DSO, at
            assert str(user[2]).startswith("memcpy ") and str(user[2]).endswith(" x.so")
            # the right (from 110 columns the panel spans the live side); 80 columns: none
            await pilot.resize_terminal(80, 24)
            app.main_screen.set_view("live")
            await wait_for(pilot, lambda: str(table.get_row_at(1)[2]) == "memcpy", 5, "no DSO")
            app.main_screen.post_message(SymbolsArrived(hot("session", 0, "k_a", "k_b", "u_c")))
            await wait_for(pilot, lambda: table.symbol_at(2) is not None, 5, "session rows")
            assert table.row_count == TOP and str(table.get_row_at(2)[2]) == "u_c"
            assert "whole run" in str(table.border_title)
    run(go())


def test_a_window_dropped_unread_says_so_and_keeps_the_last_window_read(isolated: Path) -> None:
    """perf script fell behind: a window dropped unread (no symbols, a reason) before any was
    read says why in the panel; after one was read, that one stays and the title names the
    window dropped (fed directly: the backlog itself is test_perf_budget's)."""
    from hotloop import events as ev
    from hotloop.console.messages import SymbolsArrived
    from hotloop.console.widgets.symbols import SymbolsTable
    from hotloop.perf.keep import DROPPED_UNREAD

    read = ev.HotSymbols((ev.HotSymbol("k_sendmsg", "[kernel.kallsyms]", 60.0, True),),
                         window=4, samples=120)

    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            table = app.query_one(SymbolsTable)
            post = app.main_screen.post_message
            post(SymbolsArrived(ev.HotSymbols((), window=2, dropped=DROPPED_UNREAD)))
            await wait_for(pilot, lambda: "dropped unread" in table.message, 5, "the reason")
            assert "window 2" in str(table.border_title) and table.symbol_at(0) is None
            post(SymbolsArrived(read))
            await wait_for(pilot, lambda: table.symbol_at(0) is not None, 5, "window 4")
            post(SymbolsArrived(ev.HotSymbols((), window=5, dropped=DROPPED_UNREAD)))
            await wait_for(pilot, lambda: "5 dropped unread" in str(table.border_title), 5,
                           "the title")
            assert "window 4" in str(table.border_title)
            assert table.symbol_at(0) == read.symbols[0]
    run(go())


def test_a_annotates_the_selected_hot_symbol_from_anywhere(isolated: Path) -> None:
    """`a` with the focus elsewhere (the catalogue) annotates the hot symbols' cursor row,
    the top one at first, shown as the cursor; enabled in the footer once there is one.  A
    kernel row's long name is whole (no DSO column kept from it), and the annotation
    screen's one line (here: an address perf has no symbol for) wraps at 80 columns."""
    from textual.widgets._footer import FooterKey

    from hotloop import events as ev
    from hotloop.console.live import LiveRun
    from hotloop.console.messages import SymbolsArrived
    from hotloop.console.screens.annotation import AnnotationScreen
    from hotloop.console.widgets.symbols import SymbolsTable

    kernel = "__memcg_slab_post_alloc_hook_x"   # 30 columns: cut at 20 beside a DSO column
    syms = (ev.HotSymbol("0x7f00c0ffee", "/opt/some/libstripped.so.1", 40.0, False),
            ev.HotSymbol(kernel, "[kernel.kallsyms]", 30.0, True),
            ev.HotSymbol("memcpy", "libc.so.6", 20.0, False))

    def footer_a(app: HotloopApp) -> FooterKey:
        return next(k for k in app.screen.query(FooterKey) if k.key == "a")

    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            assert footer_a(app)._disabled                  # no symbol yet
            await pilot.press("a")
            assert not isinstance(app.screen, AnnotationScreen)
            app.main_screen.controller.live = LiveRun("quick", 3, 0, "B/s", True, perf=True)
            app.main_screen.controller.live.result_file = str(isolated / "results" / "r.jsonl")
            app.main_screen.post_message(SymbolsArrived(ev.HotSymbols(syms, scope="session")))
            table = app.query_one(SymbolsTable)
            await wait_for(pilot, lambda: table.latest is not None, 5, "the symbols")
            await wait_for(pilot, lambda: not footer_a(app)._disabled, 5, "`a` enabled")
            assert table.show_cursor and table.cursor_row == 0
            assert str(table.get_row_at(1)[2]) == kernel    # whole
            assert str(table.get_row_at(2)[2]).endswith(" libc.so.6")
            await pilot.resize_terminal(80, 24)             # the setup view, no symbols
            app.query_one(CatalogTree).focus()
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, AnnotationScreen), 5, "`a`")
            screen = app.screen
            assert screen.symbol == "0x7f00c0ffee"
            shown = screen.query_one("#annotate-text")
            await wait_for(pilot, lambda: shown.has_class("-message"), 5, "the message")
            await pilot.pause()
            text = str(shown.render())
            assert "nothing to annotate" in text and len(text) > 80
            assert shown.region.width <= 80 and shown.region.height >= 2     # wrapped
            await pilot.press("escape")
            table.move_cursor(row=2)                        # the cursor row is the one
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, AnnotationScreen), 5, "`a`")
            assert app.screen.symbol == "memcpy"
    run(go())


def test_the_heap_at_start_is_kept_out_of_every_collection(isolated: Path) -> None:
    """A full garbage collection walks every tracked object (the console's 100k: 140 ms on
    a slow day, a stall whenever it comes): once up, they are frozen, and thawed on exit."""
    import gc

    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: gc.get_freeze_count() > 10_000, 10, "a frozen heap")
    run(go())
    assert gc.get_freeze_count() == 0


def test_command_palette_has_the_bindings(isolated: Path) -> None:
    async def go() -> None:
        from textual.command import CommandPalette
        app = HotloopApp()
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            shown = {b.key: b.description for b in [*app.main_screen.BINDINGS, *app.BINDINGS]}
            assert {"r", "x", "w", "q"} <= set(shown)
            await pilot.press("ctrl+p")
            await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), 5)
            await pilot.press(*"save plan")
            await wait_for(pilot, lambda: "Save plan" in str(
                app.screen.query_one("CommandList").get_option_at_index(0).prompt), 5)
            await pilot.press("enter")
            await wait_for(pilot, lambda: isinstance(app.screen, SavePlanScreen), 5,
                           "save dialog from the palette")
            await pilot.press("escape")
    run(go())


BUSY = (Path("/proc/sys/net/core/busy_poll"), Path("/proc/sys/net/core/busy_read"))


def test_system_changes_ask_first_no_then_yes(isolated: Path, leftovers) -> None:
    """Kernel profile busy-poll: the modal lists the sysctls; no changes nothing, yes runs
    with them and the originals are back afterwards."""
    import os

    from hotloop.console.screens.consent import ConsentScreen
    if not all(p.exists() and os.access(p, os.W_OK) for p in BUSY):
        import pytest
        pytest.skip("net.core.busy_poll is not writable here")
    original = [p.read_text() for p in BUSY]

    def values() -> list[str]:
        return [p.read_text().strip() for p in BUSY]

    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            await small_run(pilot, app, "2000", "2")
            await set_choice(pilot, app, "kernel", "busy-poll")
            before = values()
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), 5, "modal")
            listed = str(app.screen.query_one("#consent-changes").render())
            assert f"net.core.busy_poll {before[0]} -> 50" in listed
            assert "net.core.busy_read" in listed
            await pilot.press("n")
            await wait_for(pilot, lambda: "nothing was changed" in log_text(app), 5, "no")
            assert app.screen is app.main_screen
            assert app.main_screen.controller.worker is None and not out.exists()
            assert values() == before
            # yes: the run happens with the sysctls set, and they are restored after it
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), 5, "modal")
            await pilot.press("y")
            await wait_for(pilot, lambda: app.main_screen.controller.live is not None, 5, "run started")
            await wait_for(pilot, lambda: app.main_screen.controller.live.state == "finished", 60, "run finished")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 10)
            assert values() == before
            result = results.read(next(out.glob("*.jsonl")))
            assert len(result.runs) == 2
            assert result.header.sysctl["net.core.busy_poll"].during == "50"
            assert "applied net.core.busy_poll" in log_text(app)
        assert leftovers() == []

    try:
        run(go())
    finally:
        for p, v in zip(BUSY, original):
            p.write_text(v)


def test_profile_that_cannot_run_here_is_one_log_line(isolated: Path) -> None:
    conf = isolated / "config" / "hotloop"
    conf.mkdir(parents=True)
    (conf / "odd.toml").write_text('[kernel.ancient]\nlabel = "2.6"\n'
                                   'expect = { release = "2.6.*" }\n')

    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            await set_choice(pilot, app, "kernel", "ancient")
            await pilot.press("escape")
            await pilot.press("r")
            await wait_for(pilot, lambda: "cannot run" in log_text(app), 5, "refusal")
            text = " ".join(log_text(app).split())        # the log wraps long lines
            assert "does not match '2.6.*'" in text.split("cannot run:", 1)[1]
            assert app.main_screen.controller.worker is None and app.screen is app.main_screen
    run(go())


def test_a_workload_that_does_not_build_is_said_and_nothing_waits(isolated: Path) -> None:
    conf = isolated / "config" / "hotloop"
    conf.mkdir(parents=True)
    (conf / "broken.c").write_text('#include "hotloop.h"\nthis is not C;\n')
    (conf / "broken.toml").write_text('[workload.broken]\nsource = "broken.c"\n')

    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=SIZE) as pilot:
            await picked(pilot, app, "broken")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.main_screen.controller.live is not None and not app.main_screen.controller.live.running, 120,
                           "the build failed")
            await wait_for(pilot, lambda: "broken.c" in log_text(app), 10, "the compiler's words")
            assert app.query_one(HistogramPlot).empty(app.main_screen.controller.live) == "no runs: the log says why"
    run(go())


def test_batch_plan_loads_its_first_variant(isolated: Path) -> None:
    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            tree = app.query_one(CatalogTree)
            tree.focus()
            node = tree.node_for("plan", "page-pool")
            assert node is not None
            tree.move_cursor(node)
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.main_screen.form.base is not None
                           and app.main_screen.form.base.workload == "pool", 5, "page-pool loaded")
            assert app.main_screen.form.build().params["mode"] == "fast_path"
            assert "3 variants" in log_text(app)
            assert "hotloop run page-pool" in str(app.main_screen.form.query_one("#form-hint").render())
            assert app.main_screen.check_action("run", ()) is True
            assert "page-pool" in str(app.query_one("#status").render())
    run(go())


def test_a_broken_user_profile_is_left_out_and_said_on_the_first_screen(isolated: Path) -> None:
    user = isolated / "config" / "hotloop"
    user.mkdir(parents=True)
    (user / "broken.toml").write_text("[workload.x\n")

    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10, "quick selected")
            assert "seqpacket" in app.main_screen.cat.workloads and app.main_screen.form.base.name == "quick"
            assert any("broken.toml: malformed TOML" in e for e in app.main_screen.cat.errors)
            await wait_for(pilot, lambda: any("broken.toml" in str(n.message)
                                              for n in app._notifications), 5, "notified")
            assert "malformed TOML" in log_text(app)
    run(go())


def test_sighup_stops_the_run_and_quits_like_q(isolated: Path, leftovers) -> None:
    # A dropped SSH session: the run is stopped (result file ends "interrupted"),
    # nothing is left running, the console exits with 128 + SIGHUP.
    import os
    import signal

    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await start_long_run(pilot, app)
            os.kill(os.getpid(), signal.SIGHUP)
            await wait_for(pilot, lambda: app.return_code is not None, 10, "app exits")
        assert app.return_code == 128 + signal.SIGHUP
        result = results.read(next(out.glob("*.jsonl")))
        assert result.failed is not None and result.failed.interrupted
    run(go())
    assert leftovers() == []


async def settings(pilot, app: HotloopApp, workload: str, runs: str,
                   **params: str) -> None:
    """A workload picked from the catalogue, its params typed in, no warmup, no perf."""
    await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
    await app.main_screen.pick("workload", workload)
    await wait_for(pilot, lambda: app.main_screen.form.base.workload == workload, 5, workload)
    for key, value in params.items():
        if isinstance(app.main_screen.form.fields[f"param.{key}"].control, Select):
            await set_choice(pilot, app, f"param.{key}", value)
        else:
            await type_into(pilot, app, f"param.{key}", value)
    await type_into(pilot, app, "runs", runs)
    await type_into(pilot, app, "warmup", "0")
    await set_choice(pilot, app, "perf", "off")
    await pilot.press("escape")
    await wait_for(pilot, lambda: isinstance(app.focused, CatalogTree), 5, "tree focus")


def test_stop_means_stop_however_many_runs_are_buffered(isolated: Path, leftovers) -> None:
    # Runs of one block each: thousands a second queue up between the worker and the
    # console. After x not one more reaches the screen or the result file.  The worker
    # writes them far faster than the console draws them: by the 200th drawn, the pipe
    # between them (64 KiB, 400 run lines) has long been full, whatever the machine's load.
    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await settings(pilot, app, "zero_null", "1000000", count="1")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.main_screen.controller.live is not None and app.main_screen.controller.live.n >= 200, 120,
                           "a flood of runs")
            await pilot.press("x")
            at_stop = app.main_screen.controller.live.n
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 10, "worker ended")
            assert app.main_screen.controller.live.n == at_stop and app.main_screen.controller.live.state == "stopped"
            result = results.read(next(out.glob("*.jsonl")))
            assert len(result.runs) == at_stop
            assert result.failed is not None and result.failed.interrupted
            assert result.failed.run == at_stop
        assert leftovers() == []
    run(go())


@pytest.mark.parametrize("key", ["x", "q"])
def test_stop_after_the_last_run_reports_a_completed_session(isolated: Path, faulty,
                                                             leftovers, key) -> None:
    # Every run is in and the worker is tearing down (5 s, cut by the stop): nothing
    # was lost, so the session is done, not "stopped by the user".
    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(profiles=[faulty], results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await settings(pilot, app, "faulty", "3", fault="slow-teardown")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.main_screen.controller.live is not None and app.main_screen.controller.live.n == 3, 60,
                           "every run in")
            assert app.main_screen.controller.running
            await pilot.press(key)
            if key == "x":
                await wait_for(pilot, lambda: not app.main_screen.controller.running, 10, "worker ended")
                assert app.main_screen.controller.live.state == "finished"
                assert "done: 3 runs" in log_text(app)
            else:
                await wait_for(pilot, lambda: not app.is_running, 10, "app exited")
        result = results.read(next(out.glob("*.jsonl")))
        assert len(result.runs) == 3 and result.finished is not None
        assert result.failed is None
        assert leftovers() == []
    run(go())


def test_until_ci_stops_when_the_median_is_known_and_detect_uses_the_calibration(
        isolated: Path, faulty, leftovers) -> None:
    """The form's "until ±%" ends the run early; the stats say how far the median is known,
    the runs left to the target, and the smallest change this session could detect, with
    the calibrated session noise once `hotloop calibrate` has measured it.  The runs are the
    faulty workload's 20 ms asleep (tests/faulty.py), whose median is known to 3% in a few
    runs however busy the machine is (zero_null's half millisecond may never be)."""
    from conftest import hotloop

    async def one_run(app: HotloopApp, pilot) -> str:
        await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
        await app.main_screen.pick("workload", "faulty")
        await wait_for(pilot, lambda: app.main_screen.form.base.workload == "faulty", 5, "faulty")
        await type_into(pilot, app, "runs", "400")
        await type_into(pilot, app, "warmup", "0")
        target: Input = app.main_screen.form.fields["until_ci"].control  # type: ignore[assignment]
        target.value = "3"
        await set_choice(pilot, app, "perf", "off")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.focused, CatalogTree), 5, "tree focus")
        await pilot.press("r")
        await wait_for(pilot, lambda: app.main_screen.controller.live is not None and app.main_screen.controller.live.state == "finished",
                       120, "the run stopped at its target")
        await wait_for(pilot, lambda: not app.main_screen.controller.running, 10)
        stats = app.query_one(StatsPanel)
        await wait_for(pilot, lambda: "reached" in str(stats.query_one("#stats-runs").render()),
                       5, "the target reached")
        return str(stats.query_one("#stats-numbers").render())

    async def go(calibrated: bool) -> None:
        out = isolated / "results"
        app = HotloopApp(profiles=[faulty], results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            numbers = await one_run(app, pilot)
            live = app.main_screen.controller.live
            assert 10 <= live.n < 400
            # the calibration is found, or not, however the runs spread
            assert (live.noise is not None) == calibrated and "detect" in numbers
            # the figure's words, where there is a figure: a loaded machine can spread the
            # runs past what compare could call ("too noisy to call", calibrated or not)
            if "too noisy to call" not in numbers:
                assert ("calibrated" in numbers) == calibrated
                # not calibrated: the figure is beyond any session's offset, no "?"
                assert ("no calibration" in numbers) != calibrated
                assert "%? " not in numbers
            newest = max(out.glob("*faulty*.jsonl"), key=lambda p: p.stat().st_mtime)
            result = results.read(newest)
            stop = result.finished.summary.stop
            assert stop is not None and stop.reason == "until_ci" and stop.ci_pct <= 3
            assert result.header.plan.until_ci == 3
    run(go(calibrated=False))
    cal = hotloop("calibrate", "faulty", "--profiles", str(faulty), "--runs", "6",
                  "--sessions", "8", "--no-perf")
    assert cal.returncode == 0, cal.stderr
    run(go(calibrated=True))
    assert leftovers() == []


class _Recorder:
    """Stands in for plotext in HistogramPlot.draw: keeps what the chart asks to plot."""

    def __init__(self) -> None:
        self.calls: dict[str, tuple] = {}

    def __getattr__(self, name: str):
        def call(*args, **kwargs):
            self.calls[name] = (args, kwargs)
        return call


@pytest.mark.parametrize("values", [[1e6], [1e6] * 3, [2.5e6], [1e6, 1.2e6, 1.1e6]],
                         ids=["one-1MB/s", "three-identical", "one-2.5MB/s", "spread"])
def test_histogram_of_one_bucket_draws_bars_within_the_plot(values) -> None:
    """One bucket 0.005 MB/s wide (run 1 of a session, or identical values) once had plotext
    fill a bar 160 plot-widths wide: 0.4-90 s with the event loop blocked.  The bars now sit at
    bucket indexes, so the x range is k bucket spacings whatever the values; the real edges
    are the tick labels."""
    from textual.app import App

    from hotloop.console.live import LiveRun

    class One(App[None]):
        def compose(self):
            yield HistogramPlot(id="histogram")

    async def go() -> None:
        app = One()
        async with app.run_test(size=(60, 20)) as pilot:
            live = LiveRun("p", 20, 0, "B/s")
            for v in values:
                live.add(v)
            plot = app.query_one(HistogramPlot)
            plot.live = live
            k = len(live.histogram(plot.buckets_target()))
            rec = _Recorder()
            plot.draw(rec, live)                # the work plotext is asked for, bounded
            (xs, ys), bar = rec.calls["bar"]
            lo, hi = rec.calls["xlim"][0]
            assert len(xs) == k and sum(ys) == len(values)
            assert 1 <= (hi - lo) / bar["width"] <= 1.25 * k + 1e-9   # bars in the plot
            # then the real figure, built in the plot's thread (bounded by the check above)
            plot.show(live)
            await wait_for(pilot, lambda: plot.settled, 10, "the figure built")
            assert plot.shown_n == len(values)
            text = str(plot.render())
            rows = text.splitlines()
            assert sum("█" in row for row in rows) >= 5, text          # the bars are drawn
            assert f"MB/s  (n={len(values)})" in text
            ticks = rows[-2].split()
            edges = [float(t) for t in ticks]                            # the real edges
            assert edges[0] <= min(values) / 1e6 < edges[1], text
            assert edges[-1] > max(values) / 1e6, text
    run(go())


class _InfBar(HistogramPlot):
    """A chart plotext cannot build (an infinite bar fails in build(), not in bar())."""

    def draw(self, plt, live) -> None:
        plt.bar([0, 1], [float("inf"), 1])


def test_charts_build_off_the_event_loop() -> None:
    """plotext builds each figure in a thread (20-60 ms a chart, more while perf starts; on
    the loop it froze the clock and the keys as run 1 arrived): `show` returns before the
    figure exists, and however many shows come during a build, the chart ends on the last.
    A chart with nothing to plot says so without plotext; one plotext fails on says why."""
    from textual.app import App

    from hotloop.console.live import LiveRun

    class Charts(App[None]):
        def compose(self):
            yield HistogramPlot(id="histogram")
            yield _InfBar(id="broken")

    async def go() -> None:
        app = Charts()
        async with app.run_test(size=(80, 30)) as pilot:
            hist, broken = app.query_one("#histogram", HistogramPlot), app.query_one(_InfBar)
            await wait_for(pilot, lambda: hist.settled, 10, "the first figure")
            assert "press r to run" in str(hist.render()) and hist.cost == 0.0
            live = LiveRun("p", 50, 0, "B/s")
            hist.show(live)                         # no run yet: the message, at once
            assert hist.settled and "waiting for the first run…" in str(hist.render())
            for i in range(30):
                live.add(1e6 + i * 1e3)
                hist.show(live)
                if i == 0:                          # the build has not run in show()
                    assert not hist.settled and hist.shown_n == 0
            await wait_for(pilot, lambda: hist.settled, 20, "the last figure")
            assert hist.shown_n == 30 and hist.cost > 0
            text = str(hist.render())
            assert "█" in text and "MB/s  (n=30)" in text, text

            before = hist.render()
            app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
            await wait_for(pilot, lambda: hist.settled and hist.render() is not before, 20,
                           "the figure in the new theme's colours")
            assert hist.render().spans != before.spans and str(hist.render()) == text

            broken.show(live)
            await wait_for(pilot, lambda: broken.settled, 10, "the failed build")
            assert str(broken.render()).startswith("chart failed: "), str(broken.render())
            bad = LiveRun("p", 5, 0, "B/s")         # a value the figure's set-up cannot take
            bad.add(float("inf"))
            hist.show(bad)
            assert str(hist.render()).startswith("chart failed: ") and hist.settled
            hist.show(live)                         # and the chart is not stuck after it
            await wait_for(pilot, lambda: hist.settled, 20, "the figure again")
            assert hist.shown_n == 30 and "█" in str(hist.render())
            assert app.is_running                   # the console goes on
    run(go())


def test_the_log_wraps_at_its_width_without_losing_characters(isolated: Path) -> None:
    """80 columns over SSH: a wrapped line keeps every character ("sampl|falls" lost "ing"
    to a log that drew lines 78 wide in a narrower panel), and a resize wraps them again."""
    said = ("perf: hardware counters: cycles/instructions not supported: sampling falls back "
            "to cpu-clock, no IPC; " * 2).strip()

    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10, "a plan loaded")
            await pilot.press("v")
            log = app.query_one(LogPanel)
            app.main_screen.log_line(said, "warning")
            for width in (80, 120, 60):
                if width != 80:
                    await pilot.resize_terminal(width, 24)
                await pilot.pause()
                await wait_for(pilot, lambda: log.lines, 5, "the log's lines")
                room = log.scrollable_content_region.width
                rows = [line.text.rstrip() for line in log.lines]
                assert all(len(row) <= room for row in rows), (room, rows)
                assert " ".join(rows).split() == ("warning: " + said).split()
    run(go())


def test_the_header_drops_the_view_key_once_the_terminal_grows_wide(isolated: Path) -> None:
    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=(20, 5)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            await pilot.pause()
            await pilot.resize_terminal(120, 36)
            status = app.main_screen.query_one("#status")

            def said() -> str:
                return str(status.render())
            await wait_for(pilot, lambda: "quick · seqpacket" in said(), 5, "the wide header")
            for _ in range(5):
                await pilot.pause(0.05)
            assert "v live" not in said() and "v setup" not in said(), said()
    run(go())


def test_the_hot_symbols_cursor_row_shows_without_colour_when_focused(isolated: Path) -> None:
    """The cursor row's cells are reversed (and bold) while the panel has focus, so they
    show on a terminal without colours; unfocused, no cursor style but Textual's own."""
    from hotloop import events as ev
    from hotloop.console.messages import SymbolsArrived
    from hotloop.console.widgets.symbols import SymbolsTable

    syms = (ev.HotSymbol("k_sendmsg", "[kernel.kallsyms]", 40.0, True),
            ev.HotSymbol("k_recvmsg", "[kernel.kallsyms]", 30.0, True))

    def row_styles(table: SymbolsTable, row: int) -> list:
        y = row + 1                                     # under the header
        return [seg.style for seg in table.render_line(y) if seg.text.strip()]

    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            app.main_screen.post_message(SymbolsArrived(ev.HotSymbols(syms, scope="session")))
            table = app.query_one(SymbolsTable)
            await wait_for(pilot, lambda: table.latest is not None, 5, "the symbols")
            app.main_screen.set_view("live")            # focuses the panel
            await wait_for(pilot, lambda: table.has_focus, 5, "the panel focused")
            await pilot.pause()
            assert all(s is not None and s.reverse for s in row_styles(table, 0))
            assert not any(s is not None and s.reverse for s in row_styles(table, 1))
            app.main_screen.set_view("setup")           # the focus elsewhere
            await wait_for(pilot, lambda: not table.has_focus, 5, "the panel blurred")
            await pilot.pause()
            assert not any(s is not None and s.reverse for s in row_styles(table, 0))
    run(go())


def test_a_hot_symbol_cut_at_80x24_is_spelled_out_whole_for_the_cursor_row(
        isolated: Path) -> None:
    """At 80x24 the symbol column has 29 columns: a longer name is cut there, and the panel's
    bottom border names the cursor row's whole (the hint to annotate when it fits)."""
    from textual.content import Content

    from hotloop import events as ev
    from hotloop.console.messages import SymbolsArrived
    from hotloop.console.widgets.symbols import HINT, SymbolsTable

    long = "__kmalloc_node_track_caller_noprof"
    syms = (ev.HotSymbol(long, "[kernel.kallsyms]", 40.0, True),
            ev.HotSymbol("k_recvmsg", "[kernel.kallsyms]", 30.0, True),
            ev.HotSymbol("[weird]_name_from_a_module_that_is_long", "[nf_tables]", 20.0, True))

    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            app.main_screen.set_view("live")
            table = app.query_one(SymbolsTable)

            def said() -> str:          # the border as it reads: its markup rendered
                return Content.from_markup(str(table.border_subtitle)).plain
            app.main_screen.post_message(SymbolsArrived(ev.HotSymbols(syms, scope="session")))
            await wait_for(pilot, lambda: table.latest is not None, 5, "the symbols")
            await pilot.pause()
            assert str(table.get_row_at(0)[2]) != long            # cut in its cell...
            assert said() == long             # ...whole beneath
            await pilot.press("down")
            await wait_for(pilot, lambda: said() == HINT, 5, "the hint")
            await pilot.press("down")                             # "[...]" is no markup
            await wait_for(pilot, lambda: said() == syms[2].symbol, 5,
                           f"the third name, not {table.border_subtitle!r}")
    run(go())


def test_at_20_columns_the_header_keeps_the_view_key_whole(isolated: Path) -> None:
    """20x5: no room for the plan, so it goes (no empty "│  │"), and the key to the other
    view is whole rather than cut to "v"."""
    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=(20, 5)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            status = app.main_screen.query_one("#status")
            await wait_for(pilot, lambda: "v live" in str(status.render()), 5, "the view key")
            assert str(status.render()) == "hotloop  │  v live"         # 18 columns: room
    run(go())
