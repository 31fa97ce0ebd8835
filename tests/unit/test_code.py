"""The code keeps its rules, checked by machines: the import contracts of pyproject.toml
(import-linter), no import circle, the types (mypy) and the linter (ruff)."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

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
    assert "Contracts: 6 kept, 0 broken." in p.stdout


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """{module: the package's modules it imports}, every import counted: at the top, in a
    function, under TYPE_CHECKING (a circle a function-level import hides is one still)."""
    files = {}
    for path in root.rglob("*.py"):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:             # relative: from the package `level` dots name
                    base = ".".join([*here[:len(here) - node.level + 1], *[base] * bool(base)])
                # `from p import m`: the module p.m where there is one, else p's names
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                            for a in node.names}
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other, directly or round a longer path: each strongly
    connected set of two or more (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            ring = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(ring) > 1:
                found.append(sorted(ring))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it_back():
    graph = import_graph(ROOT / "tui", "hotloop")
    assert len(graph) == len(list(ROOT.joinpath("tui").rglob("*.py")))
    assert sum(map(len, graph.values())) > 500         # the imports were read
    assert circles(graph) == []


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    # A check that cannot fail is none: render/report.py and render/symbol_costs.py imported
    # each other, one of the two imports inside a function, and nothing said so.
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "report.py").write_text("from pkg.sub.costs import lines\n")
    (pkg / "sub" / "costs.py").write_text(
        "def lines():\n    from ..report import name\n    return name\n")
    (pkg / "alone.py").write_text("import pkg.report\n")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.sub.costs"] == {"pkg.report"}
    assert circles(graph) == [["pkg.report", "pkg.sub.costs"]]


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
