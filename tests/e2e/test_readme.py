"""The manual stays true: the README, every page under docs/ and the CHANGELOG.

Their examples load or run where they stand (the workload, the host, the TOML), every
`hotloop` command line they show parses with the real command line's parser (and the harmless
ones run), every relative link reaches its file and heading, and the README's test command is
CI's.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import ROOT, hotloop

README = ROOT / "README.md"
DOCS = ROOT / "docs"
MANUAL = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def block(lang: str, after: str, page: Path = README) -> str:
    """The first `lang` code block after the heading `after` of `page`."""
    section = page.read_text().split(after, 1)[1]
    return re.search(rf"```{lang}\n(.*?)```", section, re.S).group(1)


def blocks(page: Path, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", page.read_text(), re.S | re.M)


def prose(page: Path) -> str:
    """The page without its fenced code blocks (a `#include` is not a heading)."""
    return re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)


def test_the_manual_is_the_readme_and_the_pages_of_docs():
    assert {_name(p) for p in MANUAL} >= {
        "README.md", "CHANGELOG.md", "docs/usage.md", "docs/console.md", "docs/profiles.md",
        "docs/workloads.md", "docs/hosts.md", "docs/vms.md", "docs/perf.md",
        "docs/comparing.md", "docs/statistics.md", "docs/formats.md", "docs/measurements.md",
        "docs/limits.md", "docs/dev/architecture.md", "docs/dev/testing.md"}
    assert len(README.read_text().splitlines()) <= 300        # the manual is in docs/


def test_the_documented_user_workload_runs_like_a_bundled_one(tmp_path, cli):
    page = DOCS / "workloads.md"
    d = tmp_path / "mine"
    d.mkdir()
    (d / "myloop.c").write_text(block("c", "# Writing your own workload", page))
    (d / "myloop.toml").write_text(block("toml", "# Writing your own workload", page))
    listed = cli("list", "workloads", "--profiles", str(d))
    assert listed.returncode == 0 and "myloop" in listed.stdout
    p = hotloop("run", "myloop", "--profiles", str(d), "--runs", "3", "--param", "calls=20000",
                "--no-perf", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["metric"] == "ns/op" and doc["higher_is_better"] is False
    assert all(r["ops"] == 20000 and r["value"] > 0 for r in doc["runs"])


def test_the_documented_host_loads_as_a_file(tmp_path, cli):
    d = tmp_path / "hosts"
    d.mkdir()
    (d / "hosts.toml").write_text(block("toml", "# Many machines", DOCS / "hosts.md"))
    listed = cli("list", "hosts", "--profiles", str(d))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split() == ["lab1", "root@lab1.example", "lab1",
                                                     "(stock", "6.18)"]


@pytest.mark.parametrize("page", MANUAL, ids=_name)
def test_every_toml_example_is_toml(page):
    try:
        import tomllib
    except ImportError:                 # Python 3.10
        import tomli as tomllib
    for example in blocks(page, "toml"):
        tomllib.loads(example)


def test_each_quick_start_command_sets_up_the_venv_it_uses():
    """A fresh Debian's own Python refuses a bare `pip install` (PEP 668), and either command may
    come first: each makes .venv, installs into it and runs from it."""
    lines = [ln.split("#")[0].strip() for ln in block("sh", "## Quick start").splitlines()]
    assert len(lines) == 2
    for ln in lines:
        steps = ln.split(" && ")
        assert steps[0] == "python3 -m venv .venv"
        assert steps[1].startswith(".venv/bin/pip install -e ")
        assert steps[2].startswith(".venv/bin/")


def test_the_python_the_readme_asks_for_is_the_one_pyproject_requires():
    pyproject = (ROOT / "pyproject.toml").read_text()
    version = re.search(r'^requires-python = ">=(\d+\.\d+)"$', pyproject, re.M).group(1)
    quick = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"Python (\d+\.\d+)\+", quick) == [version]


def test_ci_runs_exactly_the_readme_test_command():
    quick = block("sh", "## Quick start")
    test_cmd = next(ln for ln in quick.splitlines() if "pytest" in ln).split("#")[0].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_cmd in ci.splitlines()


# --- the command lines shown --------------------------------------------------------------

# What a placeholder of the prose stands for, to parse: the options after it take numbers.
PLACEHOLDERS = {"N": "3", "K": "8", "R": "5", "S": "1", "PCT": "2", "COMMAND": "run",
                "...": "PLAN"}


def _alternatives(line: str, bare: bool) -> list[str]:
    """`list [workloads|cpu]`: each choice, and none; in prose also `worse|better` bare."""
    m = re.search(r"\[([\w-]+(?:\|[\w-]+)+)\]", line) or (
        bare and re.search(r"(?<![\w|])([\w-]+(?:\|[\w-]+)+)(?![\w|])", line))
    if not m:
        return [line]
    choices = m.group(1).split("|") + ([""] if m.group(0).startswith("[") else [])
    return [v for c in choices
            for v in _alternatives(line[:m.start()] + c + line[m.end():], bare)]


def hotloop_commands(line: str, in_prose: bool = False) -> list[list[str]]:
    """The `hotloop` command lines in one shell line: their arguments, each variant."""
    line = re.sub(r"<(\w+)>", r"\1", line)          # results/<time>-x/: a name, not a redirect
    line = re.sub(r"\[(--[\w-]+(?: \w+)?)\]", r"\1", line)     # [--runs R]: shown, given
    found = []
    for variant in _alternatives(line, in_prose):
        lex = shlex.shlex(variant, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        words: list[str] = []
        for token in [*lex, ";"]:
            if set(token) <= set("();<>|&"):         # a command ends: && | ; $( <( ) >
                if words and (words[0] == "hotloop" or words[0].endswith("/hotloop")):
                    found.append([PLACEHOLDERS.get(w, w) if in_prose else w
                                  for w in words[1:]])
                words = [] if ">" not in token else ["(a redirection's file)"]
            else:
                words.append(token)
    return found


def shown_commands(page: Path, in_prose: bool = False) -> list[list[str]]:
    """Every `hotloop` command of a page's shell blocks, or of its prose's code spans (not
    output such as `hotloop 0.1.0 (source ...)`, nor a command named alone: `hotloop run`)."""
    found = []
    if not in_prose:
        for sh in blocks(page, "sh"):
            for line in sh.replace("\\\n", " ").splitlines():
                found += hotloop_commands(line)
        return found
    for span in re.findall(r"`([^`]+)`", prose(page).replace("\n", " ")):
        if re.match(r"(source <\()?hotloop(\s|$)", span) and not re.match(r"hotloop \d", span):
            found += [argv for argv in hotloop_commands(span, in_prose=True) if len(argv) != 1]
    return found


def _subcommands() -> set[str]:
    from hotloop.cli.parser import parser
    sub = next(a for a in parser()._actions if a.dest == "command")
    return set(sub.choices)


def test_the_shown_commands_are_found():
    """The finder itself: placeholders, alternatives, continuations, pipes and redirects."""
    assert hotloop_commands("hotloop list [plans|hosts] # plans") == [
        ["list", "plans"], ["list", "hosts"], ["list"]]
    assert hotloop_commands("source <(hotloop completion bash)") == [["completion", "bash"]]
    assert hotloop_commands("hotloop completion zsh > ~/.zfunc/_hotloop") == [
        ["completion", "zsh"]]
    assert hotloop_commands(".venv/bin/hotloop run quick   # set up") == [["run", "quick"]]
    assert hotloop_commands("hotloop calibrate PLAN --sessions K [--runs R]", in_prose=True) == [
        ["calibrate", "PLAN", "--sessions", "8", "--runs", "5"]]
    assert hotloop_commands("hotloop compare a b --fail-on worse|better", in_prose=True) == [
        ["compare", "a", "b", "--fail-on", "worse"], ["compare", "a", "b", "--fail-on", "better"]]
    assert hotloop_commands("x && hotloop compare results/<time>-s/a/ b | head") == [
        ["compare", "results/time-s/a/", "b"]]


@pytest.mark.parametrize("page", MANUAL, ids=_name)
def test_every_hotloop_command_shown_parses(page):
    """Each command line the page shows is one the real parser takes (a renamed option, a
    choice that is gone, a missing argument fail here), and a subcommand named alone in the
    prose (`hotloop annotate`) is one that exists."""
    from hotloop.cli.parser import parser
    from hotloop.errors import HotloopError

    def parses(argv: list[str]) -> str | None:
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                parser().parse_args(argv)
            except HotloopError as e:
                return str(e)
            except SystemExit as e:                  # --help, -V
                return None if e.code in (0, None) else f"exit {e.code}"
        return None

    for in_prose in (False, True):
        for argv in shown_commands(page, in_prose):
            error = parses(argv)
            if error and in_prose and "arguments are required" in error:
                # the prose shows a command's form, its options without operands (`hotloop
                # run --format events`): those options, given an operand
                error = parses([argv[0], "NAME", *argv[1:]])
            assert not error, f"{_name(page)}: hotloop {shlex.join(argv)}: {error}"
    named = re.findall(r"`hotloop (\w+)`", prose(page).replace("\n", " "))
    assert set(named) <= _subcommands(), _name(page)


def test_the_readmes_tour_shows_every_subcommand():
    shown = {argv[0] for argv in shown_commands(README) if argv}
    assert _subcommands() - shown <= {"completion"}     # completion: docs/usage.md


# Commands that change nothing here and start nothing for long: run them, as shown.
HARMLESS = ("list", "doctor", "completion", "--help", "-V", "--version")


def test_the_harmless_commands_shown_run(cli):
    ran = set()
    for page in MANUAL:
        for argv in shown_commands(page) + shown_commands(page, in_prose=True):
            if not argv or (argv[0] not in HARMLESS and "--help" not in argv
                            and argv != ["calibrate", "--list"]) or tuple(argv) in ran:
                continue
            ran.add(tuple(argv))
            p = cli(*argv)
            assert p.returncode == 0, f"{_name(page)}: hotloop {shlex.join(argv)}: {p.stderr}"
            assert p.stdout, f"{_name(page)}: hotloop {shlex.join(argv)} printed nothing"
    assert ("list",) in ran and ("doctor",) in ran and ("-V",) in ran


# --- links -------------------------------------------------------------------------------

def anchors(page: Path) -> list[str]:
    """The heading ids GitHub gives a page: lower case, punctuation gone, spaces to hyphens,
    a repeated one suffixed -1, -2..."""
    seen: dict[str, int] = {}
    found = []
    for heading in re.findall(r"^#{1,6} +(.+?) *#* *$", prose(page), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.append(slug if n == 0 else f"{slug}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"`[^`\n]*`", "", prose(page))        # a code span's [x](y) is code
    return re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text)


def test_the_anchor_rule_is_githubs():
    page = DOCS / "measurements.md"
    assert {"perf-overhead", "a-series-of-vm-sessions-emulated-2026-12-02",
            "fidelity-does-hotloop-measure-what-the-reference-measures"} <= set(anchors(page))
    assert "what-run-shows-and-takes" in set(anchors(DOCS / "usage.md"))


@pytest.mark.parametrize("page", MANUAL, ids=_name)
def test_every_relative_link_reaches_its_file_and_heading(page):
    for target in links(page):
        if re.match(r"[a-z]+:", target):         # https:, mailto:: not this repository's
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        assert file.exists(), f"{_name(page)}: {target}: no such file"
        assert ROOT in file.parents or file == ROOT, f"{_name(page)}: {target}: outside"
        if anchor:
            assert file.suffix == ".md", f"{_name(page)}: {target}: an anchor in a non-page"
            assert anchor in set(anchors(file)), f"{_name(page)}: {target}: no such heading"
