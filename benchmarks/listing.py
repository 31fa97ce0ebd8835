"""How long does the console's compare screen take to list a results directory, and what does
it hold?  `hotloop.results.index.scan` of N result files in a fresh child: wall time and peak
RSS, the first time (no index yet: every header and last line read) and again (the index).

The issue's figures before (each file read whole): 100 files 1-1.7 s, 1,000 files 6 s, 5,000
files 27 s and +220 MB.  The target: 5,000 files under 2 s and under 50 MB more than Python
with hotloop imported.

The files are synthetic: a real header (tests/forge.py's shape), 30 runs, 30 perf window
lines of 30 symbols and a finished line, copied N times.

    python benchmarks/listing.py [--files 100,1000,5000]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import forge  # noqa: E402 - the tests' own forged files


def one_file(path: Path) -> None:
    syms = [{"symbol": f"sym_{k}", "dso": "[kernel.kallsyms]", "percent": 3.3, "kernel": True,
             "samples": 30} for k in range(30)]
    windows = [{"type": "hot_symbols", "symbols": syms, "scope": "window", "window": w,
                "samples": 900} for w in range(30)]
    forge.zero_null(path, 100_000, n=30, more=windows)


CHILD = """
import resource, sys, time
from pathlib import Path
import hotloop.results.index as index
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
entries = index.scan(Path(sys.argv[1]))
w = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(len(entries), w, base / 1024, peak / 1024)
"""


def measure(directory: Path, cache: Path) -> tuple[int, float, float, float]:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    out = subprocess.run([sys.executable, "-c", CHILD, str(directory)], capture_output=True,
                         text=True, check=True, env=env).stdout.split()
    return int(out[0]), float(out[1]), float(out[2]), float(out[3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", default="100,1000,5000", help="files, comma separated")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hotloop-listing-") as tmp:
        src = Path(tmp) / "one.jsonl"
        one_file(src)
        text = src.read_text()
        size = len(text.encode())
        for n in (int(x) for x in args.files.split(",")):
            d = Path(tmp) / f"results-{n}"
            for i in range(n):
                sub = d / f"s{i // 500}"
                sub.mkdir(parents=True, exist_ok=True)
                (sub / f"20261130-{i:06d}-quick.jsonl").write_text(text)
            cache = Path(tmp) / f"cache-{n}"
            first = measure(d, cache)
            again = measure(d, cache)
            rows.append((n, first, again))
    print(f"each file {size / 1024:.0f} KB (30 runs, 30 perf windows)")
    head = ["files", "first: time", "first: +RSS", "again: time", "again: +RSS", "target"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---:|" * len(head))
    for n, (k1, t1, b1, p1), (_, t2, b2, p2) in rows:
        assert k1 == n, (k1, n)
        print(f"| {n:,} | {t1:.2f} s | {p1 - b1:.0f} MB | {t2:.2f} s | {p2 - b2:.0f} MB | "
              f"{'< 2 s, < 50 MB' if n >= 5000 else ''} |")
    json.dumps(rows)


if __name__ == "__main__":
    main()
