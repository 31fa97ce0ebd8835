"""What a series costs a session beyond its runs, and where it goes.

A series of N sessions of a few short runs each (zero_null, the default kernel profile), run
in this process as `hotloop run --sessions` runs it (run.series_run), perf on or off; each
session's time cut at its events:

  setup     Begins -> Started: the build check, preflight, system facts, the result file
  start     Started -> first run: the worker process (Python, imports, the workload's
            setup), perf started and enabled, the warmups
  runs      the measured runs' own time (their ns, from the worker)
  between   first -> last run beyond the runs' own ns (the protocol, perf's cuts)
  end       last run -> Ends: perf stopped and its last window, the worker's teardown,
            hot symbols, the last lines written

Printed per session (median over the series) beside the runs' own time, and the whole
command's wall time with its start-up (`hotloop run ... --sessions N` as a process).

    python benchmarks/series_overhead.py [--sessions 10] [--runs 3] [--count 200000]
                                         [--perf on,off] [--cli]
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
from pathlib import Path

from hotloop import catalog, results
from hotloop import events as ev
from hotloop.run import series
from hotloop.run.series_run import SeriesRequest, SeriesRun

PHASES = ("setup", "start", "runs", "between", "end")


async def one_series(sessions: int, runs: int, count: int, perf: bool,
                     out: Path) -> list[dict[str, float]]:
    cat = catalog.load()
    plan = catalog.with_overrides(cat.plan_for("zero_null"), runs=runs, warmup=0, perf=perf,
                                  params={"count": count})
    kernel = plan.kernel or "default"
    s = SeriesRun(SeriesRequest(plan, (kernel,), sessions, results=out))
    s.resolve(cat)
    s.start()
    rows: list[dict[str, float]] = []
    marks: dict[str, float] = {}
    slot_path: Path | None = None
    async for e in s.events():
        now = time.perf_counter()
        if isinstance(e, series.Begins):
            marks = {"begin": now}
            slot_path = e.slot.path
        elif isinstance(e, ev.Started):
            marks["started"] = now
        elif isinstance(e, ev.RunSample) and not e.warmup:
            marks.setdefault("first", now)
            marks["last"] = now
        elif isinstance(e, series.Ends):
            assert slot_path is not None
            ns = sum(r.ns for r in results.read(slot_path).runs) / 1e9
            first, last = marks["first"], marks["last"]
            # the first run's own time is before its line: count it in the runs, not start
            one_run = ns / max(len(results.read(slot_path).runs), 1)
            rows.append({"setup": marks["started"] - marks["begin"],
                         "start": first - marks["started"] - one_run,
                         "runs": ns,
                         "between": max(last - first - (ns - one_run), 0.0),
                         "end": now - last})
    s.finish()
    return rows


def cli_wall(sessions: int, runs: int, count: int, perf: bool, out: Path) -> float:
    argv = [sys.executable, "-m", "hotloop", "run", "zero_null", "--sessions", str(sessions),
            "--runs", str(runs), "--warmup", "0", "--param", f"count={count}",
            "--perf" if perf else "--no-perf", "--format", "events"]
    t = time.perf_counter()
    subprocess.run(argv, cwd=out, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, env=dict(os.environ))
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--count", type=int, default=200_000, help="zero_null's reads a run")
    ap.add_argument("--perf", default="on,off", help="perf on, off or both")
    ap.add_argument("--cli", action="store_true", help="also the whole command's wall time")
    args = ap.parse_args()
    print(f"{args.sessions} sessions of {args.runs} runs (zero_null count={args.count}); "
          f"medians a session, seconds")
    print(f"{'perf':>5} " + " ".join(f"{p:>8}" for p in PHASES) + f" {'overhead':>9}"
          + (f" {'cli wall':>9} {'cli/sess':>9}" if args.cli else ""))
    for perf in (p == "on" for p in args.perf.split(",")):
        with tempfile.TemporaryDirectory(prefix="hotloop-series-") as tmp:
            rows = asyncio.run(one_series(args.sessions, args.runs, args.count, perf,
                                          Path(tmp)))
            med = {p: statistics.median(r[p] for r in rows) for p in PHASES}
            over = statistics.median(sum(r[p] for p in PHASES if p != "runs") for r in rows)
            line = f"{'on' if perf else 'off':>5} " + " ".join(f"{med[p]:>8.3f}" for p in PHASES) \
                + f" {over:>9.3f}"
            if args.cli:
                wall = cli_wall(args.sessions, args.runs, args.count, perf, Path(tmp))
                line += f" {wall:>9.2f} {wall / args.sessions:>9.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
