"""Text from outside reaches the terminal as text: never markup, never a command.

A workload's error message may carry an ESC sequence or newlines, a warning
names a profile table as "[cpu.c]", a path may hold "[/b]": the command line
and the console show each of them as it is (control characters as escapes
such as \\x1b and \\n, brackets as brackets), on one line.
"""
from __future__ import annotations

import asyncio
import re
from pathlib import Path

import forge
from conftest import hotloop
from faulty import lines
from forge import edited
from test_app import SIZE, log_text, type_into, wait_for
from test_app_compare import open_compare, results_dir
from textual.widgets import DataTable
from textual.widgets._toast import Toast

from hotloop import results
from hotloop.console.app import HotloopApp

NASTY = "bad\x1b[2J\x1b[31m red\nsecond\tline"
SHOWN = "bad\\x1b[2J\\x1b[31m red\\nsecond\\tline"

ESC_C = r"""
#include "hotloop.h"
#include <stdlib.h>
#include <unistd.h>
struct st { int runs, at; };
void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t len)
{
    struct st *s = calloc(1, sizeof(*s));
    (void)env; (void)err; (void)len;
    s->at = (int)hl_param_int(p, n, "at", 3);
    return s;
}
int hl_run(void *state, struct hl_result *res, char *err, size_t len)
{
    struct st *s = state;
    struct hl_clock c;
    if (++s->runs == s->at)
        return hl_fail(err, len, "%s", "bad\033[2J\033[31m red\nsecond\tline");
    hl_clock_start(&c);
    usleep(2000);
    hl_clock_stop(&c, res);
    res->ops = 1000;
    return 0;
}
int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state) { free(state); }
"""

ESC_TOML = """
[workload.esc]
source = "esc.c"
params.at = { default = 3, min = 1 }

[plan.esc-5]
workload = "esc"
runs = 5
warmup = 0
perf = false

[cpu.c]
summary = "one CPU this machine has, one it has not"
cpus = [0, 999]
"""


def profiles(tmp_path: Path) -> Path:
    d = tmp_path / "esc"
    d.mkdir()
    (d / "esc.c").write_text(ESC_C)
    (d / "w.toml").write_text(ESC_TOML)
    return d


def test_a_workload_error_with_escapes_is_one_visible_line_everywhere(tmp_path, leftovers, cli):
    d = profiles(tmp_path)
    out = tmp_path / "e.jsonl"
    p = hotloop("run", "esc-5", "--profiles", str(d), "--out", str(out))
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"run 3: {SHOWN}" in p.stderr
    assert f"PARTIAL: run 3: {SHOWN}" in p.stdout
    assert lines(out)[-1]["message"] == f"run 3: {NASTY}"                # kept as it came
    assert results.read(out).failed.message == f"run 3: {SHOWN}"        # read as shown
    shown = cli("show", str(out))
    assert shown.returncode == 0 and SHOWN in shown.stdout
    compared = cli("compare", str(out), str(out))           # partial: its reason shown
    assert compared.returncode == 0 and SHOWN in compared.stdout
    for text in (p.stdout, p.stderr, shown.stdout, compared.stdout, compared.stderr):
        assert "\x1b" not in text
    assert leftovers() == []


def test_a_warning_naming_a_profile_table_keeps_its_brackets(tmp_path):
    d = profiles(tmp_path)
    p = hotloop("run", "esc-5", "--profiles", str(d), "--cpu", "c", "--param", "at=100",
                "--runs", "2")
    assert p.returncode == 0, p.stderr
    assert "warning: [cpu.c] cpus: " in p.stderr


def test_the_console_logs_a_workload_error_with_escapes_as_one_visible_line(isolated,
                                                                            leftovers):
    d = profiles(isolated)

    async def go() -> None:
        app = HotloopApp(profiles=[d], results_dir=isolated / "results")
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            await app.main_screen.pick("plan", "esc-5")
            await wait_for(pilot, lambda: app.main_screen.form.base.name == "esc-5", 5, "esc-5 loaded")
            await pilot.press("r")
            await wait_for(pilot, lambda: app.main_screen.controller.live is not None and app.main_screen.controller.live.state == "failed",
                           60, "the run failed")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 10)
            # the error's line is a message of the worker's: on a busy machine it may be
            # handled after the worker has ended
            await wait_for(pilot, lambda: SHOWN in " ".join(log_text(app).split("\n")), 10,
                           "the error in the log")      # (the log wraps long lines)
            assert "\x1b" not in log_text(app)
    asyncio.run(go())
    assert leftovers() == []


