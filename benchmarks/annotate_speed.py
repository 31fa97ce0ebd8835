"""How long `hotloop annotate` takes on a 10-second session, against perf annotate of one file.

    python benchmarks/annotate_speed.py [--seconds 10] [--repeats 3]

One syscall (getppid) session of about `--seconds` with its perf data kept (one gzipped
file a window), then, per symbol: hotloop's annotation of the whole run (every window
decompressed and its samples counted with `perf script`, PARALLEL at a time, then one
`perf annotate`), and `perf annotate` of the largest single window as the reference.
The goal: under 2 s for one symbol of a 10-second session.  Printed as a table; no
assertion (the machine is shared).
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hotloop import results
from hotloop.perf.annotate import annotate, perf_data_files


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="hotloop-annbench-") as tmp:
        out = Path(tmp) / "r.jsonl"
        runs = max(2, round(args.seconds / 0.5))        # about 0.5 s a run at 3M calls
        done = subprocess.run([sys.executable, "-m", "hotloop", "run", "syscall", "--runs",
                               str(runs), "--warmup", "0", "--param", "calls=3000000",
                               "--out", str(out)], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(done.stderr)
        files = perf_data_files(out.with_suffix(".perf"))
        biggest = max(files, key=lambda f: f.stat().st_size)
        plain = Path(tmp) / "one.data"
        with gzip.open(biggest) as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        print(f"session: {runs} runs, {len(files)} perf windows, "
              f"{sum(f.stat().st_size for f in files) / 1e6:.1f} MB kept (gzipped)")
        print(f"{'symbol':<18}{'hotloop annotate':>18}{'perf annotate, 1 file':>24}"
              f"{'ratio':>8}{'goal':>8}")
        hot = results.read(out).session_symbols
        assert hot is not None
        for symbol in ("hl_run", "__GI___getppid"):
            ours, ref = [], []
            known = next(s for s in hot.symbols if s.symbol == symbol)
            for _ in range(args.repeats):
                t = time.perf_counter()     # as `hotloop annotate` calls it
                annotate(files, symbol, dso=known.dso, kernel=known.kernel,
                         build_ids=hot.build_ids)
                ours.append(time.perf_counter() - t)
                t = time.perf_counter()
                subprocess.run(["perf", "annotate", "-i", str(plain), "--stdio", "-s", symbol],
                               capture_output=True)
                ref.append(time.perf_counter() - t)
            a, b = statistics.median(ours), statistics.median(ref)
            print(f"{symbol:<18}{a:>16.2f} s{b:>22.2f} s{a / b:>8.1f}{'< 2 s':>8}")


if __name__ == "__main__":
    main()
