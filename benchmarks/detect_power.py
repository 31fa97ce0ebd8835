"""Does the console's "detect" figure mean what it says: the real power, at the change it
states, of compare's test on one session a side with that calibration?

Synthetic sessions (lognormal runs spread `--within`, each session offset by a session noise
of 2-4%), 30 runs; each trial draws a fresh 8-session calibration (`noise.metric_noise`), the
figure the console states from it (`console.live.LiveRun.detectable`, and the former t.975 +
t.8 on the calibration's point value for comparison), then two fresh sessions whose true
change is that figure, judged by compare's code with that calibration (`judge.test_metric`):
the share called the right way is the real power at the stated figure.

    python benchmarks/detect_power.py [--trials 2000]
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from hotloop.analysis.judge import test_metric
from hotloop.analysis.metrics import SPEED, MetricValues
from hotloop.analysis.noise import MIN_SESSIONS, metric_noise
from hotloop.console.live import LiveRun
from hotloop.stats import detectable_pct


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--within", type=float, default=2.0, help="runs' spread, %%")
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    rng = np.random.default_rng(6)
    t0 = time.monotonic()
    w, n = args.within / 100, args.runs

    def session(sd: float, effect: float = 0.0) -> list[float]:
        return np.exp(rng.normal(rng.normal(0, sd) + math.log1p(effect), w, n)).tolist()

    print(f"synthetic: runs spread {args.within:g}%, {n} runs a session, 8-session "
          f"calibrations, {args.trials} trials a cell")
    print("| sessions apart | stated figure (median) | power, stated now (90% upper bound) "
          "| power, stated before (t.975 + t.8 on the point value) |")
    print("|---:|---:|---:|---:|")
    for sd in (0.02, 0.03, 0.04):
        hits = {"now": 0, "before": 0}
        figures = []
        for _ in range(args.trials):
            cal = metric_noise([session(sd) for _ in range(MIN_SESSIONS)])
            live = LiveRun("p", n, 0, "x")
            for v in session(sd):
                live.add(v)
            live.noise = cal
            stated = {"now": live.detectable(),
                      "before": detectable_pct(cal.at(n), 1, cal.df)}
            figures.append(stated["now"])
            for k, d in stated.items():
                assert d is not None
                base = [MetricValues("v", "", True, SPEED, session(sd))]
                new = [MetricValues("v", "", True, SPEED, session(sd, d / 100))]
                t = test_metric(base, new, calibrated=cal)
                hits[k] += t.significant and t.ci_low is not None and t.ci_low > 0
        print(f"| {100 * sd:g}% | {np.median(figures):.1f}% | "
              f"{100 * hits['now'] / args.trials:.1f}% | "
              f"{100 * hits['before'] / args.trials:.1f}% |")
    print(f"{time.monotonic() - t0:.0f}s")


if __name__ == "__main__":
    main()
