"""The bisect's decision (analysis.bisection) on seeded synthetic sittings: a round is one session
of GOOD and one of the revision asked, lognormal around their levels with a drift they share;
the first bad at each place, no change, build failures around the first bad, steps that cannot
be told, the alpha each step spent, the --resume document, and bad input."""
from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable

import numpy as np
import pytest

from hotloop.analysis.bisection import Ask, Bisection, Design, Outcome

REVS = [f"rev{i:02d}" for i in range(16)]      # GOOD, 14 candidates, BAD
BUILD_FAILED = "build exited 2 (log: /state/build.log)"


def sitting(b: Bisection, first: int, change: float, noise: float, seed: int,
            broken: frozenset[int] = frozenset(),
            level: Callable[[int], float] | None = None,
            rounds: int | None = None) -> Bisection:
    """Run `b` on synthetic sessions: revision i is `change` slower from index `first` on (or
    at `level(i)`, a log ratio), a revision in `broken` fails to build; stop after `rounds`
    rounds if given."""
    index = {r: i for i, r in enumerate(b.to_dict()["revisions"])}
    rng = np.random.default_rng(seed)
    drift, done = 0.0, 0
    while (ask := b.next()) is not None and (rounds is None or done < rounds):
        i = index[ask.rev]
        if i in broken:
            b.skip(BUILD_FAILED)
            continue
        drift += rng.normal(0.0, noise)
        mu = level(i) if level else (math.log1p(change) if i >= first else 0.0)
        bad = float(math.exp(drift + math.log1p(change) + rng.normal(0.0, noise))) \
            if ask.also else None
        b.add(float(math.exp(drift + rng.normal(0.0, noise))),
              float(math.exp(drift + mu + rng.normal(0.0, noise))), bad)
        done += 1
    return b


def consistent(b: Bisection, first: int) -> None:
    """Every classed step on its right side of the first bad, and no more tests than K."""
    o = b.outcome()
    for s in o.steps[1:]:
        i = REVS.index(s.rev)
        if s.verdict == "good":
            assert i < first, (s, first)
        elif s.verdict == "bad":
            assert i >= first, (s, first)
    assert o.tests <= o.budget == 1 + 4 + 3
    assert o.sessions == sum(2 * len(s.rounds) + len(s.also) for s in o.steps) \
        == sum(s.sessions for s in o.steps)
    assert all(len(s.also) == (len(s.rounds) if b.design.with_bad and s.kind == "step" else 0)
               for s in o.steps)


@pytest.mark.parametrize("with_bad", [False, True], ids=["against GOOD", "with BAD"])
@pytest.mark.parametrize("first", range(1, 16))
def test_the_first_bad_is_found_wherever_it_is(first, with_bad):
    b = sitting(Bisection(REVS, Design(with_bad=with_bad)), first, 0.25, 0.01, seed=first)
    o = b.outcome()
    assert (o.status, o.first_bad, o.last_good, o.skipped) == \
        ("found", REVS[first], REVS[first - 1], ())
    consistent(b, first)
    assert o.steps[0].verdict == "differ" and o.ci_low is not None and o.ci_low > 0
    # the boundary: half the bound nearer 0, or with BAD the midpoint of the estimate
    assert 0 < o.boundary_pct < (o.change_pct if with_bad else o.ci_low)
    assert o.change_pct == pytest.approx(25, abs=3)


@pytest.mark.parametrize("with_bad", [False, True], ids=["against GOOD", "with BAD"])
def test_a_faster_change_is_found_too(with_bad):
    o = sitting(Bisection(REVS, Design(with_bad=with_bad)), 9, -0.2, 0.01, seed=3).outcome()
    assert (o.status, o.first_bad, o.last_good) == ("found", REVS[9], REVS[8])
    assert o.ci_high < 0
    assert (o.change_pct if with_bad else o.ci_high) < o.boundary_pct < 0


@pytest.mark.parametrize("with_bad", [False, True], ids=["against GOOD", "with BAD"])
def test_a_drift_the_round_shares_cancels(with_bad):
    """The sitting drifts 20% a round (a random walk), the sessions 1% around it: a round's
    ratio holds none of the drift, so the bisect is as sure as without it."""
    b = Bisection(REVS, Design(with_bad=with_bad))
    rng = np.random.default_rng(12)
    walk = 0.0
    while (ask := b.next()) is not None:
        walk += rng.normal(0.0, 0.2)
        i = REVS.index(ask.rev)
        b.add(math.exp(walk + rng.normal(0, 0.01)),
              math.exp(walk + (math.log(1.1) if i >= 5 else 0.0) + rng.normal(0, 0.01)),
              math.exp(walk + math.log(1.1) + rng.normal(0, 0.01)) if ask.also else None)
    o = b.outcome()
    assert (o.status, o.first_bad, o.last_good) == ("found", REVS[5], REVS[4])
    assert 0 < o.ci_low < 10 < o.ci_high
    if not with_bad:                            # precise: its bound nearer 0 past half of it
        assert o.ci_low > o.change_pct / 2


