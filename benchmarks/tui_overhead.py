"""What does the console cost? Workload throughput with the TUI open vs headless,
and the time from launch to a drawn screen.

1. Overhead: the same resolved plan runs as a headless session (events consumed,
   nothing drawn) and inside the app driven by Textual's `run_test` (Pilot presses
   `r`; histogram, drift and stats redraw live), interleaved in alternating order,
   round by round, in one process.  Compares the median of the workload's primary
   metric per session; the result files are the ones each mode wrote.
2. Flood: a plan whose repetitions arrive at well over 1,000 a second, to show the
   UI coalesces: wall time of the session headless vs in the app, and redraws.
3. Launch: `python -m tui` (the real command) and the app alone, started in a pty
   of 100x30; time until the parameters panel is on screen.  A first launch warms
   the build and bytecode caches and is not counted.

    python benchmarks/tui_overhead.py [--rounds 4] [--runs 10] [--msgs 100000]
                                      [--cpu same-core] [--launches 5]
"""
from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import pty
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import replace
from pathlib import Path

from hotloop import (
    catalog,
    results,
)
from hotloop.console.app import HotloopApp
from hotloop.render.units import si
from hotloop.run.session import Session

ROOT = Path(__file__).resolve().parent.parent


def plan_for(args: argparse.Namespace, runs: int, msgs: int) -> catalog.ResolvedPlan:
    cat = catalog.load()
    plan = catalog.Plan(name="tui-bench", workload="seqpacket", cpu=args.cpu, runs=runs,
                        warmup=1, perf=False, params={"msgs": msgs})
    return cat.resolve(plan)


async def headless(rp: catalog.ResolvedPlan, out: Path) -> tuple[float, float]:
    """(median, wall seconds) of one session consumed without any UI."""
    path = results.default_path(rp.plan.name, out)
    t = time.perf_counter()
    async for _ in Session(rp, path).events():
        pass
    wall = time.perf_counter() - t
    return statistics.median(results.read(path).values), wall


class BenchApp(HotloopApp):
    """The console with the plan to measure loaded, counting its redraws."""

    def __init__(self, rp: catalog.ResolvedPlan, out: Path):
        super().__init__(results_dir=out)
        self.rp = rp
        self.redraws = 0

    def _redraw(self, plots: bool) -> None:
        self.redraws += plots
        super()._redraw(plots)


async def with_tui(rp: catalog.ResolvedPlan, out: Path) -> tuple[float, float, int]:
    """(median, wall seconds, plot redraws) of one session run from the app."""
    app = BenchApp(rp, out)
    async with app.run_test(size=(120, 36)) as pilot:
        while app.form.base is None:
            await pilot.pause(0.01)
        await app.form.load(app.cat, replace(rp.plan, params=dict(rp.params)))
        await pilot.pause()
        t = time.perf_counter()
        await pilot.press("r")
        while app.live is None or app.running:
            await asyncio.sleep(0.01)
        wall = time.perf_counter() - t
        await pilot.pause()
        path = Path(app.session.result_file)
    return statistics.median(results.read(path).values), wall, app.redraws


async def overhead(args: argparse.Namespace, out: Path) -> None:
    rp = plan_for(args, args.runs, args.msgs)
    unit = rp.workload.unit
    await headless(replace(rp, plan=replace(rp.plan, runs=2)), out)    # warm the build
    rows: list[tuple[int, str, float]] = []
    for r in range(args.rounds):
        order = ("headless", "tui") if r % 2 == 0 else ("tui", "headless")
        for mode in order:
            if mode == "headless":
                median, _ = await headless(rp, out)
            else:
                median, _, _ = await with_tui(rp, out)
            rows.append((r, mode, median))
            print(f"  round {r + 1} {mode:<8} median {si(median, unit)}", flush=True)
    h = [m for _, mode, m in rows if mode == "headless"]
    t = [m for _, mode, m in rows if mode == "tui"]
    hm, tm = statistics.median(h), statistics.median(t)
    spread = statistics.stdev(h) / statistics.fmean(h) * 100 if len(h) > 1 else 0.0
    print(f"\nworkload: seqpacket msgs={args.msgs} runs={args.runs} cpu={args.cpu}, "
          f"{args.rounds} rounds interleaved")
    print(f"{'mode':<10}{'median of medians':>20}{'sessions':>10}")
    print(f"{'headless':<10}{si(hm, unit):>20}{len(h):>10}")
    print(f"{'tui':<10}{si(tm, unit):>20}{len(t):>10}")
    paired = [tui / head - 1 for (_, a, head), (_, b, tui) in
              ((next(x for x in rows if x[0] == r and x[1] == "headless"),
                next(x for x in rows if x[0] == r and x[1] == "tui"))
               for r in range(args.rounds))]
    print(f"TUI vs headless: {(tm - hm) / hm * 100:+.2f}% on the medians; "
          f"median of per-round ratios {statistics.median(paired) * 100:+.2f}% "
          f"(session-to-session spread of headless medians: {spread:.1f}%)")


