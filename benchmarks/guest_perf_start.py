"""Where does perf's start go?  Each step of it timed, here or inside a VM's guest.

A session's perf must answer its control pipe ("ack": sampling is on) within 5 s, 20 times
that in an emulated guest (perf/control.py).  This times what a start does, one row each:
loading perf and its libraries, reading /proc/kallsyms (perf reads it 4 times a start),
walking /lib/modules/RELEASE (perf record does, where the kernel has modules), `perf record`
as hotloop starts it, with and without that directory hidden (what a guest does), `perf
stat`'s start and one window's `perf report`.  The real classes start them (PerfRecord,
PerfStat), against a `sleep` as the worker.

    python benchmarks/guest_perf_start.py [--no-walk]

Inside an emulated guest (how a VM session's perf sees it), with this machine's root, as root:

    virtme-run --kimg /boot/vmlinuz-6.1.0-47-amd64 --mods auto --disable-kvm --memory 1G \\
        --cpus 1 --rwdir /tmp --script-sh "cd $PWD && .venv/bin/python \\
        benchmarks/guest_perf_start.py"

The walk alone took 229 s there (2026-12-02, this machine loaded): --no-walk leaves it out.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["HOTLOOP_TIME_SCALE"] = "100"        # perf may take 500 s to answer: measure it

from hotloop.perf.control import HIDE_MODULES_ENV  # noqa: E402 - after the bound is set
from hotloop.perf.parse import report_argv  # noqa: E402
from hotloop.perf.probe import find_perf  # noqa: E402
from hotloop.perf.record import PerfRecord  # noqa: E402
from hotloop.perf.stat import PerfStat  # noqa: E402


def row(what: str, seconds: float) -> None:
    print(f"| {what} | {seconds:.2f} s |", flush=True)


def timed(argv: list[str]) -> float:
    t = time.monotonic()
    subprocess.run(argv, capture_output=True, timeout=1000)
    return time.monotonic() - t


async def record(perf: str, directory: str, hide: bool) -> float:
    """perf record as a session starts it (-a -C 0, the worker's comm): spawn to ack."""
    os.environ[HIDE_MODULES_ENV] = "1" if hide else "0"
    sleeper = subprocess.Popen(["sleep", "10000"])
    rec = PerfRecord(perf, [sleeper.pid], cpus=[0], comm="sleep", frequency=999,
                     call_graph="none", event=None, warn=lambda m: print(f"  ({m})"))
    try:
        t = time.monotonic()
        ok = await rec.start(directory, lambda path: None)
        took = time.monotonic() - t
        if ok and rec.proc is not None:
            await asyncio.sleep(1)                  # a window's worth, for the report
            rec.proc.send_signal(signal.SIGINT)
            await rec.proc.wait()
        rec.close_control()
        return took if ok else float("nan")
    finally:
        sleeper.kill()
        sleeper.wait()


async def stat(perf: str) -> float:
    sleeper = subprocess.Popen(["sleep", "10000"])
    s = PerfStat(perf, [sleeper.pid], [0], warn=lambda m: print(f"  ({m})"))
    try:
        t = time.monotonic()
        await s.start()
        took = time.monotonic() - t
        if s.proc is not None:
            s.proc.send_signal(signal.SIGINT)
            await s.stop(1000)
        return took
    finally:
        sleeper.kill()
        sleeper.wait()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-walk", action="store_true", help="leave out /lib/modules' walk")
    args = ap.parse_args()
    perf = find_perf()
    if perf is None:
        sys.exit("no perf on PATH")
    release = os.uname().release
    up = Path("/proc/uptime").read_text().split()[0]
    modules = "present" if os.path.exists("/proc/modules") else "absent"
    print(f"kernel {release}, {os.cpu_count()} CPUs, up {up} s, /proc/modules {modules}\n")
    print("| step | took |\n| --- | --- |")
    row("perf --version (first)", timed([perf, "--version"]))
    row("perf --version (again)", timed([perf, "--version"]))
    t = time.monotonic()
    with open("/proc/kallsyms") as f:
        n = sum(1 for _ in f)
    row(f"reading /proc/kallsyms once ({n:,} lines)", time.monotonic() - t)
    if not args.no_walk:
        t, n = time.monotonic(), 0
        for root, dirs, files in os.walk(f"/lib/modules/{release}"):
            for name in dirs + files:
                os.stat(os.path.join(root, name))
                n += 1
        row(f"walking and stat-ing /lib/modules/{release} ({n:,} entries)",
            time.monotonic() - t)
    with tempfile.TemporaryDirectory() as d:
        plain, hidden = os.path.join(d, "plain"), os.path.join(d, "hidden")
        os.mkdir(plain)
        os.mkdir(hidden)
        row("perf record as a session starts it: spawn to ack", await record(perf, plain, False))
        row("the same, /lib/modules/RELEASE hidden (a VM's guest)",
            await record(perf, hidden, True))
        row("perf stat: spawn to ack", await stat(perf))
        window = sorted(f for f in os.listdir(plain) if f.startswith("perf.data"))
        if window:
            row("perf report of one window", timed(report_argv(perf, os.path.join(
                plain, window[-1]), "sleep")))


if __name__ == "__main__":
    asyncio.run(main())