def test_two_revisions_need_only_the_endpoints():
    o = sitting(Bisection(["good", "bad"]), 1, 0.25, 0.01, seed=1).outcome()
    assert (o.status, o.first_bad, o.last_good, o.budget) == ("found", "bad", "good", 4)
    assert len(o.steps) == 1


def test_a_range_with_no_change_says_so_and_names_nothing():
    b = sitting(Bisection(REVS), 99, 0.0, 0.01, seed=7)
    o = b.outcome()
    assert (o.status, o.first_bad, o.last_good, o.skipped) == ("no change", None, None, ())
    assert o.ci_low < 0 < o.ci_high
    assert [s.verdict for s in o.steps] == ["no change"]
    assert o.sessions == 2 * Design().max_rounds and b.next() is None


def test_build_failures_around_the_first_bad_are_named_as_skipped():
    b = sitting(Bisection(REVS), 7, 0.25, 0.01, seed=11, broken=frozenset({6, 7}))
    o = b.outcome()
    assert (o.status, o.last_good, o.first_bad, o.skipped) == \
        ("found", REVS[5], REVS[8], (REVS[6], REVS[7]))     # the first bad among skipped
    skips = [s for s in o.steps if s.verdict == "skipped"]
    assert {s.rev for s in skips} == {REVS[6], REVS[7]}
    assert all(s.alpha == 0 and not s.rounds and s.reason.startswith("build exited 2")
               for s in skips)
    consistent(b, 7)


def test_build_failures_elsewhere_cost_no_test():
    b = sitting(Bisection(REVS), 12, 0.25, 0.01, seed=5, broken=frozenset({7, 8, 9, 10}))
    o = b.outcome()
    assert (o.status, o.first_bad, o.skipped) == ("found", REVS[12], ())
    assert o.tests == sum(1 for s in o.steps if s.verdict != "skipped")
    consistent(b, 12)


def test_a_skip_after_rounds_spends_its_test():
    b = sitting(Bisection(REVS), 3, 0.25, 0.05, seed=2, rounds=10)
    ask = b.next()
    assert ask is not None and ask.kind == "step"
    if ask.round == 1:                          # give the step a round to look at first
        b.add(1.0, 1.0)
        ask = b.next()
    assert ask is not None and ask.round > 1
    tests = b.progress().tests
    b.skip("session 3 failed: the worker died")
    step = b.to_dict()["steps"][ask.step]
    assert step["verdict"] == "skipped" and step["alpha"] == pytest.approx(0.05 / 8)
    assert b.progress().tests == tests          # it had been counted, and stays


def at_the_boundary(b: Bisection, first: int, unclear: set[int]) -> Bisection:
    """Run `b` on fixed rounds: each round's log ratio its revision's level, 0.01 above and
    below it in turn; the endpoints 25% apart, the revisions in `unclear` at the boundary the
    endpoints gave, so no step can class them."""
    while (ask := b.next()) is not None:
        i = REVS.index(ask.rev)
        if i in unclear:                        # a step: the endpoints are done
            mu = math.log1p(b.to_dict()["steps"][0]["ci_low"] / 100) / 2
        else:
            mu = math.log(1.25) if i >= first else 0.0
        b.add(100.0, 100.0 * math.exp(mu + (0.01 if ask.round % 2 else -0.01)))
    return b


def test_steps_that_cannot_be_told_are_unknown_until_the_budget_is_spent():
    o = at_the_boundary(Bisection(REVS), 7, set(range(1, 15))).outcome()
    assert o.status == "gave up" and o.first_bad is None
    assert (o.last_good, o.earliest_bad) == (REVS[0], REVS[15])
    assert o.skipped == tuple(REVS[1:15])       # the first bad is one of them
    verdicts = [s.verdict for s in o.steps]
    assert verdicts == ["differ"] + ["unknown"] * 7 and o.tests == o.budget == 8
    assert all(len(s.rounds) == 8 for s in o.steps[1:])
    o = at_the_boundary(Bisection(REVS, Design(max_unknown=0)), 7, set(range(1, 15))).outcome()
    assert o.status == "gave up" and o.tests == o.budget == 5


