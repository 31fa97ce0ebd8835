"""The variant expander (hotloop.run.variants): K=V1,V2 items, --cpu, --kernel, several plans
and --aa made into variants, the one set of rules and messages of `run --param` and of the
console's vs field.  A table of texts goes through both entry points: the command line's
(`run --param` parsed to variants, the refusals through `hotloop run` itself) and the function
the console's vs field calls (the real console: tests/e2e/test_variant_texts.py).  The
bundled catalogue; no process started."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import profile_dir
from variant_cases import CASES, REFUSED_BY_BOTH, params

from hotloop import catalog
from hotloop.catalog import Catalog, Plan
from hotloop.cli.parser import parser
from hotloop.cli.run import plan_to_run, variants
from hotloop.errors import HotloopError
from hotloop.run.variants import Item, VariantSpec, expand, single, versus


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return catalog.load()


def form(cat: Catalog) -> Plan:
    """The console's form on the dd zero-to-null test as it opens: block_size 512, cpu
    default."""
    return cat.plan_for("zero_null")


def refused(call, *args) -> str:
    with pytest.raises(HotloopError) as e:
        call(*args)
    return str(e.value)


def run_args(*argv: str):
    return parser().parse_args(["run", *argv])


# --------------------------------------------------------------------------- one table, two entries

def _expected(cli, vs):
    return cli if vs is None else vs


@pytest.mark.parametrize("text, cli, vs", CASES)
def test_run_param_makes_the_tables_variants_or_refuses_in_its_words(isolated, cat, text,
                                                                      cli, vs):
    if isinstance(cli, list):
        todo = variants(cat, run_args("zero_null", *params(text)))
        assert [v.label for v in todo] == cli
        return
    assert refused(variants, cat, run_args("zero_null", *params(text))) == \
        cli.format(at="--param")


@pytest.mark.parametrize("text, cli, vs", CASES)
def test_the_vs_field_makes_the_tables_variants_or_refuses_in_its_words(cat, text, cli, vs):
    want = _expected(cli, vs)
    plan = form(cat)
    if isinstance(want, list):
        sides = versus(cat, plan, text)
        assert [name for name, _ in sides] == want
        assert sides[0][1] is plan                  # the form itself, first
        return
    assert refused(versus, cat, plan, text) == want.format(at="vs")


@pytest.mark.parametrize("text, says", REFUSED_BY_BOTH)
def test_hotloop_run_refuses_the_tables_texts_in_one_line(isolated, cli, text, says):
    p = cli("run", "zero_null", *params(text))
    assert (p.returncode, p.stderr) == (2, f"hotloop: {says.format(at='--param')}\n")
    assert not (isolated / "results").exists()


def test_the_table_holds_what_the_issue_asks_of_both():
    texts = {text for text, _, _ in CASES}
    assert "block_size=512,4096" in texts       # refused by the console before, run by run
    assert sum(1 for _, cli, vs in CASES if vs is None and "did you mean" in cli) >= 2


# --------------------------------------------------------------------------- the spec

def test_a_spec_parses_the_flags_first_then_the_items_as_given():
    spec = VariantSpec.parse(["block_size=1,2", "count=3"], "--param", cpus=["split"],
                             kernels=["a", "b"], plans=["zero_null"], aa=True)
    assert spec.items == (Item("cpu", ("split",), "--cpu", flag=True),
                          Item("kernel", ("a", "b"), "--kernel", flag=True),
                          Item("block_size", ("1", "2"), "--param block_size=1,2"),
                          Item("count", ("3",), "--param count=3"))
    assert (spec.plans, spec.aa, spec.baseline) == (("zero_null",), True, False)
    assert spec.items[0].named("split") == "--cpu split"
    assert spec.items[2].named("1") == "--param block_size=1,2"
    vs = VariantSpec.of_text("  cpu=split \t block_size=4096 ")
    assert [i.said for i in vs.items] == ["vs cpu=split", "vs block_size=4096"]
    assert vs.baseline and VariantSpec.of_text(" ").items == ()


def test_a_cpu_flag_and_a_cpu_item_are_the_key_twice():
    spec = VariantSpec.parse(["cpu=split"], "--param", cpus=["default"], plans=["zero_null"])
    assert refused(expand, catalog.load(), spec) == (
        "--param cpu=split: cpu twice (V1,V2 gives it several values)")


# --------------------------------------------------------------------------- expanding

def test_each_combination_in_order_with_the_plans_name_first_when_several(isolated, cat):
    spec = VariantSpec.parse(["block_size=512,4096"], "--param", cpus=["default", "split"],
                             plans=["zero_null", "dd-zero-null"])
    got = expand(cat, spec)
    assert [v.name for v in got] == [
        f"{plan} cpu={cpu} block_size={size}" for plan in ("zero_null", "dd-zero-null")
        for cpu in ("default", "split") for size in (512, 4096)]
    assert [(v.plan.cpu, v.plan.params["block_size"]) for v in got[:4]] == [
        ("default", 512), ("default", 4096), ("split", 512), ("split", 4096)]
    assert all(v.side == "" and v.label == v.name for v in got)


def test_a_value_is_named_as_the_param_takes_it(isolated, cat):
    (one, two) = expand(cat, VariantSpec.parse(["block_size=0x200,4_096"], "--param"),
                        form(cat))
    assert (one.name, one.plan.params["block_size"]) == ("block_size=512", 512)
    assert (two.name, two.plan.params["block_size"]) == ("block_size=4096", 4096)


def test_a_batch_plan_runs_its_lists_but_for_the_keys_given(isolated, cat):
    got = expand(cat, VariantSpec.parse([], "--param", plans=["page-pool"]))
    assert [v.name for v in got] == ["mode=fast_path", "mode=ptr_ring", "mode=slow"]
    got = expand(cat, VariantSpec.parse(["mode=slow"], "--param", plans=["page-pool"]))
    assert [(v.name, v.plan.params["mode"]) for v in got] == [("", "slow")]


def test_kernels_given_by_flag_are_variants_of_a_batch(isolated, cat):
    got = expand(cat, VariantSpec.parse([], "--param", kernels=["default", "busy-poll"],
                                        plans=["zero_null"]))
    assert [(v.name, v.plan.kernel) for v in got] == [("kernel=default", "default"),
                                                      ("kernel=busy-poll", "busy-poll")]
    assert refused(expand, cat, VariantSpec.parse([], "--param", kernels=["nope"],
                                                  plans=["zero_null"])).startswith(
        "--kernel nope: unknown kernel profile 'nope'")


def test_an_aa_is_the_one_variant_as_sides_a1_and_a2(isolated, cat):
    for items, name in (([], ""), (["block_size=512,0x200"], "block_size=512")):
        got = expand(cat, VariantSpec.parse(items, "--param", plans=["zero_null"], aa=True))
        assert [(v.name, v.side, v.label) for v in got] == [
            (name, "a1", f"{name} a1".strip()), (name, "a2", f"{name} a2".strip())]
        assert got[0].plan == got[1].plan
    assert refused(expand, cat, VariantSpec.parse(["block_size=1,2"], "--param",
                                                  plans=["zero_null"], aa=True)) == (
        "--aa runs one variant against itself, and this run names 2: 'block_size=1', "
        "'block_size=2'; keep one plan, one --cpu, one --kernel, one value a --param")


def test_the_form_is_the_first_side_and_a_list_holding_it_counts_it_once(cat):
    plan = replace(form(cat), params={"block_size": 4096}, cpu="split")
    sides = versus(cat, plan, "block_size=512,4096")
    assert [(n, p.params["block_size"]) for n, p in sides] == [("block_size=4096", 4096),
                                                               ("block_size=512", 512)]
    assert sides[0][1] is plan and sides[1][1].cpu == "split"
    # the form's value in one key, another's changed: not the form
    sides = versus(cat, plan, "block_size=4096 cpu=split,default")
    assert [n for n, _ in sides] == ["block_size=4096 cpu=split", "block_size=4096 cpu=default"]
    assert versus(cat, plan, "") == ()


def test_a_workloads_own_param_named_cpu_is_that_param(isolated, tmp_path):
    cat = catalog.load([profile_dir(tmp_path, """
        [workload.pinned]
        source = "mine.c"
        params.cpu = { default = 0, min = 0, max = 64, help = "the CPU it pins to" }
        """)])
    plan = cat.plan_for("pinned")
    sides = versus(cat, plan, "cpu=1")
    assert [(n, p.params.get("cpu"), p.cpu) for n, p in sides] == [
        ("cpu=0", None, "default"), ("cpu=1", 1, "default")]
    # --cpu is the CPU profile still: both at once
    got = expand(cat, VariantSpec.parse(["cpu=1,2"], "--param", cpus=["split"],
                                        plans=["pinned"]))
    assert [(v.name, v.plan.cpu, v.plan.params) for v in got] == [
        ("cpu=1", "split", {"cpu": 1}), ("cpu=2", "split", {"cpu": 2})]


def test_single_is_the_items_one_value_each(isolated, cat):
    plan = single(cat, form(cat), VariantSpec.parse(["block_size=4096", "cpu=split"],
                                                   "--param", kernels=["busy-poll"]))
    assert (plan.params["block_size"], plan.cpu, plan.kernel) == (4096, "split", "busy-poll")
    assert refused(single, cat, form(cat), VariantSpec.parse(["count=1,2"], "--param")) == (
        "--param count=1,2: one value here (V1,V2 asks for a variant each, as `run` does)")


def test_a_run_of_one_variant_takes_cpu_as_a_param_item_too(isolated, cat):
    args = run_args("zero_null", "--param", "cpu=split", "--sessions", "2")
    plan = plan_to_run(cat, args, form(cat), None, args.param)
    assert plan.cpu == "split"
    assert refused(plan_to_run, cat, args, form(cat), "default", args.param) == (
        "--param cpu=split: cpu twice (V1,V2 gives it several values)")


def test_a_result_file_each_side_of_an_aa(isolated, cat):
    todo = variants(cat, run_args("zero_null", "--aa", "--param", "block_size=512,512"))
    assert [v.label for v in todo] == ["block_size=512 a1", "block_size=512 a2"]
    assert [Path(v.out).name.split("-", 2)[-1] for v in todo] == [
        "zero_null-block_size_512-a1.jsonl", "zero_null-block_size_512-a2.jsonl"]
