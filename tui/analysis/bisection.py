"""The decision of a performance bisect: which revision to measure next, and when a step is done.

A bisect walks GOOD..BAD by tests, each on rounds of one session of GOOD and one of a revision
(the two run side by side): a round's x = log(revision's value) - log(GOOD's), so a drift the
two sessions shared cancels.  A wrong answer needs a wrong test (a revision classed on the
wrong side, or endpoints said to differ when they do not), so the whole path's chance of one is
at most the sum of its tests' (the union bound, whatever their dependence):

* **K tests, each at alpha / K.**  K = 1 (the endpoints) + ceil(log2(n + 1)) + max_unknown,
  for n candidates.  A candidate is the middle, by count, of those not yet classed or set
  aside between the last good and the first bad, so each classed step leaves at most half of
  them and ceil(log2(n + 1)) steps class them all; each unknown sets one aside.  A skip before
  any round (a build that failed) runs no test and spends nothing; a skip after rounds (its
  sessions failed) spends its test, as its rounds were looked at.  When the next test would be
  the (K + 1)-th: "gave up".  (The sketch took the middle by index, which with skips can take
  more classed steps than ceil(log2(n + 1)): 4 in a range of 7 candidates whose 1st, 2nd and
  4th fail to build, the 7th the first bad; by count it cannot.  The budget itself, not a
  count of unknowns, is what stops it, so a range that still fits absorbs more unknowns.)
* **Looks within a test: Bonferroni.**  A test is looked at after each round, each look at
  alpha / K / looks, so the looks together stay within the test's share whatever their
  correlation, with a Student t on the estimated variance (a Pocock or O'Brien-Fleming
  boundary is tighter but needs a known variance and a fixed schedule of looks).  The
  endpoints' first round has no degrees of freedom of its own, so they have max_rounds - 1
  looks, each two-sided; a step's test is one-sided each way and only one way can be wrong
  for a given revision (a good one called bad, or a bad one good), so a look spends
  alpha / K / max_rounds on each side.
* **The variance of x pooled** over every step so far (one machine, one workload; a step has
  few rounds): s^2 = sum over steps of sum (x - the step's mean)^2, df = sum (rounds - 1).
  The t is exact for a design fixed in advance; here which steps ran depends on the rounds
  before, which the simulation covers (and revisions noisier than the others: --bad-noise).
* **The endpoints** (BAD against GOOD) run until their interval excludes 0 with its bound
  nearer 0 at least half the estimate (precise enough), or to max_rounds: "differ" if it
  excludes 0, else "no change" (nothing to bisect).  The interval holds the true change with
  at least 1 - alpha / K at whatever round it stopped.
* **The boundary** c = (that bound nearer 0) / 2: when the interval holds, 0 < |c| <= |delta|
  / 2, as far from a good revision's change (0) as the worst case of a bad one's allows.
  A step is a one-sided test of mean x against c: "bad" when its interval is wholly beyond c
  on BAD's side, "good" when wholly short of it, "unknown" at max_rounds (set aside, and the
  bisection goes on around it).
* **With BAD** (Design.with_bad, added to the interface; off in Design, on in `hotloop
  bisect`): a step's round runs GOOD, the revision and BAD (Ask.also), in that order (and
  the other way round the next round), and tests y = log(revision) -
  (log(GOOD) + log(BAD)) / 2, whose mean is -delta/2 for a good revision and +delta/2 for a
  bad one: the boundary is 0 exactly, estimated from nothing, so the endpoints need only
  differ (no precision) and a step is as far from it on either side.  A round costs 3
  sessions for a variance of 1.5 sessions' (the log ratio's is 2) at a distance of delta/2
  (against c <= delta/2 without): on synthetic sittings it named the first bad far more
  often for the sessions spent (docs/statistics.md).  Its rounds join the pooled variance in
  units of one session's variance (y's sum of squares / 1.5, x's / 2).
* **The answer**: once no candidate is left between the last good and the first bad,
  "found", with `skipped` naming those between (skipped or unknown: the first bad may be
  one of them).

What the bound gives, measured through this code on synthetic sittings:
benchmarks/bisect_error.py, quoted in docs/statistics.md ("Bisect: the path's error bound").
Pure: no I/O, no process, numpy/scipy only (as analysis.significance loads them).
"""
from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

