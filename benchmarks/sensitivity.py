"""How small a slowdown can hotloop call significant, and how often does it cry wolf?

Every measurement here is a real `hotloop run` session (the command line, a fresh worker, one
result file each), compared with the same statistics `hotloop compare` uses
(`tui.compare.compare_samples`: Mann-Whitney U p < 0.05 and a 95% bootstrap CI of the % change
of medians that excludes 0, at least 5 runs a side).

Two ways to make a known slowdown:

* ``--knob spin`` (default where the workload has a ``spin`` param): the workload burns
  ``spin`` extra loop iterations per op.  A calibration pair of sessions measures the cost of one
  iteration, then each target slowdown (1%, 2%, 5%, ...) gets the spin count that adds that
  much time per op.  The effect each level really had is measured from all its sessions and
  printed beside the target.
* ``--simulate WITHIN,BETWEEN`` runs nothing: lognormal runs with a within-session CV and a
  per-session offset of CV BETWEEN (both in percent), to see what a machine's noise allows (and
  to check the statistics: with BETWEEN=0 the A/A rate must stay under 5%).
* ``--knob inject`` (the fallback while no workload has ``spin``): only baseline sessions are
  run; the slowdown is applied to the second session of each pair afterwards (time metrics
  times 1+s, rates divided by 1+s).  The noise is real (between sessions and within), the
  effect exact -- this isolates the statistics from the knob.

Design: ``--sessions M`` sessions per setting, each with ``max(--runs)`` repetitions, run
interleaved round by round (A, 1%, 2%, 5%, A, 1%, ...) so drift hits every setting alike.  For
each run count N in ``--runs``, the first N repetitions of each session are used, so one set of
sessions answers every N.  Pair i is (baseline session i, setting session i); the A/A pairs are
(baseline session i, baseline session i+1): two sessions with the same settings, as a user who
runs the same thing twice gets.

    python benchmarks/sensitivity.py [--workload zero_null] [--knob spin|inject]
        [--slowdowns 1,2,5] [--runs 5,10,20,30] [--sessions 10] [--cpu same-core]
        [--param count=100000] [--markdown]
    python benchmarks/sensitivity.py --simulate 2,0 --runs 5,10,20,30,50,100 --sessions 200
    python benchmarks/sensitivity.py --profiles DIR --workload W   # a private workload with spin

Prints, per run count, the A/A false-positive rate and the share of pairs in which each slowdown
was called significant *and* in the right direction, then the smallest run count reaching 80%
detection for each slowdown.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui import catalog, results  # noqa: E402
from tui.compare import compare_samples  # noqa: E402

POWER = 0.8                             # "can detect" = called significant in 80% of pairs
RESAMPLES = 2000                        # the bootstrap only decides CI-excludes-0 here


@dataclass
class Session:
    setting: str                        # "A" or the target slowdown, e.g. "2%"
    values: list[float]
    higher_is_better: bool


PROFILES: list[str] = []               # --profiles DIR, passed on to every session
PROCESSES = 1                           # --processes N, passed on to every session


def run_session(workdir: Path, workload: str, runs: int, params: dict[str, str],
                cpu: str | None, warmup: int, tag: str) -> Session:
    out = workdir / f"{tag}.jsonl"
    argv = [sys.executable, "-m", "tui", "run", workload, "--runs", str(runs), "--warmup",
            str(warmup), "--no-perf", "--out", str(out)]
    if cpu:
        argv += ["--cpu", cpu]
    argv += ["--processes", str(min(PROCESSES, runs))]
    for k, v in params.items():
        argv += ["--param", f"{k}={v}"]
    for d in PROFILES:
        argv += ["--profiles", d]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=workdir)
    if proc.returncode != 0:
        raise SystemExit(f"hotloop run failed ({' '.join(argv[3:])}): "
                         f"{proc.stderr.strip().splitlines()[-1:]}")
    r = results.read(out)
    out.unlink()
    return Session(tag.split("-")[0], r.values, bool(r.workload.get("higher_is_better", True)))


def spread(values: list[float], n: int) -> list[float]:
    """n of a session's runs, evenly spaced: with --processes, from every worker."""
    return [values[i * len(values) // n] for i in range(n)]


def slowed(values: list[float], s: float, higher_is_better: bool) -> list[float]:
    """The same runs had each op cost 1+s times as much time."""
    return [v / (1 + s) if higher_is_better else v * (1 + s) for v in values]


def time_per_op(s: Session) -> float:
    """Median cost per op in the metric's own terms: bigger is slower."""
    m = statistics.median(s.values)
    return 1 / m if s.higher_is_better else m


def calibrate_spin(workdir: Path, args: argparse.Namespace, params: dict[str, str]) -> float:
    """Relative slowdown per spin iteration: 3 interleaved pairs of sessions without and with
    a large spin (an effect far above the noise, so the slope is precise), pooled medians."""
    probe = args.calibrate_spin
    base: list[float] = []
    spun: list[float] = []
    for i in range(3):
        for spin, into in ((0, base), (probe, spun)):
            s = run_session(workdir, args.workload, 10, {**params, "spin": str(spin)}, args.cpu,
                            2, f"cal{spin}-{i}")
            into += s.values
    hib = s.higher_is_better
    b, p = statistics.median(base), statistics.median(spun)
    per_iter = ((b / p) if hib else (p / b)) - 1
    if per_iter <= 0.05:
        raise SystemExit(f"spin={probe} slowed the op by only {100 * per_iter:.1f}%: "
                         f"raise --calibrate-spin")
    return per_iter / probe


def measure_interleaved(args: argparse.Namespace, params: dict[str, str], settings: list[str],
                        spin_of: dict[str, int], nmax: int, t0: float,
                        work: Path) -> dict[str, list[Session]]:
    """Every setting, and a second baseline A2, as variants of one interleaved batch
    (hotloop run --interleave: one repetition of each in turn), `--sessions` times.
    The A/A pair is then (A, A2) of the same batch, as a user comparing two
    interleaved variants gets."""
    import asyncio
    from dataclasses import replace

    from tui import events as ev
    from tui.interleave import interleave
    from tui.session import Session as Run

    cat = catalog.load([Path(d) for d in PROFILES])
    plan = cat.plan_for(args.workload)
    w = cat.workloads[plan.workload]
    typed = {k: w.params[k].parse(v) for k, v in params.items()}
    keys = ["A", "A2", *settings[1:]]
    out: dict[str, list[Session]] = {k: [] for k in keys}
    for rnd in range(args.sessions):
        runs = []
        for k in keys:
            p = replace(plan, cpu=args.cpu or plan.cpu, runs=nmax, warmup=args.warmup,
                        perf=False, processes=min(PROCESSES, nmax),
                        params={**plan.params, **typed, "spin": spin_of["A" if k == "A2" else k]})
            runs.append(Run(cat.resolve(p), work / f"{k.rstrip('%')}-{rnd}.jsonl", variant=k))
        values: dict[str, list[float]] = {k: [] for k in keys}

        async def collect() -> None:
            async for e in interleave(runs):
                if isinstance(e, ev.RunSample) and not e.warmup:
                    values[e.variant].append(e.value)
        asyncio.run(collect())
        for k in keys:
            out[k].append(Session(k, values[k], w.higher_is_better))
        print(f"batch {rnd + 1}/{args.sessions} done, {time.monotonic() - t0:.0f}s",
              file=sys.stderr)
    return out


def simulate(within: float, between: float, settings: list[str], sessions: int,
             nmax: int, seed: int = 1) -> dict[str, list[Session]]:
    """Synthetic sessions of a rate metric (higher is better) with lognormal noise."""
    import numpy as np
    rng = np.random.default_rng(seed)

    def one(setting: str) -> Session:
        slow = 1 + (float(setting.rstrip("%")) / 100 if setting != "A" else 0.0)
        offset = rng.normal(0, between / 100)
        runs = np.exp(rng.normal(offset, within / 100, nmax)) / slow
        return Session(setting, runs.tolist(), True)

    out = {"A": [one("A") for _ in range(sessions + 1)]}
    out.update({k: [one(k) for _ in range(sessions)] for k in settings[1:]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", default="zero_null")
    ap.add_argument("--knob", choices=("auto", "spin", "inject"), default="auto")
    ap.add_argument("--slowdowns", default="1,2,5", help="percent, comma separated")
    ap.add_argument("--runs", default="5,10,20,30", help="runs per side, comma separated")
    ap.add_argument("--sessions", type=int, default=10, help="sessions per setting")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--cpu", default=None, help="CPU profile (default: the workload's default)")
    ap.add_argument("--interleaved", action="store_true",
                    help="run the settings as variants of one interleaved batch")
    ap.add_argument("--processes", type=int, default=1,
                    help="worker processes per session (hotloop run --processes)")
    ap.add_argument("--param", action="append", default=[], metavar="K=V")
    ap.add_argument("--calibrate-spin", type=int, default=2000,
                    help="spin count of the calibration sessions (aim for +50%%..+200%%)")
    ap.add_argument("--profiles", action="append", default=[], metavar="DIR",
                    help="another directory of TOML profiles (repeatable)")
    ap.add_argument("--simulate", metavar="WITHIN,BETWEEN", default=None,
                    help="no sessions: synthetic runs with these CVs (percent)")
    ap.add_argument("--markdown", action="store_true", help="print the table for the README")
    args = ap.parse_args()

    slowdowns = [float(x) for x in args.slowdowns.split(",")]
    run_counts = sorted(int(x) for x in args.runs.split(","))
    params = dict(p.split("=", 1) for p in args.param)
    params.setdefault("count", "100000")
    PROFILES[:] = [str(Path(d).resolve()) for d in args.profiles]
    global PROCESSES
    PROCESSES = args.processes
    wl = catalog.load([Path(d) for d in PROFILES]).workloads.get(args.workload)
    if wl is None:
        raise SystemExit(f"no workload {args.workload!r}")
    knob = args.knob
    if args.simulate:
        knob = "simulated"
    elif knob == "auto":
        knob = "spin" if "spin" in wl.params else "inject"
    if knob == "spin" and "spin" not in wl.params:
        raise SystemExit(f"workload {args.workload} has no spin param (use --knob inject)")
    if len(run_counts) == 0 or run_counts[0] < 5:
        raise SystemExit("--runs: every run count must be at least 5 (fewer gets no verdict)")
    nmax = run_counts[-1]

    settings = ["A"] + [f"{s:g}%" for s in slowdowns]
    t0 = time.monotonic()
    sim = [float(x) for x in args.simulate.split(",")] if args.simulate else None
    if sim:
        sessions = simulate(sim[0], sim[1], settings, args.sessions, nmax)
    else:
        sessions = measure(args, knob, params, settings, slowdowns, nmax, t0)
    report(args, knob, params, wl, settings, sessions, run_counts, nmax, t0)


def measure(args: argparse.Namespace, knob: str, params: dict[str, str], settings: list[str],
            slowdowns: list[float], nmax: int, t0: float) -> dict[str, list[Session]]:
    with tempfile.TemporaryDirectory(prefix="hotloop-sensitivity-") as tmp:
        work = Path(tmp)
        spin_of: dict[str, int] = {"A": 0}
        if knob == "spin":
            per_iter = calibrate_spin(work, args, params)
            for s in slowdowns:
                spin_of[f"{s:g}%"] = max(1, round(s / 100 / per_iter))
            print(f"calibration: one spin iteration adds {100 * per_iter:.4f}% per op; "
                  + ", ".join(f"{k} -> spin={v}" for k, v in spin_of.items() if k != "A"),
                  file=sys.stderr)
        if args.interleaved and knob == "spin":
            return measure_interleaved(args, params, settings, spin_of, nmax, t0, work)
        # A/A needs sessions+1 baselines; inject needs a second baseline session per pair
        need = {"A": args.sessions + 1}
        if knob == "spin":
            need.update({k: args.sessions for k in settings[1:]})
        else:
            need["B"] = args.sessions
        sessions: dict[str, list[Session]] = {k: [] for k in need}
        for rnd in range(max(need.values())):
            for k in need:
                if len(sessions[k]) < need[k]:
                    p = dict(params)
                    if knob == "spin":
                        p["spin"] = str(spin_of[k])
                    sessions[k].append(run_session(work, args.workload, nmax, p, args.cpu,
                                                   args.warmup, f"{k.rstrip('%')}-{rnd}"))
            print(f"round {rnd + 1}/{max(need.values())} done, {time.monotonic() - t0:.0f}s",
                  file=sys.stderr)
    return sessions


def report(args: argparse.Namespace, knob: str, params: dict[str, str], wl: catalog.Workload,
           settings: list[str], sessions: dict[str, list[Session]], run_counts: list[int],
           nmax: int, t0: float) -> None:

    base = sessions["A"]
    hib = base[0].higher_is_better
    cvs = [statistics.stdev(s.values) / statistics.mean(s.values) for s in base]
    medians = [statistics.median(s.values) for s in base]
    between = statistics.stdev(medians) / statistics.mean(medians)

    def pairs(setting: str) -> list[tuple[list[float], list[float]]]:
        if setting == "A" and "A2" in sessions:      # interleaved: the same batch
            return [(base[i].values, sessions["A2"][i].values) for i in range(args.sessions)]
        if setting == "A":
            return [(base[i].values, base[i + 1].values) for i in range(args.sessions)]
        if "B" in sessions:
            s = float(setting.rstrip("%")) / 100
            return [(base[i].values, slowed(sessions["B"][i].values, s, hib))
                    for i in range(args.sessions)]
        return [(base[i].values, sessions[setting][i].values) for i in range(args.sessions)]

    bad = "slower"
    table: dict[int, dict[str, float]] = {}
    effect: dict[str, float] = {}
    for setting in settings:
        ps = pairs(setting)
        if setting != "A":          # the slowdown the pairs really carry, all runs pooled
            a = statistics.median([v for x, _ in ps for v in x])
            b = statistics.median([v for _, y in ps for v in y])
            effect[setting] = 100 * ((a / b) if hib else (b / a)) - 100
        for n in run_counts:
            hits = 0
            for x, y in ps:
                t = compare_samples(spread(x, n), spread(y, n), higher_is_better=hib,
                                    resamples=RESAMPLES)
                hits += t.significant and (setting == "A" or t.verdict == bad)
            table.setdefault(n, {})[setting] = hits / len(ps)

    print(f"\nworkload {args.workload} ({wl.metric}), params "
          f"{' '.join(f'{k}={v}' for k, v in params.items())}, cpu {args.cpu or 'default'}, "
          f"knob {knob}, {args.sessions} pairs per cell, {time.monotonic() - t0:.0f}s")
    print(f"noise: CV within a session median {100 * statistics.median(cvs):.2f}%, "
          f"between session medians {100 * between:.2f}%")
    if effect:
        print("measured slowdown per setting: "
              + ", ".join(f"{k} -> {v:+.2f}%" for k, v in effect.items()))
    head = ["runs/side", "A/A false positive"] + [f"{s} slowdown detected" for s in settings[1:]]
    rows = [[str(n), f"{100 * table[n]['A']:.0f}%"]
            + [f"{100 * table[n][s]:.0f}%" for s in settings[1:]] for n in run_counts]
    if args.markdown:
        print("\n| " + " | ".join(head) + " |")
        print("|" + "---:|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
        for r in rows:
            print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
    for s in settings[1:]:
        n = next((n for n in run_counts if table[n][s] >= POWER), None)
        print(f"{s}: " + (f"{n} runs per side detect it in >= {POWER:.0%} of pairs" if n
                          else f"not reliably detected with up to {nmax} runs per side"))


if __name__ == "__main__":
    main()
