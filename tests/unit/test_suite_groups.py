"""The suite's own arrangement under pytest-xdist (pyproject's addopts: workers fed by
group): the tests that share a machine-wide thing carry their group where xdist reads it,
and the longest groups start first."""
from __future__ import annotations

import pytest
import tomllib
from conftest import GROUPS, ROOT, _named, _rank


def test_the_grouped_tests_carry_their_group_where_xdist_reads_it(request):
    grouped = [(item, group) for item in request.session.items
               for group, names in GROUPS.items() if _named(item, names)]
    if not grouped:
        pytest.skip("no grouped test collected in this session")
    for item, group in grouped:
        mark = item.get_closest_marker("xdist_group")
        assert mark is not None and mark.args == (group,), item.nodeid
    if request.config.getoption("loadgroup", False):     # an xdist worker, --dist loadgroup
        # xdist names a test by its group from the marks set before it read them: a mark
        # set later (a conftest hook after xdist's) groups nothing
        assert all(item.nodeid.endswith(f"@{group}") for item, group in grouped), \
            [item.nodeid for item, group in grouped if not item.nodeid.endswith(f"@{group}")]


def test_the_longest_groups_come_first_and_xdist_keeps_that_order(request):
    """--dist loadgroup hands the workers the groups in the session's order only with
    --no-loadscope-reorder: xdist's default sorts them by how many tests each holds, and the
    VM boots (16 tests, the longest group) then started last."""
    ranks = [_rank(item) for item in request.session.items]
    assert ranks == sorted(ranks), [item.nodeid for item in request.session.items][:5]
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["addopts"].split()
    assert "--dist" in addopts and addopts[addopts.index("--dist") + 1] == "loadgroup"
    assert "--no-loadscope-reorder" in addopts
    if request.config.getoption("dist", "no") == "loadgroup":
        assert request.config.getoption("loadscopereorder") is False
