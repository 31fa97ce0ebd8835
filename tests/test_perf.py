"""tui.perf against the real perf binary and real busy processes (parsers: canned text)."""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tui import perf
from tui.events import HotSymbol

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


@pytest.fixture
def busy():
    p = subprocess.Popen([sys.executable, "-c", BUSY])
    yield p
    p.kill()
    p.wait()


# --------------------------------------------------------------------------- parser (canned)

CANNED_SEP = "\n".join([
    "# To display the perf.data header info, please use --header/--header-only options.",
    "#",
    "# Samples: 1K of event 'cpu-clock:pppH'",
    "#",
    "# Overhead\x1f     Samples\x1fShared Object    \x1fSymbol                         ",
    " 40.00% \x1f 400        \x1f[kernel.kallsyms]\x1f[k] read_zero",
    " 20.00% \x1f 200        \x1flibstdc++.so.6   \x1f[.] std::vector<std::pair<int, long>, std::allocator<std::pair<int, long> > >::_M_realloc_insert(int, long)",
    " 10.00% \x1f 100        \x1f[unknown]        \x1f[.] [unknown]",
    " 10.00% \x1f 100        \x1fdd               \x1f[.] 0x000000000000593c",
    "  9.00% \x1f 90         \x1f_hl_seqpacket_ab12.cpython-311-x86_64-linux-gnu.so\x1f[.] hl_run",
    "  6.00% \x1f 60         \x1f[kernel.kallsyms]\x1f[k] 0xffffffff81234567",
    "  5.00% \x1f 50         \x1flibc.so.6        \x1f[.] __GI___libc_write",
    "",
])

CANNED_ALIGNED = """\
# Samples: 887  of event 'cpu-clock:pppH'
#
# Overhead       Samples  Shared Object                                       Symbol
# ........  ............  ..................................................  .............
#
    76.55%           679  [kernel.kallsyms]                                   [k] read_zero
    10.00%            89  libfoo.so                                           [.] Foo<Bar, Baz>::operator()(int) const
     5.00%            44  _hl_seqpacket_ab12.cpython-311-x86_64-linux-gnu.so  [.] hl_run
     4.00%            36  [unknown]                                           [.] [unknown]
     4.45%            39  dd                                                  [.] 0x000000000000593c

#
# (Tip: use --percent-limit)
"""


def test_parse_report_separator_odd_symbols():
    syms = perf.parse_report(CANNED_SEP)
    assert len(syms) == 7
    assert abs(sum(s.percent for s in syms) - 100) < 0.01
    by = {s.symbol: s for s in syms}
    tmpl = "std::vector<std::pair<int, long>, std::allocator<std::pair<int, long> > >::_M_realloc_insert(int, long)"
    assert by[tmpl].dso == "libstdc++.so.6" and not by[tmpl].kernel and by[tmpl].samples == 200
    assert by["read_zero"].kernel and by["read_zero"].dso == "[kernel.kallsyms]"
    assert by["[unknown]"].dso == "[unknown]"
    assert by["0x000000000000593c"].dso == "dd"
    assert by["0xffffffff81234567"].kernel
    assert by["hl_run"].dso == "_hl_seqpacket_ab12.cpython-311-x86_64-linux-gnu.so"
    assert syms[0].symbol == "read_zero"


def test_parse_report_aligned_and_sym_only():
    syms = perf.parse_report(CANNED_ALIGNED)
    by = {s.symbol: s for s in syms}
    assert set(by) == {"read_zero", "Foo<Bar, Baz>::operator()(int) const", "hl_run", "[unknown]",
                       "0x000000000000593c"}
    assert by["read_zero"].samples == 679 and by["read_zero"].kernel
    assert by["Foo<Bar, Baz>::operator()(int) const"].dso == "libfoo.so"
    # `--sort sym` only, no header: regex fallback, no DSO column
    only = perf.parse_report("    50.00%  [k] do_syscall_64\n    50.00%  [.] a<b, c> d\n")
    assert [(s.symbol, s.kernel) for s in only] == [("do_syscall_64", True), ("a<b, c> d", False)]


@pytest.mark.parametrize("junk", ["", "\x00\x1f\x1f", "# only comments\n#\n", "100%\n", "abc%  [k]\n",
                                  "\x1f".join(["x"] * 9), "nan% \x1f \x1f \x1f [k]", "\n".join(["%"] * 50),
                                  "   12.5%  [x]"])
def test_parse_report_never_raises(junk):
    assert isinstance(perf.parse_report(junk), list)


def test_aggregate_and_diff():
    w1 = [HotSymbol("a", "[kernel.kallsyms]", 75.0, True, 3), HotSymbol("b", "libc.so.6", 25.0, False, 1)]
    w2 = [HotSymbol("b", "libc.so.6", 100.0, False, 4)]
    agg = perf.aggregate([w1, w2])
    assert [(s.symbol, s.samples, s.percent) for s in agg] == [("b", 5, 62.5), ("a", 3, 37.5)]
    d = perf.diff_symbols(w1, w2)
    assert [(r.symbol, r.baseline_pct, r.new_pct, r.delta) for r in d] == [("b", 25.0, 100.0, 75.0),
                                                                            ("a", 75.0, 0.0, -75.0)]
    assert d[1].kernel


