"""How long `hotloop annotate` takes as a session grows: 20, 700 and 30,000 perf windows.

    python benchmarks/annotate_speed.py [--seconds 10] [--windows 20,700,30000] [--tree DIR]

One syscall (getppid) session of about `--seconds` with its perf data kept (one gzipped file a
window: about 20 windows), then longer sessions made from it: its window files linked again
under new names and its window lines repeated, renumbered, up to `--windows` (synthetic: real
perf data of 30,000 windows is gigabytes, and what is measured is how annotate's cost grows
with the windows, not perf's).  The real command, `hotloop annotate RESULT hl_run`, in a
child: wall time.  Before, every window was decompressed and counted with `perf script`
(about 0.12 s of CPU a window: 670 windows took 6 minutes); now at most MOST_WINDOWS, an even
spread of those whose window line lists the symbol.  `--tree DIR` measures another
checkout's package (DIR holding `hotloop/`), for a before.  No assertion (the machine is
shared).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hotloop.perf.annotate import perf_data_files


def longer(out: Path, dest: Path, windows: int) -> None:
    """`out`'s session as one of `windows` windows: its files linked again, its window lines
    repeated and renumbered."""
    files = perf_data_files(out.with_suffix(".perf"))
    perf = dest.with_suffix(".perf")
    perf.mkdir()
    for i in range(windows):
        os.link(files[i % len(files)], perf / f"perf.data.{i:08d}.gz")
    lines = out.read_text().splitlines()
    window = [json.loads(x) for x in lines if '"scope":"window"' in x]
    rest = [x for x in lines[1:] if '"scope":"window"' not in x]
    head = json.loads(lines[0])
    head["header"]["perf_data"] = perf.name         # its own windows, not the session's
    with open(dest, "w") as f:
        f.write(json.dumps(head, separators=(",", ":")) + "\n")
        for i in range(windows):
            w = dict(window[i % len(window)], window=i)
            f.write(json.dumps(w, separators=(",", ":")) + "\n")
        f.write("\n".join(rest) + "\n")


def timed(result: Path, tree: str | None) -> float:
    env = dict(os.environ, PYTHONPATH=tree) if tree else None
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "hotloop", "annotate", str(result), "hl_run",
                           "--format", "json"], capture_output=True, text=True, env=env)
    took = time.perf_counter() - t
    if done.returncode != 0:
        sys.exit(done.stderr)
    doc = json.loads(done.stdout)
    print(f"  {result.name}: {doc['samples']} samples in {doc['windows']} windows"
          + (f" of {doc['sampled_from']}" if doc.get("sampled_from") else ""), flush=True)
    return took


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--windows", default="20,700,30000")
    p.add_argument("--tree", help="a directory holding another checkout's hotloop/")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="hotloop-annbench-") as tmp:
        out = Path(tmp) / "r.jsonl"
        runs = max(2, round(args.seconds / 0.5))        # about 0.5 s a run at 3M calls
        done = subprocess.run([sys.executable, "-m", "hotloop", "run", "syscall", "--runs",
                               str(runs), "--warmup", "0", "--param", "calls=3000000",
                               "--out", str(out)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(done.stderr)
        real = len(perf_data_files(out.with_suffix(".perf")))
        print(f"session: {runs} runs, {real} perf windows (real), the others made from them")
        rows = []
        for n in (int(x) for x in args.windows.split(",")):
            dest = Path(tmp) / f"w{n}.jsonl"
            longer(out, dest, n)
            rows.append((n, timed(dest, args.tree)))
    print("| windows | hotloop annotate hl_run | goal |")
    print("|---:|---:|---:|")
    for n, took in rows:
        print(f"| {n:,} | {took:.1f} s | {'seconds' if n > 700 else ''} |")


if __name__ == "__main__":
    main()
