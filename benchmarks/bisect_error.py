"""How often does a bisect name the wrong revision, and what does it spend?

Synthetic sittings through the real decision (analysis.bisection.Bisection; no process is
started): a range of REVISIONS (GOOD, the candidates, BAD), the first bad drawn uniformly among
the revisions after GOOD, every revision from it on CHANGE % slower.  A round is one session of
GOOD and one of the revision asked, each session's value lognormal with a spread of NOISE %
around its level, times the sitting's drift at that round (a random walk, its step DRIFT x
NOISE %, shared by the round's sessions).  Each candidate fails to build with probability
BROKEN (skipped, as the driver does).  With --with-bad, a step's round runs a session of BAD
too (Design.with_bad: the step asks whether the revision is nearer GOOD or BAD).  With
--bad-noise F the revisions from the first bad on (BAD too) are F times as noisy: the pooled
variance assumes one noise for all, and this is what it costs when that fails.  With
--order-effect E, a round's second session is E % faster than its first (and a third 2E %):
the sessions run in the order the ask gives (Ask.order: alternated round by round, the
revision between GOOD and BAD with --with-bad), or with --fixed-order GOOD first every round.

A wrong answer: a revision named ("found") that is not the first bad while the first bad is
not among `skipped`, or, when it gave up, the first bad neither its earliest bad nor among
`skipped`; in a range with no change, any revision named.  Each cell's wrong-answer rate comes
with its one-sided 95% upper bound (Clopper-Pearson, scipy's beta quantile): the stated bound,
alpha, holds where that upper bound is below it.

    python benchmarks/bisect_error.py [--revisions 16,1000] [--changes 0,5,10,25]
        [--noise 1,5] [--trials 4000] [--broken 0.05] [--drift 1] [--alpha 0.05]
        [--max-rounds 8] [--max-unknown 3] [--with-bad] [--bad-noise 1]
        [--order-effect 0] [--fixed-order] [--seed 45] [--markdown]
"""
from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from hotloop.analysis.bisection import Bisection, Design, Outcome
from hotloop.analysis.significance import sps


@dataclass
class Cell:
    trials: int = 0
    wrong: int = 0
    named: int = 0              # the first bad named
    among_skipped: int = 0      # found, the first bad among `skipped`
    no_change: int = 0          # said "no change"
    gave_up: int = 0
    sessions: list[int] = field(default_factory=list)

    def upper(self) -> float:
        """The wrong-answer rate's one-sided 95% upper bound (Clopper-Pearson)."""
        if self.wrong >= self.trials:
            return 1.0
        return float(sps.beta.ppf(0.95, self.wrong + 1, self.trials - self.wrong))


def sitting(rng: np.random.Generator, revisions: int, change: float, noise: float,
            drift: float, broken: float, design: Design, cell: Cell,
            bad_noise: float = 1.0, order: float = 0.0, alternate: bool = True) -> None:
    """One bisect of a synthetic range, its answer tallied in `cell`."""
    revs = [f"r{i}" for i in range(revisions)]
    first = int(rng.integers(1, revisions)) if change else revisions   # none when no change
    fails = rng.random(revisions) < broken
    b = Bisection(revs, design)
    walk = 0.0
    while (ask := b.next()) is not None:
        i = int(ask.rev[1:])
        if ask.kind == "step" and fails[i]:
            b.skip("build exited 2")
            continue
        walk += rng.normal(0.0, drift * noise)
        level, spread = (math.log1p(change), noise * bad_noise) if i >= first else (0.0, noise)
        bad = math.exp(walk + math.log1p(change) + rng.normal(0.0, noise * bad_noise)) \
            if ask.also else None
        # a session's place in its round: as the ask orders them, or GOOD first every round
        sides = ask.order if alternate else (ask.against, ask.rev, *([ask.also] * bool(bad)))
        place = {side: k for k, side in enumerate(sides)}
        b.add(math.exp(walk + rng.normal(0.0, noise) - order * place[ask.against]),
              math.exp(walk + level + rng.normal(0.0, spread) - order * place[ask.rev]),
              None if bad is None else bad * math.exp(-order * place[revs[-1]]))
    tally(cell, b.outcome(), revs[first] if change else None)


