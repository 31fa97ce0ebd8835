"""One way to start a run (hotloop.run.start): a plan spelled out for a remote host is the same
plan when that host's `hotloop run` reads it back, whoever (the console, the command line)
started it; and the command line's choices are checked before anything starts."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from hotloop import catalog
from hotloop.catalog import Plan
from hotloop.cli.parser import parser
from hotloop.cli.run import choices, plan_to_run
from hotloop.errors import HotloopError
from hotloop.run import start


@pytest.fixture(scope="module")
def cat() -> catalog.Catalog:
    return catalog.load([])


def read_back(cat: catalog.Catalog, argv: list[str]) -> Plan:
    """What the remote's `hotloop run ARGV` makes of it (its catalogue: the bundled one)."""
    args = parser().parse_args(["run", *argv])
    return plan_to_run(cat, args, cat.plan_for(args.names[0]), args.cpu[0] if args.cpu else None,
                       args.param)


@pytest.mark.parametrize("chosen", [start.Choices(), start.Choices(apply_system=True,
                                                                   keep_perf=False)])
def test_every_key_of_a_plan_travels_to_a_host(cat, chosen):
    plan = Plan(name="sampled", workload="zero_null", cpu="default", kernel="default", runs=7,
                warmup=2, perf=False, perf_freq=499, call_graph="fp", timeout=123.4567891,
                processes=3, until_ci=2.345678901, perf_keep_mb=7,
                params={"block_size": 4096, "count": 1000})
    argv = start.plan_argv(plan, chosen)
    back = read_back(cat, argv)
    # everything but where the plan came from (the remote reads no plan file)
    assert dataclasses.replace(back, summary="", origin="") == plan
    args = parser().parse_args(["run", *argv])
    assert (args.apply_system, args.keep_perf) == (chosen.apply_system, chosen.keep_perf)


def test_a_plan_name_that_is_no_name_is_refused_before_it_names_a_file(cat):
    with pytest.raises(HotloopError, match="--plan-name '../../x': not a plan name"):
        read_back(cat, ["--plan-name=../../x", "--", "zero_null"])
    with pytest.raises(HotloopError, match="not a plan name"):
        read_back(cat, ["--plan-name=a\n", "--", "zero_null"])


@pytest.mark.parametrize("flag, value, why", [
    ("--perf-freq", "0", "--perf-freq 0: must be at least 1"),
    ("--perf-keep-mb", "-1", "--perf-keep-mb -1: must be at least 0"),
    ("--runs", "0", "--runs 0: must be at least 1"),
])
def test_plan_keys_on_the_command_line_keep_the_bounds_of_a_toml_plan(cat, flag, value, why):
    with pytest.raises(HotloopError, match=why):
        read_back(cat, [f"{flag}={value}", "--", "zero_null"])


def test_out_and_force_are_one_rule_for_here_and_for_hosts(tmp_path: Path):
    def chosen(*argv: str, files: int = 1, each: str = "variant") -> start.Choices:
        return choices(parser().parse_args(["run", *argv, "quick"]), files, each)
    taken = tmp_path / "r.jsonl"
    taken.write_text("")
    assert chosen().on_exists == "rename" and chosen().keep_perf
    assert chosen("--out", str(tmp_path / "new.jsonl")).on_exists == "refuse"
    assert chosen("--out", str(taken), "--force").on_exists == "replace"
    assert not chosen("--no-keep-perf").keep_perf
    for argv, files, each, why in [
            (["--out", str(taken)], 1, "variant", "exists (pass --force to replace it)"),
            (["--force"], 1, "variant", "--force replaces an --out file"),
            (["--out", str(tmp_path)], 1, "variant", "is a directory"),
            (["--out", str(tmp_path / "x.jsonl")], 2, "host", "writes one per host")]:
        with pytest.raises(HotloopError) as e:
            chosen(*argv, files=files, each=each)
        assert why in str(e.value)


def test_a_name_that_is_a_path_never_becomes_one_with_a_host(cat, tmp_path, monkeypatch):
    # `run --host lab1 -- ../../SOMEDIR/x` made SOMEDIR/ here (and there): the name is looked
    # up in the catalogue before it names anything, so it is one line and nothing is made
    from hotloop.cli.run import variants
    monkeypatch.chdir(tmp_path)
    args = parser().parse_args(["run", "--host", "lab1", "--runs", "1", "--",
                                "../../SOMEDIR/escdir/sub/x"])
    with pytest.raises(HotloopError, match="unknown plan or workload '../../SOMEDIR"):
        variants(cat, args, here=False)
    assert list(tmp_path.iterdir()) == []
