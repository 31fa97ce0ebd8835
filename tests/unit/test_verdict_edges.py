"""Verdicts at the edges (issue 23), on synthetic data: the regression gate, many sides,
unequal runs, thin or mismatched calibrations, copies, outliers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synthetic_results import side

from hotloop.cli import main

# --------------------------------------------------------------------------- the gate

@pytest.fixture
def worse(tmp_path: Path) -> tuple[str, str]:
    """Three sessions a side, the new side's rate 10% lower: far beyond 1% of noise."""
    rng = np.random.default_rng(1)
    return (str(side(tmp_path / "stock", 3, rng)),
            str(side(tmp_path / "patched", 3, rng, change=-0.10, label="patched")))


def test_the_gate_fails_on_a_significant_change_the_way_it_was_asked(worse, capsys):
    base, new = worse
    assert main(["compare", base, new]) == 0
    assert main(["compare", base, new, "--fail-on", "worse"]) == 3
    err = capsys.readouterr().err
    assert "slower" in err and "--fail-on worse" in err and len(err.strip().splitlines()) == 1
    assert main(["compare", base, new, "--fail-on", "change"]) == 3
    assert main(["compare", base, new, "--fail-on", "better"]) == 0
    assert main(["compare", new, base, "--fail-on", "better"]) == 3
    assert main(["compare", new, base, "--fail-on", "worse"]) == 0
    # a threshold above the change: the change is ignored; below it, it counts
    assert main(["compare", base, new, "--fail-on", "worse", "--threshold", "20"]) == 0
    assert main(["compare", base, new, "--fail-on", "worse", "--threshold", "5"]) == 3


def test_the_gate_passes_what_noise_explains(tmp_path: Path):
    rng = np.random.default_rng(2)
    base = side(tmp_path / "a", 3, rng)
    same = side(tmp_path / "b", 3, rng, label="patched")
    assert main(["compare", str(base), str(same), "--fail-on", "change"]) == 0


@pytest.mark.parametrize("args, expected", [
    (["--threshold", "5"], "--threshold needs --fail-on"),
    (["--fail-on", "worse", "--threshold", "-1"], "--threshold -1"),
    (["--fail-on", "worse", "--threshold", "nan"], "--threshold nan"),
])
def test_a_bad_gate_is_bad_usage(worse, capsys, args, expected):
    base, new = worse
    assert main(["compare", base, new, *args]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1
    assert main(["compare", base, new, "--fail-on", "sideways"]) == 2