def test_parse_stat_csv_unsupported_is_none():
    text = ("1001.52,msec,task-clock,1001515528,100.00,0.999,CPUs utilized\n"
            "10,,context-switches,1001513592,100.00,9.985,/sec\n"
            "<not supported>,,cycles,0,100.00,,\n"
            "<not counted>,,instructions,0,0.00,,\n")
    c = perf.parse_stat_csv(text)
    assert c["task-clock"] == 1001.52 and c["context-switches"] == 10
    assert c["cycles"] is None and c["instructions"] is None and c["ipc"] is None
    c2 = perf.parse_stat_csv("2000,,cycles,1,100.00,,\n3000,,instructions,1,100.00,1.5,insn per cycle\n")
    assert c2["ipc"] == 1.5


# --------------------------------------------------------------------------- real perf

@needs_perf
def test_capabilities_real_machine():
    t = time.monotonic()
    caps = {c.name: c for c in perf.capabilities()}
    assert time.monotonic() - t < 2
    assert caps["perf"].available
    for name in ("perf_event_paranoid", "kernel symbols", "counters", "call-graph fp", "call-graph dwarf"):
        assert name in caps and caps[name].detail
    # software counters always count where perf works
    assert "task-clock" in caps["counters"].detail.split(";")[0]


@needs_perf
def test_recorder_real_busy_process(busy, tmp_path):
    async def main():
        got: list[tuple[float, perf.PerfWindow]] = []
        rec = perf.PerfRecorder([busy.pid], keep_dir=tmp_path / "perf")
        assert await rec.start(), rec.warnings
        t0 = time.monotonic()
        assert perf_children(), "perf record/stat should be running"

        async def consume():
            async for w in rec.windows():
                got.append((time.monotonic() - t0, w))
        task = asyncio.create_task(consume())
        await asyncio.sleep(1.3)
        rec.cut()                           # end of "repetition 0"
        await asyncio.sleep(3.0)
        result = await rec.stop()
        await asyncio.wait_for(task, 5)
        return rec, got, result

    rec, got, result = asyncio.run(main())
    assert perf_children() == [], "perf outlived stop()"
    assert result.warnings == []
    # windows arrive at least every 2 s
    arrivals = [0.0] + [t for t, _ in got]
    assert len(got) >= 3
    assert max(b - a for a, b in zip(arrivals, arrivals[1:])) < 2.0, arrivals
    assert all(w.end - w.start <= 2.0 for _, w in got)
    assert {w.run for _, w in got} >= {0, 1}
    # kernel symbols dominate a read(/dev/zero) loop; percents sum to ~100
    top = result.symbols[:5]
    assert any(s.kernel and s.dso.startswith("[kernel") for s in top), top
    assert 99.0 < sum(s.percent for s in result.symbols) < 101.0
    assert result.samples == sum(w.samples for _, w in got) > 1000
    for _, w in got:
        if w.samples:
            assert 98.0 < sum(s.percent for s in w.symbols) < 102.0
    assert 99.0 < sum(s.percent for s in result.runs[0]) < 101.0
    # counters: software ones counted, unsupported ones None (never 0)
    assert result.counters["task-clock"] > 1000
    for name in ("cycles", "instructions"):
        assert name in result.counters and result.counters[name] != 0
    # --keep-perf: the window files stay and perf report opens them
    kept = sorted(os.listdir(tmp_path / "perf"))
    assert len(kept) == len(got)
    out = subprocess.run(perf.report_argv("perf", str(tmp_path / "perf" / kept[0])),
                         capture_output=True, text=True, timeout=20).stdout
    assert perf.parse_report(out)


@needs_perf
def test_perf_crash_is_a_warning_and_cancel_kills(busy):
    async def crash():
        warned: list[str] = []
        rec = perf.PerfRecorder([busy.pid], counters=False, on_warning=warned.append)
        assert await rec.start()
        await asyncio.sleep(0.3)
        os.kill(rec.pids_of_perf[0], signal.SIGKILL)     # perf dies mid-run
        await asyncio.sleep(0.3)
        res = await rec.stop()
        return warned, res

    warned, res = asyncio.run(crash())
    assert any("exited early" in w for w in warned) and res.warnings == warned
    assert perf_children() == []

    async def cancelled():
        rec = perf.PerfRecorder([busy.pid])
        await rec.start()

        async def session():
            try:
                await asyncio.sleep(10)
            finally:
                rec.kill()              # what the session does on cancellation
        t = asyncio.create_task(session())
        await asyncio.sleep(0.3)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        await asyncio.sleep(0.2)
        return rec
    asyncio.run(cancelled())
    assert perf_children() == []


@needs_perf
def test_perf_dies_with_its_parent(busy):
    # A parent that is SIGKILLed cannot clean up: PDEATHSIG must take perf down with it.
    code = ("import asyncio, sys, time\nsys.path.insert(0, %r)\nfrom tui import perf\n"
            "async def m():\n r = perf.PerfRecorder([%d]); assert await r.start()\n"
            " print(*r.pids_of_perf, flush=True); await asyncio.sleep(30)\nasyncio.run(m())\n"
            % (os.getcwd(), busy.pid))
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in parent.stdout.readline().split()]
    assert pids
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
        time.sleep(0.05)
    alive = [p for p in pids if os.path.exists(f"/proc/{p}")
             and "perf" in open(f"/proc/{p}/comm").read()]
    assert alive == []


def test_perf_missing_via_path(busy, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))        # an empty directory: no perf
    caps = {c.name: c for c in perf.capabilities()}
    assert not caps["perf"].available and "linux-perf" in caps["perf"].detail

    async def main():
        rec = perf.PerfRecorder([busy.pid])
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
        rec = perf.PerfRecorder([p.pid])
        ok = await rec.start()
        return ok, await rec.stop()
    ok, res = asyncio.run(main())
    assert not ok and res.warnings and "perf record failed to start" in res.warnings[0]
    assert perf_children() == []