def test_the_consoles_notifications_take_brackets_as_text(isolated):
    # A profile error naming a path with "[/b]" in it, a typed "[/]": Textual markup
    # would fail on both ("nothing to close") and take the console down.
    odd = isolated / "config" / "hotloop" / "a[" / "b]"
    odd.mkdir(parents=True)
    (odd / "broken.toml").write_text("[cpu.c]\nnice = 'low'\n")

    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)

            def toasts() -> str:
                return " ".join(t.render().plain for t in app.screen.query(Toast))
            await wait_for(pilot, lambda: "broken.toml" in toasts(), 5, "the toast")
            assert "a[/b]/broken.toml:2: [cpu.c] nice: expected an integer" in toasts()
            await type_into(pilot, app, "runs", "[/]")
            await pilot.press("escape")
            await pilot.press("w")                      # refused: the field is bad
            await wait_for(pilot, lambda: "got '[/]'" in toasts(), 5, "refused")
            assert app.is_running
    asyncio.run(go())


def test_the_compare_screen_shows_brackets_and_escapes_from_files_as_text(isolated, tmp_path):
    # A DataTable reads a str cell as markup: "[/]" as a workload name took the
    # console down, "[red]" in a file name was eaten.
    good = forge.zero_null(tmp_path / "good.jsonl", forge.NS_512)

    async def go() -> None:
        out = results_dir(isolated, [good])
        edited(good, out / "a[red]b.jsonl",
              lambda rows: rows[0]["header"]["workload"].__setitem__("name", "[/]\x1b[2J"))
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=(140, 30)) as pilot:
            screen = await open_compare(pilot, app, 2)
            table = screen.query_one("#compare-files", DataTable)
            key = str(out / "a[red]b.jsonl")
            assert table.get_cell(key, "file").plain == "a[red]b"      # named without .jsonl
            assert table.get_cell(key, "workload").plain == "[/]\\x1b[2J"
            await pilot.pause(0.2)                  # drawn, and still running
            assert app.is_running
    asyncio.run(go())


def _cells(line: str, fmt: str) -> list[str]:
    """A md or org table row's cells: split at the bars that are not escaped."""
    inner = line.strip()[1:-1]
    return re.split(r"(?<!\\)\|", inner) if fmt == "md" else inner.split("|")


def test_a_bar_in_a_label_or_name_stays_in_its_cell_and_a_newline_in_a_path_is_shown(
        tmp_path):
    """md and org tables: a label `stock | nosmt` or a file named with a bar is one cell
    (escaped: `\\|` in md, `\\vert{}` in org), and a path holding a newline is shown as
    `\\n`: every row has the header's number of cells, every line is a line of the table."""
    import json as _json
    good = forge.zero_null(tmp_path / "good.jsonl", forge.NS_512)
    rows = good.read_text().splitlines()
    head = _json.loads(rows[0])
    head["header"]["label"] = "stock | nosmt"
    odd = tmp_path / "new\nline | x"
    odd.mkdir()
    bad = odd / "a | b.jsonl"
    bad.write_text("\n".join([_json.dumps(head), *rows[1:]]) + "\n")
    for fmt in ("md", "org"):
        for files in ([str(bad)], [str(good), str(bad)], [str(bad), str(good)]):
            p = hotloop("compare", *files, "--format", fmt)
            assert p.returncode == 0, p.stderr
            out = p.stdout.splitlines()
            # the title (wrapped to the table's width) and the lines above the table
            title = " ".join(out[:next(i for i, ln in enumerate(out) if ln.startswith("|"))])
            if files[0] == str(bad):                    # its path in the title, escaped
                assert "new\\nline" in title, title
            table = [ln for ln in out if ln.startswith("|") and not ln.startswith("|-")]
            assert len(table) >= 2, p.stdout
            width = len(_cells(table[0], fmt))
            assert all(len(_cells(ln, fmt)) == width for ln in table), (fmt, files, table)
            assert not any(ln.startswith(("line", "b.jsonl")) for ln in out)
            if files[-1] == str(bad):                   # a row of the table is its
                assert ("stock \\| nosmt" if fmt == "md" else "stock \\vert{} nosmt") \
                    in "".join(table)
