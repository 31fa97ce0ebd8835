"""How much perf data a session holds on disk while `perf report` cannot keep up.

A session's windows wait for their report (at idle priority, on the CPUs the workload leaves
free) before they are compressed and kept within perf_keep_mb.  On a machine with no idle CPU
the reports fall behind and the windows waiting for them pile up.  This runs `hotloop run`
with the workload on CPU 0 (cpu profile same-core), so its reports go to CPU 1, and a busy loop
on CPU 1 at nice 19 (above perf report's SCHED_IDLE) for as long as the runs go (then
stopped: the reports left catch
up), and samples the session's perf directory every 50 ms: the peak on disk, of it the peak
still plain (not gzipped), and the largest window file seen.

    python benchmarks/perf_backlog.py [--runs 150] [--budget-mb 1] [--freq 1999]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

from hotloop import results


def on_disk(d: Path) -> tuple[int, int, int]:
    """(bytes, bytes still plain, the largest file) of the perf data in `d` now."""
    total = plain = n = 0
    for f in list(d.glob("perf.data*")):
        try:
            size = f.stat().st_size
        except FileNotFoundError:       # dropped or compressed as we looked
            continue
        total += size
        plain += 0 if f.name.endswith(".gz") else size
        n = max(n, size)
    return total, plain, n


def one(runs: int, budget_mb: int, freq: int, busy: bool, tmp: Path) -> list[str]:
    prof = tmp / "prof"
    prof.mkdir()
    (prof / "p.toml").write_text(textwrap.dedent(f"""\
        [plan.backlog]
        workload = "zero_null"
        cpu = "same-core"
        runs = {runs}
        warmup = 0
        perf_freq = {freq}
        perf_keep_mb = {budget_mb}
        params = {{ count = 300000 }}
        """))
    out = tmp / "b.jsonl"
    d = tmp / "b.perf"
    # nice 19: above perf report (SCHED_IDLE), below perf record, which keeps its pace
    loop = subprocess.Popen(["taskset", "-c", "1", "nice", "-n", "19", sys.executable, "-c",
                             "while True: pass"]) if busy else None
    peak = [0, 0, 0]
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            now = on_disk(d)
            peak[:] = [max(a, b) for a, b in zip(peak, now)]
    watcher = threading.Thread(target=watch)
    watcher.start()
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "backlog", "--profiles",
                             str(prof), "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        if loop is not None:            # busy while the runs go, then the reports catch up
            while proc.poll() is None and len(_runs(out)) < runs:
                time.sleep(0.1)
            loop.kill()
            loop.wait()
        _, err = proc.communicate(timeout=600)
    finally:
        done.set()
        watcher.join()
        if loop is not None and loop.poll() is None:
            loop.kill()
            loop.wait()
    res = results.read(out)
    wins = res.windows
    unread = sum(1 for w in wins if getattr(w, "dropped", ""))
    after = on_disk(d)
    return [f"{'busy' if busy else 'idle':>6}", f"{budget_mb:>6}", f"{len(wins):>7}",
            f"{unread:>7}", f"{peak[0] / 1e6:>9.2f}", f"{peak[1] / 1e6:>9.2f}",
            f"{peak[2] / 1e6:>9.2f}", f"{after[0] / 1e6:>9.2f}", f"{proc.returncode:>3}"]


def _runs(out: Path) -> list[str]:
    try:
        return [ln for ln in out.read_text().splitlines() if '"warmup":false' in ln]
    except OSError:
        return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=150)
    ap.add_argument("--budget-mb", type=int, default=1)
    ap.add_argument("--freq", type=int, default=1999)
    ap.add_argument("--idle-too", action="store_true", help="also a run with CPU 1 left idle")
    args = ap.parse_args()
    print(f"{'CPU 1':>6} {'budget':>6} {'windows':>7} {'unread':>7} {'peak MB':>9} "
          f"{'plain MB':>9} {'window MB':>9} {'after MB':>9} {'rc':>3}", flush=True)
    for busy in ([False] if args.idle_too else []) + [True]:
        with tempfile.TemporaryDirectory(prefix="hotloop-backlog-") as tmp:
            print(" ".join(one(args.runs, args.budget_mb, args.freq, busy, Path(tmp))),
                  flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
