"""The manual stays true: the examples of the README and of docs/ run, the README's test
command is CI's."""
from __future__ import annotations

import json
import re

from conftest import ROOT, hotloop

README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def block(lang: str, after: str, page: str = README) -> str:
    """The first `lang` code block after the heading `after` of a page's text."""
    section = page.split(after, 1)[1]
    return re.search(rf"```{lang}\n(.*?)```", section, re.S).group(1)


def test_the_documented_user_workload_runs_like_a_bundled_one(tmp_path, cli):
    d = tmp_path / "mine"
    d.mkdir()
    page = (DOCS / "workloads.md").read_text()
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
    (d / "hosts.toml").write_text(block("toml", "# Many machines",
                                                (DOCS / "hosts.md").read_text()))
    listed = cli("list", "hosts", "--profiles", str(d))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[1].split() == ["lab1", "root@lab1.example", "lab1",
                                                     "(stock", "6.18)"]


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
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert re.findall(r"Python (\d+\.\d+)\+", quick) == [version]


def test_ci_runs_exactly_the_readme_test_command():
    quick = block("sh", "## Quick start")
    test_cmd = next(ln for ln in quick.splitlines() if "pytest" in ln).split("#")[0].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_cmd in ci.splitlines()
