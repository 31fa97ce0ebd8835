"""hotloop.perf against the real perf binary and real busy processes (parsers: canned text)."""
from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cpu_time

from hotloop.perf.probe import capabilities
from hotloop.perf.recorder import PerfRecorder
from hotloop.perf.windows import MIN_WINDOW_S, PerfWindow

HAVE_PERF = shutil.which("perf") is not None
needs_perf = pytest.mark.skipif(not HAVE_PERF, reason="perf not installed")

# A syscall-bound busy loop: almost all of its time is in the kernel (read_zero & co).
BUSY = ("import os\n"
        "s = os.open('/dev/zero', os.O_RDONLY); d = os.open('/dev/null', os.O_WRONLY)\n"
        "while True: os.write(d, os.read(s, 65536))\n")


def perf_children() -> list[int]:
    """pids of processes named perf whose parent is this test process (no psutil)."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1: stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if comm.startswith("perf") and ppid == me:
            found.append(int(name))
    return found


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process `pid` has had, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def busy():
    p = subprocess.Popen([sys.executable, "-c", BUSY])
    yield p
    p.kill()
    p.wait()


# --------------------------------------------------------------------------- real perf

@needs_perf
def test_capabilities_real_machine():
    t = cpu_time()                      # CPU (perf's too), not the wall clock load stretches
    caps = {c.name: c for c in capabilities()}
    assert cpu_time() - t < 2
    assert caps["perf"].available
    for name in ("perf_event_paranoid", "kernel symbols", "counters", "call-graph fp", "call-graph dwarf"):
        assert name in caps and caps[name].detail
    # software counters always count where perf works
    assert "task-clock" in caps["counters"].detail.split(";")[0]


@needs_perf
def test_recorder_real_busy_process(busy, tmp_path):
    async def main():
        got: list[tuple[float, PerfWindow]] = []
        rec = PerfRecorder([busy.pid], keep_dir=tmp_path / "perf")
        cpu["before start"] = cpu_seconds(busy.pid)
        assert await rec.start(), rec.warnings
        cpu["started"] = cpu_seconds(busy.pid)
        t0 = time.monotonic()
        assert perf_children(), "perf record/stat should be running"

        async def consume():
            async for w in rec.windows():
                got.append((time.monotonic() - t0, w))
        async def until(windows: int) -> None:
            deadline = time.monotonic() + 30
            while len(got) < windows and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert len(got) >= windows, f"{len(got)} perf windows in 30 s"
        task = asyncio.create_task(consume())
        await until(1)                      # a window of its own (1 s), then
        rec.cut()                           # the end of "repetition 0"
        await until(3)                      # and two more of "repetition 1"
        cpu["stopping"] = cpu_seconds(busy.pid)
        result = await rec.stop()
        cpu["stopped"] = cpu_seconds(busy.pid)
        await asyncio.wait_for(task, 5)
        return rec, got, result

    cpu: dict[str, float] = {}
    rec, got, result = asyncio.run(main())
    assert perf_children() == [], "perf outlived stop()"
    assert result.warnings == []
    # the windows tile the recording, in order, each from where the last ended (how long
    # each is depends on when a busy machine lets the rotation run: not asserted)
    windows = [w for _, w in got]
    assert len(windows) >= 3 and [w.index for w in windows] == list(range(len(windows)))
    assert windows[0].start == 0 and all(a.end == b.start for a, b in zip(windows, windows[1:]))
    assert all(w.start <= w.end for w in windows)
    assert {w.run for _, w in got} >= {0, 1}
    # kernel symbols dominate a read(/dev/zero) loop; percents sum to ~100
    top = result.symbols[:5]
    assert any(s.kernel and s.dso.startswith("[kernel") for s in top), top
    assert 99.0 < sum(s.percent for s in result.symbols) < 101.0
    # as many samples as the CPU time perf counted gives at its frequency: how much CPU the
    # busy process got depends on the machine's load, the samples per CPU second do not
    assert result.samples == sum(w.samples for _, w in got) > 0
    counted = result.counters["task-clock"] / 1000          # perf stat counts it in ms
    assert 0.5 < result.samples / (counted * rec.frequency) < 1.5, (result.samples, counted)
    for _, w in got:
        if w.samples:
            assert 98.0 < sum(s.percent for s in w.symbols) < 102.0
    assert 99.0 < sum(s.percent for s in result.runs[0]) < 101.0
    # counters: software ones counted, unsupported ones None (never 0); task-clock is the CPU
    # time the process had while perf stat counted, within what /proc says it had around then
    assert cpu["stopping"] - cpu["started"] > 0.1, cpu
    assert 0.5 * (cpu["stopping"] - cpu["started"]) <= counted, (counted, cpu)
    assert counted <= cpu["stopped"] - cpu["before start"] + 0.05, (counted, cpu)
    for name in ("cycles", "instructions"):
        assert name in result.counters and result.counters[name] != 0
    # --keep-perf: the window files stay and perf report opens them (beside them, the tally
    # of their samples by address, for annotate)
    kept = sorted(n for n in os.listdir(tmp_path / "perf") if n.startswith("perf.data"))
    assert len(kept) == len(got)
    out = subprocess.run(["perf", "report", "-i", str(tmp_path / "perf" / kept[0]), "--stdio",
                          "--sort", "sym"], capture_output=True, text=True, timeout=20).stdout
    assert re.search(r"^\s+\d+\.\d+%\s+\[[k.]\] \S", out, re.M), out


@needs_perf
def test_perf_crash_is_a_warning_and_cancel_kills(busy):
    async def crash():
        warned: list[str] = []
        rec = PerfRecorder([busy.pid], counters=False, on_warning=warned.append)
        assert await rec.start()            # sampling runs once start() returns
        os.kill(rec.pids_of_perf[0], signal.SIGKILL)     # perf dies mid-run
        deadline = time.monotonic() + 10
        while not warned and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        res = await rec.stop()
        return warned, res

    warned, res = asyncio.run(crash())
    assert any("exited early" in w for w in warned) and res.warnings == warned
    assert perf_children() == []

    async def cancelled():
        rec = PerfRecorder([busy.pid])
        await rec.start()

        async def session():
            try:
                await asyncio.sleep(10)
            finally:
                rec.kill()              # what the session does on cancellation
        t = asyncio.create_task(session())
        await asyncio.sleep(0)              # the session is in its sleep
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        # SIGKILLed: gone once reaped; waited for on the loop, so asyncio closes their pipes
        # before the loop is (else a transport is collected after it, with a warning)
        deadline = time.monotonic() + 5
        while perf_children() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
        return rec
    asyncio.run(cancelled())
    assert perf_children() == []


@needs_perf
def test_perf_dies_with_its_parent(busy):
    # A parent that is SIGKILLed cannot clean up: PDEATHSIG must take perf down with it.
    code = ("import asyncio, sys, time\nfrom hotloop.perf.recorder import PerfRecorder\n"
            f"async def m():\n r = PerfRecorder([{busy.pid}]); assert await r.start()\n"
            " print(*r.pids_of_perf, flush=True); await asyncio.sleep(30)\nasyncio.run(m())\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in parent.stdout.readline().split()]
    assert pids
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
        time.sleep(0.05)
    alive = [p for p in pids if os.path.exists(f"/proc/{p}")
             and "perf" in Path(f"/proc/{p}/comm").read_text()]
    assert alive == []


@needs_perf
def test_short_runs_share_a_window_and_each_keeps_its_own_samples(busy):
    # runs of 0.1 s: a cut closes a window only once it is MIN_WINDOW_S old, and the
    # window's samples go to their runs by time
    async def main():
        rec = PerfRecorder([busy.pid], counters=False)
        assert await rec.start(), rec.warnings
        begun, cuts = time.monotonic(), []
        for _ in range(4):
            await asyncio.sleep(0.1)
            rec.cut()
            cuts.append(time.monotonic() - begun)
        return await rec.stop(), rec.windows_done, cuts

    result, windows, cuts = asyncio.run(main())
    assert result.warnings == []
    if cuts[-1] < MIN_WINDOW_S:         # (a loaded machine may stretch the sleeps past it)
        assert windows == 1, (windows, cuts)        # the stop's, no cut's
    if cuts[-1] < len(cuts) * MIN_WINDOW_S:     # some cut came before its window's bound
        assert windows < len(cuts) + 1, (windows, cuts)
    assert set(result.runs) <= {0, 1, 2, 3, 4} and len(result.runs) >= 2, result.runs
    # every sample in a run, none twice
    assert sum(s.samples for syms in result.runs.values() for s in syms) == result.samples


@needs_perf
def test_the_windows_left_at_the_end_are_summarised_at_normal_priority(busy, monkeypatch):
    # while the runs go on, a window's perf script runs at idle priority beside them; once
    # they are over, the backlog is all the session waits for
    from hotloop.perf import windows
    spawned: list[tuple[bool, list[int]]] = []

    async def spawn(argv, cpus, *args, idle=False, **kwargs):
        if argv[1] == "script":
            spawned.append((idle, list(cpus)))
        return await real(argv, cpus, *args, idle=idle, **kwargs)
    real = windows.spawn
    monkeypatch.setattr(windows, "spawn", spawn)

    async def main():
        rec = PerfRecorder([busy.pid], counters=False, cpus=[0])
        assert await rec.start(), rec.warnings
        deadline = time.monotonic() + 30
        while not spawned and time.monotonic() < deadline:      # the timer's first window
            await asyncio.sleep(0.05)
        return await rec.stop()
    result = asyncio.run(main())
    assert result.warnings == [] and result.samples > 0
    assert spawned[0] == (True, [0]), spawned           # during the runs: idle, spare CPUs
    assert spawned[-1] == (False, [0]), spawned         # the stop's: normal, spare CPUs


@pytest.mark.skipif(os.geteuid() != 0, reason="back from nice 19 takes root (or RLIMIT_NICE)")
def test_a_report_begun_at_idle_priority_is_back_to_normal_once_the_runs_end():
    from hotloop.perf import windows

    async def main():
        proc = await windows.spawn(["sleep", "30"], [], idle=True)
        try:
            before = os.sched_getscheduler(proc.pid), os.getpriority(os.PRIO_PROCESS, proc.pid)
            windows._unidle(proc)
            after = os.sched_getscheduler(proc.pid), os.getpriority(os.PRIO_PROCESS, proc.pid)
        finally:
            proc.kill()
            await proc.wait()
        return before, after
    before, after = asyncio.run(main())
    assert before == (os.SCHED_IDLE, 19) and after == (os.SCHED_OTHER, 0)


@needs_perf
def test_the_windows_are_read_with_a_copy_of_the_kernels_symbols(busy, monkeypatch):
    # perf script names kernel samples from a copy of /proc/kallsyms taken as perf starts,
    # not from /proc, which the kernel formats anew for each window; gone after the stop
    from hotloop.perf import windows
    given: list[list[str]] = []

    async def spawn(argv, *args, **kwargs):
        if argv[1] == "script":
            given.append(argv)
            assert Path(argv[argv.index("--kallsyms") + 1]).stat().st_size > 0
        return await real(argv, *args, **kwargs)
    real = windows.spawn
    monkeypatch.setattr(windows, "spawn", spawn)

    async def main():
        rec = PerfRecorder([busy.pid], counters=False)
        assert await rec.start(), rec.warnings
        await asyncio.sleep(0.3)
        return await rec.stop()
    result = asyncio.run(main())
    assert result.warnings == [] and given
    copies = {argv[argv.index("--kallsyms") + 1] for argv in given}
    assert len(copies) == 1 and not any(Path(c).exists() for c in copies)
    # the kernel's symbols named from it as from /proc (a read(/dev/zero) loop)
    assert any(s.kernel and s.named for s in result.symbols[:5]), result.symbols[:5]


def test_perf_missing_via_path(busy, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))        # an empty directory: no perf
    caps = {c.name: c for c in capabilities()}
    assert not caps["perf"].available and "linux-perf" in caps["perf"].detail

    async def main():
        rec = PerfRecorder([busy.pid])
        ok = await rec.start()
        wins = [w async for w in rec.windows()]
        rec.cut()
        return ok, wins, await rec.stop()
    ok, wins, res = asyncio.run(main())
    assert not ok and wins == [] and res.symbols == []
    assert len(res.warnings) == 1 and "linux-perf" in res.warnings[0]


@needs_perf
def test_attach_to_dead_pid_warns():
    p = subprocess.Popen(["true"])
    p.wait()

    async def main():
        rec = PerfRecorder([p.pid])
        ok = await rec.start()
        return ok, await rec.stop()
    ok, res = asyncio.run(main())
    assert not ok and res.warnings and "perf record failed to start" in res.warnings[0]
    assert perf_children() == []
