"""What does `hotloop compare` cost as the runs grow?  Peak memory and wall time of the real
command, against reading the same files (`hotloop show` of both), in one run.

Plans allow a million runs; an earlier compare bootstrapped 9,999 resamples of every run and
held them all (1,000 runs a side took 340 MB, 5,000 took 1.28 GB).  Now every method is
O(runs log runs) and holds the runs once: the target is 100,000 runs a side under 300 MB and
under 30 s.

The result files are synthetic (lognormal runs, written through hotloop's own result writer):
this measures compare's statistics and rendering, not a workload.

    python benchmarks/compare_memory.py [--runs 1000,10000,100000] [--sessions 1]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from hotloop import events as ev
from hotloop.record import Header, Summary, WorkloadInfo
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
    w.write(ev.Finished(Summary()))
    w.close()


def measure(argv: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, wall seconds) of one hotloop command in a fresh child."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
             f"subprocess.run({[sys.executable, '-m', 'tui', *argv]!r}, check=True, "
             "stdout=subprocess.DEVNULL); w = time.perf_counter() - t; "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, w)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="1000,10000,100000", help="runs a side, comma separated")
    ap.add_argument("--sessions", type=int, default=1, help="sessions a side")
    args = ap.parse_args()
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
            read = [measure(["show", f, "--format", "json"]) for f in sides[0].split(",")]
            cmp = measure(["compare", *sides, "--format", "json"])
            rows.append((n, max(r[0] for r in read), sum(r[1] for r in read), *cmp))
    head = ["runs/side", "show: peak", "show: time", "compare: peak", "compare: time",
            "memory ratio", "target"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for n, rm, rt, cm, ct in rows:
        print(f"| {n:,} | {rm:.0f} MB | {rt:.1f} s | {cm:.0f} MB | {ct:.1f} s | "
              f"{cm / rm:.2f} | {'< 300 MB, < 30 s' if n >= 100000 else ''} |")


if __name__ == "__main__":
    main()
