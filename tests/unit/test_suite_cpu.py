"""benchmarks/suite_cpu.py's report: each worker's lines summed by file and by test, the
files and tests that used the most CPU first, the unit tests' share apart.  On forged lines
(no process: the arithmetic of the tables)."""
from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from conftest import ROOT


def suite_cpu(monkeypatch):
    spec = importlib.util.spec_from_file_location("suite_cpu", ROOT / "benchmarks" / "suite_cpu.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "suite_cpu", mod)
    spec.loader.exec_module(mod)
    return mod


def test_the_report_sums_each_files_tests_from_every_worker(tmp_path, monkeypatch, capsys):
    s = suite_cpu(monkeypatch)
    lines = {"gw0": [["tests/e2e/test_vm.py::test_a", 60.0, 120.0, "cgroup"],
                     ["tests/unit/test_x.py::test_b", 2.0, 2.5, "cgroup"]],
             "gw1": [["tests/e2e/test_vm.py::test_c", 20.0, 30.0, "cgroup"],
                     ["tests/e2e/test_app.py::test_d", 18.0, 40.0, "cgroup"]]}
    for worker, rows in lines.items():
        (tmp_path / f"cpu.{worker}").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "cpu.out").write_text("pytest's own output, not a line of the plugin's\n")
    s.report(str(tmp_path / "cpu"), top=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("4 tests: 100 s of CPU (cgroup), 192 s of tests' wall time; "
                      "the unit tests 2 s")
    files = [ln for ln in out if ln.startswith("| tests/") and ln.count("|") == 6]
    assert files == ["| tests/e2e/test_vm.py | 2 | 80.0 | 80.0% | 150.0 |",
                     "| tests/e2e/test_app.py | 1 | 18.0 | 18.0% | 40.0 |"]     # --top 2
    tests = [ln for ln in out if ln.startswith("| tests/") and ln.count("|") == 4]
    assert tests == ["| tests/e2e/test_vm.py::test_a | 60.0 | 120.0 |",
                     "| tests/e2e/test_vm.py::test_c | 20.0 | 30.0 |"]


def test_no_lines_is_one_line(tmp_path, monkeypatch):
    s = suite_cpu(monkeypatch)
    with pytest.raises(SystemExit, match="no .*cpu.gw\\* nor .*cpu.main"):
        s.report(str(tmp_path / "cpu"), top=5)
