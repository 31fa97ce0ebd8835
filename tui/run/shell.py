"""A user's shell command (a bisect's --build) run as hotloop runs anything it starts:
in a process group of its own, its output straight to a file (megabytes never held here),
stopped with everything it started on a timeout, Ctrl-C or build.CANCEL (SIGTERM, GRACE
seconds, then SIGKILL: make removes a half-written target on SIGTERM), and watched by a
guard process that kills the group should hotloop itself be killed, even by SIGKILL.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.host.procs import child_setup
from hotloop.run.build import CANCEL

STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
GRACE = 2.0                             # seconds between a stopped build's SIGTERM and SIGKILL
POLL = 0.05
# The guard: reads the build's process group, then waits; "done" from hotloop lets it go,
# anything else (end of file: hotloop killed, even by SIGKILL) kills the group.  Its own
# session and ignored signals keep a Ctrl-C at the terminal from ending it first.
GUARD = """\
import os, signal, sys
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)
group = sys.stdin.readline().strip()
if group.isdigit() and sys.stdin.readline() != "done\\n":
    try:
        os.killpg(int(group), signal.SIGKILL)
    except OSError:
        pass
"""


def run_logged(cmd: str, cwd: Path, env: dict[str, str], out: int,
               timeout: float | None = None) -> str | None:
    """`sh -c CMD` in `cwd`, its stdout and stderr to the file `out`, run to its end or
    stopped: why it failed ("build exited 2", "build killed by signal 9 (SIGKILL)", "build
    timed out after 60 s"), or None; HotloopError("build interrupted") on build.CANCEL.

    Ctrl-C (and SIGTERM, SIGHUP) are held while the guard and the build start, so that a
    build never runs unknown to both: one that came then is raised once they are."""
    guard = proc = None
    try:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)

        def child(then: Callable[[], None] | None = None) -> Callable[[], None]:
            def setup() -> None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                if then is not None:
                    then()
            return setup
        try:
            guard = subprocess.Popen([sys.executable, "-I", "-S", "-c", GUARD],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=child())
            proc = subprocess.Popen(["sh", "-c", cmd], cwd=cwd, env=env,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    start_new_session=True,
                                    preexec_fn=child(child_setup(os.getpid())))
            assert guard.stdin is not None
            guard.stdin.write(f"{proc.pid}\n".encode())
            guard.stdin.flush()
        except OSError as e:
            raise HotloopError(f"cannot start the build: {e.strerror}") from None
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return _waited(proc, timeout)
    finally:
        try:
            if proc is not None:
                _stop(proc)             # whatever it left behind, and itself when stopped
            if guard is not None and guard.stdin is not None:
                with contextlib.suppress(OSError):
                    guard.stdin.write(b"done\n")
        finally:                        # not told "done" (a second Ctrl-C): it kills them
            if guard is not None:
                with contextlib.suppress(OSError):
                    if guard.stdin is not None:
                        guard.stdin.close()
                guard.wait()


def _waited(proc: subprocess.Popen[bytes], timeout: float | None) -> str | None:
    """Why the build failed (its exit, its signal, the time out), or None; the shell left a
    zombie (os.WNOWAIT) so that its process group cannot be another's when it is killed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is not None and info.si_pid:
            if info.si_code == os.CLD_EXITED:
                return f"build exited {info.si_status}" if info.si_status else None
            name = signal.Signals(info.si_status).name if info.si_status in \
                signal.valid_signals() else "?"
            return f"build killed by signal {info.si_status} ({name})"
        if CANCEL.is_set():
            raise HotloopError("build interrupted")
        if deadline is not None and time.monotonic() >= deadline:
            return f"build timed out after {timeout:g} s"
        time.sleep(POLL)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """The build's process group ended: SIGTERM, GRACE seconds for the shell to go, then
    SIGKILL for all of it; the shell reaped."""
    def alive() -> bool:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        return info is None or not info.si_pid
    if alive():
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE
        while alive() and time.monotonic() < deadline:
            time.sleep(POLL)
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
