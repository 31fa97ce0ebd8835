"""What do the typed lines cost to write and to read?  The result reader on a session's file
(`results.read`, what show and compare do a side), each event's line decoded and encoded, and
the worker's lines both ways, in this checkout and another (`--tree DIR`, DIR holding a
`hotloop/`: the code before a change), in alternating rounds of one run, so both see the
same machine; each case's CPU time, so the waits of a loaded machine are left out.

The file is synthetic (lognormal runs written through hotloop's own writer, a header with its
optional parts, a perf window and the session's hot symbols), so this measures the codec and
the reader's checks, not a workload.

    python benchmarks/line_codec.py [--runs 300000] [--lines 20000] [--rounds 5] [--tree DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a child with the tree's package first on the path: prints {case: seconds}.
CHILD = r'''
import json, sys, time
from pathlib import Path
from hotloop import events as ev, record, results
from hotloop.record import Batch, CpuInfo, Header, PlanInfo, Remote, WorkloadInfo
# the finished line's summary, by its name in either tree
SessionSummary = getattr(record, "SessionSummary", None) or getattr(record, "Summary")
from hotloop.results.reader import decode_line
from hotloop.results.writer import encode_line
from hotloop.run import protocol

path, runs, lines = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
header = Header(host="bench", workload=WorkloadInfo("synthetic", metric="ns/op", unit="ns/op",
                                                     higher_is_better=False),
                plan=PlanInfo(name="bench", runs=runs, params={"block_size": 512}),
                cpu=CpuInfo(name="pinned", cpus=(1,)), cflags=("-O2",),
                batch=Batch("b1", True, 2, session=1), remote=Remote("lab", "10.0.0.1"))
syms = tuple(ev.HotSymbol(f"symbol_{k}", "[kernel.kallsyms]", 3.3, True, 30) for k in range(30))
events = {
    "started": ev.Started(header, "r.jsonl"),
    "run": ev.RunSample(index=3, value=101.25, ops=1000, bytes=0, ns=101250, cycles=0,
                        extra={"worker_cpu_s": 0.0001}),
    "hot_symbols": ev.HotSymbols(syms, window=3, samples=900),
    "finished": ev.Finished(SessionSummary(n=3, median=1.0, mean=1.0, stdev=0.1, cv=0.1, min=0.9,
                                    max=1.1), counters={"task-clock": 1.5}),
}
worker = protocol.Run(index=3, warmup=False, ops=1000, bytes=0, ns=101250, cycles=0,
                      extra={"worker_cpu_s": 0.0001})
out = {}

def timed(name, fn, n):
    t = time.process_time()
    for _ in range(n):
        fn()
    out[name] = time.process_time() - t

for kind, e in events.items():
    n = lines if kind != "started" else lines // 20
    text = encode_line(e)
    assert decode_line(text) == e
    timed(f"decode {kind}", lambda: decode_line(text), n)
    timed(f"encode {kind}", lambda: encode_line(e), n)
wline = protocol.encode(worker)
timed("worker: decode run", lambda: protocol.decode(wline), lines)
timed("worker: encode run", lambda: protocol.encode(worker), lines)
t = time.process_time()
r = results.read(path)
out[f"results.read, {runs:,} runs"] = time.process_time() - t
assert len(r.runs) == runs
print(json.dumps(out))
'''


def write(path: Path, runs: int) -> None:
    import numpy as np

    from hotloop import events as ev
    from hotloop.record import Header, SessionSummary, WorkloadInfo
    from hotloop.results import Writer
    rng = np.random.default_rng(1)
    w = Writer(path)
    w.write(ev.Started(Header(host="bench", workload=WorkloadInfo(
        "synthetic", metric="ns/op", unit="ns/op", higher_is_better=False))))
    for i, v in enumerate(np.exp(rng.normal(np.log(100), 0.02, runs))):
        ns = int(v * 1000)                  # the value is what its counters say
        w.write(ev.RunSample(index=i, value=ns / 1000, ops=1000, bytes=0, ns=ns,
                             cycles=0, extra={"worker_cpu_s": float(v) * 1e-6}))
    w.write(ev.Finished(SessionSummary()))
    w.close()


def measure(tree: str | None, path: Path, runs: int, lines: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=tree) if tree else None
    text = subprocess.run([sys.executable, "-c", CHILD, str(path), str(runs), str(lines)],
                          capture_output=True, text=True, check=True, cwd=ROOT,
                          env=env).stdout
    result: dict[str, float] = json.loads(text)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=300_000, help="runs in the file read")
    ap.add_argument("--lines", type=int, default=20_000, help="lines decoded/encoded a case")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tree", help="a directory holding another checkout's hotloop/")
    args = ap.parse_args()
    trees = [("before", args.tree), ("now", None)] if args.tree else [("now", None)]
    got: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    with tempfile.TemporaryDirectory(prefix="hotloop-line-codec-") as tmp:
        path = Path(tmp) / "runs.jsonl"
        write(path, args.runs)
        for _ in range(args.rounds):
            for name, tree in trees:
                got[name].append(measure(tree, path, args.runs, args.lines))
    cases = list(got["now"][0])
    per = {name: {c: statistics.median(r[c] for r in rows) for c in cases}
           for name, rows in got.items()}
    head = ["case", *(f"{name} (µs a line)" for name in got)] + (["now/before"] if args.tree
                                                                   else [])
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for c in cases:
        n = args.runs if c.startswith("results.read") else (
            args.lines // 20 if c.endswith("started") else args.lines)
        cells = [f"{per[name][c] / n * 1e6:.2f}" for name in got]
        if args.tree:
            cells.append(f"{per['now'][c] / per['before'][c]:.2f}")
        print(f"| {c} | " + " | ".join(cells) + " |")
    print(f"\nthe child's CPU time (a loaded machine's waits left out), medians of "
          f"{args.rounds} rounds, the trees alternating; results.read: the whole file, a line")


if __name__ == "__main__":
    main()
