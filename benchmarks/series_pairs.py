"""Does testing a series on its pairs of sessions beat testing its sessions unpaired?

Synthetic series (no process is started): two kernels A and B, K sessions each in the order a
series runs them (`run --sessions K`: A B, B A, A B...), every session RUNS lognormal runs with a
spread of WITHIN % around its own level.  A session's level is the kernel's, times an offset of
its own (lognormal, BETWEEN %), times the sitting's drift at the session's place: a random walk
whose steps are DRIFT x BETWEEN % (0: no drift; 1: the machine moves from one session to the
next by as much as sessions differ anyway).  Each series is judged both ways compare can judge
it, with compare's own functions: unpaired (significance.sessions_test: sessions as independent
replicates) and paired (series_pairs.pairs_test: session i of A against session i of B).

A/A rows (B = A): every call is a false alarm.  Other rows: B slower by CHANGE %; the share of
series called, in the right direction, is the power.

    python benchmarks/series_pairs.py [--sessions 3,6,10] [--within 1] [--between 2]
        [--drift 0,0.5,1] [--change 3] [--runs 20] [--trials 2000] [--markdown]
"""
from __future__ import annotations

import argparse

import numpy as np

from hotloop.analysis import series_pairs, significance
from hotloop.run.series import order


def one_series(rng: np.random.Generator, k: int, runs: int, within: float, between: float,
               drift: float, change: float) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A and B's sessions (lists of runs), in session-number order."""
    seq = order(2, k)
    walk = np.cumsum(rng.normal(0.0, drift * between, len(seq)))
    sides: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for pos, kernel in enumerate(seq):
        level = walk[pos] + rng.normal(0.0, between) + (np.log1p(change) if kernel else 0.0)
        sides[kernel].append(np.exp(level + rng.normal(0.0, within, runs)))
    return sides


def called(o: significance.Outcome, change: float) -> bool:
    if not o.significant or o.ci_low is None or o.ci_high is None:
        return False
    return o.ci_low > 0 if change > 0 else o.ci_high < 0 if change < 0 else True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", default="3,6,10", help="sessions a kernel, comma-separated")
    ap.add_argument("--within", type=float, default=1.0, help="runs' spread in a session, %%")
    ap.add_argument("--between", type=float, default=2.0, help="sessions' own offset, %%")
    ap.add_argument("--drift", default="0,0.5,1",
                    help="the drift's step, in units of --between, comma-separated")
    ap.add_argument("--change", type=float, default=3.0, help="B's change, %%")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    w, b = args.within / 100, args.between / 100
    rows = []
    for k in (int(x) for x in args.sessions.split(",")):
        for drift in (float(x) for x in args.drift.split(",")):
            cell = [f"{k}", f"{drift:g}"]
            for change in (0.0, args.change / 100):
                hits = {"unpaired": 0, "paired": 0}
                for _ in range(args.trials):
                    a, bb = one_series(rng, k, args.runs, w, b, drift, change)
                    if called(significance.sessions_test(a, bb), change):
                        hits["unpaired"] += 1
                    if called(series_pairs.pairs_test(a, bb), change):
                        hits["paired"] += 1
                cell += [f"{100 * hits['unpaired'] / args.trials:.1f}%",
                         f"{100 * hits['paired'] / args.trials:.1f}%"]
            rows.append(cell)
    head = ["sessions a kernel", "drift step", "A/A unpaired", "A/A paired",
            f"power unpaired ({args.change:g}%)", f"power paired ({args.change:g}%)"]
    print(f"within {args.within:g}%, between {args.between:g}%, {args.runs} runs a session, "
          f"{args.trials} series a cell, seed {args.seed}")
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


if __name__ == "__main__":
    main()