from hotloop.analysis.bisection_model import Ask, Design, Outcome, Progress, Step, is_number, is_whole
from hotloop.analysis.significance import sps

__all__ = ["Ask", "Bisection", "Design", "Outcome", "Progress", "Step"]
DEFAULT = Design()                              # frozen: one for every default

FORMAT = 1                                      # to_dict's document
# The endpoints are precise enough when their interval's half width is at most this share of
# the estimate (its bound nearer 0 at least half of it).  Tighter (1/3, 1/4) made no difference
# on synthetic sittings (the caps bind: a step's max_rounds, not the boundary's precision).
PRECISION = 0.5
ENDPOINTS, STEP = "endpoints", "step"
DIFFER, NO_CHANGE = "differ", "no change"
GOOD, BAD, UNKNOWN, SKIPPED = "good", "bad", "unknown", "skipped"
FOUND, GAVE_UP = "found", "gave up"
VERDICTS = {ENDPOINTS: (DIFFER, NO_CHANGE), STEP: (GOOD, BAD, UNKNOWN, SKIPPED)}
STEP_KEYS = ("kind", "rev", "rounds", "also", "verdict", "reason", "alpha", "change_pct",
             "ci_low", "ci_high")


@functools.lru_cache(maxsize=4096)
def _quantile(level: float, df: int) -> float:
    """t's upper `level` quantile (the looks ask for the same few df again and again)."""
    return float(sps.t.isf(level, df))


def _pct(x: float) -> float:
    return 100.0 * math.expm1(max(-700.0, min(700.0, x)))   # finite, so JSON-safe


