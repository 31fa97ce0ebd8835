"""What a bisect's decision is made of (analysis.bisection holds the method): its design, the
round it asks for, a step (one test) and the answer, as the driver and the --resume document
see them."""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field


def is_number(v: object) -> bool:
    """A real number float() takes (not a bool, not an integer too large for a float)."""
    if not isinstance(v, numbers.Real) or isinstance(v, bool):
        return False
    try:
        float(v)
    except OverflowError:
        return False
    return True


def is_whole(v: object) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


@dataclass(frozen=True)
class Design:
    alpha: float = 0.05      # the whole path's bound on a wrong answer (--alpha)
    max_rounds: int = 8      # a step's cap, in rounds (a round: one session of each side)
    max_unknown: int = 3     # steps that may end "unknown" within the bound (more: it gives up)
    # added to BISECT.md's interface: a step's round also runs a session of BAD (Ask.also), and
    # the step asks whether the revision is nearer GOOD or BAD (analysis.bisection says why)
    with_bad: bool = False

    def __post_init__(self) -> None:
        if not is_number(self.alpha) or not 0 < float(self.alpha) < 1:
            raise ValueError(f"alpha must be a number between 0 and 1, not {self.alpha!r}")
        if not is_whole(self.max_rounds) or not 2 <= int(self.max_rounds) <= 10_000:
            raise ValueError(f"max_rounds must be a whole number from 2 to 10000, not "
                             f"{self.max_rounds!r}")
        if not is_whole(self.max_unknown) or not 0 <= int(self.max_unknown) <= 10_000:
            raise ValueError(f"max_unknown must be a whole number from 0 to 10000, not "
                             f"{self.max_unknown!r}")
        if not isinstance(self.with_bad, bool):
            raise ValueError(f"with_bad must be true or false, not {self.with_bad!r}")
        # numpy's numbers are taken, and held as Python's (to_dict is JSON)
        object.__setattr__(self, "alpha", float(self.alpha))
        object.__setattr__(self, "max_rounds", int(self.max_rounds))
        object.__setattr__(self, "max_unknown", int(self.max_unknown))

    def tests(self, candidates: int) -> int:
        """K for `candidates` revisions between GOOD and BAD (ceil(log2(n + 1)) is n's bit
        length)."""
        return 1 + candidates.bit_length() + self.max_unknown


@dataclass(frozen=True)
class Ask:
    """The next round to run: one session of `against`, one of `rev` (and of `also`), in the
    order `order` names them."""
    kind: str                # "endpoints" (rev is BAD, against GOOD) | "step"
    rev: str
    against: str             # GOOD
    step: int                # 0 for the endpoints, then 1, 2, ...
    round: int               # 1-based round within the step
    also: str | None = None  # added: BAD, when the round runs a session of it too (with_bad)
    # added: the round's sessions in the order to run them, alternated round by round (ABBA)
    # so that what a round's second session gains over its first (a warm cache) cancels
    # instead of reading as a change; with `also` the revision runs between the two, where a
    # linear drift over the round cancels too
    order: tuple[str, ...] = ()


@dataclass
class Step:
    """One test: the endpoints, or a candidate against GOOD."""
    kind: str
    rev: str
    rounds: list[tuple[float, float]] = field(default_factory=list)  # (against's, rev's)
    also: list[float] = field(default_factory=list)  # added: BAD's session a round (with_bad)
    verdict: str | None = None   # "differ" | "no change" (endpoints); "good" | "bad" |
                                 # "unknown" | "skipped" (steps); None while running
    reason: str = ""             # a skip's why, as the caller said it (on one line)
    alpha: float = 0.0           # the level this step was tested at (0: it spent nothing)
    change_pct: float | None = None  # rev against GOOD: the rounds' mean, as %
    ci_low: float | None = None      # its interval at the last look: each bound holds at
    ci_high: float | None = None     # 1 - alpha whatever round it stopped at

    @property
    def sessions(self) -> int:
        """Its sessions, every side (added to the interface)."""
        return 2 * len(self.rounds) + len(self.also)


@dataclass(frozen=True)
class Outcome:
    status: str              # "found" | "no change" | "gave up" (its tests spent)
    first_bad: str | None
    last_good: str | None
    skipped: tuple[str, ...] # between last_good and first_bad (or earliest_bad), not classed
    change_pct: float | None # the endpoints': BAD against GOOD
    ci_low: float | None
    ci_high: float | None
    alpha: float             # the design's: the bound on the whole path
    sessions: int            # all sessions so far, both sides
    steps: tuple[Step, ...]
    # added to BISECT.md's interface:
    earliest_bad: str | None = None      # the earliest classed bad (first_bad when found;
                                         # when it gave up, the first bad is it or skipped)
    boundary_pct: float | None = None    # c as %: a step is bad beyond it, good short of it
    tests: int = 0                       # tests spent (steps with rounds)...
    budget: int = 0                      # ...of K, each at alpha / K


@dataclass(frozen=True)
class Progress:
    """Where a bisection stands (added to the interface: for the driver's progress line)."""
    step: int                # the step being run (0: the endpoints)
    left: int                # candidates between last good and first bad not yet classed
    sessions: int
    tests: int
    budget: int
