"""Does hotloop measure what the reference tools measure?  Interleaved, one run, one table.

    python benchmarks/fidelity.py [--rounds 5] [--per-round 3] [--only NAME]

Each row runs a reference (the AF_UNIX seqpacket stream test's program compiled from ../shared/seeds at
run time, dd, perf bench) and the matching hotloop workload alternately,
a few runs of one then a few of the other, so drift of the machine hits both.
The ratio is hotloop / reference oriented so that 1.00 means "the same" and
above 1 means hotloop measured the faster number: each round's (the medians of its runs of
each), printed as the least, the median and the largest over the rounds, so the spread shows
beside the pooled one (the medians of all the runs of each).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the seqpacket stream test's source: beside the checkout, or where HOTLOOP_SEEDS says
SEEDS = Path(os.environ.get("HOTLOOP_SEEDS") or ROOT.parent / "shared" / "seeds")
Runner = Callable[[int], list[float]]


@dataclass
class Row:
    name: str
    unit: str
    higher_is_better: bool
    reference: Runner
    hotloop: Runner
    target: str


def hotloop_runner(workload: str, cpu: str, *params: str) -> Runner:
    def run(n: int) -> list[float]:
        cmd = [sys.executable, "-m", "hotloop", "run", workload, "--cpu", cpu, "--runs", str(n),
               "--warmup", "1", "--no-perf", "--format", "json",
               "--out", str(Path(tempfile.mkdtemp()) / "r.jsonl")]
        for p in params:
            cmd += ["--param", p]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
        return [r["value"] for r in json.loads(out.stdout)["runs"]]
    return run


@functools.cache
def seed_program() -> Path:
    """The seqpacket stream test's program, compiled with gcc -O2 (never committed)."""
    text = next(SEEDS.glob("000_*.txt")).read_text()
    code = text.split("modified test program\n=====================\n", 1)[1].split("\n--\n")[0]
    d = Path(tempfile.mkdtemp())
    (d / "stream_test.c").write_text(code)
    subprocess.run(["gcc", "-O2", "-o", str(d / "stream_test"), str(d / "stream_test.c")], check=True,
                   capture_output=True)
    return d / "stream_test"


def seed_runner(taskset: str | None) -> Runner:
    def run(n: int) -> list[float]:
        cmd = (["taskset", "-c", taskset] if taskset else []) + [str(seed_program())]
        return [float(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
                for _ in range(n)]
    return run


def dd_runner(n: int) -> list[float]:
    out = []
    for _ in range(n):
        p = subprocess.run(["dd", "if=/dev/zero", "of=/dev/null", "count=1M"],
                           capture_output=True, text=True, check=True)
        m = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", p.stderr)
        assert m, p.stderr
        out.append(int(m.group(1)) / float(m.group(2)))
    return out


def perf_bench_runner(args: list[str], pattern: str, taskset: str | None = None) -> Runner:
    """A `perf bench` figure in ns per op (it prints usecs/op)."""
    def run(n: int) -> list[float]:
        out = []
        for _ in range(n):
            cmd = (["taskset", "-c", taskset] if taskset else []) + ["perf", "bench", *args]
            p = subprocess.run(cmd, capture_output=True, text=True, check=True)
            m = re.search(pattern, p.stdout)
            assert m, p.stdout
            out.append(float(m.group(1)) * 1000)
        return out
    return run


def rows(only: str | None) -> list[Row]:
    from hotloop import catalog
    have = catalog.load().workloads
    table = [
        Row("seqpacket vs the stream test (same-core)", "B/s", True, seed_runner("0"),
            hotloop_runner("seqpacket", "same-core"), ">= 0.97"),
        Row("seqpacket vs the stream test (unpinned)", "B/s", True, seed_runner(None),
            hotloop_runner("seqpacket", "default"), ">= 0.97"),
        Row("zero_null vs dd count=1M", "B/s", True, dd_runner,
            hotloop_runner("zero_null", "default"), ">= 1.00"),
    ]
    if "syscall" in have:
        table.append(Row("syscall vs perf bench syscall basic", "ns/op", False,
                         perf_bench_runner(["syscall", "basic"], r"([\d.]+) usecs/op", "0"),
                         hotloop_runner("syscall", "same-core"), "within 3%"))
    if "pipe" in have:
        table.append(Row("pipe vs perf bench sched pipe (same-core)", "ns/op", False,
                         perf_bench_runner(["sched", "pipe"], r"([\d.]+) usecs/op", "0"),
                         hotloop_runner("pipe", "same-core"), "within 5%"))
    return [r for r in table if only is None or only in r.name]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=3)
    ap.add_argument("--only")
    args = ap.parse_args()
    print("| comparison | reference | hotloop | pooled ratio | rounds' ratio: min | median | "
          "max | target |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for row in rows(args.only):
        ref: list[float] = []
        hot: list[float] = []
        each: list[float] = []              # a round's ratio: its medians
        for _ in range(args.rounds):        # interleaved: ABAB...
            rr, hh = row.reference(args.per_round), row.hotloop(args.per_round)
            ref += rr
            hot += hh
            each.append(ratio_of(row, statistics.median(rr), statistics.median(hh)))
        r, h = statistics.median(ref), statistics.median(hot)
        print(f"| {row.name} | {r:.4g} {row.unit} | {h:.4g} {row.unit} | "
              f"{ratio_of(row, r, h):.3f} | {min(each):.3f} | {statistics.median(each):.3f} | "
              f"{max(each):.3f} | {row.target} (n={len(ref)}+{len(hot)}, "
              f"{len(each)} rounds) |", flush=True)
    if args.only is None or "pool" in args.only:
        harness_cost(args.rounds * args.per_round)


def ratio_of(row: Row, reference: float, hotloop: float) -> float:
    """hotloop against the reference, 1.00 the same, above 1 hotloop's number the faster."""
    return hotloop / reference if row.higher_is_better else reference / hotloop


def harness_cost(runs: int) -> None:
    """pool's baseline mode is the empty loop: what the harness itself costs per op."""
    cmd = [sys.executable, "-m", "hotloop", "run", "pool", "--cpu", "same-core", "--runs",
           str(runs), "--param", "mode=baseline", "--no-perf", "--format", "json",
           "--out", str(Path(tempfile.mkdtemp()) / "b.jsonl")]
    doc = json.loads(subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                                    check=True).stdout)
    ns = statistics.median(r["ns"] / r["ops"] for r in doc["runs"])
    cycles = statistics.median(r["cycles"] / r["ops"] for r in doc["runs"])
    print(f"| pool baseline (the empty loop) | | {ns:.3f} ns/op, {cycles:.2f} TSC cycles/op | | "
          f"| | | the harness's own cost per op (n={runs}) |")


if __name__ == "__main__":
    main()
