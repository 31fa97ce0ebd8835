"""The suite's own arrangement under pytest-xdist (pyproject's addopts: two workers, by
group): the tests that share a machine-wide thing carry their group where xdist reads it."""
from __future__ import annotations

import pytest
from conftest import GROUPS, _named


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