def test_unknowns_within_the_cap_are_skipped_around():
    o = at_the_boundary(Bisection(REVS), 7, {6, 7}).outcome()
    assert (o.status, o.last_good, o.first_bad, o.skipped) == \
        ("found", REVS[5], REVS[8], (REVS[6], REVS[7]))
    assert sorted(s.rev for s in o.steps if s.verdict == "unknown") == [REVS[6], REVS[7]]
    assert o.tests <= o.budget


@pytest.mark.parametrize("seed", range(12))
def test_the_steps_spend_at_most_alpha_between_them(seed):
    rng = np.random.default_rng(100 + seed)
    design = Design(alpha=float(rng.choice([0.01, 0.05, 0.2])),
                    max_rounds=int(rng.integers(2, 10)), max_unknown=int(rng.integers(0, 4)))
    broken = frozenset(int(i) for i in rng.choice(range(1, 15), 3, replace=False))
    b = sitting(Bisection(REVS, design), int(rng.integers(1, 16)),
                float(rng.choice([0.0, 0.03, 0.1, 0.25])), float(rng.choice([0.01, 0.05])),
                seed=seed, broken=broken)
    o = b.outcome()
    k = design.tests(14)
    assert all(s.alpha in (0.0, design.alpha / k) for s in o.steps)
    assert sum(s.alpha for s in o.steps) <= design.alpha * (1 + 1e-12)
    assert o.tests <= k


@pytest.mark.parametrize("with_bad", [False, True], ids=["against GOOD", "with BAD"])
@pytest.mark.parametrize("cut", [0, 1, 5, 9, 14, 23])
def test_a_document_mid_way_resumes_to_the_same_answer(cut, with_bad):
    def run(b: Bisection, rounds: int | None = None) -> Bisection:
        return sitting(b, 6, 0.1, 0.02, seed=8, broken=frozenset({4}), rounds=rounds)
    design = Design(with_bad=with_bad)
    whole = run(Bisection(REVS, design))
    # the same sitting stopped after `cut` rounds, saved as JSON, read back
    part = run(Bisection(REVS, design), rounds=cut)
    back = Bisection.from_dict(json.loads(json.dumps(part.to_dict(), allow_nan=False)))
    assert back.next() == part.next()
    assert back.to_dict() == part.to_dict()
    # the rest of the sitting's rounds, as they would have come
    rest = [(*r, s.also[j] if s.also else None) for s in whole.outcome().steps
            for j, r in enumerate(s.rounds)]
    for b in (part, back):
        for values in rest[cut:]:
            ask = b.next()
            while ask is not None and ask.rev == REVS[4]:
                b.skip(BUILD_FAILED)
                ask = b.next()
            b.add(*values)
        while (ask := b.next()) is not None and ask.rev == REVS[4]:
            b.skip(BUILD_FAILED)
    assert back.outcome() == part.outcome() == whole.outcome()


# --------------------------------------------------------------------------- bad input

def one_line(e: pytest.ExceptionInfo[ValueError]) -> str:
    msg = str(e.value)
    assert msg and "\n" not in msg
    return msg


@pytest.mark.parametrize("value", [math.nan, math.inf, 0.0, -3.0, "12", True, None, 10 ** 400])
def test_a_session_value_that_is_no_positive_number_is_refused(value):
    b = Bisection(REVS)
    b.next()
    with pytest.raises(ValueError) as e:
        b.add(100.0, value)
    assert "finite number above 0" in one_line(e)
    with pytest.raises(ValueError):
        b.add(value, 100.0)
    b.add(100.0, 101.0)                         # nothing half-added
    assert b.next() == Ask("endpoints", REVS[15], REVS[0], 0, 2, None, (REVS[15], REVS[0]))


def test_add_and_skip_answer_a_round_asked():
    b = Bisection(REVS)
    with pytest.raises(ValueError) as e:
        b.skip("build failed")
    assert "no round was asked" in one_line(e)
    with pytest.raises(ValueError) as e:
        b.add(1.0, 2.0)
    assert "call next() first" in one_line(e)
    b.next()
    with pytest.raises(ValueError) as e:
        b.skip("build failed")
    assert "endpoints cannot be skipped" in one_line(e)
    done = sitting(Bisection(REVS), 99, 0.0, 0.01, seed=1)
    assert done.next() is None
    for call in (lambda: done.add(1.0, 1.0), lambda: done.skip("x")):
        with pytest.raises(ValueError) as e:
            call()
        assert "the bisection is over" in one_line(e)
    with pytest.raises(ValueError) as e:
        Bisection(REVS).outcome()
    assert "not over" in one_line(e)


