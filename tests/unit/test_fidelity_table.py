"""benchmarks/fidelity.py's table: a row's ratio each round (its medians), printed as the least,
the median and the largest over the rounds beside the pooled one, so a reader sees the spread.
On fixed runners (no process: the arithmetic of the table)."""
from __future__ import annotations

import importlib.util
import itertools
import sys

from conftest import ROOT


def fidelity(monkeypatch):
    spec = importlib.util.spec_from_file_location("fidelity", ROOT / "benchmarks" / "fidelity.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "fidelity", mod)     # its dataclass looks itself up
    spec.loader.exec_module(mod)
    return mod


def test_each_rounds_ratio_is_printed_as_min_median_max(monkeypatch, capsys):
    f = fidelity(monkeypatch)
    # three rounds of 3 runs each: the reference 100 every time, hotloop 90, 100, 120 a round
    hot = itertools.chain([90.0] * 3, [100.0] * 3, [120.0] * 3)

    def reference(n: int) -> list[float]:
        return [100.0] * n

    def hotloop(n: int) -> list[float]:
        return [next(hot) for _ in range(n)]
    row = f.Row("a fixed row", "B/s", True, reference, hotloop, ">= 0.97")
    monkeypatch.setattr(f, "rows", lambda only: [row])
    monkeypatch.setattr(sys, "argv", ["fidelity.py", "--rounds", "3", "--per-round", "3",
                                      "--only", "fixed"])
    f.main()
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "a fixed row" in ln)
    cells = [c.strip() for c in line.strip("|").split("|")]
    # pooled: the medians of all 9 runs (100 / 100); the rounds: 0.90, 1.00, 1.20
    assert cells[3:7] == ["1.000", "0.900", "1.000", "1.200"], cells
    assert "3 rounds" in cells[7]