async def flood(args: argparse.Namespace, out: Path) -> None:
    rp = plan_for(args, args.flood_runs, args.flood_msgs)
    _, hw = await headless(rp, out)
    _, tw, redraws = await with_tui(rp, out)
    print(f"\nflood: {args.flood_runs} runs of msgs={args.flood_msgs}")
    print(f"{'mode':<10}{'wall':>10}{'runs/s':>10}{'redraws':>10}")
    print(f"{'headless':<10}{hw:>9.2f}s{args.flood_runs / hw:>10.0f}{'-':>10}")
    print(f"{'tui':<10}{tw:>9.2f}s{args.flood_runs / tw:>10.0f}{redraws:>10}")


def launch_once(cmd: list[str], marker: bytes, cwd: str, timeout: float = 20.0) -> float:
    """Seconds from exec to `marker` in the terminal output; then quit with q."""
    pid, fd = pty.fork()
    if pid == 0:                                    # child: the console in a 100x30 pty
        os.chdir(cwd)
        os.environ["TERM"] = "xterm-256color"
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    t = time.perf_counter()
    seen = b""
    elapsed = float("nan")
    deadline = t + timeout
    try:
        while time.perf_counter() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
                if marker in seen:
                    elapsed = time.perf_counter() - t
                    break
        os.write(fd, b"q")
        end = time.perf_counter() + 5
        while time.perf_counter() < end:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            select.select([fd], [], [], 0.05)
            try:
                os.read(fd, 65536)
            except OSError:
                pass
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    finally:
        os.close(fd)
    return elapsed


def launch(args: argparse.Namespace) -> None:
    cwd = tempfile.mkdtemp(prefix="hotloop-launch-")
    py = sys.executable
    cmds = {
        "python -m hotloop": [py, "-m", "hotloop"],
        "app alone": [py, "-c", "from hotloop.console.app import HotloopApp; HotloopApp().run()"],
    }
    os.environ["PYTHONPATH"] = str(ROOT)
    print(f"\nlaunch to a drawn screen (100x30 pty, {args.launches} launches after one warm-up)")
    print(f"{'command':<16}{'median':>9}{'min':>9}{'max':>9}")
    for name, cmd in cmds.items():
        launch_once(cmd, b"msg_size", cwd)         # warm caches
        times = [launch_once(cmd, b"msg_size", cwd) for _ in range(args.launches)]
        print(f"{name:<16}{statistics.median(times):>8.2f}s{min(times):>8.2f}s"
              f"{max(times):>8.2f}s")
    imp = subprocess.run([py, "-X", "importtime", "-c", "import hotloop.cli"],
                         capture_output=True, text=True, cwd=cwd).stderr.splitlines()
    heavy = sorted((int(line.split("|")[1]), line.split("|")[2].strip()) for line in imp
                   if line.startswith("import time:") and "|" in line
                   and line.split("|")[1].strip().isdigit()
                   and line.split("|")[2].startswith("   ") is False)
    top = [f"{name} {us / 1e6:.2f}s" for us, name in sorted(heavy, reverse=True)[:4]]
    print("largest top-level imports of hotloop.cli: " + ", ".join(top))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--msgs", type=int, default=100_000)
    p.add_argument("--cpu", default="same-core")
    p.add_argument("--flood-runs", type=int, default=3000)
    p.add_argument("--flood-msgs", type=int, default=20)
    p.add_argument("--launches", type=int, default=5)
    p.add_argument("--skip", default="", help="comma list of: overhead,flood,launch")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, python "
          f"{sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="hotloop-tui-bench-") as d:
        out = Path(d)
        if "overhead" not in skip:
            asyncio.run(overhead(args, out))
        if "flood" not in skip:
            asyncio.run(flood(args, out))
    if "launch" not in skip:
        launch(args)


if __name__ == "__main__":
    main()