@pytest.mark.parametrize("revisions, words", [
    ([], "2 revisions at least"), (["a"], "2 revisions at least"), ("good..bad", "a list"),
    (["a", "b", "a"], "'a' is given twice"), (["a", ""], "non-empty"),
    (["a", "b\nc"], "one line"), (["a", 7], "not 7")])
def test_a_range_that_is_none_is_refused(revisions, words):
    with pytest.raises(ValueError) as e:
        Bisection(revisions)
    assert words in one_line(e)


@pytest.mark.parametrize("kw", [dict(alpha=0.0), dict(alpha=1.0), dict(alpha=math.nan),
                                dict(max_rounds=1), dict(max_rounds=2.5), dict(max_unknown=-1),
                                dict(max_unknown=True)])
def test_a_design_out_of_range_is_refused(kw):
    with pytest.raises(ValueError) as e:
        Design(**kw)
    one_line(e)


def saved() -> dict:
    """A document mid-way: endpoints, some steps classed, one skipped, one running."""
    b = sitting(Bisection(REVS), 6, 0.25, 0.01, seed=8, broken=frozenset({5}))
    steps = len(b.outcome().steps)
    b = sitting(Bisection(REVS), 6, 0.25, 0.01, seed=8, broken=frozenset({5}),
                rounds=sum(len(s.rounds) for s in b.outcome().steps) - 1)
    d = json.loads(json.dumps(b.to_dict()))
    assert len(d["steps"]) == steps and d["steps"][-1]["verdict"] is None
    assert any(s["verdict"] == "skipped" for s in d["steps"])
    assert any(s["verdict"] == "good" for s in d["steps"])
    return d


def forge(path: str, value: object) -> dict:
    """saved(), the value at a dotted path ("steps.0.rounds.1") set to `value`."""
    d = saved()
    *where, last = path.split(".")
    node = d
    for k in where:
        node = node[int(k)] if isinstance(node, list) else node[k]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return d


def cut_short(n: int) -> dict:
    """saved(), step n left with one round and no verdict, the steps after it kept."""
    d = saved()
    d["steps"][n]["rounds"] = d["steps"][n]["rounds"][:1]
    d["steps"][n]["verdict"] = None
    return d


def good_step() -> int:
    return next(i for i, s in enumerate(saved()["steps"]) if s["verdict"] == "good")


@pytest.mark.parametrize("make, words", [
    (lambda: [], "the document is not an object"),
    (lambda: forge("format", "1"), "format '1'"),
    (lambda: forge("format", 2), "format 2"),
    (lambda: forge("extra", 1), "extra missing or unknown"),
    (lambda: forge("design.alpha", "0.05"), "alpha must be"),
    (lambda: forge("revisions", "rev00..rev15"), "revisions is not a list"),
    (lambda: forge("revisions.3", REVS[2]), "given twice"),
    (lambda: forge("steps", []), "steps is not a list"),
    (lambda: forge("steps.0.rounds.0", ["100", 125.0]), "finite number above 0"),
    (lambda: forge("steps.0.rounds.0", [100.0]), "not a pair"),
    (lambda: forge("steps.0.rounds.0", [100.0, -1.0]), "finite number above 0"),
    (lambda: forge("steps.0.verdict", 1), "verdict 1 is not one"),
    (lambda: forge("steps.0.verdict", "no change"), "verdict 'no change' stored"),
    (lambda: forge("steps.0.alpha", 0.05), "alpha 0.05 stored"),
    (lambda: forge("steps.0.ci_low", 1.0), "ci_low 1.0 stored"),
    (lambda: forge("steps.1.rev", "v9.9"), "'v9.9' is not in the range"),
    (lambda: forge("steps.1.rev", REVS[3]), f"step 1: step '{REVS[3]}' stored where"),
    (lambda: forge("steps.1.rounds", [], ), "verdict"),
    (lambda: forge(f"steps.{good_step()}.verdict", "bad"), "verdict 'bad' stored"),
    (lambda: forge("steps.1.reason", None), "reason not a text"),
    (lambda: forge("steps.1.kind", "endpoints"), "is not one of endpoints's"),
    (lambda: forge("steps.1.kind", ["step"]), "kind ['step'] or rev"),
    (lambda: forge("steps.0.rounds.0", [10 ** 400, 125.0]), "finite number above 0"),
    (lambda: forge("design.with_bad", 1), "with_bad must be true or false"),
    (lambda: forge("steps.2.verdict", None), "verdict None stored"),
    (lambda: cut_short(2), "no verdict, yet steps follow it"),
    (lambda: forge("steps.0.rounds", [[100.0, 125.0]] * 20), "verdict came at round"),
])
def test_a_forged_document_is_refused_in_one_line(make, words):
    with pytest.raises(ValueError) as e:
        Bisection.from_dict(make())
    msg = one_line(e)
    assert msg.startswith("bisection state: ") and words in msg, msg


