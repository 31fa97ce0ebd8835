"""Can hotloop's verdict be trusted across sessions, and how small a change does it find?

Every measurement is a real `hotloop run` session (the command line, a fresh worker, one result
file each), judged with the statistics `hotloop compare` uses (`hotloop.analysis.judge.test_metric`).
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
checks the statistics against known noise.  With `--modes` (`--simulate WITHIN,SESSION,BOOT`:
runs, sessions within one boot, boots), the table of A/A false positives and power per mode
docs/statistics.md shows (sessions within one boot or across boots, calibrations from one boot or one
a boot, unequal runs, thin calibrations, copies, outliers, 4 sides against one baseline),
each judged as compare judges it (boots, deduplicated, corrected for the number of sides).

    python benchmarks/sensitivity.py [--workload zero_null] [--param count=100000]
        [--cpu same-core] [--runs 30] [--pool 30] [--calibration 8] [--trials 40]
        [--slowdown 5] [--markdown]
    python benchmarks/sensitivity.py --interleaved --slowdowns 1,2 --rounds 10,20,40,80
    python benchmarks/sensitivity.py --simulate 2,2.5 --runs 30 --trials 400
    python benchmarks/sensitivity.py --simulate 2,1.5,2 --modes --trials 1000
    python benchmarks/sensitivity.py --simulate 2 --bound --trials 2000
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
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy import stats as sps

from hotloop import catalog, results
from hotloop.analysis import boots as boots_mod
from hotloop.analysis import judge, significance
from hotloop.analysis.comparison import Verdict
from hotloop.analysis.judge import compare_samples, test_metric
from hotloop.analysis.metrics import SPEED, MetricValues
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


def series(values: list[float], hib: bool) -> MetricValues:
    return MetricValues("value", "", hib, SPEED, values)


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
        asked = [0, 0]                  # not calibrated, one a side: a direction ("slower?")
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
                    up = judge.direction(t)
                    asked[j] += t.verdict is Verdict.BEYOND_ASSUMED and (
                        j == 0 or up is not None and up != hib)
        for name, label in (("naive", "runs as independent samples (before)"),
                            ("raw", "sessions, no calibration"),
                            ("cal", f"sessions + calibration ({k_calib} sessions)")):
            aa, hit = counts[name]
            cells = [f"{100 * aa / trials:.0f}%", f"{100 * hit / trials:.0f}%"]
            if name == "raw" and any(asked):
                cells = [f"{c} (\"slower?\" {100 * x / trials:.0f}%)"
                         for c, x in zip(cells, asked)]
            rows.append([str(k), label, *cells])
    return rows


# --------------------------------------------------------------------------- synthetic modes

def _session(rng: np.random.Generator, runs: int, within: float, offset: float,
             effect: float = 0.0, outliers: float = 0.0) -> list[float]:
    """One synthetic session of a rate (higher is better): lognormal runs around `offset`
    (its boot's and its own); `outliers`, a share of runs 3x slower (a third of the rate)."""
    x = np.exp(rng.normal(offset + np.log1p(effect), within, runs))
    if outliers:
        x = np.where(rng.random(runs) < outliers, x * 3, x)
    return (1 / x).tolist()


@dataclass(frozen=True)
class Noise:
    """A synthetic machine, as fractions: runs within a session, sessions within one boot,
    boots (what a reboot moves)."""
    within: float
    session: float
    boot: float


# How a mode's sessions spread over boots: "own" every session a boot of its own (a reboot
# between every two, or a VM booted for each); "one" every session of every side in one boot;
# "side" each side's sessions in one boot of that side's (two kernels, a reboot between them
# only); "pairs" each side's sessions two to a boot.
LAYOUTS = ("own", "one", "side", "pairs")


def _boot_keys(layout: str, side: int, k: int) -> list[str]:
    if layout == "own":
        return [f"{side}.{i}" for i in range(k)]
    if layout == "one":
        return ["shared"] * k
    if layout == "side":
        return [f"{side}"] * k
    return [f"{side}.{i // 2}" for i in range(k)]


def _offsets(rng: np.random.Generator, keys: list[str], noise: Noise,
             boots: dict[str, float]) -> list[float]:
    """Each session's offset: its boot's (drawn once a boot, shared by the trial's sides
    where they share it) plus its own."""
    return [boots.setdefault(key, rng.normal(0, noise.boot)) + rng.normal(0, noise.session)
            for key in keys]


def _calibration(rng: np.random.Generator, k: int, runs: int, noise: Noise,
                 layout: str) -> tuple[MetricNoise | None, str]:
    """A calibration of `k` sessions laid out over boots so, and its boots' spread; None
    where hotloop refuses one that thin (fewer than noise.MIN_SESSIONS sessions)."""
    from hotloop.analysis import noise as noise_mod
    keys = _boot_keys(layout, 9, k)
    if k < noise_mod.MIN_SESSIONS:
        return None, ""
    offsets = _offsets(rng, keys, noise, {})
    return (metric_noise([_session(rng, runs, noise.within, o) for o in offsets]),
            boots_mod.spread(keys))


def _distinct(side: list[list[float]], keys: list[str]) -> tuple[list[list[float]], list[str]]:
    """A side's sessions, each content once: what compare does with copied files (by their
    sha256, `analysis.sides.distinct`); a copy ran in its original's boot."""
    seen: list[list[float]] = []
    kept: list[str] = []
    for s, k in zip(side, keys):
        if s not in seen:
            seen.append(s)
            kept.append(k)
    return seen, kept


def _called(base: tuple[list[list[float]], list[str]],
            sides: list[tuple[list[list[float]], list[str]]],
            cal: tuple[MetricNoise | None, str], ignore_boots: bool = False,
            sitting: bool = False
            ) -> tuple[list[Verdict | None], list[bool], list[bool | None]]:
    """Each later side against the baseline, as compare judges the primary metric: the
    verdicts (None: compare refuses the side, nothing but copies of one session), and
    whether each is called after the correction for the number of sides.  `ignore_boots`:
    as compare did before sessions said their boot (sessions the replicates, any calibration
    used, at one a side too).  `sitting`: the calibration was measured in the compared
    sessions' boot and sitting, the one case compare uses it at one replicate a side
    (analysis.sitting)."""
    if any(len(_distinct(*s)[0]) == 1 < len(s[0]) for s in [base, *sides]):
        return [None] * len(sides), [False] * len(sides), [None] * len(sides)
    b_runs, b_keys = _distinct(*base)
    tests = []
    for side in sides:
        n_runs, n_keys = _distinct(*side)
        pair = boots_mod.of_keys(b_keys, n_keys)
        fits = ignore_boots or boots_mod.calibration_fits(pair, cal[1]) and (
            sitting or pair.count() != (1, 1))
        tests.append(test_metric([series(s, True) for s in b_runs],
                                 [series(s, True) for s in n_runs],
                                 calibrated=cal[0] if fits else None,
                                 boots=None if ignore_boots else pair))
    tests = judge.correct_sides(tests)
    return ([t.verdict for t in tests], [t.significant for t in tests],
            [judge.direction(t) for t in tests])


@dataclass(frozen=True)
class Mode:
    label: str
    k: int                              # sessions a side
    layout: str = "own"                 # LAYOUTS: the compared sessions' boots
    cal: int = 0                        # calibration sessions (0: none)
    cal_layout: str = "own"             # ...and their boots
    runs: tuple[int, ...] = (30,)       # runs of each compared session (cycled: the
                                        # baseline from the first, a later side the second)
    cal_runs: int = 30
    copies: int = 1                     # the first session of a side given this many times
    outliers: float = 0.0               # a share of runs 3x slower
    sides: int = 1                      # later sides against the one baseline
    effect: float = 10.0                # % for the power column
    noise: tuple[float, float, float] | None = None    # its own (within, session, boot) %
    cal_noise: tuple[float, float, float] | None = None    # the calibration's, if other
    sitting: bool = False               # calibrated in the compared sessions' boot and
                                        # sitting (compare's condition at one a side)


# Unequal runs matter where the runs' part of a session's variance is large: noisy runs,
# quiet sessions (10%, 1%, 0).  "Quieter" calibrations are those taken in one boot, where
# boots move more than sessions within one do.
MODES = [
    Mode("1 a side, one boot, not calibrated", 1, "one"),
    Mode("1 a side, one boot, not calibrated, sessions 6% apart", 1, "one", noise=(2, 6, 0)),
    Mode("1 a side, one boot, not calibrated, sessions 20% apart", 1, "one",
         noise=(2, 20, 0)),
    Mode("1 a side, one boot, not calibrated: the obvious change", 1, "one", effect=700.0),
    Mode("1 a side, across boots, no calibration", 1, "own"),
    Mode("1 a side, across boots 6% apart, no calibration", 1, "own", noise=(2, 1.5, 5.8)),
    Mode("1 a side, across boots, calibrated one a boot (nothing can check it)", 1, "own", 8),
    Mode("1 a side, across boots, calibrated in one boot (3x quieter)", 1, "own", 8, "one",
         noise=(2, 0.83, 2.36)),
    Mode("1 a side, one boot, calibrated in their boot and sitting", 1, "one", 8, "one",
         sitting=True),
    Mode("1 a side, one boot, sessions 4% apart, calibrated in their sitting", 1, "one", 8,
         "one", noise=(2, 4, 0), sitting=True),
    Mode("1 a side, one boot, sessions 4% apart, calibrated quieter (no session noise) in "
         "another sitting", 1, "one", 8, "one", noise=(2, 4, 0), cal_noise=(2, 0, 0)),
    Mode("3 a side, one boot, measured", 3, "one", effect=5.0),
    Mode("3 a side, one boot, sessions 4% apart, calibrated quieter (no session noise)", 3,
         "one", 8, "one", effect=5.0, noise=(2, 4, 0), cal_noise=(2, 0, 0)),
    Mode("3 a side, a boot each, measured", 3, "own", effect=5.0),
    Mode("3 a side, a boot each, calibrated one a boot", 3, "own", 8, effect=5.0),
    Mode("3 a side, a boot each, calibrated in one boot (3x quieter)", 3, "own", 8, "one",
         effect=5.0, noise=(2, 0.83, 2.36)),
    Mode("5 a side, a boot each, calibrated one a boot", 5, "own", 8, effect=5.0),
    Mode("3 a side, one boot a side (two kernels, one reboot), no calibration", 3, "side",
         effect=5.0),
    Mode("3 a side, one boot a side, calibrated one a boot", 3, "side", 8, effect=5.0),
    Mode("4 a side, two boots a side of 2 sessions, measured", 4, "pairs", effect=5.0),
    Mode("a VM series, 4 a side (each session a fresh boot), measured", 4, "own",
         effect=5.0),
    Mode("unequal runs: 10 vs 200, calibrated at 30 in their sitting (runs 10%, sessions "
         "1%)", 1, "one", 8, "one", runs=(10, 200), noise=(10, 1, 0), sitting=True),
    Mode("unequal runs: 3 a side of 10/200/10, calibrated at 30 (10%, 1%)", 3, "own", 8,
         runs=(10, 200, 10), effect=5.0, noise=(10, 1, 0)),
    Mode("200 runs, calibrated at 30 in their sitting (10%, 1%)", 1, "one", 8, "one",
         runs=(200,), noise=(10, 1, 0), sitting=True),
    Mode("thin calibration (4 sessions), 1 a side across boots", 1, "own", 4),
    Mode("copies: 2 copies of 1 session a side", 1, "own", copies=2),
    Mode("copies: 2 sessions a side, one given 3 times, calibrated", 2, "own", 8, copies=3),
    Mode("outliers: 5% of runs 3x slower, 1 a side, one boot", 1, "one", outliers=0.05),
    Mode("outliers, 3 a side, a boot each", 3, "own", outliers=0.05),
    Mode("4 sides against one baseline, 3 a side (family-wise)", 3, "own", sides=4,
         effect=5.0),
    Mode("4 sides, 3 a side, calibrated (family-wise)", 3, "own", 8, sides=4, effect=5.0),
]


def simulate_modes(base: Noise, trials: int, rng: np.random.Generator,
                   only: str = "") -> list[list[str]]:
    """For each mode, `trials` A/A comparisons (any call is a false positive; with several
    sides, any call among them: the family-wise rate) and as many with the effect in the
    first later side (found: called the right way; a direction on an assumed noise,
    "slower?", is no call, and its share follows).  Fresh sessions, boots and calibration
    every trial.  "no verdict" is the share of A/A trials hotloop gave none on (too noisy,
    too few runs, cannot call across boots, a direction on an assumed noise, a side of
    nothing but copies refused): where it cannot call, it says so.  "boots ignored": the
    same trials judged as compare did before sessions said their boot (and before a
    direction on an assumed noise stopped being a call)."""
    out = []
    silent_verdicts = (None, Verdict.TOO_FEW_RUNS, Verdict.TOO_NOISY, Verdict.ACROSS_BOOTS,
                       Verdict.ONE_A_SIDE)
    for m in MODES:
        if only and only not in m.label:
            continue
        noise = Noise(*(x / 100 for x in m.noise)) if m.noise else base
        aa = found = silent = ignored = 0
        exits = {0: 0, 3: 0, 4: 0}      # compare --fail-on change on the A/A trials

        def side(index: int, shared: dict[str, float], eff: float = 0.0, m: Mode = m,
                 noise: Noise = noise) -> tuple[list[list[float]], list[str]]:
            keys = _boot_keys(m.layout, index, m.k)
            offsets = _offsets(rng, keys, noise, shared)
            runs = m.runs[min(index, 1) % len(m.runs):] + m.runs[:min(index, 1) % len(m.runs)]
            one = [_session(rng, runs[i % len(runs)], noise.within, o, eff, m.outliers)
                   for i, o in enumerate(offsets)]
            # the first session given `copies` times (a copy ran in its original's boot)
            return one[:1] * m.copies + one[1:], keys[:1] * m.copies + keys[1:]
        for _ in range(trials):
            cal_noise = Noise(*(x / 100 for x in m.cal_noise)) if m.cal_noise else noise
            cal = _calibration(rng, m.cal, m.cal_runs, cal_noise, m.cal_layout) if m.cal \
                else (None, "")
            shared: dict[str, float] = {}
            base_side = side(0, shared)
            later = [side(1 + j, shared) for j in range(m.sides)]
            verdicts, called, _ = _called(base_side, later, cal, sitting=m.sitting)
            aa += any(called)
            silent += verdicts[0] in silent_verdicts
            exits[3 if any(called) else 4 if any(v is None or not v.judged for v in verdicts)
                  else 0] += 1
            # as compare did before: boots ignored, a calibration used at one a side too
            _, was_called, _ = _called(base_side, later, cal, ignore_boots=True)
            ignored += any(was_called)
            later = [side(1, shared, m.effect / 100)] + later[1:]
            verdicts, called, ups = _called(base_side, later, cal, sitting=m.sitting)
            found += called[0] and verdicts[0] is Verdict.BAD
        err = 100 * 2 * (0.05 * 0.95 / trials) ** 0.5
        out.append([m.label, f"{100 * aa / trials:.1f}%", f"±{err:.1f}",
                    f"+{m.effect:g}%: {100 * found / trials:.0f}%",
                    f"{100 * silent / trials:.0f}%",
                    " / ".join(f"{100 * exits[c] / trials:.0f}%" for c in (0, 3, 4)),
                    f"{100 * ignored / trials:.1f}%"])
    return out


def simulate_bound(trials: int, rng: np.random.Generator, within: float = 0.02,
                   runs: int = 30) -> tuple[list[str], list[list[str]]]:
    """The offset bound (stats.SESSION_OFFSET_BOUND) against the sessions' real offsets: one
    session a side within one boot, not calibrated, judged by compare's code (test_metric,
    its verdict): the share of A/A pairs called for sessions 0-30% apart, and of pairs whose
    second session is 50%, 100% or 700% faster (sessions 6% apart) called faster."""
    apart = (0.0, 0.06, 0.10, 0.15, 0.20, 0.25, 0.30)
    effects = (0.5, 1.0, 7.0)
    head = ["bound", *(f"A/A, sessions {100 * s:g}% apart" for s in apart),
            *(f"+{100 * e:g}% called" for e in effects)]
    rows = []
    stored = significance.SESSION_OFFSET_BOUND
    try:
        for bound in (0.15, 0.20, 0.25, 0.30):
            # the bound compare reads, set for this row (a benchmark's knob, not an option)
            significance.SESSION_OFFSET_BOUND = bound

            def called(sd: float, effect: float = 0.0) -> bool:
                a = _session(rng, runs, within, rng.normal(0, sd))
                b = _session(rng, runs, within, rng.normal(0, sd), -effect / (1 + effect))
                t = test_metric([series(a, True)], [series(b, True)])
                return t.significant and (not effect or t.verdict is Verdict.GOOD)
            cells = [f"{100 * bound:g}%"]
            cells += [f"{100 * sum(called(sd) for _ in range(trials)) / trials:.1f}%"
                      for sd in apart]
            cells += [f"{100 * sum(called(0.06, e) for _ in range(trials)) / trials:.0f}%"
                      for e in effects]
            rows.append(cells)
    finally:
        significance.SESSION_OFFSET_BOUND = stored
    return head, rows


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
    ap.add_argument("--bound", action="store_true",
                    help="with --simulate: A/A and power of one session a side, not "
                         "calibrated, for offset bounds of 15-30%%")
    ap.add_argument("--only", default="", metavar="TEXT",
                    help="with --modes: only the modes whose label holds TEXT")
    ap.add_argument("--profiles", action="append", default=[], metavar="DIR")
    args = ap.parse_args()
    if not any(p.startswith("count=") for p in args.param):
        args.param.append("count=100000")
    PROFILES[:] = [str(Path(d).resolve()) for d in args.profiles]
    rng = np.random.default_rng(1)
    sides = tuple(int(x) for x in args.sides.split(","))
    t0 = time.monotonic()

    if args.simulate:
        figures = [float(x) / 100 for x in args.simulate.split(",")]
        if args.bound:
            print(f"synthetic: one session a side, one boot, not calibrated; runs within a "
                  f"session CV {100 * figures[0]:g}%, {args.runs} runs, {args.trials} trials "
                  f"a cell")
            print(table(*simulate_bound(args.trials, rng, figures[0], args.runs)))
            print(f"{time.monotonic() - t0:.0f}s", file=sys.stderr)
            return
        if args.modes:
            w, sess, boot = (figures + [0.0])[:3]
            print(f"synthetic: runs within a session CV {100 * w:g}%, sessions within a boot "
                  f"{100 * sess:g}%, boots {100 * boot:g}% (a session a boot: "
                  f"{100 * (sess ** 2 + boot ** 2) ** 0.5:.2g}%), {args.trials} trials a cell")
            print(table(["mode", "A/A called", "2 x sim. error at 5%", "found",
                         "A/A: no verdict", "A/A: --fail-on change exits 0 / 3 / 4",
                         "A/A, boots and sitting ignored"],
                        simulate_modes(Noise(w, sess, boot), args.trials, rng, args.only)))
            print(f"{time.monotonic() - t0:.0f}s", file=sys.stderr)
            return
        within, between = figures[:2]

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
