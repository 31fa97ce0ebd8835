"""Processes: scheduling policy and priority, and children that die with their parent.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Callable

from hotloop.host.sysfs import SystemSettingError

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


# --------------------------------------------------------------------------- scheduling (worker side)

NICE = (-20, 19)
PRIORITY_MAX = 99                       # fifo and rr: 1-99 on Linux; the others 0
SCHED_POLICIES: dict[str, int] = {
    "other": os.SCHED_OTHER,
    "fifo": os.SCHED_FIFO,
    "rr": os.SCHED_RR,
    "batch": os.SCHED_BATCH,
    "idle": os.SCHED_IDLE,
}


def validate_priority(policy: str, priority: int) -> str | None:
    """Problem with a (policy, priority) pair, or None: fifo/rr take 1-99, the others 0."""
    if policy not in SCHED_POLICIES:
        return f"unknown sched policy {policy!r} (one of: {', '.join(SCHED_POLICIES)})"
    if not isinstance(priority, int) or isinstance(priority, bool):
        return f"priority {priority!r} must be an integer"
    p = SCHED_POLICIES[policy]
    lo, hi = os.sched_get_priority_min(p), os.sched_get_priority_max(p)
    if not lo <= priority <= hi:
        allowed = f"{lo}-{hi}" if lo != hi else f"only {lo}"
        return f"priority {priority} out of range for sched {policy} ({allowed})"
    return None


def validate_nice(nice: int) -> str | None:
    if not isinstance(nice, int) or isinstance(nice, bool):
        return f"nice {nice!r} must be an integer"
    if not NICE[0] <= nice <= NICE[1]:
        return f"nice {nice} out of range ({NICE[0]} to {NICE[1]})"
    return None


def apply_sched(policy: str, priority: int = 0, nice: int = 0) -> None:
    """Set the calling process's (main thread's) policy, priority and nice; children inherit.

    Raises SystemSettingError with one line, e.g. "sched fifo priority 50: Operation not permitted".
    """
    problem = validate_priority(policy, priority) or validate_nice(nice)
    if problem:
        raise SystemSettingError(problem)
    # nice first: it matters for other/batch/idle and is harmless for fifo/rr.
    if nice != os.getpriority(os.PRIO_PROCESS, 0):
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError as e:
            raise SystemSettingError(f"nice {nice}: {e.strerror}") from None
    try:
        os.sched_setscheduler(0, SCHED_POLICIES[policy], os.sched_param(priority))
    except OSError as e:
        raise SystemSettingError(f"sched {policy} priority {priority}: {e.strerror}") from None


# --------------------------------------------------------------------------- children that die with us

TIME_SCALE_ENV = "HOTLOOP_TIME_SCALE"


def time_scale() -> float:
    """How much slower than native this process runs: a VM's guest says so in
    HOTLOOP_TIME_SCALE (20 when emulated), and its start-up bounds grow by it."""
    try:
        value = float(os.environ.get(TIME_SCALE_ENV, "1"))
    except ValueError:
        return 1.0
    return value if 1.0 <= value <= 1000.0 else 1.0


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when `parent` goes, even if it was SIGKILLed; and exit at once if
    it went already, between our fork and the prctl."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def child_setup(parent: int, idle: bool = False,
                cpus: set[int] | None = None) -> Callable[[], None]:
    """preexec_fn: die with `parent`, keep to `cpus` (those the workload does not use), and
    for background jobs (perf report), yield the CPU to the workload."""
    def setup() -> None:
        die_with_parent(parent)
        if cpus:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, cpus)
        if idle:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
            with contextlib.suppress(OSError):
                os.nice(19)
    return setup


def pid_gone(pid: int) -> bool:
    """Whether no process has this pid (another user's process counts as there): the test
    that a temp file named after its writer's pid was left by a dead one."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False