def test_a_document_as_saved_is_taken():
    d = saved()
    assert Bisection.from_dict(d).to_dict() == d


# --------------------------------------------------------------------------- the benchmark

def test_the_error_benchmark_prints_its_table_and_its_bound(monkeypatch, capsys):
    """benchmarks/bisect_error.py, a few bisects a cell: its command line, a row a cell, the
    wrong answers tallied as the docs define them."""
    import importlib.util

    from conftest import ROOT
    spec = importlib.util.spec_from_file_location("bisect_error",
                                                  ROOT / "benchmarks" / "bisect_error.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bisect_error", mod)     # its dataclass looks itself up
    spec.loader.exec_module(mod)
    monkeypatch.setattr(sys, "argv", ["bisect_error.py", "--trials", "30", "--revisions",
                                      "16", "--changes", "0,25", "--noise", "1",
                                      "--markdown"])
    mod.main()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("$ python benchmarks/bisect_error.py --trials 30 --revisions 16 "
                      "--changes 0,25 --noise 1 --markdown")
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in out if ln.startswith("| 16")]
    assert [r[:3] for r in rows] == [["16", "0%", "1%"], ["16", "25%", "1%"]]
    assert rows[0][7] == "100.0%" and rows[1][3] == "0.0%"   # no change said; none wrong
    assert float(rows[1][5].rstrip("%")) + float(rows[1][6].rstrip("%")) == 100.0
    # 30 bisects a cell cannot show 5%: none wrong in 30 is an upper bound of 9.5%
    assert out[-1].startswith("the bound (wrong <= 0.05): NOT shown in every cell"), out[-1]
    assert mod.Cell(trials=30).upper() == pytest.approx(1 - 0.05 ** (1 / 30))
    assert mod.Cell(trials=4000).upper() < 0.001

    # what counts as a wrong answer
    def answer(status: str, first_bad: str | None, skipped: tuple[str, ...] = (),
               earliest: str | None = None) -> Outcome:
        return Outcome(status, first_bad, "r0", skipped, 25.0, 20.0, 30.0, 0.05, 20, (),
                       earliest_bad=earliest or first_bad)
    cell = mod.Cell()
    mod.tally(cell, answer("found", "r5"), "r5")                       # named
    mod.tally(cell, answer("found", "r6", ("r4", "r5")), "r5")         # among skipped
    mod.tally(cell, answer("found", "r6"), "r5")                       # wrong
    mod.tally(cell, answer("found", "r6"), None)                       # wrong: no change
    mod.tally(cell, answer("gave up", None, ("r3", "r4"), "r5"), "r5")  # not wrong
    mod.tally(cell, answer("gave up", None, ("r3",), "r4"), "r5")      # wrong bracket
    mod.tally(cell, answer("no change", None), "r5")
    assert (cell.trials, cell.named, cell.among_skipped, cell.wrong, cell.gave_up,
            cell.no_change) == (7, 1, 1, 3, 2, 1)


