"""A bisect in the console, driven with Pilot: `b` on the form's plan in the repository the
console runs in, each step's sessions in the live panels as a series' are, each round in
the log, the report on its own screen; and `x` in a build, the rounds kept for `hotloop
bisect --resume`.  A real git repository, real builds, sessions and compiler."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from bisect_repo import git, make_repo
from conftest import ROOT
from forms import fill_form
from test_app import SIZE, log_text, wait_for

from hotloop.console.app import HotloopApp
from hotloop.console.screens.bisect import BisectReportScreen, BisectScreen

SLOWER = 4                  # of 6 revisions after the good one; the 3rd does not build


async def _bisect(pilot, app: HotloopApp, rng: str, build: str) -> None:
    """The form as a bisect measures it, then `b` and the dialog filled in."""
    await wait_for(pilot, lambda: app.main_screen.cat is not None
                   and "chain" in app.main_screen.cat.workloads, 20, "the catalogue")
    await app.main_screen.pick("workload", "chain")
    await fill_form(pilot, app, param_turns="20000", runs="5", warmup="1", perf="off")
    await pilot.press("b")
    await wait_for(pilot, lambda: isinstance(app.screen, BisectScreen), 10, "the dialog")
    for field, text in (("#bisect-range", rng), ("#bisect-build", build),
                        ("#bisect-metric", "cpu")):
        app.screen.query_one(field).value = text
    app.screen.query_one("#bisect-range").focus()
    await pilot.press("enter")


def test_the_console_bisects_the_forms_plan_and_shows_the_report(tmp_path: Path,
                                                                 monkeypatch, leftovers) -> None:
    r, shas = make_repo(tmp_path / "work", revisions=6, slower=SLOWER, comment=5, broken=3)
    monkeypatch.chdir(r)
    head = git(r, "rev-parse", "HEAD")
    sessions: list[str] = []

    async def go() -> None:
        app = HotloopApp(profiles=[Path("bench")], results_dir=tmp_path / "results")
        async with app.run_test(size=SIZE) as pilot:
            await _bisect(pilot, app, f"{shas[0][:12]}..{shas[-1][:12]}", "sh build.sh")
            c = app.main_screen.controller
            await wait_for(pilot, lambda: c.bisect is not None, 20, "the bisect started")
            # its steps' sessions go through the live panels, a series' status row each
            def followed() -> bool:
                if c.series_at is not None and c.series is not None:
                    slot, _ = c.series_at
                    sessions.append(f"{slot.variant} s{slot.session:02d}")
                return isinstance(app.screen, BisectReportScreen) or not c.running
            await wait_for(pilot, followed, 600, "the bisect's end")
            assert isinstance(app.screen, BisectReportScreen), log_text(app)
            report = app.screen.text
            text = log_text(app)
            assert f"first bad {shas[SLOWER][:12]}" in report, (report, text)
            assert "steps:" in report and "the chance this answer is wrong" in report
            assert "checking out and building" in text and "candidates left" in text, text
            assert f"{shas[3][:12]} skipped: its build failed" in text, text
            assert "cpu judged" in text, text
            await pilot.press("m")              # the mail, beside the results
            await wait_for(pilot, lambda: app.screen.mailed is not None, 10, "the mail")
            mail = app.screen.mailed.read_text()
            assert not app.screen.mailed.is_relative_to(r)      # not in the user's checkout
            assert max(map(len, mail.splitlines())) <= 72 and "hotloop bisect" in mail
            await pilot.press("escape")
            assert not c.running and c.bisect is None
    asyncio.run(go())
    assert sessions, "no session of a step was followed live"
    assert git(r, "rev-parse", "HEAD") == head
    assert git(r, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_bisect_stopped_in_the_console_resumes_on_the_command_line(tmp_path: Path,
                                                                     monkeypatch,
                                                                     leftovers) -> None:
    """`x` while a candidate builds (held there by the test): the build stopped, no skip
    counted, the rounds kept; `hotloop bisect --resume` then finds the answer from the words
    the console kept (the form's plan as options)."""
    r, shas = make_repo(tmp_path / "work", revisions=6, slower=SLOWER, comment=5, broken=3)
    monkeypatch.chdir(r)
    hold = tmp_path / "hold"
    hold.touch()
    gate = (f'case $(git rev-parse HEAD) in {shas[0]}|{shas[-1]}) ;; *) '
            f'while [ -e {hold} ]; do sleep 0.05; done;; esac; sh build.sh')

    async def go() -> None:
        app = HotloopApp(profiles=[Path("bench")], results_dir=tmp_path / "results")
        async with app.run_test(size=SIZE) as pilot:
            await _bisect(pilot, app, f"{shas[0]}..{shas[-1]}", gate)
            c = app.main_screen.controller
            # the endpoints measured, then a candidate's build held
            await wait_for(pilot, lambda: "endpoints," in log_text(app)
                           and log_text(app).count("checking out and building") >= 3, 300,
                           "a candidate building")
            await pilot.press("x")
            await wait_for(pilot, lambda: "bisect stopped" in log_text(app), 60, "the stop")
            assert not c.running
            assert "skipped" not in log_text(app), log_text(app)
    asyncio.run(go())
    (state,) = (tmp_path / "state").rglob("state.json")
    kept = json.loads(state.read_text())
    assert kept["decision"]["design"]["with_bad"] is True      # the command line's design
    hold.unlink()
    done = subprocess.run([sys.executable, "-m", "hotloop", "bisect", "--resume"],
                          capture_output=True, text=True, cwd=r, timeout=900,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    assert "resuming" in done.stderr and "rounds kept" in done.stderr
    assert f"first bad {shas[SLOWER][:12]}" in done.stdout, done.stdout


def test_a_bisect_outside_a_repository_is_refused_in_one_line(tmp_path: Path, monkeypatch
                                                              ) -> None:
    """The console started where there is no git repository: `b` says so in the log, nothing
    is kept, the console goes on."""
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    (tmp_path / "plain").mkdir()
    monkeypatch.chdir(tmp_path / "plain")

    async def go() -> None:
        app = HotloopApp(profiles=[], results_dir=tmp_path / "results")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 20, "a plan")
            await pilot.press("b")
            await wait_for(pilot, lambda: isinstance(app.screen, BisectScreen), 10, "dialog")
            app.screen.query_one("#bisect-range").value = "v1..v2"
            app.screen.query_one("#bisect-range").focus()
            await pilot.press("enter")
            await wait_for(pilot, lambda: "cannot run:" in log_text(app), 20, "the refusal")
            (line,) = [ln for ln in log_text(app).splitlines() if "cannot run:" in ln]
            assert "git" in line, line
            assert not app.main_screen.controller.running
    asyncio.run(go())
    assert not (tmp_path / "state" / "hotloop" / "bisect").exists() or not list(
        (tmp_path / "state" / "hotloop" / "bisect").rglob("state.json"))


def test_a_bisect_refused_before_its_first_round_keeps_nothing(tmp_path: Path, monkeypatch,
                                                               leftovers) -> None:
    """GOOD's build fails: the bisect ends in one error line before BAD is built, its state
    and checkouts are discarded (as the command line does), and the next `b` is not refused
    for them."""
    r, shas = make_repo(tmp_path / "work", revisions=2, slower=2, comment=3, broken=3)
    monkeypatch.chdir(r)

    async def go() -> None:
        app = HotloopApp(profiles=[Path("bench")], results_dir=tmp_path / "results")
        async with app.run_test(size=SIZE) as pilot:
            await _bisect(pilot, app, f"{shas[0][:12]}..{shas[-1][:12]}", "exit 1")
            c = app.main_screen.controller
            await wait_for(pilot, lambda: "cannot be measured" in log_text(app), 120,
                           "the refusal")
            await wait_for(pilot, lambda: not c.running, 20, "the bisect's end")
            assert not list((tmp_path / "state").rglob("state.json"))
            # GOOD's failure ends it before BAD is built (a kernel's build is not spent)
            assert log_text(app).count("checking out and building") == 1, log_text(app)
            assert "the good revision" in log_text(app)
            await pilot.press("b")
            await wait_for(pilot, lambda: isinstance(app.screen, BisectScreen), 10, "dialog")
    asyncio.run(go())
