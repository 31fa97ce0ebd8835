"""A session cancelled (Ctrl-C, SIGHUP: the command line cancels its task) ends only once every
process it started has ended and been waited for, perf's too: a child left to the event
loop's close kept its subprocess transport unfinished, and its finalizer printed
"RuntimeError: Event loop is closed" after the run's last line (1 in 25 SIGHUPs of a series
here, perf on).  Real worker, real perf, the session driven in this process so that its
transports can be looked at once the loop is closed."""
from __future__ import annotations

import asyncio
import gc
import os
import time
from asyncio.base_subprocess import BaseSubprocessTransport
from pathlib import Path

import pytest

from hotloop import catalog
from hotloop import events as ev
from hotloop.perf.probe import find_perf
from hotloop.run import start

pytestmark = pytest.mark.xdist_group("perf")


def _unfinished() -> list[str]:
    gc.collect()
    return [repr(t) for t in gc.get_objects()
            if isinstance(t, BaseSubprocessTransport) and not t._finished]


@pytest.mark.skipif(find_perf() is None, reason="needs perf")
@pytest.mark.parametrize("at", [ev.PerfStart, ev.RunSample])
def test_a_cancelled_session_leaves_no_process_to_the_loops_close(tmp_path: Path, at, leftovers):
    cat = catalog.load()
    plan = catalog.with_overrides(cat.plan_for("zero_null"), runs=50, perf=True,
                                  params={"count": 20000})
    rp = cat.resolve(plan)
    assert _unfinished() == []

    async def main() -> list[type]:
        s = start.here(rp, tmp_path / "r.jsonl", start.Choices())
        seen: list[type] = []
        reached = asyncio.Event()

        async def consume() -> None:
            async for e in s.events():
                seen.append(type(e))
                if isinstance(e, at):
                    reached.set()
        task = asyncio.create_task(consume())
        await asyncio.wait({task, asyncio.ensure_future(reached.wait())},
                           return_when=asyncio.FIRST_COMPLETED)
        task.cancel()                   # as the command line's signal handler does
        with pytest.raises(asyncio.CancelledError):
            await task
        return seen
    seen = asyncio.run(main())
    assert at in seen
    assert _unfinished() == []
    assert not leftovers()


def _perf_script_running() -> bool:
    """Whether a `perf script` this process started (a window's report) is running."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"script" in argv:
            return True
    return False


@pytest.mark.skipif(find_perf() is None, reason="needs perf")
def test_a_session_cancelled_while_a_window_is_reported_waits_for_its_perf_script(
        tmp_path: Path, leftovers):
    # The window's report (perf script) was killed on a cancel and not waited for: its
    # transport was still unfinished when the session's task ended, and when the loop closed
    # just after (a series' last session), its finalizer printed "Event loop is closed".
    cat = catalog.load()
    plan = catalog.with_overrides(cat.plan_for("zero_null"), runs=400, perf=True,
                                  params={"count": 20000})
    rp = cat.resolve(plan)
    assert _unfinished() == []

    async def main() -> list[str]:
        s = start.here(rp, tmp_path / "r.jsonl", start.Choices())

        async def consume() -> None:
            async for _ in s.events():
                pass
        task = asyncio.create_task(consume())
        deadline = time.monotonic() + 120
        while not _perf_script_running():     # a window's report under way: cancel now
            assert not task.done() and time.monotonic() < deadline, "no window was reported"
            await asyncio.sleep(0.002)
        task.cancel()                   # as the command line's signal handler does
        with pytest.raises(asyncio.CancelledError):
            await task
        return _unfinished()            # the session is over: its children all waited for
    assert asyncio.run(main()) == []
    assert _unfinished() == []
    assert not leftovers()
