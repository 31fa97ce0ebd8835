"""`perf record` control: one recording of the worker's CPUs (or its pids), writing
`--switch-output=signal` files, spawned with events disabled and enabled over a `--control`
pipe (so the recorder's start returns only once sampling really runs).  Spawned and enabled
apart (`spawn`, `enable`): perf's own start (0.25 s at a load of 2, 0.8 s at 10) then runs
while the worker starts, and only the enable is left once it is ready.  Its stderr says when a
window's file is complete ("[ perf record: Dump FILE ]") and why perf failed.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Callable, Sequence

from hotloop.perf.control import ack_timeout, control, killpg, perf_argv, spawn

DUMP_RE = re.compile(r"\[ perf record: Dump (.+?) \]")
# perf's last word once its output is complete: what it does after (its side-band thread's
# poll, up to a second; longer on a loaded machine) writes nothing
WROTE = "[ perf record: Captured and wrote"


class PerfRecord:
    """The `perf record` process: started, watched, stopped.  Its failures are warnings
    (`warn`): the run goes on without hot symbols."""

    def __init__(self, perf: str | None, pids: Sequence[int], *, cpus: Sequence[int],
                 comm: str | None, frequency: int, call_graph: str, event: str | None,
                 warn: Callable[[str], None]) -> None:
        self.perf = perf
        self.pids = list(pids)
        self.cpus = list(cpus)
        self.comm = comm
        self.frequency = frequency
        self.call_graph = call_graph
        self.event = event
        self._warn = warn
        self.directory: str | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.reader: asyncio.Task[None] | None = None
        self.stopping = False               # SIGINT sent (or about to be): an exit is expected
        self.interrupted_at: float | None = None    # when its SIGINT went (monotonic)
        self.wrote = asyncio.Event()        # perf said its output is complete (WROTE)
        self._exited_early = False
        self._ctl_w: int | None = None
        self._ack_r: int | None = None
        self._stderr_tail: list[str] = []

    def argv(self, ctl: int, ack: int) -> list[str]:
        assert self.perf and self.directory
        # a comm ("" until the worker names itself): the whole CPUs, that comm's samples kept
        target = (["-a"] + (["-C", ",".join(map(str, self.cpus))] if self.cpus else [])
                  if self.comm is not None else ["-p", ",".join(map(str, self.pids))])
        argv = [self.perf, "record", "-F", str(self.frequency), *target,
                "-o", os.path.join(self.directory, "perf.data"), "--switch-output=signal",
                # no build-id pass at each rotation: it re-reads the file, costing CPU mid-run
                "-B", "-N",
                # samples timed on time.monotonic_ns()'s clock: the cuts tell their runs
                "-k", "CLOCK_MONOTONIC",
                # start disabled; we enable over the control pipe and wait for the ack
                "-D", "-1", "--control", f"fd:{ctl},{ack}"]
        if self.event:
            argv += ["-e", self.event]
        if self.call_graph != "none":
            argv += ["--call-graph", self.call_graph]
        return argv

    async def start(self, directory: str, on_dump: Callable[[str], None]) -> bool:
        """Start perf record writing into `directory` and enable its events: True once it
        samples; False (warned) when it would not.  `on_dump` gets each completed file."""
        await self.spawn(directory, on_dump)
        return await self.enable()

    async def spawn(self, directory: str, on_dump: Callable[[str], None]) -> None:
        """perf record started, writing into `directory`, its events disabled (`enable`
        switches them on): perf gets ready meanwhile.  `on_dump` gets each completed file.
        OSError when it cannot be started at all."""
        self.directory = directory
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        try:
            self.proc = await spawn(perf_argv(self.argv(ctl_r, ack_w)), self.cpus,
                                    pass_fds=(ctl_r, ack_w))
        except BaseException:
            os.close(ctl_w)
            os.close(ack_r)
            raise
        finally:
            os.close(ctl_r)
            os.close(ack_w)
        self._ctl_w, self._ack_r = ctl_w, ack_r
        os.set_blocking(ack_r, False)
        self.reader = asyncio.create_task(self._read_stderr(on_dump))

    async def enable(self) -> bool:
        """Switch the spawned perf's events on: True once it samples (perf answered); False
        (warned, perf killed and reaped) when it died first or did not answer."""
        assert self.proc is not None and self._ctl_w is not None and self._ack_r is not None
        if not await control(self._ctl_w, self._ack_r, self.proc, "enable"):
            await asyncio.sleep(0.05)            # let stderr drain for the message
            rc = self.proc.returncode            # it ended by itself, or it said nothing
            killpg(self.proc)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.proc.wait(), 2)
            silent = f"no ack from perf: it exited with status {rc}" if rc is not None \
                else f"no ack from perf within {ack_timeout():g} s"
            self._warn("perf record failed to start: " + (self.tail() or silent))
            self.proc = None
            return False
        return True

    def tail(self) -> str:
        """perf's last words on stderr, its progress lines left out."""
        lines = [ln for ln in self._stderr_tail
                 if not ln.startswith(("Events ", "[ perf record: Woken", "[ perf record: dump"))]
        return " | ".join(lines[-3:])

    async def _read_stderr(self, on_dump: Callable[[str], None]) -> None:
        assert self.proc and self.proc.stderr
        while True:
            raw = await self.proc.stderr.readline()
            if not raw:
                return
            line = raw.decode(errors="replace").strip()
            m = DUMP_RE.search(line)
            if m:
                path = m.group(1)
                if self.directory and not os.path.isabs(path):
                    path = os.path.join(self.directory, os.path.basename(path))
                on_dump(path)
            elif line:
                if line.startswith(WROTE):
                    self.wrote.set()
                self._stderr_tail = (self._stderr_tail + [line])[-20:]

    async def watch(self, then: Callable[[], None]) -> None:
        """Wait for perf to end; before `stopping`, a failure is warned.  Then `then` (collect
        whatever perf wrote before it went away)."""
        assert self.proc
        rc = await self.proc.wait()
        if not self.stopping and rc != 0:
            known = rc < 0 and -rc in signal.Signals._value2member_map_
            sig = f"signal {signal.Signals(-rc).name}" if known else f"status {rc}"
            self._exited_early = True
            self._warn(f"perf record exited early ({sig}): {self.tail() or 'no message'}; "
                       "the run continues without hot symbols")
        await asyncio.sleep(0.05)
        then()

    def interrupt(self) -> None:
        """SIGINT, once: perf writes its last window and ends.  `stop` waits for that."""
        p = self.proc
        self.stopping = True
        if p is None or p.returncode is not None or self.interrupted_at is not None:
            return
        self.interrupted_at = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGINT)

    async def stop(self, timeout: float, bound: float | None = None) -> None:
        """Wait for perf to end after its SIGINT (sent here unless `interrupt` did), and for
        its stderr to the end: the last Dump line with it.  Once perf says its output is
        complete (WROTE) it is killed rather than waited for.  Killed after `timeout` (the
        last window lost, said), or quietly `bound` seconds after its SIGINT (a quit: what
        it leaves, a last window it had not finished, is removed as any killed perf's)."""
        p = self.proc
        assert p is not None
        self.interrupt()
        if p.returncode is None:
            since = self.interrupted_at if self.interrupted_at is not None else time.monotonic()
            limit = timeout if bound is None else min(timeout, bound)
            exited = asyncio.ensure_future(p.wait())
            wrote = asyncio.ensure_future(self.wrote.wait())
            try:
                await asyncio.wait({exited, wrote}, return_when=asyncio.FIRST_COMPLETED,
                                   timeout=max(0.0, since + limit - time.monotonic()))
            finally:
                wrote.cancel()
            if not exited.done():
                if not self.wrote.is_set() and bound is None:
                    self._warn(f"perf record ignored SIGINT for {timeout:g}s; killed (last "
                               "window lost)")
                killpg(p)
                await exited
        rc = p.returncode
        if rc not in (0, -signal.SIGINT, -signal.SIGKILL) and not self._exited_early:
            self._warn(f"perf record ended with status {rc}: {self.tail() or 'no message'}")
        if self.reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.reader), 2)

    def close_control(self) -> None:
        for fd in (self._ctl_w, self._ack_r):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ctl_w = self._ack_r = None
