"""--aa: one variant run against itself, as sides a1 and a2 (the command line's rules; the
runs themselves: tests/e2e/test_aa.py)."""
from __future__ import annotations

import pytest

from hotloop import catalog
from hotloop.cli.parser import parser
from hotloop.cli.run import variants
from hotloop.errors import HotloopError


def _variants(*argv: str, here: bool = True) -> list:
    return variants(catalog.load(), parser().parse_args(["run", "zero_null", *argv]), here)


@pytest.mark.parametrize("argv, labels", [
    ((), ["a1", "a2"]),
    (("--param", "block_size=512,512"), ["block_size=512 a1", "block_size=512 a2"]),
    (("--cpu", "default", "--cpu", "default"), ["cpu=default a1", "cpu=default a2"]),
])
def test_aa_is_the_one_variant_twice_named_a1_and_a2(isolated, argv, labels):
    todo = _variants("--aa", *argv)
    assert [v.label for v in todo] == labels
    assert todo[0].rp == todo[1].rp
    assert todo[0].out != todo[1].out and todo[0].out.name.endswith("-a1.jsonl")


def test_the_same_variant_twice_without_aa_is_refused_naming_aa(isolated):
    with pytest.raises(HotloopError, match=r"same variant twice: block_size=512 .*--aa"):
        _variants("--param", "block_size=512,512")


@pytest.mark.parametrize("argv, says", [
    (("--param", "block_size=512,4096"), "--aa runs one variant against itself, and this "
                                         "run names 2"),
    (("--cpu", "default", "--cpu", "split"), "names 2"),
])
def test_aa_of_two_variants_is_refused(isolated, argv, says):
    with pytest.raises(HotloopError, match=says):
        _variants("--aa", *argv)


def test_aa_on_a_host_is_refused(isolated):
    with pytest.raises(HotloopError, match="--aa runs one variant twice on this machine"):
        _variants("--aa", here=False)


@pytest.mark.parametrize("argv", [("--aa", "--param", "count=1,2"),
                                  ("--aa", "--sessions", "2", "--param", "count=1,2"),
                                  ("--aa", "--out", "x.jsonl")])
def test_refused_on_the_command_line_in_one_line_leaving_nothing(isolated, cli, argv):
    p = cli("run", "zero_null", *argv)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (isolated / "results").exists()
