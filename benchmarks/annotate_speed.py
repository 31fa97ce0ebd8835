"""How long `hotloop annotate` takes as a session grows: 20, 700 and 30,000 perf windows, from
the session's tally of samples by address (now) and from an even spread of its windows (the
way without a tally: older sessions' data); and what the tally costs a window while recording.

    python benchmarks/annotate_speed.py [--seconds 10] [--windows 20,700,30000] [--tree DIR]

One syscall (getppid) session of about `--seconds` with its perf data kept (one gzipped file a
window: about 20 windows), then longer sessions made from it: its window files linked again
under new names and its window lines repeated, renumbered, up to `--windows` (synthetic: real
perf data of 30,000 windows is gigabytes, and what is measured is how annotate's cost grows
with the windows, not perf's).  Each long session twice: with a tally made as the recorder
makes it (each real window read by `perf script`, its samples by address added under each of
its copies' names), and without one.  The real command, `hotloop annotate RESULT hl_run`, in a
child: wall time.  Per window while recording: CPU time of `perf report` (the summary before)
and of `perf script` read into hot symbols and addresses (now), over the real windows; and
the tally's write (all of it, rewritten every few seconds) at each size.  `--tree DIR`
measures another checkout's package (DIR holding `hotloop/`) for the annotate times.  No
assertion (the machine is shared).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from perf_report import parse_report, report_argv  # beside this script: the old way

from hotloop import results
from hotloop.perf import addrs
from hotloop.perf.annotate import perf_data_files
from hotloop.perf.script import read_window, script_argv


def longer(out: Path, dest: Path, windows: int,
           counts: list[Counter[tuple[str, str, int]]] | None) -> None:
    """`out`'s session as one of `windows` windows: its files linked again, its window lines
    repeated and renumbered; with a tally of `counts` (each real window's samples by
    address) under the copies' names, or none."""
    files = perf_data_files(out.with_suffix(".perf"))
    perf = dest.with_suffix(".perf")
    perf.mkdir()
    tally = addrs.AddressTally()
    for i in range(windows):
        os.link(files[i % len(files)], perf / f"perf.data.{i:08d}.gz")
        if counts is not None:
            tally.add(f"perf.data.{i:08d}", i, counts[i % len(files)])
    if counts is not None:
        addrs.write(perf / addrs.FILE, tally.document())
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


def timed(result: Path, tree: str | None) -> tuple[float, dict]:
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
    return took, doc


def children_cpu() -> float:
    t = os.times()
    return t.children_user + t.children_system


def per_window(out: Path, tmp: Path) -> tuple[list[Counter[tuple[str, str, int]]], float,
                                               float, float]:
    """Each real window's samples by address, as the recorder reads them; and the mean CPU
    seconds a window of perf report (before), of perf script, and of reading its output."""
    hot = results.read(out).session_symbols
    comm = hot.comms[0] if hot and hot.comms else None
    pids = frozenset(hot.pids) if hot else frozenset()
    counts = []
    report = script = parse = 0.0
    files = perf_data_files(out.with_suffix(".perf"))
    for f in files:
        plain = tmp / f.name.removesuffix(".gz")
        with gzip.open(f) as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        c0 = children_cpu()
        rep = subprocess.run(report_argv("perf", str(plain), comm), capture_output=True,
                             text=True).stdout
        c1 = children_cpu()
        text = subprocess.run(script_argv("perf", str(plain)), capture_output=True,
                              text=True).stdout
        c2 = children_cpu()
        p0 = time.process_time()
        window = read_window(text, comm, pids)
        parse += time.process_time() - p0
        report += c1 - c0
        script += c2 - c1
        got = {(s.symbol, s.dso): s.samples for s in window.symbols}
        if got != {(s.symbol, s.dso): s.samples for s in parse_report(rep)}:
            print(f"  {f.name}: perf script's hot symbols differ from perf report's")
        counts.append(window.addresses)
        plain.unlink()
    n = len(files)
    return counts, report / n, script / n, parse / n


def write_cost(counts: list[Counter[tuple[str, str, int]]], windows: int,
               tmp: Path) -> tuple[float, int]:
    """Seconds to write a tally of `windows` windows (its document made, gzipped, renamed
    over), and its size."""
    tally = addrs.AddressTally()
    for i in range(windows):
        tally.add(f"perf.data.{i:016d}", i, counts[i % len(counts)])
    path = tmp / addrs.FILE
    t = time.perf_counter()
    addrs.write(path, tally.document())
    return time.perf_counter() - t, path.stat().st_size


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--windows", default="20,700,30000")
    p.add_argument("--tree", help="a directory holding another checkout's hotloop/")
    args = p.parse_args()
    sizes = [int(x) for x in args.windows.split(",")]
    with tempfile.TemporaryDirectory(prefix="hotloop-annbench-") as tmp_:
        tmp = Path(tmp_)
        out = tmp / "r.jsonl"
        runs = max(2, round(args.seconds / 0.5))        # about 0.5 s a run at 3M calls
        done = subprocess.run([sys.executable, "-m", "hotloop", "run", "syscall", "--runs",
                               str(runs), "--warmup", "0", "--param", "calls=3000000",
                               "--out", str(out)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(done.stderr)
        real = len(perf_data_files(out.with_suffix(".perf")))
        print(f"session: {runs} runs, {real} perf windows (real), the others made from them")
        counts, report, script, parse = per_window(out, tmp)
        rows = []
        for n in sizes:
            spread, tallied = tmp / f"s{n}.jsonl", tmp / f"t{n}.jsonl"
            longer(out, spread, n, None)
            longer(out, tallied, n, counts)
            old, _ = timed(spread, args.tree)
            new, doc = timed(tallied, args.tree)
            writing, size = write_cost(counts, n, tmp)
            rows.append((n, old, new, writing, size))
            shutil.rmtree(spread.with_suffix(".perf"))
            shutil.rmtree(tallied.with_suffix(".perf"))
    print("\n| windows | annotate hl_run: even spread of 48 (estimate) | from the tally "
          "(exact) | tally on disk | one write of it |")
    print("|---:|---:|---:|---:|---:|")
    for n, old, new, writing, size in rows:
        print(f"| {n:,} | {old:.1f} s | {new:.1f} s | {size / 1024:.0f} kB "
              f"| {writing * 1000:.0f} ms |")
    print(f"\nper window while recording (CPU, mean of {real}): perf report "
          f"{report * 1000:.0f} ms before; perf script {script * 1000:.0f} ms + reading its "
          f"output {parse * 1000:.1f} ms now; the tally's write every "
          f"{addrs.WRITE_EVERY_S:g} s on top (the table's last column)")


if __name__ == "__main__":
    main()
