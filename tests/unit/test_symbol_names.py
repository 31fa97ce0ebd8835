"""A function's names across builds in compare's symbol diff: its compiler clones
(`read_zero.isra.0` in one build, `read_zero` in the next) are one row that names them, not one
symbol gone and another new (issue #32).
"""
from __future__ import annotations

import json
from pathlib import Path

import forge
import pytest

from hotloop.analysis import compare
from hotloop.analysis.symbols import base_name, diff_symbols, dso_key
from hotloop.events import HotSymbol
from hotloop.render import compare_formats

KERNEL = "[kernel.kallsyms]"


@pytest.mark.parametrize(("symbol", "base"), [
    # GCC's clones and hot/cold split, Clang's ThinLTO promotion
    ("read_zero.isra.0", "read_zero"),
    ("read_zero.cold", "read_zero"),
    ("read_zero.cold.12", "read_zero"),             # before GCC 10
    ("copy_page_to_iter.part.0", "copy_page_to_iter"),
    ("iov_iter_zero.constprop.0", "iov_iter_zero"),
    ("iov_iter_zero.constprop.0.isra.0", "iov_iter_zero"),
    ("read_zero.isra.0.cold", "read_zero"),
    ("vfs_read.part.0.constprop.1.isra.0.cold", "vfs_read"),
    ("do_syscall_64.llvm.123456", "do_syscall_64"),
    ("rw_verify_area.lto_priv.0", "rw_verify_area"),
    ("memcpy.localalias", "memcpy"),
    ("push_back(int const&) [clone .isra.0]", "push_back(int const&)"),
    ("f(int) [clone .constprop.0] [clone .cold]", "f(int)"),
    # names with no clone suffix, or a dot of their own: as they are
    ("read_zero", "read_zero"),
    ("__x64_sys_read", "__x64_sys_read"),
    ("foo.bar", "foo.bar"),
    ("__already_done.5", "__already_done.5"),      # a static's number, not a clone
    ("read_zero.isra", "read_zero.isra"),           # no clone number
    ("read_zero.coldness", "read_zero.coldness"),
    ("read_zero.llvm.abc", "read_zero.llvm.abc"),
    ("read_zero.isra.0.bar", "read_zero.isra.0.bar"),   # a suffix not at the end
    (".cold", ".cold"),                                  # nothing but a suffix
    ("0xffffffff81a2b3c4", "0xffffffff81a2b3c4"),
    ("[unknown]", "[unknown]"),
])
def test_base_name_strips_compiler_clone_suffixes_only(symbol, base):
    assert base_name(symbol) == base


def test_diff_adds_up_a_functions_names_a_side_and_keeps_dsos_apart():
    base = [HotSymbol("read_zero.isra.0", KERNEL, 40.0, True),
            HotSymbol("memset", "libc.so.6", 5.0, False)]
    new = [HotSymbol("read_zero", KERNEL, 30.0, True),
           HotSymbol("read_zero.cold", KERNEL, 5.0, True),
           HotSymbol("memset.isra.0", KERNEL, 2.0, True)]   # the kernel's own: another row
    rows = {(d.symbol, d.dso): d for d in diff_symbols(base, new)}
    rz = rows["read_zero", KERNEL]
    assert rz.names == ("read_zero", "read_zero.cold", "read_zero.isra.0") and rz.merged
    assert (rz.baseline_pct, rz.new_pct, rz.delta, rz.kernel) == (40.0, 35.0, -5.0, True)
    # one name a row: that name, as before
    assert rows["memset", "libc.so.6"].names == ("memset",)
    assert rows["memset.isra.0", KERNEL].new_pct == 2.0
    assert not rows["memset.isra.0", KERNEL].merged and len(rows) == 3


def test_two_builds_of_a_workload_are_one_dso_and_other_modules_stay_apart():
    """Two revisions of one workload (a bisect's, compare of two builds): hl_run is one row
    that got costlier, not one gone and one new; another library's name is left alone."""
    a = "/c/hotloop/build/_hl_chain_0123456789abcdef.cpython-311-x86_64-linux-gnu.so"
    b = "/c/hotloop/build/_hl_chain_fedcba9876543210.cpython-311-x86_64-linux-gnu.so"
    other = "/c/hotloop/build/_hl_spin_fedcba9876543210.cpython-311-x86_64-linux-gnu.so"
    assert dso_key(a) == dso_key(b) == "/c/hotloop/build/_hl_chain.cpython-311-x86_64-linux-gnu.so"
    assert dso_key("libc.so.6") == "libc.so.6" and dso_key(KERNEL) == KERNEL
    assert dso_key("/x/_hl_chain_0123.so") == "/x/_hl_chain_0123.so"   # not a build's key
    rows = diff_symbols([HotSymbol("hl_run", a, 40.0, False)],
                        [HotSymbol("hl_run", b, 50.0, False), HotSymbol("hl_run", other, 5.0, False)])
    assert [(d.symbol, d.dso, d.baseline_pct, d.new_pct) for d in rows] == [
        ("hl_run", a, 40.0, 50.0), ("hl_run", other, 0.0, 5.0)]


@pytest.fixture
def clone_files(tmp_path: Path) -> tuple[Path, Path]:
    """Two builds of a kernel: side A's read_zero is GCC's .isra.0 clone, side B's not."""
    a = forge.zero_null(tmp_path / "a" / "zero_null.jsonl", forge.NS_512, more=[
        forge.symbols([40.0, 20.0, 10.0],
                      names=["read_zero.isra.0", "write_null", "__x64_sys_read"])])
    b = forge.zero_null(tmp_path / "b" / "zero_null.jsonl", forge.NS_512, more=[
        forge.symbols([30.0, 5.0, 25.0, 10.0],
                      names=["read_zero", "read_zero.cold", "write_null", "__x64_sys_read"])])
    return a, b


def test_compare_shows_a_function_renamed_across_builds_as_one_row(clone_files):
    comp = compare.load_and_compare(clone_files)
    doc = json.loads(compare_formats.render(comp, "json"))
    (diff,) = doc["symbol_diffs"]
    rows = {r["symbol"]: r for r in diff["symbols"]}
    assert set(rows) == {"read_zero", "write_null", "__x64_sys_read"}
    shares = {"symbol": "read_zero", "dso": KERNEL, "kernel": True,
              "baseline_pct": 40.0, "new_pct": 35.0, "delta": -5.0,
              "names": ["read_zero", "read_zero.cold", "read_zero.isra.0"]}
    assert {k: rows["read_zero"][k] for k in shares} == shares
    # no task-clock in these files: no cost per op, its keys null (never 0)
    assert rows["read_zero"]["baseline_ns_per_op"] is None
    assert rows["read_zero"]["verdict"] is None and rows["read_zero"]["significant"] is False
    assert rows["write_null"]["names"] == ["write_null"] and rows["write_null"]["delta"] == 5.0

    text = compare_formats.render(comp, "text").splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith("hot symbols"))
    table = text[start + 1:]
    assert table[1].split() == ["[k]", "read_zero", "(3", "names)", KERNEL, "40.00%",
                                "35.00%", "-5.00"]
    assert [line.strip() for line in table[2:5]] == ["read_zero", "read_zero.cold",
                                                     "read_zero.isra.0"]
    # a row of one name reads as it did
    assert table[5].split() == ["[k]", "write_null", KERNEL, "20.00%", "25.00%", "+5.00"]
    assert table[6].split() == ["[k]", "__x64_sys_read", KERNEL, "10.00%", "10.00%", "+0.00"]
