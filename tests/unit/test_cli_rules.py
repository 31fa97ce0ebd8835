"""The command line's rules that need no process: suggestions for typos, what a bad profile
file defines, a plan's duration line, SVG pictures, the console's screenshot."""
from __future__ import annotations

import argparse
import xml.dom.minidom
from pathlib import Path

import pytest

from hotloop import catalog
from hotloop.catalog import Plan
from hotloop.catalog.loader import defined_in, did_you_mean
from hotloop.cli.listing import plan_duration
from hotloop.console.commands import save_screenshot
from hotloop.errors import HotloopError
from hotloop.render import svg


@pytest.mark.parametrize("name, known, said", [
    ("splitt", ["default", "fifo", "same-core", "split"], "; did you mean split?"),
    ("seqpaket", ["quick", "seqpacket", "seqpacket-100"], "; did you mean seqpacket?"),
    ("stok", ["busy-poll", "default"], ""),                   # nothing close: no guess
    ("", ["split"], ""),
    ("x", [], ""),
])
def test_did_you_mean(name, known, said):
    assert did_you_mean(name, known) == said


def test_what_a_bad_file_defines_even_when_it_does_not_parse():
    assert defined_in('[cpu.c]\nnice = "low"\n[plan.p]\nworkload = "w"\n') == {
        ("cpu", "c"), ("plan", "p")}
    assert defined_in('[plan.a]\nx = \n[ workload . "my.w" ]\n[kernel.k\n[other.z]\n') == {
        ("plan", "a"), ("workload", "my.w"), ("kernel", "k")}
    assert defined_in("") == frozenset()


def write(d: Path, name: str, text: str) -> None:
    d.mkdir(exist_ok=True)
    (d / name).write_text(text)


def test_a_bad_file_is_left_out_and_is_the_error_only_for_what_it_defines(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    d = tmp_path / "p"
    write(d, "bad.toml", '[cpu.c]\nnice = "low"\n')
    write(d, "uses.toml", '[plan.q]\nworkload = "zero_null"\ncpu = "c"\n')
    with pytest.raises(HotloopError, match=r"bad.toml:2: \[cpu.c\] nice"):
        catalog.load([d])                       # strict, as before
    cat = catalog.load([d], skip_bad=True)
    assert [s.warning for s in cat.skipped] == [
        f"{d}/bad.toml:2: [cpu.c] nice: expected an integer, got a string (file skipped)",
        "plan q skipped: its CPU profile c is in a file skipped"]
    assert "q" not in cat.plans and "quick" in cat.plans
    for needs in (lambda: cat.plan_for("q"), lambda: cat.require("cpu", "c", "--cpu")):
        with pytest.raises(HotloopError, match=r"bad.toml:2: \[cpu.c\] nice"):
            needs()
    cat.require("cpu", "split", "--cpu")        # what the bad file does not define
    assert cat.plan_for("quick").name == "quick"
    with pytest.raises(HotloopError) as e:
        cat.require("kernel", "busy_pol", "--kernel")
    assert str(e.value) == ("--kernel busy_pol: unknown kernel profile 'busy_pol'; did you "
                            "mean busy-poll? (known: busy-poll, default)")


def test_a_plan_from_a_file_resolves_with_a_command_line_typo_blamed_on_the_line():
    cat = catalog.load()
    assert cat.plans["quick"].origin.endswith("plans.toml")
    with pytest.raises(HotloopError) as e:
        cat.require("cpu", "splitt", "--cpu")
    assert str(e.value).startswith("--cpu splitt: unknown CPU profile 'splitt'; did you mean "
                                   "split?")


@pytest.mark.parametrize("plan, variants, said", [
    (Plan("a", "w", runs=20, warmup=1), 1,
     "20 runs + 1 warmup: 21 repetitions x ~? each (at most 1h45m at the 300 s timeout)"),
    (Plan("a", "w", runs=10, warmup=0, timeout=2), 3,
     "10 runs: 3 variants x 10 = 30 repetitions x ~? each (at most 1m00s at the 2 s timeout)"),
    (Plan("a", "w", runs=30, warmup=2, processes=3), 1,
     "30 runs + 2 warmups in each, 3 processes: 36 repetitions x ~? each (at most 3h00m at "
     "the 300 s timeout)"),
    (Plan("a", "w", runs=1, warmup=1, until_ci=0.5, timeout=1), 1,
     "up to 1 run (until the median is known to ±0.5%) + 1 warmup: 2 repetitions x ~? each "
     "(at most 2.0s at the 1 s timeout)"),
])
def test_a_plans_duration_is_its_repetitions_and_the_timeouts_bound(plan, variants, said):
    assert plan_duration(plan, variants) == said


def test_a_picture_is_an_svg_as_wide_as_its_text(tmp_path):
    doc = svg.picture(["[k] do_syscall_64  not markup", "x" * 150], "t")
    xml.dom.minidom.parseString(doc)
    assert "[k]" in doc                         # printed as it is, not read as markup
    out = tmp_path / "a.svg"
    svg.save(out, svg.coloured("histogram\n  1-2 MB/s  3  ███"), "t")
    assert out.read_text().startswith("<svg")
    for bad, said in ((tmp_path / "no" / "a.svg", "no such directory"),
                      (tmp_path, "is a directory")):
        with pytest.raises(HotloopError, match=said):
            svg.save(bad, ["x"], "t")


class FakeApp:
    """What the screenshot command uses of the app."""
    def __init__(self) -> None:
        self.notices: list[tuple[str, str]] = []

    def export_screenshot(self) -> str:
        return "<svg/>"

    def notify(self, message: str, title: str = "", severity: str = "information") -> None:
        self.notices.append((message, severity))


def test_the_screenshot_goes_beside_the_results_in_a_directory_it_creates(tmp_path):
    app = FakeApp()
    where = tmp_path / "results"
    first = save_screenshot(app, where)         # type: ignore[arg-type]
    second = save_screenshot(app, where)        # type: ignore[arg-type]
    assert first and second and first != second and first.parent == where
    assert first.read_text() == "<svg/>" and first.name.endswith("-screenshot.svg")
    assert app.notices[0] == (f"saved to {first.resolve()}", "information")
    (tmp_path / "file").write_text("")
    assert save_screenshot(app, tmp_path / "file" / "results") is None   # type: ignore[arg-type]
    message, severity = app.notices[-1]
    assert severity == "error" and message.startswith("screenshot not saved:")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from hotloop.cli.parser import parser
    top = parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_subcommand_has_examples_and_every_argument_says_what_it_is():
    """Each `hotloop COMMAND --help` ends with examples of that command, and no argument
    is left without a line saying what it takes (hidden ones aside)."""
    for name, sub in _subcommands().items():
        text = sub.format_help()
        assert "examples:" in text and f"hotloop {name}" in text.split("examples:")[1], name
        for action in sub._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"hotloop {name}: {action.option_strings or action.dest}"


def test_minus_v_is_the_version(capsys):
    from hotloop.cli.parser import parser, version_line
    with pytest.raises(SystemExit) as e:
        parser().parse_args(["-V"])
    assert e.value.code == 0 and capsys.readouterr().out == version_line() + "\n"


@pytest.mark.parametrize("top", ["-1", "0", "x"])
def test_annotate_top_takes_a_positive_count(top):
    from hotloop.cli.parser import parser
    with pytest.raises(HotloopError) as e:
        parser().parse_args(["annotate", "r.jsonl", "--top", top])
    assert str(e.value).startswith("annotate: argument --top: ") and "positive" in str(e.value)
