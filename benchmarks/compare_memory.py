"""What does `hotloop compare` cost as the runs grow?  Peak memory and wall time of the real
command, against reading the same files (`hotloop show` of both), in one run.

Plans allow a million runs; an earlier compare bootstrapped 9,999 resamples of every run and
held them all (1,000 runs a side took 340 MB, 5,000 took 1.28 GB).  Now every method is
O(runs log runs) and holds the runs once, as columns (results/runs.py), read a line at a time,
perf window lines checked and not kept, and a side's values as arrays of 8-byte numbers (no
float object a run): the targets are compare at 300,000 runs a side in at most 150 MB, and
show of a file with 32,000 perf windows (8 hours) under 100 MB.  The last table:
show of a file of 30,000 window lines of 30 symbols each, and compare of it against a copy.
`--tree DIR` measures another checkout's package (DIR holding `hotloop/`), for a before.

The result files are synthetic (lognormal runs, written through hotloop's own result writer):
this measures compare's statistics and rendering, not a workload.

    python benchmarks/compare_memory.py [--runs 1000,100000,300000] [--sessions 1]
                                        [--windows 30000] [--tree DIR]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from hotloop import events as ev
from hotloop.record import Header, SessionSummary, WorkloadInfo
from hotloop.results import Writer

ROOT = Path(__file__).resolve().parent.parent


def write(path: Path, runs: int, shift: float, rng: np.random.Generator) -> None:
    w = Writer(path)
    w.write(ev.Started(Header(host="bench", workload=WorkloadInfo(
        "synthetic", metric="ns/op", unit="ns/op", higher_is_better=False))))
    for i, v in enumerate(np.exp(rng.normal(np.log(100) + shift, 0.02, runs))):
        ns = int(v * 1000)                  # the value is what its counters say
        w.write(ev.RunSample(index=i, value=ns / 1000, ops=1000, bytes=0, ns=ns,
                             cycles=0, extra={"user_s": float(v) * 1e-6}))
    w.write(ev.Finished(SessionSummary()))
    w.close()


def write_windows(path: Path, windows: int, rng: np.random.Generator) -> None:
    """A session of 30 runs with `windows` perf window lines of 30 symbols (an 8-hour perf
    recording has about 32,000)."""
    w = Writer(path)
    w.write(ev.Started(Header(host="bench", workload=WorkloadInfo(
        "synthetic", metric="ns/op", unit="ns/op", higher_is_better=False))))
    syms = tuple(ev.HotSymbol(f"symbol_{k}", "[kernel.kallsyms]", 3.3, True, 30)
                 for k in range(30))
    for i in range(windows):
        w.write(ev.HotSymbols(syms, window=i, samples=900))
    for i, v in enumerate(np.exp(rng.normal(np.log(100), 0.02, 30))):
        ns = int(v * 1000)
        w.write(ev.RunSample(index=i, value=ns / 1000, ops=1000, bytes=0, ns=ns, cycles=0))
    w.write(ev.HotSymbols(syms, scope="session", samples=900 * windows))
    w.write(ev.Finished(SessionSummary()))
    w.close()


TREE: str | None = None                 # --tree: another checkout's package


def measure(argv: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of one hotloop command in a fresh child."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
             f"subprocess.run({[sys.executable, '-m', 'hotloop', *argv]!r}, check=True, "
             "stdout=subprocess.DEVNULL); w = time.perf_counter() - t; "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, w)")
    env = dict(os.environ, PYTHONPATH=TREE) if TREE else None
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT, env=env).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="1000,100000,300000", help="runs a side, comma separated")
    ap.add_argument("--sessions", type=int, default=1, help="sessions a side")
    ap.add_argument("--windows", type=int, default=30000, help="perf window lines (0: none)")
    ap.add_argument("--tree", help="a directory holding another checkout's hotloop/")
    args = ap.parse_args()
    global TREE
    TREE = args.tree
    rng = np.random.default_rng(1)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hotloop-compare-memory-") as tmp:
        for n in (int(x) for x in args.runs.split(",")):
            sides = []
            for side, shift in (("a", 0.0), ("b", 0.01)):
                files = []
                for k in range(args.sessions):
                    path = Path(tmp) / f"{n}-{side}{k}.jsonl"
                    write(path, n // args.sessions, shift, rng)
                    files.append(str(path))
                sides.append(",".join(files))
            read = [measure(["show", f]) for f in sides[0].split(",")]
            cmp = measure(["compare", *sides, "--format", "json"])
            rows.append((n, max(r[0] for r in read), sum(r[1] for r in read), *cmp))
        win = None
        if args.windows:
            a, b = Path(tmp) / "windows-a.jsonl", Path(tmp) / "windows-b.jsonl"
            write_windows(a, args.windows, rng)
            write_windows(b, args.windows, rng)
            win = (a.stat().st_size / 1e6, *measure(["show", str(a)]),
                   *measure(["compare", str(a), str(b), "--format", "json"]))
    head = ["runs/side", "show: peak", "show: time", "compare: peak", "compare: time",
            "memory ratio", "target"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for n, rm, rt, cm, ct in rows:
        print(f"| {n:,} | {rm:.0f} MB | {rt:.1f} s | {cm:.0f} MB | {ct:.1f} s | "
              f"{cm / rm:.2f} | {'<= 150 MB' if n == 300000 else ''} |")
    if win is not None:
        size, sm, st, cm, ct = win
        print()
        print("| perf windows | file | show: peak | show: time | compare: peak | "
              "compare: time | target |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        print(f"| {args.windows:,} | {size:.0f} MB | {sm:.0f} MB | {st:.1f} s | {cm:.0f} MB | "
              f"{ct:.1f} s | show < 100 MB |")


if __name__ == "__main__":
    main()