class Bisection:
    def __init__(self, revisions: Sequence[str], design: Design = DEFAULT) -> None:
        """revisions[0] GOOD, revisions[-1] BAD, the candidates between, oldest first."""
        if isinstance(revisions, str) or not isinstance(revisions, Sequence):
            raise ValueError("revisions must be a list of revisions, GOOD first and BAD last")
        if not isinstance(design, Design):
            raise ValueError(f"design must be a Design, not {type(design).__name__}")
        seen: set[str] = set()
        for r in revisions:
            if not isinstance(r, str) or not r or any(ord(ch) < 32 or ord(ch) == 127 for ch in r):
                raise ValueError(f"a revision must be a non-empty text on one line, not {r!r}")
            if r in seen:
                raise ValueError(f"revision {r!r} is given twice")
            seen.add(r)
        if len(revisions) < 2:
            raise ValueError(f"a bisection needs GOOD and BAD, 2 revisions at least, not "
                             f"{len(revisions)}")
        self._revs = tuple(revisions)
        self._index = {r: i for i, r in enumerate(self._revs)}
        self.design = design
        self.budget = design.tests(len(self._revs) - 2)
        self.level = float(design.alpha) / self.budget           # each test's share
        self._steps: list[Step] = []
        self._good = 0                                  # the last good's index
        self._bad = len(self._revs) - 1                 # the earliest bad's
        self._aside: set[int] = set()                   # skipped or unknown
        self._sse = 0.0                                 # closed steps: the pooled sums
        self._df = 0
        self._c = 0.0                                   # the boundary, on the log scale
        self._sign = 0.0                                # the endpoints' direction
        self._status: str | None = None
        self._pending: Ask | None = None
        self._steps.append(Step(ENDPOINTS, self._revs[-1], alpha=self.level))

    # ----------------------------------------------------------------------- the caller's

    def next(self) -> Ask | None:
        """The round to run next; None when it is over (outcome() holds the answer)."""
        if self._status is not None:
            return None
        s = self._steps[-1]
        also = self._revs[-1] if self._with_bad(s) else None
        order = tuple(r for r in (self._revs[0], s.rev, also) if r is not None)
        if len(s.rounds) % 2:                   # every other round the other way round
            order = order[::-1]
        self._pending = Ask(s.kind, s.rev, self._revs[0], len(self._steps) - 1,
                            len(s.rounds) + 1, also, order)
        return self._pending

    def add(self, against: float, rev: float, also: float | None = None) -> None:
        """One round's session values (the primary metric's session medians): `also` BAD's,
        when the ask names it (and only then)."""
        ask = self._asked("add a round")
        if (also is None) != (ask.also is None):
            raise ValueError("this round asks for a session of BAD too" if ask.also else
                             "this round has no session of BAD")
        named = [("against", against), ("rev", rev)] + ([("also", also)] if ask.also else [])
        values = [_session(name, v) for name, v in named]
        self._pending = None
        s = self._steps[-1]
        s.rounds.append((values[0], values[1]))
        if also is not None:
            s.also.append(values[2])
        self._judge()

    def skip(self, why: str) -> None:
        """The candidate asked cannot be measured (its build or its sessions failed)."""
        ask = self._asked("skip")
        if not isinstance(why, str):
            raise ValueError(f"a skip's reason must be a text, not {type(why).__name__}")
        if ask.kind == ENDPOINTS:
            raise ValueError(f"the endpoints cannot be skipped ({' '.join(why.split())}): "
                             f"there is nothing to bisect without GOOD and BAD measured")
        self._pending = None
        s = self._steps[-1]
        s.verdict, s.reason = SKIPPED, " ".join(why.split())
        if not s.rounds:
            s.alpha = 0.0                       # no look taken: it spent nothing
        self._close(s)
        self._aside.add(self._index[s.rev])
        self._advance()

    def outcome(self) -> Outcome:
        """The answer; ValueError while next() still asks a round."""
        if self._status is None:
            raise ValueError("the bisection is not over: next() still asks a round")
        e = self._steps[0]
        found = self._status != NO_CHANGE       # found or gave up: a bracket to say
        return Outcome(self._status, self._revs[self._bad] if self._status == FOUND else None,
                       self._revs[self._good] if found else None,
                       self._revs[self._good + 1:self._bad] if found else (),
                       e.change_pct, e.ci_low, e.ci_high, float(self.design.alpha),
                       self._sessions(),
                       tuple(replace(s, rounds=list(s.rounds), also=list(s.also))
                             for s in self._steps),
                       earliest_bad=self._revs[self._bad] if found else None,
                       boundary_pct=_pct(self._c) if found else None,
                       tests=self._tests(), budget=self.budget)

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps so far, the one running last (copies: for a progress line)."""
        return tuple(replace(s, rounds=list(s.rounds), also=list(s.also)) for s in self._steps)

    def progress(self) -> Progress:
        return Progress(len(self._steps) - 1, len(self._left()), self._sessions(),
                        self._tests(), self.budget)

    # ----------------------------------------------------------------------- the method

    def _asked(self, what: str) -> Ask:
        if self._status is not None:
            raise ValueError(f"cannot {what}: the bisection is over")
        if self._pending is None:
            raise ValueError(f"cannot {what}: no round was asked (call next() first)")
        return self._pending

    def _sessions(self) -> int:
        return sum(s.sessions for s in self._steps)

    def _with_bad(self, s: Step) -> bool:
        return self.design.with_bad and s.kind == STEP

    def _values(self, s: Step) -> tuple[list[float], float]:
        """A step's tested value a round, and its variance in units of one session's: the
        log ratio to GOOD (2), or with BAD the log ratio to GOOD and BAD's geometric mean
        (1 + 1/4 + 1/4)."""
        if self._with_bad(s):
            return [math.log(r) - (math.log(a) + math.log(b)) / 2
                    for (a, r), b in zip(s.rounds, s.also)], 1.5
        return [math.log(r) - math.log(a) for a, r in s.rounds], 2.0

    def _tests(self) -> int:
        return sum(1 for s in self._steps if s.rounds)

    def _left(self) -> list[int]:
        if self._status == NO_CHANGE:
            return []
        return [i for i in range(self._good + 1, self._bad) if i not in self._aside]

    def _judge(self) -> None:
        """The look after a round: the step's interval at the look's level, and its verdict."""
        s = self._steps[-1]
        xs, f = self._values(s)
        m = len(xs)
        mean = sum(xs) / m
        sse = sum((x - mean) ** 2 for x in xs) / f          # in one session's variance
        df = self._df + m - 1
        against = sum(math.log(r) - math.log(a) for a, r in s.rounds) / m
        s.change_pct = _pct(against)
        last = m >= self.design.max_rounds
        if df == 0:                             # the endpoints' first round: no look yet
            return
        if s.kind == ENDPOINTS:                 # two-sided, rounds 2..max_rounds
            look = self.level / (2 * (self.design.max_rounds - 1))
        else:                                   # one-sided each way, rounds 1..max_rounds
            look = self.level / self.design.max_rounds
        q, var = _quantile(look, df), (self._sse + sse) / df      # one session's variance
        half = q * math.sqrt(f * var / m)
        lo, hi = mean - half, mean + half
        s.ci_low, s.ci_high = _pct(against - q * math.sqrt(2 * var / m)), \
            _pct(against + q * math.sqrt(2 * var / m))
        if s.kind == ENDPOINTS:
            apart = lo > 0 or hi < 0
            # with BAD in each step, the step's boundary is the midpoint itself: no precision
            if apart and (self.design.with_bad or half <= PRECISION * abs(mean)) or last:
                s.verdict = DIFFER if apart else NO_CHANGE
                if apart:
                    self._sign = 1.0 if lo > 0 else -1.0
                    self._c = mean / 2 if self.design.with_bad else (lo if lo > 0 else hi) / 2
        else:
            c = 0.0 if self.design.with_bad else self._c    # y's midpoint is 0 exactly
            beyond, short = (lo > c, hi < c) if self._sign > 0 else (hi < c, lo > c)
            if beyond or short or last:
                s.verdict = BAD if beyond else GOOD if short else UNKNOWN
                i = self._index[s.rev]
                if s.verdict == BAD:
                    self._bad = i
                elif s.verdict == GOOD:
                    self._good = i
                else:
                    self._aside.add(i)
        if s.verdict is not None:
            self._close(s)
            if s.verdict == NO_CHANGE:
                self._status = NO_CHANGE
            self._advance()

    def _close(self, s: Step) -> None:
        """A step ended: its rounds' spread joins the pooled variance."""
        if s.rounds:
            xs, f = self._values(s)
            mean = sum(xs) / len(xs)
            self._sse += sum((x - mean) ** 2 for x in xs) / f
            self._df += len(xs) - 1

    def _advance(self) -> None:
        """The next candidate, or the end: found, or gave up when its tests are spent."""
        if self._status is not None:
            return
        left = self._left()
        if not left:
            self._status = FOUND
        elif self._tests() >= self.budget:
            self._status = GAVE_UP
        else:
            i = left[(len(left) - 1) // 2]      # each classed step leaves at most half
            self._steps.append(Step(STEP, self._revs[i], alpha=self.level))

    # ----------------------------------------------------------------------- --resume

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe document of it all (every value finite)."""
        return {"format": FORMAT, "revisions": list(self._revs), "design": asdict(self.design),
                "steps": [{**asdict(s), "rounds": [list(r) for r in s.rounds]}
                          for s in self._steps]}

    @classmethod
    def from_dict(cls, d: object) -> Bisection:
        """The bisection a to_dict document holds, replayed round by round through the method,
        so a document whose verdicts its rounds do not give is refused (ValueError, one line)."""
        try:
            return cls._replay(d)
        except ValueError as e:
            raise ValueError(f"bisection state: {e}") from None

    @classmethod
    def _replay(cls, d: object) -> Bisection:
        doc = _keys(d, ("format", "revisions", "design", "steps"), "the document")
        if not is_whole(doc["format"]) or doc["format"] != FORMAT:
            raise ValueError(f"format {doc['format']!r} is not {FORMAT}")
        if not isinstance(doc["revisions"], list):
            raise ValueError("revisions is not a list")
        design = Design(**_keys(doc["design"], ("alpha", "max_rounds", "max_unknown",
                                                 "with_bad"), "design"))
        b = cls(doc["revisions"], design)
        if not isinstance(doc["steps"], list) or not doc["steps"]:
            raise ValueError("steps is not a list of steps (the endpoints first)")
        for n, raw in enumerate(doc["steps"]):
            s = _keys(raw, STEP_KEYS, f"step {n}")
            if not isinstance(s["kind"], str) or s["kind"] not in VERDICTS or \
                    not isinstance(s["rev"], str):
                raise ValueError(f"step {n}: kind {s['kind']!r} or rev {s['rev']!r} is not one")
            if s["rev"] not in b._index:
                raise ValueError(f"step {n}: revision {s['rev']!r} is not in the range")
            if s["verdict"] is not None and s["verdict"] not in VERDICTS[s["kind"]]:
                raise ValueError(f"step {n}: verdict {s['verdict']!r} is not one of "
                                 f"{s['kind']}'s")
            if not isinstance(s["rounds"], list) or not isinstance(s["reason"], str) or \
                    not isinstance(s["also"], list):
                raise ValueError(f"step {n}: rounds or also is not a list, or reason not a text")
            ask = b.next()
            if ask is None or (ask.kind, ask.rev) != (s["kind"], s["rev"]):
                raise ValueError(f"step {n}: {s['kind']} {s['rev']!r} stored where the steps "
                                 f"before it ask " + (f"{ask.kind} {ask.rev!r}" if ask else
                                                       "nothing (it was over)"))
            if len(s["also"]) != (len(s["rounds"]) if ask.also else 0):
                raise ValueError(f"step {n}: {len(s['also'])} sessions of BAD stored for "
                                 f"{len(s['rounds'])} rounds")
            for j, pair in enumerate(s["rounds"]):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ValueError(f"step {n}: round {j + 1} is not a pair of values")
                ask = b.next()
                if ask is None or ask.step != n:
                    raise ValueError(f"step {n}: {len(s['rounds'])} rounds stored, but its "
                                     f"verdict came at round {j}")
                try:
                    b.add(pair[0], pair[1], s["also"][j] if ask.also else None)
                except ValueError as e:
                    raise ValueError(f"step {n}: round {j + 1}: {e}") from None
            step = b._steps[n]
            if s["verdict"] == SKIPPED and step.verdict is None:
                b.next()
                b.skip(s["reason"])
            if n < len(doc["steps"]) - 1 and step.verdict is None:
                raise ValueError(f"step {n}: no verdict, yet steps follow it")
            for k in ("verdict", "alpha", "change_pct", "ci_low", "ci_high"):
                if not _same(s[k], getattr(step, k)):
                    raise ValueError(f"step {n} ({s['rev']}): {k} {s[k]!r} stored, its rounds "
                                     f"give {getattr(step, k)!r}")
        b._pending = None
        return b


def _session(name: str, v: object) -> float:
    if not isinstance(v, numbers.Real) or not is_number(v) or not math.isfinite(float(v)) \
            or float(v) <= 0:
        raise ValueError(f"a session value must be a finite number above 0, not {v!r} ({name})")
    return float(v)


def _keys(d: object, keys: Sequence[str], what: str) -> Mapping[str, Any]:
    if not isinstance(d, Mapping):
        raise ValueError(f"{what} is not an object")
    if set(d) != set(keys):
        odd = sorted(map(str, set(d) ^ set(keys)))
        raise ValueError(f"{what}: keys {', '.join(odd)} missing or unknown")
    return d


def _same(stored: object, got: object) -> bool:
    if stored is None or got is None or isinstance(got, str):
        return stored == got
    return is_number(stored) and math.isclose(float(stored), float(got),  # type: ignore[arg-type]
                                            rel_tol=1e-9, abs_tol=1e-12)
