"""A user's shell command (a bisect's --build) run as hotloop runs anything it starts:
in a process group of its own, its output straight to a file (megabytes never held here),
stopped with everything it started on a timeout, Ctrl-C or build.CANCEL, and when hotloop
itself ends, even by SIGKILL.

hotloop starts a small guard (`GUARD`, a Python of its own) and the guard the command, as
`sh -c CMD` in a new session.  The guard holds a pipe from hotloop: its end (hotloop stopping
the build, hotloop gone however, or a Popen interrupted by Ctrl-C before it returned, which
closes it too) makes the guard stop the command's group: SIGTERM, GRACE seconds for the shell
to go (make removes a half-written target on SIGTERM), then SIGKILL for all of it.  A command
that exits has its group killed too (what it left in the background), before the shell is
reaped, so the group cannot be another's by then.  The guard says how it ended on a second
pipe: "exited N", "signal N" or "stopped".
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.run.build import CANCEL

GRACE = 2.0                             # seconds between a stopped build's SIGTERM and SIGKILL
POLL = 0.05
GUARD = """\
import os, select, signal, sys, time
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
    signal.signal(s, signal.SIG_IGN)    # a Ctrl-C at the terminal is hotloop's to handle
cwd, cmd, said, grace = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
pid = os.fork()
if pid == 0:
    try:
        os.setsid()
        for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(s, signal.SIG_DFL)
        os.close(said)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.chdir(cwd)
        os.execvp("sh", ["sh", "-c", cmd])
    finally:
        os._exit(127)

def ended():
    info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return info if info is not None and info.si_pid else None

def stop():
    if ended() is None:
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            pass
        end = time.monotonic() + grace
        while ended() is None and time.monotonic() < end:
            time.sleep(0.02)

done = None
while done is None:
    ready, _, _ = select.select([0], [], [], 0.05)
    if ready and not os.read(0, 64):    # hotloop stopped it, or is gone
        stop()
        done = "stopped"
    elif (info := ended()) is not None:
        done = ("exited %d" if info.si_code == os.CLD_EXITED else "signal %d") % info.si_status
try:
    os.killpg(pid, signal.SIGKILL)      # what it left running; the shell a zombie still
except OSError:
    pass
os.waitpid(pid, 0)
os.write(said, done.encode())
"""


def run_logged(cmd: str, cwd: Path, env: dict[str, str], out: int,
               timeout: float | None = None) -> str | None:
    """`sh -c CMD` in `cwd`, its stdout and stderr to the file `out`, run to its end or
    stopped: why it failed ("build exited 2", "build killed by signal 9 (SIGKILL)", "build
    timed out after 60 s"), or None; HotloopError("build interrupted") on build.CANCEL.
    On Ctrl-C (KeyboardInterrupt) the build is stopped and the interrupt goes on."""
    if "\0" in cmd:                     # a forged resume file's: no shell takes one
        raise HotloopError("the build command holds a NUL character")
    said_r, said_w = os.pipe()
    guard: subprocess.Popen[bytes] | None = None
    try:
        try:
            guard = subprocess.Popen([sys.executable, "-I", "-S", "-c", GUARD, str(cwd), cmd,
                                      str(said_w), repr(GRACE)], env=env, stdin=subprocess.PIPE,
                                     stdout=out, stderr=out, pass_fds=(said_w,),
                                     start_new_session=True)
        except OSError as e:
            raise HotloopError(f"cannot start the build: {e.strerror}") from None
        finally:
            os.close(said_w)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not select.select([said_r], [], [], POLL)[0]:
            if CANCEL.is_set():
                _stop(guard)
                raise HotloopError("build interrupted")
            if deadline is not None and time.monotonic() >= deadline:
                _stop(guard)
                return f"build timed out after {timeout:g} s"
        return _why(os.read(said_r, 64).decode(errors="replace"))
    finally:
        if guard is not None:
            _stop(guard)                # at once, even when a second Ctrl-C cut it short
        os.close(said_r)


def _stop(guard: subprocess.Popen[bytes]) -> None:
    """The guard's pipe closed (it stops the build, if it still runs) and the guard gone."""
    if guard.stdin is not None:
        with contextlib.suppress(OSError):
            guard.stdin.close()
    guard.wait()


def _why(said: str) -> str | None:
    """The guard's word as a line: None for "exited 0"."""
    kind, _, number = said.partition(" ")
    if kind == "exited" and number.isdigit():
        return None if number == "0" else f"build exited {number}"
    if kind == "signal" and number.isdigit():
        n = int(number)
        name = signal.Signals(n).name if n in signal.valid_signals() else "?"
        return f"build killed by signal {n} ({name})"
    return "build ended unknown to its guard (its log may say why)"
