"""The catalogue's rules on the bundled and on broken TOML: loading, one-line errors, params, saving."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import profile_dir

from hotloop import catalog
from hotloop.errors import HotloopError

GOOD_WORKLOAD = """
[workload.mine]
source = "mine.c"
metric = "ops/s"
params.n = { default = 10, min = 1, max = 100 }
params.mode = { default = "a", choices = ["a", "b"] }
"""


def load_error(tmp_path: Path, toml: str) -> str:
    d = profile_dir(tmp_path, toml)
    with pytest.raises(HotloopError) as e:
        catalog.load([d])
    return str(e.value)


def test_bundled_catalogue_loads_and_resolves_every_plan():
    cat = catalog.load()
    assert {"seqpacket", "zero_null"} <= set(cat.workloads)
    assert {"default", "same-core", "split", "fifo"} <= set(cat.cpus)
    assert "quick" in cat.plans
    for plan in cat.plans.values():
        for _, variant in cat.variants(plan):
            rp = cat.resolve(variant)
            assert set(rp.params) == set(rp.workload.params)


@pytest.mark.parametrize("toml, expected", [
    ("[workload.x\nsource = 1", "malformed TOML"),
    (GOOD_WORKLOAD + "colour = 'red'\n", "p.toml:7: [workload.mine] colour: unknown key"),
    (GOOD_WORKLOAD.replace('metric = "ops/s"', "metric = 3"),
     "p.toml:4: [workload.mine] metric: expected a string, got an integer"),
    (GOOD_WORKLOAD.replace("max = 100 }", "max = 100, colour = 1 }"),
     "[workload.mine] params.n.colour: unknown key"),
    (GOOD_WORKLOAD.replace("default = 10,", "default = 1000,"),
     "[workload.mine] params.n.default: 1000 is above the maximum 100"),
    (GOOD_WORKLOAD.replace('"mine.c"', '"gone.c"'), "[workload.mine] source: no such file"),
    (GOOD_WORKLOAD.replace('"ops/s"', '"ns/ops"'),
     "p.toml:4: [workload.mine] metric: unknown metric 'ns/ops' (one of bytes/s"),
    ("[cpu.c]\ncpus = [0, 4096]\n", "[cpu.c] cpus: item 1: 4096 is above the maximum 4095"),
    ("[cpu.c]\nsched = 'fast'\n", "[cpu.c] sched: 'fast' is not one of other, fifo"),
    ("[cpu.c]\nsched = 'fifo'\npriority = 0\n", "p.toml:3: [cpu.c] priority: sched fifo needs"),
    ("[cpu.c]\nnice = 'low'\n", "[cpu.c] nice: expected an integer, got a string"),
    ("[kernel.k]\nsysctl = { 'not a sysctl' = 1 }\n", "[kernel.k] sysctl: 'not a sysctl'"),
    ("[kernel.k]\nexpect = { kernel = '6.*' }\n", "[kernel.k] expect.kernel: unknown key"),
    # a label lands in every table and title: a newline would forge a line of compare's output
    ("[kernel.k]\nlabel = \"patched\\nbaseline  FAKE\"\n",
     "p.toml:2: [kernel.k] label: 'patched\\nbaseline  FAKE' holds a control character"),
    ("[plan.p]\nworkload = 'nope'\n", "p.toml:2: [plan.p] workload: unknown workload 'nope'"),
    ("[plan.p]\nworkload = 'zero_null'\ncpu = 'nope'\n", "[plan.p] cpu: unknown CPU profile"),
    ("[plan.p]\nworkload = 'zero_null'\nruns = 0\n", "[plan.p] runs: 0 is below the minimum 1"),
    ("[plan.p]\nworkload = 'zero_null'\nparams = { count = -1 }\n",
     "[plan.p] params.count: -1 is below the minimum 1"),
    ("[plan.p]\nworkload = 'zero_null'\nparams = { colour = 1 }\n",
     "[plan.p] params.colour: workload zero_null has no param 'colour'"),
    ("[plan.p]\nruns = 3\n", "[plan.p]: missing key 'workload'"),
    ("[gadget.g]\nx = 1\n", "unknown table [gadget]"),
])
def test_bad_profile_is_one_line_naming_file_table_and_key(tmp_path, toml, expected):
    message = load_error(tmp_path, toml)
    assert expected in message
    assert "\n" not in message
    assert "p.toml" in message


def test_param_parsing_respects_type_and_bounds():
    p = catalog.Param("n", 10, min=1, max=2_000)
    assert p.parse("1_000") == 1000 and p.parse("0x10") == 16
    for bad in ("0", "2001", "ten", "1.5"):
        with pytest.raises(ValueError):
            p.parse(bad)
    s = catalog.Param("mode", "a", choices=("a", "b"))
    assert s.parse("b") == "b"
    with pytest.raises(ValueError):
        s.parse("c")


def test_saved_plan_loads_back_identically():
    cat = catalog.load()
    plan = catalog.with_overrides(cat.plans["quick"], name="mine", cpu="split", runs=7,
                                  warmup=0, perf=False, params={"msgs": 5000, "type": "stream"})
    path = catalog.save_plan(plan, cat=cat)
    again = catalog.load().plans["mine"]
    assert again.origin == str(path)
    assert catalog.with_overrides(again, origin="x") == catalog.with_overrides(plan, origin="x")
    with pytest.raises(HotloopError, match="exists"):
        catalog.save_plan(plan, cat=catalog.load())
    with pytest.raises(HotloopError, match="already exists"):
        catalog.save_plan(catalog.with_overrides(plan, name="quick"), cat=cat)


def test_a_plan_may_not_take_a_workloads_name(tmp_path):
    # `run zero_null` ran such a plan (block_size=4096) without a word, and the workload
    # could no longer be run by its name
    cat = catalog.load()
    with pytest.raises(HotloopError, match="'zero_null': a workload has this name"):
        catalog.save_plan(catalog.Plan("zero_null", "zero_null"), directory=tmp_path, cat=cat)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "p.toml").write_text('[plan.zero_null]\nworkload = "zero_null"\n'
                                     'params = { block_size = 4096 }\n')
    with pytest.raises(HotloopError) as e:
        catalog.load([tmp_path])
    assert str(e.value) == (f"{tmp_path / 'p.toml'}:1: [plan.zero_null]: a workload is named "
                            f"zero_null too: a plan may not hide it (rename the plan)")
    kept = catalog.load([tmp_path], skip_bad=True)         # the console: the plan is left out
    assert "zero_null" not in kept.plans
    assert any("a plan may not hide it" in s.warning for s in kept.skipped)
    with pytest.raises(HotloopError, match="a plan may not hide it"):    # run NAME: said why
        kept.plan_for("zero_null")


def test_the_manuals_toml_example_loads_beside_the_bundled_profiles(tmp_path):
    """Saved as a file, as docs/profiles.md says it can be: no name collides with a bundled
    one."""
    import re

    from conftest import ROOT

    from hotloop import catalog, paths
    page = (ROOT / "docs" / "profiles.md").read_text()
    example = re.search(r"```toml\n(.*?)```", page, re.S).group(1)
    assert "[workload.my-seqpacket]" in example
    example = example.replace("/path/to/hotloop/csrc/seqpacket.c", str(paths.CSRC / "seqpacket.c"))
    (tmp_path / "mine.toml").write_text(example)
    cat = catalog.load([tmp_path])
    assert not cat.errors and not cat.replaced
    assert "my-seqpacket-100" in cat.plans and "my-split" in cat.cpus
    cat.resolve(cat.plans["my-seqpacket-100"])


def test_a_file_of_yours_replaces_a_bundled_table_but_not_one_of_yours(tmp_path):
    mine, again = tmp_path / "mine", tmp_path / "again"
    for d in (mine, again):
        d.mkdir()
        (d / "p.toml").write_text("[plan.quick]\nworkload = 'zero_null'\nruns = 3\n")
    cat = catalog.load([mine])
    assert cat.replaced == ["[plan.quick]"] and cat.plans["quick"].runs == 3
    # a file skipped for an error replaces nothing, not even the tables before its error
    (again / "p.toml").write_text("[plan.quick]\nworkload = 'zero_null'\n[plan.zzz]\nruns = 'x'\n")
    skipped = catalog.load([again], skip_bad=True)
    assert skipped.replaced == [] and skipped.plans["quick"].runs != 3 and skipped.errors
    (again / "p.toml").write_text("[plan.quick]\nworkload = 'zero_null'\nruns = 3\n")
    with pytest.raises(HotloopError, match=r"again/p.toml:1: \[plan.quick\]: defined twice "
                                           r"\(also in .*mine/p.toml\)"):
        catalog.load([mine, again])


def _sorts_while_loading(d: Path) -> int:
    """How many lists `sorted` made while the catalogue loaded `d` (the profiler's C call
    events: a count, not a time)."""
    count = 0

    def note(frame, event, arg):
        nonlocal count
        if event == "c_call" and arg is sorted:
            count += 1

    sys.setprofile(note)
    try:
        catalog.load([d])
    finally:
        sys.setprofile(None)
    return count


def test_a_profile_directory_of_many_plans_loads_without_a_sort_per_plan(tmp_path):
    """10,000 files of profiles took half a minute a command: each plan's check sorted every
    name of each kind it uses.  Loading sorts a directory's files, and no more for more
    plans."""
    def plans(n: int) -> Path:
        d = tmp_path / str(n)
        d.mkdir()
        for i in range(n):
            (d / f"p{i}.toml").write_text(f'[plan.p{i}]\nworkload = "syscall"\n\n'
                                          f'[cpu.c{i}]\ncpus = [0]\n')
        return d

    assert _sorts_while_loading(plans(5)) == _sorts_while_loading(plans(100))


@pytest.mark.parametrize("key, value", [
    ("kernel.core_pattern", "|/tmp/x %p"), ("kernel.modprobe", "/tmp/x"),
    ("fs.suid_dumpable", 2), ("kernel.perf_event_paranoid", -1),
    ("vm.mmap_min_addr", 0), ("net.core.bpf_jit_harden", 0), ("kernel.randomize_va_space", 0),
])
def test_a_shared_kernel_profile_sets_only_benchmarking_sysctls(tmp_path, monkeypatch, key,
                                                                 value):
    """--apply-system is one yes for a run's profiles: a [kernel.X] from a --profiles
    directory (whatever its label) may not ride on it to set any /proc/sys key as root; the
    same table from the user's own config directory loads."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    toml = f'[kernel.stock]\nlabel = "stock"\nsysctl = {{ "{key}" = {value!r} }}\n'.replace(
        "'", '"')
    message = load_error(tmp_path, toml)
    d = tmp_path / "prof"
    assert "\n" not in message
    assert message.startswith(f"{d / 'p.toml'}:3: [kernel.stock] sysctl: {key}: outside the "
                              f"sysctls a shared profile may set (net.*, vm.*, "), message
    assert f"accepted only from your own config directory ({tmp_path / 'config' / 'hotloop'})" \
        in message
    mine = tmp_path / "config" / "hotloop"
    mine.mkdir(parents=True)
    (mine / "k.toml").write_text(toml)
    assert key in catalog.load([]).kernels["stock"].sysctl


@pytest.mark.parametrize("key", ["net.core.busy_poll", "net.ipv4.tcp_rmem", "vm.swappiness",
                                 "kernel.sched_autogroup_enabled", "kernel.numa_balancing",
                                 "kernel.perf_event_max_sample_rate"])
def test_a_shared_kernel_profile_may_set_the_benchmarking_sysctls(tmp_path, monkeypatch, key):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    d = profile_dir(tmp_path, f'[kernel.k]\nsysctl = {{ "{key}" = 1 }}\n')
    assert catalog.load([d]).kernels["k"].sysctl == {key: 1}
