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
4. Stall: does the console freeze after `r`?  A heartbeat task on the app's event
   loop sleeps 5 ms at a time and records how late it wakes, with the main thread's
   CPU time (time.thread_time) over each beat: a late beat with as much CPU as wall
   is code blocking the loop, one with little CPU is the process starved of a CPU.
   The window is from pilot.press("r") until the first run is in the stats panel and
   the histogram has drawn it (charts redraw at their own, slower rate), plus one more
   pause so that frame is on screen.  The values the panels see are
   rescaled so run 1 reads 1.000 MB/s (a one-bucket histogram 0.005 units wide: the
   value that made plotext fill for 90 s); at 100x30 and 120x36, perf on and off.

    python benchmarks/tui_overhead.py [--rounds 4] [--runs 10] [--msgs 100000]
                                      [--cpu same-core] [--launches 5] [--stall-trials 3]
"""
from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import pty
import re
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
from hotloop.console import controller as console_controller
from hotloop.console.app import HotloopApp
from hotloop.console.live import LiveRun
from hotloop.console.widgets.plots import HistogramPlot
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
        view = self.main_screen.live_view       # the live panels, as the screen's timer draws them
        draw = view.redraw

        def counted(live: LiveRun | None, plots: bool) -> None:
            self.redraws += plots
            draw(live, plots)
        view.redraw = counted                   # type: ignore[method-assign]


async def with_tui(rp: catalog.ResolvedPlan, out: Path) -> tuple[float, float, int]:
    """(median, wall seconds, plot redraws) of one session run from the app."""
    app = BenchApp(rp, out)
    async with app.run_test(size=(120, 36)) as pilot:
        while app.main_screen.form.base is None:
            await pilot.pause(0.01)
        await app.main_screen.form.load(app.main_screen.cat, replace(rp.plan, params=dict(rp.params)))
        await pilot.pause()
        t = time.perf_counter()
        await pilot.press("r")
        runs = app.main_screen.controller
        while runs.live is None or runs.running:
            await asyncio.sleep(0.01)
        wall = time.perf_counter() - t
        await pilot.pause()
        path = Path(runs.session.result_file)
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


class PinnedLive(LiveRun):
    """A LiveRun whose values are rescaled so that run 1 reads `FIRST` (the real session,
    worker and events otherwise): a first value in the range that used to freeze the UI."""

    FIRST = 1e6

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.factor: float | None = None
        self.measured: float | None = None          # what run 1 really measured

    def add(self, value: float, warmup: bool = False) -> None:
        if not warmup and self.factor is None:
            self.measured = value
            self.factor = self.FIRST / value if value else 1.0
        super().add(value * (self.factor or 1.0), warmup)


class Heartbeat:
    """Beats of `period` on the running loop: how late each woke, and the thread's CPU."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.beats: list[tuple[float, float, float]] = []   # (at, lateness, cpu) seconds
        self.task: asyncio.Task | None = None

    async def _beat(self) -> None:
        while True:
            t, c = time.perf_counter(), time.thread_time()
            await asyncio.sleep(self.period)
            now = time.perf_counter()
            self.beats.append((now, now - t - self.period, time.thread_time() - c))

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._beat())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass

    def worst(self, since: float, until: float) -> tuple[float, float, int]:
        """(longest lateness, the thread's CPU in that beat, beats) within [since, until]."""
        inside = [b for b in self.beats if since <= b[0] <= until + self.period * 4]
        if not inside:
            return float("nan"), float("nan"), 0
        _, late, cpu = max(inside, key=lambda b: b[1])
        return late, cpu, len(inside)