def test_with_bad_a_step_asks_a_session_of_bad_too():
    b = Bisection(REVS, Design(with_bad=True))
    assert b.next() == Ask("endpoints", REVS[15], REVS[0], 0, 1, None,    # no BAD beside BAD
                           (REVS[0], REVS[15]))
    with pytest.raises(ValueError) as e:
        b.add(100.0, 125.0, 125.0)
    assert "no session of BAD" in one_line(e)
    while (ask := b.next()) is not None and ask.kind == "endpoints":
        b.add(100.0, 125.0 * (1.01 if ask.round % 2 else 0.99))
    assert ask is not None and ask.kind == "step" and ask.also == REVS[15]
    # the revision between GOOD and BAD, the order turned round every other round
    assert ask.round == 1 and ask.order == (REVS[0], ask.rev, REVS[15])
    with pytest.raises(ValueError) as e:
        b.add(100.0, 101.0)
    assert "a session of BAD too" in one_line(e)
    with pytest.raises(ValueError) as e:
        b.add(100.0, 101.0, math.nan)
    assert "(also)" in one_line(e)
    b.add(100.0, 101.0, 125.0)
    again = b.next()
    assert again is not None and again.order == (REVS[15], ask.rev, REVS[0])
    d = json.loads(json.dumps(sitting(b, 5, 0.25, 0.01, seed=1).to_dict()))
    step = next(i for i, s in enumerate(d["steps"]) if s["also"])
    d["steps"][step]["also"] = d["steps"][step]["also"][1:]
    with pytest.raises(ValueError) as e:
        Bisection.from_dict(d)
    assert "sessions of BAD stored for" in one_line(e)


def test_numpy_numbers_are_taken_and_the_document_stays_json():
    b = Bisection(REVS, Design(np.float64(0.05), np.int64(8), np.int64(3)))
    sitting(b, 4, np.float64(0.25), 0.01, seed=2)
    assert type(b.design.max_rounds) is int and type(b.design.alpha) is float
    text = json.dumps(b.to_dict(), allow_nan=False)
    assert Bisection.from_dict(json.loads(text)).outcome() == b.outcome()


def test_the_outcome_is_a_copy():
    b = sitting(Bisection(REVS, Design(with_bad=True)), 4, 0.25, 0.01, seed=2)
    o = b.outcome()
    o.steps[1].rounds.clear()
    o.steps[1].also.clear()
    o.steps[1].verdict = "good"
    assert b.outcome() != o and b.outcome().steps[1].rounds


@pytest.mark.parametrize("seed", range(8))
def test_each_classed_step_leaves_at_most_half_of_those_left(seed):
    """The bound's count of steps: a step classed good or bad leaves at most half of the
    revisions left to test, one skipped or unknown sets one aside, whatever the failed
    builds (bunched or not) and the revisions that cannot be told."""
    rng = np.random.default_rng(300 + seed)
    revs = [f"rev{i:03d}" for i in range(int(rng.choice([16, 40, 200])))]
    first = int(rng.integers(1, len(revs)))
    start = int(rng.integers(1, len(revs) - 1))
    broken = set(range(start, min(len(revs) - 1, start + int(rng.integers(1, 12)))))
    unclear = {int(i) for i in rng.integers(1, len(revs) - 1, 2)} - broken
    b = Bisection(revs, Design(max_unknown=2))
    left, steps = None, 0
    while (ask := b.next()) is not None:
        i = revs.index(ask.rev)
        if ask.kind == "step" and ask.round == 1:
            left = b.progress().left + 1            # the one asked, and those still left
        if i in broken:
            b.skip(BUILD_FAILED)
        else:
            c = math.log1p(b.to_dict()["steps"][0]["ci_low"] / 100) / 2 if i in unclear else \
                (math.log(1.25) if i >= first else 0.0)
            b.add(100.0, 100.0 * math.exp(c + (0.01 if ask.round % 2 else -0.01)))
        done = b.to_dict()["steps"][ask.step]
        if ask.kind == "step" and done["verdict"] is not None:
            steps += 1
            now = b.progress().left
            if done["verdict"] in ("good", "bad"):
                assert now <= left // 2, (done, left, now)
            else:
                assert now <= left - 1, (done, left, now)
    assert steps and b.outcome().tests <= b.budget


def test_the_middle_is_taken_by_count_not_by_place():
    """7 candidates, 1, 2 and 4 failing to build, the first bad the 7th: the middle by place
    (4, skipped; then 3, 5, 6 good and 7 bad) classes 4 steps, more than ceil(log2(8)) = 3;
    by count (4 skipped; 3 good, 6 good, 7 bad) it keeps to 3."""
    revs = [f"rev{i}" for i in range(9)]
    b = sitting(Bisection(revs), 7, 0.25, 0.01, seed=1, broken=frozenset({1, 2, 4}))
    o = b.outcome()
    assert [(s.rev, s.verdict) for s in o.steps[1:]] == [
        ("rev4", "skipped"), ("rev3", "good"), ("rev6", "good"), ("rev7", "bad")]
    assert (o.status, o.first_bad, o.tests) == ("found", "rev7", 4)
