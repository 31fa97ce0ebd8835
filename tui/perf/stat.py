"""`perf stat` alongside the recording: the session's counters (STAT_EVENTS) of the pids."""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence

from hotloop.perf.control import control, killpg, spawn
from hotloop.perf.parse import parse_stat_csv
from hotloop.perf.probe import STAT_EVENTS


class PerfStat:
    """One `perf stat -x ,` attached to the pids, started disabled and enabled over its control
    pipe (so counting starts with the sampling), ended by SIGINT, its CSV on stderr parsed.
    Its failures are warnings (`warn`): the run goes on without counters."""

    def __init__(self, perf: str | None, pids: Sequence[int], cpus: Sequence[int],
                 warn: Callable[[str], None]) -> None:
        self.perf = perf
        self.pids = list(pids)
        self.cpus = list(cpus)
        self._warn = warn
        self.proc: asyncio.subprocess.Process | None = None
        self._interrupted_at = 0.0          # when its SIGINT went (monotonic)

    async def start(self) -> None:
        assert self.perf
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        argv = [self.perf, "stat", "-x", ",", "-e", ",".join(STAT_EVENTS),
                "-p", ",".join(map(str, self.pids)), "-D", "-1", "--control", f"fd:{ctl_r},{ack_w}"]
        try:
            self.proc = await spawn(argv, self.cpus, pass_fds=(ctl_r, ack_w))
        finally:
            os.close(ctl_r)
            os.close(ack_w)
        os.set_blocking(ack_r, False)
        try:
            ok = await control(ctl_w, ack_r, self.proc, "enable")
        finally:
            os.close(ctl_w)
            os.close(ack_r)
        if not ok:
            err = b""
            killpg(self.proc)
            with contextlib.suppress(Exception):
                _, err = await asyncio.wait_for(self.proc.communicate(), 2)
            self._warn("perf stat failed to start, no counters: "
                       + (err.decode(errors="replace").strip().splitlines() or ["no ack"])[-1])
            self.proc = None

    def interrupt(self) -> None:
        """SIGINT, once: perf stat prints its counts and ends (`stop` reads them)."""
        p = self.proc
        if p is None or p.returncode is not None or self._interrupted_at:
            return
        self._interrupted_at = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGINT)

    async def stop(self, timeout: float, quiet: bool = False) -> dict[str, float | None]:
        """The counts, once perf stat has ended after its SIGINT (sent here unless
        `interrupt` did: by the recorder, together with perf record's, so that counters and
        samples end together); killed `timeout` seconds after that SIGINT, without a warning
        when `quiet` (a quit: its counts go nowhere)."""
        p = self.proc
        assert p is not None
        self.interrupt()
        since = self._interrupted_at or time.monotonic()     # it had ended by itself
        left = max(0.0, since + timeout - time.monotonic())
        try:
            _, err = await asyncio.wait_for(p.communicate(), left)
        except asyncio.TimeoutError:
            killpg(p)
            await p.wait()
            if not quiet:
                self._warn("perf stat ignored SIGINT; killed, no counters")
            return {}
        counts = parse_stat_csv(err.decode(errors="replace"))
        if not counts and not quiet:
            self._warn("perf stat produced no counts")
        return counts
