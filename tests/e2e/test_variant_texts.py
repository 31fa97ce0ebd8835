"""The console's vs field, typed into the real app under Pilot: texts of the table that `run
--param` refuses too (tests/variant_cases.py) are refused in the log in the same words, and
nothing starts; a few of them given to `hotloop run` in a process of its own, refused in
that one line (exit 2); the table's accepted texts, and the rest of the refused ones, go through the
function the field calls (tests/unit/test_variants.py).  A series of the form's own value
listed beside another runs in tests/e2e/test_app_series.py."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from conftest import hotloop
from forms import fill_form
from test_app import SIZE, log_text, picked, wait_for
from variant_cases import CASES, REFUSED_BY_BOTH, params

from hotloop.console.app import HotloopApp

TYPED = ["blok_size=4096", "block_size=512,512", "block_size=512", "cpu=splt"]


def test_the_vs_field_refuses_as_run_param_does(isolated: Path, leftovers) -> None:
    said = {text: vs if vs is not None else cli for text, cli, vs in CASES}
    assert all(isinstance(said[t], str) for t in TYPED)

    async def go() -> None:
        out = isolated / "results"
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=SIZE) as pilot:
            await picked(pilot, app, "zero_null")
            for text in TYPED:
                await fill_form(pilot, app, vs=text)
                assert app.main_screen.form.vs == text
                await pilot.press("r")
                line = f"cannot run: {said[text].format(at='vs')}"
                await wait_for(pilot, lambda line=line: line in log_text(app), 10, line)
                assert not app.main_screen.controller.running
            assert not out.exists() or list(out.iterdir()) == []
    asyncio.run(go())
    assert leftovers() == []


@pytest.mark.parametrize("text, says", [case for case in REFUSED_BY_BOTH
                                        if case[0] in TYPED or case[0] == "kernel=busy-poll"])
def test_hotloop_run_refuses_them_in_one_line_exit_2(isolated: Path, text, says) -> None:
    p = hotloop("run", "zero_null", *params(text))
    assert (p.returncode, p.stderr) == (2, f"hotloop: {says.format(at='--param')}\n")
    assert p.stdout == "" and not (isolated / "results").exists()
