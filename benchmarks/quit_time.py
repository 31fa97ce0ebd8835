"""How long does the console take to quit in the middle of a session with perf on, and where
does that time go?

The real console under Textual's run_test: a zero_null session with perf on and its data kept
(plan default budget raised so nothing is thinned) runs for S seconds, then `q` is pressed;
the time until the app has stopped is the quit's, and until its event loop has closed (its
threads done) the exit's.  The quit is split by part: each step of the stop path is timed by a
wrapper put around it here (the package is not changed for it), printed as when it started and
ended after `q`, so that steps which overlap show as such.  Printed beside the machine's load
(/proc/loadavg's 1-minute figure) and what was on disk in the perf directory when `q` was
pressed (plain windows: what the quit still has to compress) and after ("after" is once a
detached finisher, for a loaded machine's backlog, is done).

    python benchmarks/quit_time.py [--seconds 30,120] [--freq 999] [--repeat 1]
"""
from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hotloop import catalog
from hotloop.console.app import HotloopApp
from hotloop.console.controller import RunController
from hotloop.console.screens.main import MainScreen
from hotloop.perf.record import PerfRecord
from hotloop.perf.stat import PerfStat
from hotloop.perf.windows import Windows
from hotloop.run.process import WorkerProcess
from hotloop.run.recording import Recording
from hotloop.run.teardown import Teardown

# (what it is called here, class, method): the stop path after `q`, in about the order it runs
PARTS: list[tuple[str, type, str]] = [
    ("quit (q to exit)", HotloopApp, "action_quit"),
    ("worker's exit", WorkerProcess, "wait_exit"),
    ("perf stop", Recording, "stop"),
    ("  perf stat", PerfStat, "stop"),
    ("  perf record", PerfRecord, "stop"),
    ("  windows", Windows, "finish"),
    ("run symbols", Recording, "events"),
    ("restore", Teardown, "put_back"),
    ("perf finish", Recording, "finish"),
    ("session over", RunController, "_ended"),
    ("UI: symbols", MainScreen, "on_symbols_arrived"),
    ("worker reaped", WorkerProcess, "reap"),
]


class Clock:
    """For each part, after `q`: when it was first entered, when it was last left, its calls
    and the seconds spent in them."""

    def __init__(self) -> None:
        self.t0: float | None = None
        self.spans: dict[str, tuple[float, float, int, float]] = {}

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def note(start: float) -> None:
            if self.t0 is None:
                return
            end = time.perf_counter()
            first, _, n, spent = self.spans.get(name, (start - self.t0, 0.0, 0, 0.0))
            self.spans[name] = (first, end - self.t0, n + 1, spent + end - start)
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def timed_async(*a: Any, **k: Any) -> Any:
                start = time.perf_counter()
                try:
                    return await fn(*a, **k)
                finally:
                    note(start)
            return timed_async

        @functools.wraps(fn)
        def timed(*a: Any, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                note(start)
        return timed

    def install(self) -> None:
        for name, cls, attr in PARTS:
            setattr(cls, attr, self.wrap(name, getattr(cls, attr)))


CLOCK = Clock()


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


def load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


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
        CLOCK.spans.clear()
        t = CLOCK.t0 = time.perf_counter()
        await pilot.press("q")
        while app.is_running:
            await asyncio.sleep(0.005)
        quit_s = time.perf_counter() - t
        CLOCK.t0 = None
    return before, quit_s, t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", default="30,120", help="session lengths, comma-separated")
    ap.add_argument("--freq", type=int, default=999, help="perf's sampling frequency")
    ap.add_argument("--repeat", type=int, default=1, help="quits of each length")
    args = ap.parse_args()
    CLOCK.install()
    print(f"{'session':>8} {'load':>5} {'at q: plain':>12} {'gz':>5} {'MB':>8} {'quit s':>7} "
          f"{'exit s':>7} {'after: plain':>13} {'gz':>5} {'MB':>8}")
    rows = []
    for s in (float(x) for x in args.seconds.split(",")):
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="hotloop-quit-") as tmp:
                out = Path(tmp)
                la = load()
                before, quit_s, t = asyncio.run(one(s, args.freq, out))
                exit_s = time.perf_counter() - t        # the event loop closed, threads done
                spans = dict(CLOCK.spans)
                # a backlog of windows perf report had not reached goes to a detached finisher
                while on_disk(out)[0] and time.perf_counter() - t < 60:
                    time.sleep(0.05)
                after = on_disk(out)
            print(f"{s:>7.0f}s {la:>5.1f} {before[0]:>12} {before[1]:>5} "
                  f"{before[2] / 1e6:>8.1f} {quit_s:>7.2f} {exit_s:>7.2f} {after[0]:>13} "
                  f"{after[1]:>5} {after[2] / 1e6:>8.1f}", flush=True)
            rows.append((s, la, spans))
    print("\nthe quit by part, seconds after q: first entered..last left (time inside, calls)")
    print(f"{'part':<17}" + "".join(f" {f'{s:.0f}s load {la:.1f}':>26}" for s, la, _ in rows))
    for name, _, _ in PARTS:
        cells = []
        for _, _, spans in rows:
            if name in spans:
                a, b, n, spent = spans[name]
                cells.append(f"{a:.2f}..{b:.2f} ({spent:.2f}" + (f", x{n})" if n > 1 else ")"))
            else:
                cells.append("-")
        print(f"{name:<17}" + "".join(f" {c:>26}" for c in cells))

if __name__ == "__main__":
    main()
