"""How long does the console take to quit in the middle of a session with perf on?

The real console under Textual's run_test: a zero_null session with perf on and its data kept
(plan default budget raised so nothing is thinned) runs for S seconds, then `q` is pressed;
the time until the app has stopped is the quit's, and until its event loop has closed (its
threads done: the old quit's gzip ran in one) the exit's.  Printed beside what was on disk in the perf
directory when `q` was pressed (plain windows: what the quit still has to compress) and after.
Before #34 the quit gzipped every window of the session (and gave up after STOP_GRACE_S, the
data left plain); now each is gzipped as the next one fills, so the quit has the windows perf
report has not reached (a window or two, more on a loaded machine: then a detached finisher
compresses them); "after" is once that finisher is done.

    python benchmarks/quit_time.py [--seconds 30,120] [--freq 999]
"""
from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from hotloop import catalog
from hotloop.console.app import HotloopApp


def on_disk(results: Path) -> tuple[int, int, int]:
    """(plain files, gzipped files, bytes) of the perf data under `results`."""
    plain = gz = size = 0
    for f in results.glob("*.perf/perf.data*"):
        try:
            size += f.stat().st_size
        except FileNotFoundError:
            continue
        if f.name.endswith(".gz"):
            gz += 1
        else:
            plain += 1
    return plain, gz, size


async def one(seconds: float, freq: int, out: Path) -> tuple[tuple[int, int, int], float,
                                                              float]:
    """(perf data at q, seconds from q until the app has stopped, perf_counter at q)."""
    cat = catalog.load()
    plan = catalog.with_overrides(cat.plan_for("zero_null"), runs=1_000_000, warmup=0,
                                  perf=True, perf_freq=freq, perf_keep_mb=100_000,
                                  params={"count": 300_000})
    rp = cat.resolve(plan)
    app = HotloopApp(results_dir=out)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        assert app.main_screen.controller.start_run(cat, rp)
        await asyncio.sleep(seconds)
        before = on_disk(out)
        t = time.perf_counter()
        await pilot.press("q")
        while app.is_running:
            await asyncio.sleep(0.005)
        quit_s = time.perf_counter() - t
    return before, quit_s, t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", default="30,120", help="session lengths, comma-separated")
    ap.add_argument("--freq", type=int, default=999, help="perf's sampling frequency")
    args = ap.parse_args()
    print(f"{'session':>8} {'at q: plain':>12} {'gz':>5} {'MB':>8} {'quit s':>7} {'exit s':>7} "
          f"{'after: plain':>13} {'gz':>5} {'MB':>8}")
    for s in (float(x) for x in args.seconds.split(",")):
        with tempfile.TemporaryDirectory(prefix="hotloop-quit-") as tmp:
            out = Path(tmp)
            before, quit_s, t = asyncio.run(one(s, args.freq, out))
            exit_s = time.perf_counter() - t        # the event loop closed, its threads done
            # a backlog of windows perf report had not reached goes to a detached finisher
            while on_disk(out)[0] and time.perf_counter() - t < 60:
                time.sleep(0.05)
            after = on_disk(out)
        print(f"{s:>7.0f}s {before[0]:>12} {before[1]:>5} {before[2] / 1e6:>8.1f} "
              f"{quit_s:>7.2f} {exit_s:>7.2f} {after[0]:>13} {after[1]:>5} "
              f"{after[2] / 1e6:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
