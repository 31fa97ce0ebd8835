"""A bisect's report from a real Bisection fed fixed session values: its text within the
terminal's width, its mail within 72 columns, its json's keys; a range with no change."""
from __future__ import annotations

import json
from pathlib import Path

from hotloop.analysis.bisect_finding import Finding
from hotloop.analysis.bisection import Bisection, Design
from hotloop.render import bisect_report

REVS = [f"{i:040x}" for i in range(1, 17)]          # GOOD, 14 candidates, BAD
FIRST_BAD = 9


def decided(slower: float = 1.25, first_bad: int = FIRST_BAD, skip: int | None = None
            ) -> Bisection:
    """A bisection run to its end on values with a little fixed wobble."""
    b = Bisection(REVS, Design())
    wobble = [1.0, 1.004, 0.997, 1.002, 0.999, 1.003, 0.996]
    n = 0
    while (ask := b.next()) is not None:
        i = REVS.index(ask.rev)
        if skip is not None and i == skip and ask.kind == "step" and ask.round == 1:
            b.skip("its build failed: build exited 2 (log: /x/build.log)")
            continue
        n += 1
        b.add(100.0 * wobble[n % 7], 100.0 * (slower if i >= first_bad else 1.0)
              * wobble[(n + 3) % 7])
    return b


def report(b: Bisection, **more: object) -> Finding:
    subjects = {r: (r[-12:], f"Revision {i}: a subject\nwith a newline") for i, r in
                enumerate(REVS)}
    return Finding(b.outcome(), REVS[0], REVS[-1], subjects, None,
                                ["-CONFIG_X=y", "+CONFIG_X=m"], 75.0, Path("/state/b"),
                                command=["a..b", "chain", "--profiles", "bench", "--build",
                                         "make -j2 all && echo done"], **more)  # type: ignore[arg-type]


def test_the_report_names_the_first_bad_with_its_change_in_its_widths():
    r = report(decided(skip=8))
    text = bisect_report.render(r, "text", 80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert f"first bad {REVS[FIRST_BAD][-12:]} Revision {FIRST_BAD}" in text
    assert "\nwith a newline" not in text                 # a subject is one line
    assert "the chance this answer is wrong: at most 5%" in text
    assert "-CONFIG_X=y" in text and "skipped" in text
    # each interval says its level: a step's at 1 - its share of the 5% bound
    step = next(s for s in r.outcome.steps if s.rev == REVS[FIRST_BAD])
    assert f"({100 * (1 - step.alpha):.3g}%)" in text, text
    assert "a step's interval holds at 1 - its share of the bound" in " ".join(text.split())
    mail = bisect_report.render(r, "mail")
    assert all(len(line) <= 72 for line in mail.splitlines()), mail
    # the range as its short hashes, whatever was typed: a mail's line holds it whole
    assert (f"reproduce:\n  hotloop bisect {REVS[0][-12:]}..{REVS[-1][-12:]} chain "
            f"--profiles bench") in mail
    assert "'make -j2 all && echo done'" in mail
    doc = json.loads(bisect_report.render(r, "json"))
    assert doc["status"] == "found" and doc["first_bad"] == REVS[FIRST_BAD]
    assert doc["alpha"] == 0.05 and doc["change_pct"] > 20
    assert doc["ci_low"] <= doc["change_pct"] <= doc["ci_high"]
    assert all({"rev", "verdict"} <= s.keys() for s in doc["steps"])
    assert REVS[8] in [s["rev"] for s in doc["steps"] if s["verdict"] == "skipped"]


def test_a_range_with_no_change_names_nothing():
    r = report(decided(slower=1.0))
    text = bisect_report.render(r, "text", 100)
    assert "nothing to bisect" in text and "first bad" not in text
    doc = json.loads(bisect_report.render(r, "json"))
    assert doc["status"] == "no change" and doc["first_bad"] is None


def _confirmed(ci: bool, runs: int) -> object:
    """A confirmation's comparison: its primary metric +24% with an interval or without."""
    from hotloop.analysis.comparison import Comparison, MetricDelta, Pair, Side, Test, Verdict
    side = [Side(i, n, "stock", "6.1", n, "", 2 * runs, False, "", None, sessions=2)
            for i, n in enumerate(("a", "b"))]
    test = Test(2 * runs, 2 * runs, 100.0, 124.0, 24.0, 24.0, 20.0 if ci else None,
                28.0 if ci else None, 0.001 if ci else None, ci, Verdict.BAD
                if ci else Verdict.TOO_FEW_RUNS, sessions_baseline=2, sessions_new=2)
    return Comparison("chain", "ns/op", "ns/op", False, side,
                      [Pair(side[0], side[1], [MetricDelta("ns/op", "ns/op", False, test,
                                                           primary=True)], [], None)])


def test_the_first_bads_change_is_the_confirmations_else_its_steps_said_why():
    import dataclasses
    with_ci = report(decided())
    r = dataclasses.replace(with_ci, comparison=_confirmed(True, 5))
    c, lo, hi, against, why = bisect_report.change(r)
    assert (c, lo, hi, against, why) == (24.0, 20.0, 28.0, "last good", "")
    assert "[+20.0%, +28.0%] (95%)" in bisect_report.render_text(r, 100)
    r = dataclasses.replace(with_ci, comparison=_confirmed(False, 3))
    c, lo, hi, against, why = bisect_report.change(r)
    assert against == "good" and lo is not None and hi is not None and lo <= c <= hi
    assert "too few runs a session: --runs 5 or more" in why
    text = bisect_report.render_text(r, 100)
    assert "its change against GOOD" in text and "too few runs a session" in text
