"""How much does hotloop's perf recording slow the workload down?

A child process copies /dev/zero to /dev/null in 16 KiB read/write pairs (a syscall-bound
loop like the bundled workloads) and times fixed-size repetitions itself. Each
configuration (perf off, several sampling frequencies, call graphs) gets a fresh child;
configurations are interleaved round by round in shuffled order so drift (other guests,
thermal, page cache) hits them all alike. The recorder runs exactly as in a session:
1 s windows, `perf report` per window, `perf stat` alongside, a cut() after each rep.

    python benchmarks/perf_overhead.py [--rounds 5] [--reps 6] [--configs off,999,...]
    python benchmarks/perf_overhead.py --workload zero_null [--param count=300000]
                                       [--cpu-profile same-core] [--rounds 5] [--reps 6]

    python benchmarks/perf_overhead.py --commands zero_null [--param count=400000]
                                       [--runs 10] [--rounds 10] [--cpu-profile default]
                                       [--against DIR]

Prints per-configuration median repetition time and the slowdown vs perf off.
With --commands, whole `hotloop run` commands as users run them, one with perf (its default)
and one with --no-perf, in turn (the order swapped every round): each round's slowdown of the
runs' median and of the command's wall time, as the least, the median and the largest over the
rounds, and the slowdown by a run's place in its session (the first run, the second, the rest:
what perf's start costs shows in the first); the command's CPU time too (its processes' and
perf's), and how long the first run waited for perf at the worker's Ready (the `perf_start`
line's seconds: perf record's whole start where it is spawned then, its enable where it was
spawned as the worker started).  --against DIR: another version's commands too (DIR holds
its `hotloop` package, e.g. `git archive REV tui csrc profiles | tar -x -C DIR; ln -s tui
DIR/hotloop`, or a link named hotloop to a worktree's tui/), all four in turn each round, a
table each.
With --workload, the real hotloop sessions run instead of a synthetic child: perf
off and each perf configuration as interleaved sessions (one repetition each in
turn, see tui/interleave.py), and the table gives the workload's own metric.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from hotloop.perf.recorder import PerfRecorder  # noqa: E402

CHILD = r"""
import os, sys, time
src = os.open("/dev/zero", os.O_RDONLY); dst = os.open("/dev/null", os.O_WRONLY)
n = int(sys.argv[1]); buf = 16384
for line in sys.stdin:
    t = time.perf_counter_ns(); c = time.process_time_ns()
    for _ in range(n):
        os.write(dst, os.read(src, buf))
    print(time.perf_counter_ns() - t, time.process_time_ns() - c, flush=True)
