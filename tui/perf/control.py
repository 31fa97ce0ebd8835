"""Driving a perf process: started in its own process group (a terminal ^C is ours to relay)
with PDEATHSIG=SIGKILL, so it never outlives us, and switched on over its `--control` pipe."""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from typing import Any

from hotloop.host.procs import child_setup, time_scale


def killpg(proc: asyncio.subprocess.Process | None, sig: int = signal.SIGKILL) -> None:
    if proc is None or proc.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)        # started with start_new_session: pgid == pid


def spare_cpus(cpus: Sequence[int]) -> set[int] | None:
    """The CPUs the workload is not pinned to, where perf should do its own work;
    None when it is not pinned or uses them all."""
    spare = os.sched_getaffinity(0) - set(cpus)
    return spare if cpus and spare else None


async def spawn(argv: list[str], cpus: Sequence[int], pass_fds: tuple[int, ...] = (),
                stdout: int = subprocess.DEVNULL, idle: bool = False) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
        pass_fds=pass_fds, start_new_session=True,   # own group: terminal ^C is ours to relay
        preexec_fn=child_setup(os.getpid(), idle, spare_cpus(cpus)))


async def control(ctl_w: int, ack_r: int, proc: asyncio.subprocess.Process,
                  cmd: str, timeout: float | None = None) -> bool:
    """Send a --control command and wait for perf's "ack" (5 s; in an emulated VM
    longer)."""
    timeout = 5.0 * time_scale() if timeout is None else timeout
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[bytes] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(ack_r, 64)
        except OSError:
            data = b""
        if not fut.done():
            fut.set_result(data)

    loop.add_reader(ack_r, readable)
    try:
        os.write(ctl_w, cmd.encode() + b"\n")
        waiter: asyncio.Future[Any] = asyncio.ensure_future(proc.wait())
        pending: set[asyncio.Future[Any]] = {fut, waiter}
        done, _ = await asyncio.wait(pending, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        return fut in done and fut.result().startswith(b"ack")
    except OSError:
        return False
    finally:
        loop.remove_reader(ack_r)
