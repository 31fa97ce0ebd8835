"""One worker process as the session sees it: started with its spec, lines to it, its output's
tail, and its end, which is told apart from its pipes' (helpers it forked may hold those).

Every wait here has a deadline, and `kill` takes the worker's whole process group (the worker
starts a session of its own), from any thread, even once the worker itself has exited.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import os
import signal
import sys
from typing import Any

from hotloop.run import protocol
from hotloop.run.protocol import WorkerSpec

REAP_S = 5.0                            # how long a killed worker may take to be reaped
OUTPUT_KEPT = 4096                      # bytes of the workload's own output kept, its tail
LINE_SHOWN = 200                        # characters of one output line in a message
LINE_LIMIT = 1 << 20                    # a worker line longer than this is dropped
# `python -c` puts "" (the working directory) first on sys.path: out with it, then the worker.
# (Not there under PYTHONSAFEPATH or -P: then nothing is removed.)
WORKER_MAIN = ("import runpy, sys; sys.path[:1] == [''] and sys.path.pop(0); "
               "runpy.run_module('hotloop.run.worker', run_name='__main__', alter_sys=True)")


def _pin(cpu: int) -> None:
    """preexec_fn: the worker on `cpu`; where it may not be, it says so itself (its pinning
    fails with the reason)."""
    with contextlib.suppress(OSError):
        os.sched_setaffinity(0, {cpu})


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's own, plus `exited`, set when the worker process itself ends:
    Process.wait() also waits for its pipes, which helpers it forked may hold open."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class WorkerProcess:
    def __init__(self, proc: asyncio.subprocess.Process, exited: asyncio.Future[None]) -> None:
        self.proc = proc
        self.exited = exited
        self._group_gone = False        # its group was killed once it was reaped: done for good
        self._output = b""              # the tail of the workload's stdout and stderr
        self._output_bytes = 0
        self.notes: collections.deque[str] = collections.deque(maxlen=3)

    @classmethod
    async def start(cls, cpu: int | None = None) -> WorkerProcess:
        """The worker module run as a program, in a session (process group) of its own; `send`
        its spec next.  On `cpu` from its exec (the CPU it pins itself to): perf, sampling
        the workload's CPUs from before the worker starts, sees its maps and its name only
        where it runs; on another CPU they are lost, and its samples with them."""
        # The same interpreter, so the same hotloop this one imported (its site-packages, or the
        # editable install's finder); but `-m` would put the working directory first on the
        # path, where a hotloop.py or hotloop/ of the user's would be imported instead.  So the
        # worker drops that entry itself (PYTHONSAFEPATH would do it from 3.11 only, and be
        # inherited by the workload's own children).
        loop = asyncio.get_running_loop()
        pipe = asyncio.subprocess.PIPE
        transport, proto = await loop.subprocess_exec(
            lambda: _Protocol(LINE_LIMIT, loop), sys.executable, "-c", WORKER_MAIN,
            stdin=pipe, stdout=pipe, stderr=pipe, start_new_session=True,
            preexec_fn=None if cpu is None else functools.partial(_pin, cpu))
        return cls(asyncio.subprocess.Process(transport, proto, loop), proto.exited)

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    async def send(self, line: bytes) -> None:
        """A line to the worker; one that has died is noticed by its reader, not here."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line)
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass

    async def send_spec(self, spec: WorkerSpec) -> None:
        await self.send(spec.line())

    def kill(self) -> None:
        """SIGKILL the worker's whole process group, helpers included, even once the
        worker itself has exited (they keep its group).  Safe from any thread."""
        if self._group_gone:
            return
        reaped = self.proc.returncode is not None
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if reaped:          # the group is empty for good: its number may be reused
            self._group_gone = True

    async def reap(self) -> None:
        """Wait for the (killed) worker, but not forever: asyncio's wait() also waits
        for its pipes, which a paused reader may never drain."""
        if self.proc.returncode is None:
            try:
                await asyncio.wait_for(asyncio.shield(self.proc.wait()), REAP_S)
            except asyncio.TimeoutError:
                pass

    async def wait_exit(self, timeout: float) -> bool:
        """Whether the worker process has ended within `timeout`, open pipes or not."""
        done, _ = await asyncio.wait({self.exited}, timeout=timeout)
        return bool(done)

    async def drain_output(self) -> None:
        """The workload's stdout and stderr, in chunks: a line of any length (2 MiB of
        printf without a newline) is read on, never left to fill the pipe; the tail is
        kept for messages."""
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(1 << 16):
            self._output_bytes += len(chunk)
            self._output = (self._output + chunk)[-OUTPUT_KEPT:]

    async def read_lines(self, inbox: asyncio.Queue[tuple[str, Any]]) -> None:
        """The worker's protocol lines into `inbox` as ("worker", line), then ("eof", None);
        a line that is none (a workload's write to fd 1, one over LINE_LIMIT) becomes a note."""
        assert self.proc.stdout is not None
        while True:
            try:
                line = await self.proc.stdout.readline()
            except ValueError:              # over the limit: dropped, read on
                self.notes.append(f"garbled worker line: over {LINE_LIMIT >> 20} MiB")
                continue
            if not line:
                break
            try:
                msg = protocol.decode(line)
            except ValueError:
                self.notes.append(f"garbled worker line: {line[:80]!r}")
                continue
            await inbox.put(("worker", msg))
        await inbox.put(("eof", None))

    def output_tail(self, n: int = 3) -> str:
        """The last lines of the workload's output and of hotloop's notes on the worker."""
        text = self._output.decode(errors="replace")
        lines = [*(ln.strip() for ln in text.splitlines() if ln.strip()), *self.notes][-n:]
        return "; ".join(ln if len(ln) <= LINE_SHOWN else "…" + ln[-LINE_SHOWN:] for ln in lines)

    def output_lost(self) -> str | None:
        """Output beyond what is kept is said once, with its tail, not silently lost."""
        if self._output_bytes <= OUTPUT_KEPT:
            return None
        return (f"the workload wrote {self._output_bytes:,} bytes to stdout/stderr "
                f"(hotloop keeps the last {OUTPUT_KEPT:,}): {self.output_tail(1)}")

    def death(self) -> tuple[str, str]:
        """(signal name, why) of a worker that ended without its last word."""
        code = self.proc.returncode
        if code is None:
            return "SIGKILL", "worker did not end; killed"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:                  # a real-time signal has no name
                name = f"signal {-code}"
            return name, f"worker killed by {name}"
        return "", f"worker exited with status {code}"
