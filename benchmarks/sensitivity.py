"""Can hotloop's verdict be trusted across sessions, and how small a change does it find?

Every measurement is a real `hotloop run` session (the command line, a fresh worker, one result
file each), judged with the statistics `hotloop compare` uses (`hotloop.analysis.compare.test_metric`).
A `spin` knob (zero_null's, or a private workload's) adds known work per op.

Separate sessions (the cross-kernel case: stock and patched are never in one session):

* A pool of baseline sessions (A) and of spun sessions (B), run alternately (A, B, A, B...) so
  drift hits both, plus `--calibration` more A sessions that make a noise profile, as
  `hotloop calibrate` would.
* For k = 1, 3, 5 sessions a side, `--trials` times: k A sessions against k other A sessions
  (A/A: any verdict is a false positive) and k A against k B (detection), drawn from the pools
  without overlap within a trial.  Each with and without the calibration, and, for reference,
  the test hotloop used before (every run an independent sample: Mann-Whitney U on the pooled
  runs), which is what pyperf-style and benchstat-style comparisons of one session do.

Interleaved (`--interleaved`): batches of A, A2 (the same settings) and B run as variants of one
interleaved batch (each variant in 5 worker processes in turn, as `--interleave` does),
compared round by round (the paired test), on the first N/5 rounds of every process's block
for each N in `--rounds`.

Synthetic (`--simulate WITHIN,BETWEEN`): lognormal sessions with these CVs in percent, no runs:
checks the statistics against known noise.  With `--modes`, the table of A/A false positives
and power per mode the README shows (unequal runs, quieter or thin calibrations, copies,
outliers, 4 sides against one baseline), each judged as compare judges it (deduplicated,
corrected for the number of sides).

    python benchmarks/sensitivity.py [--workload zero_null] [--param count=100000]
        [--cpu same-core] [--runs 30] [--pool 30] [--calibration 8] [--trials 40]
        [--slowdown 5] [--markdown]
    python benchmarks/sensitivity.py --interleaved --slowdowns 1,2 --rounds 10,20,40,80
    python benchmarks/sensitivity.py --simulate 2,2.5 --runs 30 --trials 400
    python benchmarks/sensitivity.py --simulate 2,2.5 --modes --trials 1000
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy import stats as sps

from hotloop import catalog, results
from hotloop.analysis import compare as compare_mod
from hotloop.analysis import significance
from hotloop.analysis.compare import Verdict, compare_samples, test_metric
from hotloop.analysis.metrics import SPEED, Series
from hotloop.analysis.noise import MetricNoise, metric_noise

ROOT = Path(__file__).resolve().parent.parent

PROFILES: list[str] = []


def run_session(work: Path, args: argparse.Namespace, spin: int, tag: str) -> list[float]:
    out = work / f"{tag}.jsonl"
    argv = [sys.executable, "-m", "hotloop", "run", args.workload, "--runs", str(args.runs),
            "--warmup", str(args.warmup), "--no-perf", "--out", str(out),
            "--param", f"spin={spin}"]
    if args.cpu:
        argv += ["--cpu", args.cpu]
    for p in args.param:
        argv += ["--param", p]
    for d in PROFILES:
        argv += ["--profiles", d]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=work,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    if proc.returncode != 0:
        raise SystemExit(f"hotloop run failed: {proc.stderr.strip().splitlines()[-1:]}")
    values = results.read(out).values
    out.unlink()
    return values


def cost_per_op(values: list[float], hib: bool) -> float:
    m = statistics.median(values)
    return 1 / m if hib else m


def spin_for(work: Path, args: argparse.Namespace, hib: bool, target_pct: float) -> int:
    """The spin count that slows an op by about `target_pct`: a slope from a large spin (an
    effect far above the noise), then one correction at the spin that slope gives (the cost
    of a spin iteration is not linear down to 0).  Each effect is measured as the median
    per-round ratio of an interleaved batch of spin 0 and the spin, so session noise does
    not enter it."""
    def slowdown(spin: int) -> float:
        batch = interleaved_batches(args, {"A": 0, "S": spin}, work, batches=1, rounds=40,
                                    processes=1)
        ratios = sorted(a / s if hib else s / a for a, s in zip(batch["A"][0], batch["S"][0]))
        return ratios[len(ratios) // 2] - 1
    probe = args.calibrate_spin
    big = slowdown(probe)
    if big < 0.05:
        raise SystemExit(f"spin={probe} slowed the op by only {100 * big:.1f}%: "
                         f"raise --calibrate-spin")
    spin = max(1, round(target_pct / 100 / (big / probe)))
    got = slowdown(spin)
    return max(1, round(spin * target_pct / 100 / got)) if got > 0 else spin


def series(values: list[float], hib: bool) -> Series:
    return Series("value", "", hib, SPEED, values)


def naive(base: list[list[float]], new: list[list[float]]) -> bool:
    """The test before sessions counted: every run an independent sample."""
    x = [v for s in base for v in s]
    y = [v for s in new for v in s]
    return bool(sps.mannwhitneyu(x, y).pvalue < significance.ALPHA)


def separate(pool_a: list[list[float]], pool_b: list[list[float]],
             calib: list[list[float]], k_calib: int, hib: bool, trials: int,
             rng: np.random.Generator, sides: tuple[int, ...] = (1, 3, 5)) -> list[list[str]]:
    """Each trial draws its own calibration of `k_calib` sessions from the `calib` pool, so
    the rates are over calibrations too, as over all the users who calibrate."""
    def calibration() -> MetricNoise:
        return metric_noise([calib[i] for i in rng.permutation(len(calib))[:k_calib]])
    rows = []
    for k in sides:
        if 2 * k > len(pool_a) or k > len(pool_b):
            continue
        counts = {"naive": [0, 0], "raw": [0, 0], "cal": [0, 0]}
        for _ in range(trials):
            pick = rng.permutation(len(pool_a))
            a1 = [pool_a[i] for i in pick[:k]]
            a2 = [pool_a[i] for i in pick[k:2 * k]]
            b = [pool_b[i] for i in rng.permutation(len(pool_b))[:k]]
            noise = calibration()
            for j, other in enumerate((a2, b)):
                counts["naive"][j] += naive(a1, other)
                for name, cal in (("raw", None), ("cal", noise)):
                    t = test_metric([series(s, hib) for s in a1], [series(s, hib) for s in other],
                                    calibrated=cal)
                    counts[name][j] += t.significant and (j == 0 or t.verdict is Verdict.BAD)
        for name, label in (("naive", "runs as independent samples (before)"),
                            ("raw", "sessions, no calibration"),
                            ("cal", f"sessions + calibration ({k_calib} sessions)")):
            aa, hit = counts[name]
            rows.append([str(k), label, f"{100 * aa / trials:.0f}%", f"{100 * hit / trials:.0f}%"])
    return rows


# --------------------------------------------------------------------------- synthetic modes

def _session(rng: np.random.Generator, runs: int, within: float, between: float,
             effect: float = 0.0, outliers: float = 0.0) -> list[float]:
    """One synthetic session of a rate (higher is better): lognormal runs around a session
    offset; `outliers`, a share of runs 3x slower (a third of the rate)."""
    off = rng.normal(0, between)
    x = np.exp(rng.normal(off + np.log1p(effect), within, runs))
    if outliers:
        x = np.where(rng.random(runs) < outliers, x * 3, x)
    return (1 / x).tolist()


def _calibration(rng: np.random.Generator, k: int, runs: int, within: float,
                 between: float) -> MetricNoise | None:
    """A calibration of `k` sessions, or None where hotloop refuses one that thin (a profile
    of fewer than noise.MIN_SESSIONS sessions is not used)."""
    from hotloop.analysis import noise
    if k < noise.MIN_SESSIONS:
        return None
    return metric_noise([_session(rng, runs, within, between) for _ in range(k)])


def _distinct(side: list[list[float]]) -> list[list[float]]:
    """A side's sessions, each content once: what compare does with copied files (by their
    sha256, `compare.distinct`)."""
    seen: list[list[float]] = []
    for s in side:
        if s not in seen:
            seen.append(s)
    return seen


def _called(base: list[list[float]], sides: list[list[list[float]]],
            cal: MetricNoise | None) -> tuple[list[Verdict | None], list[bool]]:
    """Each later side against the baseline, as compare judges the primary metric: the
    verdicts (None: compare refuses the side, nothing but copies of one session), and
    whether each is called after the correction for the number of sides."""
    if any(len(_distinct(s)) == 1 < len(s) for s in [base, *sides]):
        return [None] * len(sides), [False] * len(sides)
    base = _distinct(base)
    tests = [test_metric([series(s, True) for s in base],
                         [series(s, True) for s in _distinct(side)], calibrated=cal)
             for side in sides]
    tests = compare_mod.correct_sides(tests)
    return [t.verdict for t in tests], [t.significant for t in tests]


# mode: (label, sessions a side, runs of each compared session (cycled), calibration
# sessions (0: none), calibration runs, calibration between-noise factor, copies a session,
# outlier share, later sides, effect (%) for the power column; and where the mode needs its
# own noise, (within, between) CVs in %: unequal runs matter where the runs' part of a
# session's variance is large, noisy runs and quiet sessions)
MODES = [
    ("1 a side, assumed noise", 1, (30,), 0, 30, 1.0, 1, 0.0, 1, 10.0),
    ("1 a side, assumed noise, sessions 6% apart (beyond what it assumes)", 1, (30,), 0, 30,
     1.0, 1, 0.0, 1, 10.0, (2, 6)),
    ("1 a side, calibrated (8)", 1, (30,), 8, 30, 1.0, 1, 0.0, 1, 10.0),
    ("3 a side, measured", 3, (30,), 0, 30, 1.0, 1, 0.0, 1, 5.0),
    ("3 a side, calibrated (8)", 3, (30,), 8, 30, 1.0, 1, 0.0, 1, 5.0),
    ("5 a side, calibrated (8)", 5, (30,), 8, 30, 1.0, 1, 0.0, 1, 5.0),
    ("unequal runs: 10 vs 200, calibrated at 30 (runs 10%, sessions 1%)", 1, (10, 200), 8,
     30, 1.0, 1, 0.0, 1, 10.0, (10, 1)),
    ("unequal runs: 3 a side of 10/200/10, calibrated at 30 (10%, 1%)", 3, (10, 200, 10), 8,
     30, 1.0, 1, 0.0, 1, 5.0, (10, 1)),
    ("200 runs, calibrated at 30 (10%, 1%)", 1, (200,), 8, 30, 1.0, 1, 0.0, 1, 10.0, (10, 1)),
    ("quieter calibration (1/3 the session noise), 1 a side", 1, (30,), 8, 30, 1 / 3, 1, 0.0,
     1, 10.0),
    ("quieter calibration, 3 a side", 3, (30,), 8, 30, 1 / 3, 1, 0.0, 1, 5.0),
    ("thin calibration (4 sessions), 1 a side", 1, (30,), 4, 30, 1.0, 1, 0.0, 1, 10.0),
    ("copies: 2 copies of 1 session a side", 1, (30,), 0, 30, 1.0, 2, 0.0, 1, 10.0),
    ("copies: 2 sessions a side, one of them given 3 times, calibrated", 2, (30,), 8, 30,
     1.0, 3, 0.0, 1, 10.0),
    ("outliers: 5% of runs 3x slower, 1 a side", 1, (30,), 0, 30, 1.0, 1, 0.05, 1, 10.0),
    ("outliers, 3 a side", 3, (30,), 0, 30, 1.0, 1, 0.05, 1, 10.0),
    ("4 sides against one baseline, 3 a side (family-wise)", 3, (30,), 0, 30, 1.0, 1, 0.0, 4,
     5.0),
    ("4 sides, 3 a side, calibrated (family-wise)", 3, (30,), 8, 30, 1.0, 1, 0.0, 4, 5.0),
]


def simulate_modes(base_w: float, base_b: float, trials: int,
                   rng: np.random.Generator) -> list[list[str]]:
    """For each mode, `trials` A/A comparisons (any call is a false positive; with several
    sides, any call among them: the family-wise rate) and as many with the effect in the
    first later side (found: called the right way).  Fresh sessions and a fresh calibration
    every trial.  The last column is the share of A/A trials hotloop gave no verdict on
    (too noisy to call, too few runs, a side of nothing but copies refused): where it cannot
    call, it says so."""
    out = []
    for label, k, runs, k_cal, cal_runs, cal_factor, copies, outl, n_sides, effect, *own \
            in MODES:
        within, between = (own[0][0] / 100, own[0][1] / 100) if own else (base_w, base_b)
        aa = found = silent = 0
        def side(eff: float = 0.0, later: int = 1, k: int = k, runs: tuple[int, ...] = runs,
                 outl: float = outl, copies: int = copies, within: float = within,
                 between: float = between) -> list[list[float]]:
            # the run counts cycle: the baseline from the first, a later side from the second
            one = [_session(rng, runs[(i + later) % len(runs)], within, between, eff, outl)
                   for i in range(k)]
            return one[:1] * copies + one[1:]      # the first session given `copies` times
        for _ in range(trials):
            cal = _calibration(rng, k_cal, cal_runs, within, between * cal_factor) \
                if k_cal else None
            base = side(later=0)
            verdicts, called = _called(base, [side() for _ in range(n_sides)], cal)
            aa += any(called)
            silent += verdicts[0] in (None, Verdict.TOO_FEW_RUNS, Verdict.TOO_NOISY)
            verdicts, called = _called(base, [side(effect / 100)]
                                       + [side() for _ in range(n_sides - 1)], cal)
            found += called[0] and verdicts[0] is Verdict.BAD
        err = 100 * 2 * (0.05 * 0.95 / trials) ** 0.5
        out.append([label, f"{100 * aa / trials:.1f}%", f"±{err:.1f}",
                    f"+{effect:g}%: {100 * found / trials:.0f}%",
                    f"{100 * silent / trials:.0f}%"])
    return out



PROCESSES = 5                           # interleaved: worker processes a variant (the default)


def first(values: list[float], n: int) -> list[float]:
    """The first n // PROCESSES rounds of each process's block: a batch of n rounds."""
    size = len(values) // PROCESSES
    return [v for b in range(PROCESSES) for v in values[b * size:b * size + n // PROCESSES]]


def interleaved_batches(args: argparse.Namespace, spins: dict[str, int], work: Path,
                        batches: int | None = None, rounds: int | None = None,
                        processes: int = PROCESSES) -> dict[str, list[list[float]]]:
    from hotloop import events as ev
    from hotloop.run.interleave import interleave
    from hotloop.run.session import Session
    cat = catalog.load([Path(d) for d in PROFILES])
    plan = cat.plan_for(args.workload)
    w = cat.workloads[plan.workload]
    typed = {k: w.params[k].parse(v) for k, v in (p.split("=", 1) for p in args.param)}
    nmax = rounds or max(int(x) for x in args.rounds.split(","))
    out: dict[str, list[list[float]]] = {k: [] for k in spins}
    for b in range(batches or args.batches):
        runs = []
        for k, spin in spins.items():
            p = replace(plan, cpu=args.cpu or plan.cpu, runs=nmax, warmup=args.warmup,
                        perf=False, params={**plan.params, **typed, "spin": spin},
                        processes=processes)
            runs.append(Session(cat.resolve(p), work / f"{k}-{b}.jsonl", variant=k))
        values: dict[str, list[float]] = {k: [] for k in spins}

        async def collect(runs: list[Session], values: dict[str, list[float]]) -> None:
            async for e in interleave(runs):
                if isinstance(e, ev.RunSample) and not e.warmup:
                    values[e.variant].append(e.value)
        asyncio.run(collect(runs, values))
        for k in spins:
            out[k].append(values[k])
        print(f"batch {b + 1}/{batches or args.batches}", file=sys.stderr)
    return out


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="zero_null")
    ap.add_argument("--param", action="append", default=[], metavar="K=V")
    ap.add_argument("--cpu", default=None)
    ap.add_argument("--runs", type=int, default=30, help="runs per session")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--pool", type=int, default=30, help="A sessions (and as many B)")
    ap.add_argument("--calibration", type=int, default=8,
                    help="sessions a calibration has, drawn afresh for each trial from...")
    ap.add_argument("--calibration-pool", type=int, default=40,
                    help="...a pool of this many A sessions apart from the compared ones")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--sides", default="1,3,5", help="sessions a side, comma separated")
    ap.add_argument("--slowdown", type=float, default=5.0, help="%% the B sessions carry")
    ap.add_argument("--interleaved", action="store_true")
    ap.add_argument("--slowdowns", default="1,2", help="interleaved: %%, comma separated")
    ap.add_argument("--rounds", default="10,20,40,80", help="interleaved: rounds compared")
    ap.add_argument("--batches", type=int, default=10, help="interleaved batches")
    ap.add_argument("--calibrate-spin", type=int, default=2000)
    ap.add_argument("--simulate", metavar="WITHIN,BETWEEN", default=None)
    ap.add_argument("--modes", action="store_true",
                    help="with --simulate: the table of A/A and power per mode (unequal runs, "
                         "quieter or thin calibrations, copies, outliers, 4 sides)")
    ap.add_argument("--profiles", action="append", default=[], metavar="DIR")
    args = ap.parse_args()
    if not any(p.startswith("count=") for p in args.param):
        args.param.append("count=100000")
    PROFILES[:] = [str(Path(d).resolve()) for d in args.profiles]
    rng = np.random.default_rng(1)
    sides = tuple(int(x) for x in args.sides.split(","))
    t0 = time.monotonic()

    if args.simulate:
        within, between = (float(x) / 100 for x in args.simulate.split(","))
        if args.modes:
            print(f"synthetic: within-session CV {100 * within:g}%, session-to-session "
                  f"{100 * between:g}%, {args.trials} trials a cell ({time.monotonic() - t0:.0f}s)")
            print(table(["mode", "A/A called", "2 x sim. error at 5%", "found",
                         "A/A: no verdict"], simulate_modes(within, between, args.trials, rng)))
            print(f"{time.monotonic() - t0:.0f}s", file=sys.stderr)
            return

        def one(effect: float = 0.0) -> list[float]:
            off = rng.normal(0, between)
            return (np.exp(rng.normal(off + np.log1p(effect), within, args.runs))).tolist()
        pool_a = [one() for _ in range(args.pool)]
        pool_b = [[1 / v for v in one(args.slowdown / 100)] for _ in range(args.pool)]
        pool_a = [[1 / v for v in s] for s in pool_a]      # a rate: higher is better
        calib = [[1 / v for v in one()] for _ in range(args.calibration_pool)]
        print(f"synthetic: within-session CV {100 * within:g}%, session-to-session "
              f"{100 * between:g}%, {args.runs} runs a session, +{args.slowdown:g}% in B")
        print(table(["sessions/side", "method", "A/A false positive", f"+{args.slowdown:g}% found"],
                    separate(pool_a, pool_b, calib, args.calibration, True, args.trials,
                             rng, sides)))
        return

    wl = catalog.load([Path(d) for d in PROFILES]).workloads.get(args.workload)
    if wl is None or "spin" not in wl.params:
        raise SystemExit(f"workload {args.workload} has no spin param")
    hib = wl.higher_is_better
    with tempfile.TemporaryDirectory(prefix="hotloop-sensitivity-") as tmp:
        work = Path(tmp)
        if args.interleaved:
            pcts = [float(x) for x in args.slowdowns.split(",")]
            spins = {"A": 0, "A2": 0}
            spins.update({f"+{p:g}%": spin_for(work, args, hib, p) for p in pcts})
            batches = interleaved_batches(args, spins, work)
            effect = {k: 100 * (cost_per_op([v for s in batches[k] for v in s], hib)
                                / cost_per_op([v for s in batches["A"] for v in s], hib) - 1)
                      for k in spins if k.startswith("+")}
            rows = []
            for n in (int(x) for x in args.rounds.split(",")):
                cells = [str(n)]
                for k in ["A2", *effect]:
                    hits = sum(compare_samples(first(a, n), first(b, n), higher_is_better=hib,
                                               paired=[n // PROCESSES] * PROCESSES).significant
                               for a, b in zip(batches["A"], batches[k]))
                    cells.append(f"{100 * hits / args.batches:.0f}%")
                rows.append(cells)
            print(f"\n{args.workload} {' '.join(args.param)}, cpu {args.cpu or 'default'}, "
                  f"{args.batches} interleaved batches, {time.monotonic() - t0:.0f}s; measured "
                  + ", ".join(f"{k}: {v:+.2f}%" for k, v in effect.items()))
            print(table(["rounds", "A/A false positive"]
                        + [f"{k} ({effect[k]:+.1f}%) found" for k in effect], rows))
            return
        spin = spin_for(work, args, hib, args.slowdown)
        pool_a: list[list[float]] = []
        pool_b: list[list[float]] = []
        calib: list[list[float]] = []
        for i in range(max(args.pool, args.calibration_pool)):
            if i < args.pool:
                pool_a.append(run_session(work, args, 0, f"a{i}"))
                pool_b.append(run_session(work, args, spin, f"b{i}"))
            if i < args.calibration_pool:
                calib.append(run_session(work, args, 0, f"c{i}"))
            print(f"round {i + 1}/{args.pool}, {time.monotonic() - t0:.0f}s", file=sys.stderr)
        slowdown = 100 * (cost_per_op([v for s in pool_b for v in s], hib)
                          / cost_per_op([v for s in pool_a for v in s], hib) - 1)
        medians = [statistics.median(s) for s in pool_a]
        within = statistics.median(statistics.stdev(s) / statistics.mean(s) for s in pool_a)
        print(f"\n{args.workload} {' '.join(args.param)}, cpu {args.cpu or 'default'}, "
              f"{args.runs} runs a session, {args.pool} sessions a pool, {args.trials} trials, "
              f"{time.monotonic() - t0:.0f}s")
        spread = [statistics.stdev(m) / statistics.mean(m) for m in
                  (medians, [statistics.median(s) for s in calib])]
        print(f"noise: within a session CV {100 * within:.2f}%, between session medians "
              f"{100 * spread[0]:.2f}% (the calibration pool's {100 * spread[1]:.2f}%); "
              f"B measured {slowdown:+.2f}%")
        print(table(["sessions/side", "method", "A/A false positive", f"{slowdown:+.1f}% found"],
                    separate(pool_a, pool_b, calib, args.calibration, hib, args.trials,
                             rng, sides)))


if __name__ == "__main__":
    main()