def tally(cell: Cell, o: Outcome, truth: str | None) -> None:
    """One answer counted: `truth` the first bad (None: no change in the range)."""
    cell.trials += 1
    cell.sessions.append(o.sessions)
    if o.status == "found":
        if truth == o.first_bad:
            cell.named += 1
        elif truth in o.skipped:
            cell.among_skipped += 1
        else:
            cell.wrong += 1
    elif o.status == "gave up":
        cell.gave_up += 1
        if truth is None or (truth != o.earliest_bad and truth not in o.skipped):
            cell.wrong += 1
    else:
        cell.no_change += 1


def pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%"


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--revisions", default="16,1000", help="range sizes, GOOD and BAD included")
    ap.add_argument("--changes", default="0,5,10,25", help="BAD's change, %%, comma-separated")
    ap.add_argument("--noise", default="1,5", help="a session's spread, %%, comma-separated")
    ap.add_argument("--trials", type=int, default=4000, help="bisects a cell")
    ap.add_argument("--broken", type=float, default=0.05,
                    help="the chance a candidate fails to build")
    ap.add_argument("--drift", type=float, default=1.0,
                    help="the sitting's drift step, in units of the session noise")
    ap.add_argument("--alpha", type=float, default=Design.alpha)
    ap.add_argument("--max-rounds", type=int, default=Design.max_rounds)
    ap.add_argument("--max-unknown", type=int, default=Design.max_unknown)
    ap.add_argument("--with-bad", action="store_true",
                    help="a step's round runs BAD too (Design.with_bad)")
    ap.add_argument("--bad-noise", type=float, default=1.0,
                    help="the bad revisions' noise, in units of the good ones'")
    ap.add_argument("--order-effect", type=float, default=0.0,
                    help="a round's second session faster than its first by this, %%")
    ap.add_argument("--fixed-order", action="store_true",
                    help="GOOD first in every round (not alternated)")
    ap.add_argument("--seed", type=int, default=45)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    design = Design(args.alpha, args.max_rounds, args.max_unknown, args.with_bad)
    rng = np.random.default_rng(args.seed)
    started = time.monotonic()
    rows, cells = [], []
    for n in (int(x) for x in args.revisions.split(",")):
        for noise in (float(x) for x in args.noise.split(",")):
            for change in (float(x) for x in args.changes.split(",")):
                cell = Cell()
                for _ in range(args.trials):
                    sitting(rng, n, change / 100, noise / 100, args.drift, args.broken,
                            design, cell, args.bad_noise, math.log1p(args.order_effect / 100),
                            not args.fixed_order)
                t = cell.trials
                rows.append([f"{n}", f"{change:g}%", f"{noise:g}%", pct(cell.wrong, t),
                             f"{100 * cell.upper():.2f}%", pct(cell.named, t),
                             pct(cell.among_skipped, t), pct(cell.no_change, t),
                             pct(cell.gave_up, t), f"{np.mean(cell.sessions):.1f}",
                             f"{max(cell.sessions)}"])
                cells.append((change, cell))
    took = time.monotonic() - started
    head = ["revisions", "change", "session noise", "wrong", "wrong, 95% upper bound",
            "first bad named", "among skipped", "said no change", "gave up",
            "sessions (mean)", "sessions (max)"]
    print("$ python " + " ".join(shlex.quote(a) for a in ["benchmarks/bisect_error.py",
                                                           *sys.argv[1:]]))
    print(f"alpha {design.alpha:g}, max_rounds {design.max_rounds}, max_unknown "
          f"{design.max_unknown}, a step's round "
          f"{'GOOD, the revision, BAD' if design.with_bad else 'GOOD and the revision'}; "
          f"{args.trials} bisects a cell, {args.broken:g} of candidates "
          f"broken, drift step {args.drift:g} x the session noise, bad revisions "
          f"{args.bad_noise:g} x as noisy, order effect {args.order_effect:g}% "
          f"({'fixed' if args.fixed_order else 'alternated'}), seed {args.seed}; "
          f"{took:.0f} s")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "|".join("---:" for _ in head) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        print("  ".join(h.rjust(wd) for h, wd in zip(head, widths)))
        for r in rows:
            print("  ".join(c.rjust(wd) for c, wd in zip(r, widths)))
    held = all(c.upper() <= design.alpha for _, c in cells)
    quiet = [c.no_change / c.trials for ch, c in cells if ch == 0]
    print(f"the bound (wrong <= {design.alpha:g}): "
          + ("held in every cell, at the 95% upper bound" if held else
             "NOT shown in every cell at the 95% upper bound (more trials, or it fails)")
          + (f"; no change said in {100 * min(quiet):.1f}% or more of the ranges without one"
             if quiet else ""))


if __name__ == "__main__":
    main()