async def stall_once(rp: catalog.ResolvedPlan, out: Path, size: tuple[int, int]) -> dict:
    """One `r` in the app at `size`: the longest event-loop stall until run 1 is on screen."""
    app = BenchApp(rp, out)
    async with app.run_test(size=size) as pilot:
        while app.main_screen.form.base is None:
            await pilot.pause(0.01)
        await app.main_screen.form.load(app.main_screen.cat, replace(rp.plan, params=dict(rp.params)))
        await pilot.pause()
        beat = Heartbeat()
        beat.start()
        await pilot.pause(0.1)
        t = time.perf_counter()
        await pilot.press("r")
        runs = app.query_one("#stats-runs")
        hist = app.query_one(HistogramPlot)

        def on_screen() -> bool:         # "runs 1/20  running", and the histogram drew it
            shown = re.match(r"runs (\d+)/", str(runs.render()))
            live = app.main_screen.controller.live
            return live is not None and live.n >= 1 and bool(shown) \
                and int(shown.group(1)) >= 1 and hist.shown_n >= 1
        while not on_screen():
            if time.perf_counter() - t > 300:
                raise RuntimeError("no run on screen after 300 s")
            await asyncio.sleep(0.002)
        await pilot.pause()
        shown = time.perf_counter()
        await asyncio.sleep(0.015)      # the beat a block delayed wakes and is counted
        await beat.stop()
        late, cpu, beats = beat.worst(t, shown)
        live = app.main_screen.controller.live
        measured = live.measured if isinstance(live, PinnedLive) else None
        await app.main_screen.controller.stop(wait=True)
        await pilot.pause()
    return {"late": late, "cpu": cpu, "beats": beats, "shown": shown - t,
            "measured": measured}


async def stall(args: argparse.Namespace, out: Path) -> None:
    unit = "B/s"
    rows = []
    console_controller.LiveRun = PinnedLive   # type: ignore[misc]  # the console's model, rescaled
    try:
        for size in ((100, 30), (120, 36)):
            for perf in (False, True):
                rp = plan_for(args, 20, args.stall_msgs)
                rp = replace(rp, plan=replace(rp.plan, perf=perf))
                unit = rp.workload.unit
                for trial in range(args.stall_trials):
                    r = await stall_once(rp, out, size)
                    rows.append((size, perf, trial, r))
                    print(f"  {size[0]}x{size[1]} perf {'on' if perf else 'off'} trial "
                          f"{trial + 1}: stall {r['late'] * 1e3:.0f} ms", flush=True)
    finally:
        console_controller.LiveRun = LiveRun   # type: ignore[misc]
    print(f"\nstall: `r` to run 1 on screen, seqpacket msgs={args.stall_msgs}, run 1 shown "
          f"as {si(PinnedLive.FIRST, unit)}; heartbeat every 5 ms on the app's loop")
    print(f"{'size':<8}{'perf':<6}{'trial':>6}{'run 1 measured':>16}{'r to shown':>12}"
          f"{'longest stall':>15}{'CPU in it':>11}{'beats':>7}")
    for size, perf, trial, r in rows:
        measured = si(r["measured"], unit) if r["measured"] else "-"
        print(f"{size[0]}x{size[1]:<5}{'on' if perf else 'off':<6}{trial + 1:>6}{measured:>16}"
              f"{r['shown'] * 1e3:>10.0f}ms{r['late'] * 1e3:>13.0f}ms{r['cpu'] * 1e3:>9.0f}ms"
              f"{r['beats']:>7}")
    worst = max(rows, key=lambda row: row[3]["late"])[3]
    lates = [r["late"] for *_, r in rows]
    cpus = [r["cpu"] for *_, r in rows]
    print(f"over {len(rows)} trials: longest stall median {statistics.median(lates) * 1e3:.0f} ms, "
          f"worst {worst['late'] * 1e3:.0f} ms ({worst['cpu'] * 1e3:.0f} ms of it on the CPU); "
          f"CPU in the longest stall median {statistics.median(cpus) * 1e3:.0f} ms, max "
          f"{max(cpus) * 1e3:.0f} ms (goal < 100 ms; load {os.getloadavg()[0]:.2f})")


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
    p.add_argument("--stall-trials", type=int, default=3)
    p.add_argument("--stall-msgs", type=int, default=200_000,
                   help="the quick plan's: runs slower than the charts redraw, so the "
                        "histogram draws run 1 alone")
    p.add_argument("--skip", default="", help="comma list of: overhead,flood,launch,stall")
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
        if "stall" not in skip:
            asyncio.run(stall(args, out))
    if "launch" not in skip:
        launch(args)


if __name__ == "__main__":
    main()