"""


# a command's runs' values, their ns, its wall and CPU seconds, perf's wait at the Ready (s)
Command = tuple[list[float], list[int], float, float, float]


def parse_config(name: str) -> tuple[int, str] | None:
    """'off' -> None; '999' -> (999, 'none'); '999fp' / '999dwarf' -> call graph."""
    if name == "off":
        return None
    for cg in ("dwarf", "fp"):
        if name.endswith(cg):
            return int(name[: -len(cg)]), cg
    return int(name), "none"


async def one(config: str, reps: int, loops: int, cpu: int | None) -> list[tuple[float, float]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, str(loops),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        # pinned like a hotloop workload; perf itself may run anywhere
        preexec_fn=None if cpu is None else lambda: os.sched_setaffinity(0, {cpu}))
    assert proc.stdin and proc.stdout
    spec = parse_config(config)
    rec = None
    if spec is not None:
        rec = PerfRecorder([proc.pid], frequency=spec[0], call_graph=spec[1])
        if not await rec.start():
            raise SystemExit("perf unavailable: " + "; ".join(rec.warnings))
    times = []
    try:
        for _ in range(reps):
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
            wall, cpu_ns = (await proc.stdout.readline()).split()
            times.append((int(wall) / 1e9, int(cpu_ns) / 1e9))
            if rec is not None:
                rec.cut()
    finally:
        if rec is not None:
            res = await rec.stop()
            if res.warnings:
                print(f"  [{config}] warnings: {res.warnings}", file=sys.stderr)
        proc.stdin.close()
        await proc.wait()
    return times[1:]                 # first rep absorbs attach and cache warm-up


async def workload_mode(args: argparse.Namespace, configs: list[str]) -> None:
    import tempfile
    from dataclasses import replace
    from pathlib import Path

    from hotloop import catalog
    from hotloop import events as ev
    from hotloop.run.interleave import interleave
    from hotloop.run.session import Session

    cat = catalog.load()
    plan = cat.plan_for(args.workload)
    params = dict(plan.params)
    for item in args.param:
        key, _, value = item.partition("=")
        params[key] = cat.workloads[plan.workload].params[key].parse(value)
    out = Path(tempfile.mkdtemp())
    values: dict[str, list[float]] = {c: [] for c in configs}
    unit = cat.workloads[plan.workload].unit
    for r in range(args.rounds):
        order = configs[:]
        random.shuffle(order)
        sessions = []
        for c in order:
            spec = parse_config(c)
            p = replace(plan, cpu=args.cpu_profile, runs=args.reps, warmup=1, params=params,
                        perf=spec is not None, perf_freq=spec[0] if spec else 999,
                        call_graph=spec[1] if spec else "none")
            sessions.append(Session(cat.resolve(p), out / f"{r}-{c}.jsonl", variant=c))
        async for e in interleave(sessions):
            if isinstance(e, ev.RunSample) and not e.warmup:
                values[e.variant].append(e.value)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    hib = cat.workloads[plan.workload].higher_is_better
    base = statistics.median(values["off"]) if "off" in values else None
    print(f"{args.workload} {params} cpu {args.cpu_profile}: n per config "
          f"{args.rounds * args.reps}, interleaved")
    print(f"{'config':>10}  {'median':>12}  {'cv%':>5}  {'slowdown %':>10}")
    for c in configs:
        m = statistics.median(values[c])
        cv = 100 * statistics.stdev(values[c]) / statistics.mean(values[c])
        slow = "-" if base is None else f"{100 * ((base / m if hib else m / base) - 1):+.1f}"
        print(f"{c:>10}  {m:12.4g}  {cv:5.1f}  {slow:>10}   ({unit})")


def command_mode(args: argparse.Namespace) -> None:
    import subprocess
    import tempfile
    from pathlib import Path

    from hotloop import results
    tmp = Path(tempfile.mkdtemp(prefix="hotloop-perf-commands-"))
    # each version's commands in every round, so that a loaded machine's drift hits both
    versions = {"this": None, **({"against": args.against} if args.against else {})}
    rounds: dict[str, list[dict[str, Command]]] = {v: [] for v in versions}
    hib = True
    for r in range(args.rounds):
        for version in versions:
            rounds[version].append({})
        turns = [(v, m) for v in versions for m in ("perf", "no-perf")]
        for version, mode in (turns if r % 2 == 0 else turns[::-1]):
            out = tmp / f"{r}-{version}-{mode}.jsonl"
            argv = [sys.executable, "-m", "hotloop", "run", args.commands, "--runs",
                    str(args.runs), "--cpu", args.cpu_profile, f"--{mode}", "--format", "json",
                    "--out", str(out), *(x for p in args.param for x in ("--param", p))]
            env = dict(os.environ)
            if versions[version]:
                env["PYTHONPATH"] = str(versions[version])
            t, c = time.perf_counter(), os.times()
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
            wall = time.perf_counter() - t
            c2 = os.times()
            cpu = c2.children_user + c2.children_system - c.children_user - c.children_system
            res = results.read(out)
            hib = res.workload.higher_is_better
            rounds[version][r][mode] = (list(res.values), [x.ns for x in res.runs], wall, cpu,
                                        sum(p.seconds for p in res.perf_starts))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    for version, path in versions.items():
        table(args, rounds[version], hib,
              f"{version}{f' ({path})' if path else ''}: ")


def table(args: argparse.Namespace, rounds: list[dict[str, Command]], hib: bool,
          title: str) -> None:
    def slower(on: float, off: float) -> float:     # + : perf made it slower
        return 100 * ((off / on if hib else on / off) - 1)

    def spread(xs: list[float]) -> str:
        return f"{min(xs):+.1f}% | {statistics.median(xs):+.1f}% | {max(xs):+.1f}%"
    runs = [slower(statistics.median(g["perf"][0]), statistics.median(g["no-perf"][0]))
            for g in rounds]
    walls = [100 * (g["perf"][2] / g["no-perf"][2] - 1) for g in rounds]
    cpus = [100 * (g["perf"][3] / g["no-perf"][3] - 1) for g in rounds]
    run_s = statistics.median(ns for g in rounds for ns in g["no-perf"][1]) / 1e9
    wall_s = statistics.median(g["no-perf"][2] for g in rounds)
    print(f"{title}{args.commands} {' '.join(args.param)} cpu {args.cpu_profile}, {args.runs} "
          f"runs a command, {len(rounds)} rounds; without perf a run {run_s:.3g} s, the "
          f"command {wall_s:.3g} s")
    print("| slowdown with perf | least | median | largest |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| the runs' median, a round | {spread(runs)} |")
    print(f"| the command's wall time, a round | {spread(walls)} |")
    print(f"| the command's CPU time, a round | {spread(cpus)} |")
    # what the first run waited for at the worker's Ready: perf's start (its perf_start line)
    waits = [g["perf"][4] for g in rounds]
    print(f"| perf's wait at the worker's Ready, s | {min(waits):.3f} | "
          f"{statistics.median(waits):.3f} | {max(waits):.3f} |")
    for name, at in (("the first run", slice(0, 1)), ("the second run", slice(1, 2)),
                     ("the runs after", slice(2, None))):
        each = [slower(statistics.median(g["perf"][0][at]), statistics.median(g["no-perf"][0][at]))
                for g in rounds if g["perf"][0][at]]
        if each:
            print(f"| {name}, a round | {spread(each)} |")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", help="measure this hotloop workload's sessions instead")
    ap.add_argument("--param", action="append", default=[], metavar="K=V")
    ap.add_argument("--cpu-profile", default="same-core")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--loops", type=int, default=60000, help="read/write pairs per repetition")
    ap.add_argument("--configs", default="off,99,499,999,1999,3999,999fp,999dwarf")
    ap.add_argument("--cpu", type=int, default=0, help="pin the workload here (-1: unpinned)")
    ap.add_argument("--commands", metavar="WORKLOAD",
                    help="whole `hotloop run` commands of it, with perf and --no-perf in turn")
    ap.add_argument("--runs", type=int, default=10, help="--commands: runs a command")
    ap.add_argument("--against", metavar="DIR",
                    help="--commands: also another version's, in turn with this one's: DIR "
                         "holds its `hotloop` package (a checkout's tui/ linked as hotloop)")
    args = ap.parse_args()
    if args.commands:
        command_mode(args)
        return
    configs = args.configs.split(",")
    if args.workload:
        await workload_mode(args, configs)
        return
    results: dict[str, list[tuple[float, float]]] = {c: [] for c in configs}
    cpu = None if args.cpu < 0 else args.cpu
    t0 = time.monotonic()
    for r in range(args.rounds):
        order = configs[:]
        random.shuffle(order)
        for c in order:
            results[c] += await one(c, args.reps, args.loops, cpu)
        print(f"round {r + 1}/{args.rounds} done ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    # wall: what the user sees; cpu: the workload's own CPU time, which perf's sampling
    # interrupts inflate but other processes competing for the CPU do not.
    print(f"n per config: {args.rounds * (args.reps - 1)}, workload cpu: {cpu}")
    print(f"{'config':>10}  {'wall s/rep':>10}  {'cv%':>5}  {'wall +%':>7}  {'cpu s/rep':>9}  {'cpu +%':>6}")
    base = [statistics.median(x[i] for x in results["off"]) for i in (0, 1)] if "off" in results else None
    for c in configs:
        wall = [x[0] for x in results[c]]
        cpus = [x[1] for x in results[c]]
        mw, mc = statistics.median(wall), statistics.median(cpus)
        cv = 100 * statistics.stdev(wall) / statistics.mean(wall) if len(wall) > 1 else 0.0
        sw = f"{100 * (mw / base[0] - 1):+.1f}" if base else "-"
        sc = f"{100 * (mc / base[1] - 1):+.1f}" if base else "-"
        print(f"{c:>10}  {mw:10.4f}  {cv:5.1f}  {sw:>7}  {mc:9.4f}  {sc:>6}")


if __name__ == "__main__":
    asyncio.run(main())
