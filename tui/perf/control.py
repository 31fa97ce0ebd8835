"""Driving a perf process: started in its own process group (a terminal ^C is ours to relay)
with PDEATHSIG=SIGKILL, so it never outlives us, and switched on over its `--control` pipe."""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
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


async def kill_and_wait(proc: asyncio.subprocess.Process | None, timeout: float = 5.0) -> None:
    """`proc`'s group SIGKILLed and the process waited for (within `timeout`), its pipes
    closed.  A child killed and left so keeps its transport unfinished, and if the event loop
    closes first (a Ctrl-C of a series, a window's perf script or gzip in flight), the
    transport's finalizer prints "RuntimeError: Event loop is closed" after the run."""
    killpg(proc)
    if proc is not None:
        # a second cancel (asyncio.run's, of the tasks left) ends the wait, not the caller
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout)


def spare_cpus(cpus: Sequence[int]) -> set[int] | None:
    """The CPUs the workload is not pinned to, where perf should do its own work;
    None when it is not pinned or uses them all."""
    spare = os.sched_getaffinity(0) - set(cpus)
    return spare if cpus and spare else None


# In a VM's guest (run/guest.py sets it): perf record runs with the guest kernel's modules
# directory hidden.  Where /proc/modules exists, perf record walks and stats all of
# /lib/modules/RELEASE (4,916 entries for Debian's 6.1) before it answers: over the guest's
# 9p root, emulated, that walk took most of its 201 s start (25 s without).  perf names a
# module's symbols from /proc/kallsyms without it.  Not for perf stat or report, which do not
# walk it: the wrapper's own start costs them 5 s there.
HIDE_MODULES_ENV = "HOTLOOP_PERF_HIDE_MODULES"
_HIDE = 'mount -t tmpfs -o size=4k,mode=0555 hotloop "/lib/modules/$(uname -r)" 2>/dev/null; ' \
    'exec "$@"'


def perf_argv(argv: list[str]) -> list[str]:
    """`argv` as started: in a guest that asks for it (HIDE_MODULES_ENV), in a mount
    namespace of its own where /lib/modules/RELEASE is an empty directory (as root only: the
    mount needs it; the same pid, so its group is killed as any)."""
    unshare = shutil.which("unshare")
    if os.environ.get(HIDE_MODULES_ENV) != "1" or os.geteuid() != 0 or unshare is None:
        return argv
    return [unshare, "--mount", "--propagation", "private", "sh", "-c", _HIDE, "sh", *argv]


async def spawn(argv: list[str], cpus: Sequence[int], pass_fds: tuple[int, ...] = (),
                stdout: int = subprocess.DEVNULL, idle: bool = False) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
        pass_fds=pass_fds, start_new_session=True,   # own group: terminal ^C is ours to relay
        preexec_fn=child_setup(os.getpid(), idle, spare_cpus(cpus)))


ACK_S = 5.0         # perf's answer to a --control command, natively (perf record: 0.4 s here)


def ack_timeout() -> float:
    """How long perf may take to answer: ACK_S, times the guest's slowness in a VM (100 s
    emulated)."""
    return ACK_S * time_scale()


async def control(ctl_w: int, ack_r: int, proc: asyncio.subprocess.Process,
                  cmd: str, timeout: float | None = None) -> bool:
    """Send a --control command and wait for perf's "ack" (`ack_timeout()`)."""
    timeout = ack_timeout() if timeout is None else timeout
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
