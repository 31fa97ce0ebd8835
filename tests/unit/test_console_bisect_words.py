"""A bisect started in the console keeps the words of an equivalent command line: `hotloop
bisect --resume` parses them, and the mail's reproduce line runs them.  The console measures
the plan those words make (console.bisecting.Measured), so the two are one bisect: each
form here gives the same plan through the command line's parsing as the console makes."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hotloop import catalog
from hotloop.cli.bisect import _check
from hotloop.cli.parser import parser
from hotloop.cli.run import plan_to_run
from hotloop.console.bisecting import Measured


@pytest.fixture
def cat():
    return catalog.load([])


def form(cat, **changes):
    """The form's plan as ParamsForm.build makes it: every parameter filled in."""
    base = cat.plan_for("zero_null")
    params = dict(cat.resolve(base).params)
    params.update(changes.pop("params", {}))
    return replace(base, params=params, **changes), base


@pytest.mark.parametrize("changes", [
    {},
    {"params": {"block_size": 4096}, "runs": 7, "warmup": 0},
    {"until_ci": 5.0, "perf": False},
    {"perf": True, "cpu": "same-core", "params": {"count": 12345}},
])
def test_the_kept_words_make_the_plan_the_console_measures(cat, changes):
    plan, base = form(cat, **changes)
    m = Measured.of_form(cat, plan, base)
    words = m.words("a..b", (Path("bench"),), "make -j2", "cpu")
    args = parser().parse_args(["bisect", *words])      # what --resume parses
    args.argv, args.top_profiles = ["bisect", *words], []
    _check(args)
    assert plan_to_run(cat, args, cat.plan_for(args.plan), args.cpu, args.param,
                       args.kernel) == m.plan_of(cat)
    # only what the form changed is a --param: the revision's plan file gives the rest
    assert [w for w in words if "=" in w] == [f"{k}={v}" for k, v in
                                              changes.get("params", {}).items()]
    assert m.plan_of(cat).runs == plan.runs and m.plan_of(cat).perf == plan.perf
    assert m.plan_of(cat).until_ci == (plan.until_ci or base.until_ci)
