"""A result file edited by hand, through the real command line and the real console: the one
line naming file and line reaches the terminal, and the compare screen lists and refuses it.

What the reader refuses and why is tested in-process on forged files
(tests/unit/test_result_files_forged.py); here the real `hotloop show` and `hotloop compare`
processes and the console under Pilot.
"""
from __future__ import annotations

import asyncio
from pathlib import Path

import forge
import pytest
from conftest import hotloop
from forge import edited, first_run, raw_run, rows_of, set_run
from test_app import wait_for
from test_app_compare import SIZE, open_compare, pick, results_dir

from hotloop.console.app import HotloopApp


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return forge.zero_null(tmp_path_factory.mktemp("good") / "good.jsonl",
                           forge.NS_512 * 3000 // 20000, count=3000, n=5)


def test_show_and_compare_say_one_line_on_the_terminal_and_exit_2(tmp_path, good):
    bad = edited(good, tmp_path / "value-string.jsonl", set_run("value", "12"))
    where = f"{bad}:{first_run(rows_of(good)) + 1}: "
    for args in (["show", str(bad)], ["compare", str(good), str(bad), "--format", "json"]):
        p = hotloop(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stdout == "" and "Traceback" not in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and where in p.stderr, p.stderr
        assert p.stderr.startswith("hotloop: ") and "value: expected a number" in p.stderr


def test_the_console_compare_screen_lists_forged_files_and_refuses_them_in_one_line(
        isolated, good):
    async def go() -> None:
        out = results_dir(isolated, [good])
        edited(good, out / "header5.jsonl", lambda rows: rows[0].__setitem__("header", 5))
        edited(good, out / "strvalue.jsonl", set_run("value", "12"))
        edited(good, out / "nan.jsonl", raw_run('"value": ', '"value": NaN, "was": '))
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_compare(pilot, app, 4)
            errors = {e.path.name: e.error for e in screen.entries}
            assert errors["good.jsonl"] == ""
            assert errors["header5.jsonl"].startswith(f"{out / 'header5.jsonl'}:1: ")
            # listed from their headers and last lines: their runs are read, and refused,
            # when compared
            assert errors["strvalue.jsonl"] == errors["nan.jsonl"] == ""
            await pick(pilot, screen, "good.jsonl")
            await pick(pilot, screen, "strvalue.jsonl")
            await pilot.press("c")
            await wait_for(pilot, lambda: screen.error != "", 30, "the refusal")
            line = first_run(rows_of(good)) + 1
            assert f"strvalue.jsonl:{line}: " in screen.error and "\n" not in screen.error
            assert app.is_running and app.screen is screen
    asyncio.run(go())
