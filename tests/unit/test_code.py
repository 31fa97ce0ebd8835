"""The code keeps its rules, checked by machines: the import contracts of pyproject.toml
(import-linter), the types (mypy) and the linter (ruff)."""
from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import ROOT


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _tool(name: str) -> str:
    # the venv's own, beside this python (the test extra installs them)
    found = shutil.which(name, path=str(ROOT.joinpath(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is not installed: pip install -e '.[test]'"
    return found


def test_each_stage_imports_only_the_stages_beneath_it():
    p = _run(_tool("lint-imports"))
    assert p.returncode == 0, p.stdout[-3000:]
    assert "Contracts: 4 kept, 0 broken." in p.stdout


def test_the_types_check():
    p = _run(sys.executable, "-m", "mypy")
    assert p.returncode == 0, p.stdout[-3000:]
    # the whole package, not only what `files` happened to list
    checked = int(p.stdout.rsplit(" in ", 1)[1].split()[0])
    assert checked == len(list(ROOT.joinpath("tui").rglob("*.py"))), p.stdout


def test_the_type_check_sees_across_modules(tmp_path):
    # A check that cannot fail is none: the project's mypy must see hotloop's own types
    # through an import (they were all Any while the code in tui/ was not found as hotloop).
    probe = tmp_path / "probe.py"
    probe.write_text("from hotloop.catalog import Plan\n"
                     "from hotloop.errors import HotloopError\n"
                     "wrong: int = HotloopError('one line')\n"
                     "plan = Plan(name=1, workload=None)\n"
                     "def untyped(x):\n"
                     "    return x\n")
    p = _run(sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", str(probe))
    assert p.returncode == 1, p.stdout[-3000:]
    assert 'probe.py:3: error: Incompatible types in assignment (expression has type ' \
           '"HotloopError", variable has type "int")' in p.stdout, p.stdout[-3000:]
    assert 'probe.py:4: error: Argument "name" to "Plan" has incompatible type "int"' \
        in p.stdout, p.stdout[-3000:]
    # every function typed (disallow_untyped_defs): an untyped one fails the check
    assert "probe.py:5: error: Function is missing a type annotation" in p.stdout, \
        p.stdout[-3000:]


def test_the_linter_finds_nothing():
    p = _run(sys.executable, "-m", "ruff", "check", "tui", "tests", "benchmarks")
    assert p.returncode == 0, p.stdout[-3000:]


def test_every_module_is_at_most_500_lines():
    """One concern a module: a module past 500 lines holds more than one, and is split (no
    list of exceptions)."""
    long = {str(p.relative_to(ROOT)): n for p in sorted(ROOT.joinpath("tui").rglob("*.py"))
            if (n := len(p.read_text().splitlines())) > 500}
    assert long == {}, f"split these by concern: {long}"
