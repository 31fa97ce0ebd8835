"""The worker process: `python -m tui.worker`, one per plan.

It reads a JSON spec on stdin, pins itself and sets its scheduling, loads
the built workload module, runs setup, the warmups and the recorded runs,
and writes one JSON line per event on its original stdout.  The workload's
own stdout goes to stderr so a stray printf cannot corrupt the stream.

Lines written: ready {pid, pids, comm}, run {index, warmup, ops, bytes, ns,
cycles, extra}, warning {message}, failed {message, run, bad_input},
finished {}.  After `ready` the worker waits for a line on stdin ("go") so
the session can attach perf to the measured runs only; with `step` it waits
for one before every run, so a session can interleave several workers or stop
once it knows enough (`until_ci`): "end" instead of "go" skips the runs left.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any, Callable

from tui import build, system

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
BAD_PARAM = "bad param "


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when the session goes, even if it was SIGKILLed."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    if os.getppid() != parent:          # the parent died before prctl took effect
        os._exit(1)


def name_process(workload: str) -> str:
    """Give the worker (and every child it forks: they inherit it) a comm of its own,
    so a system-wide perf recording can keep just this session's samples."""
    comm = f"hl{os.getpid()}-{workload}"[:15]
    ctypes.CDLL(None).prctl(PR_SET_NAME, comm.encode(), 0, 0, 0)
    return comm


def apply_cpu_profile(spec: dict[str, Any]) -> None:
    """Pin to the profile's first CPU (process 0); set policy, priority and nice."""
    if spec["cpus"]:
        os.sched_setaffinity(0, {spec["cpus"][0]})
    system.apply_sched(spec["sched"], spec["priority"], spec["nice"])


class Workload:
    """The loaded module with its params and env kept alive for C."""

    def __init__(self, spec: dict[str, Any]):
        mod = build.load(build.Built(path=spec["module_path"], module_name=spec["module_name"],
                                     source_sha256="", compiler="", cflags=(), cached=True))
        self.ffi, self.lib = mod.ffi, mod.lib
        ffi = self.ffi
        self._keep: list[Any] = []
        items = list(spec["params"].items())
        self.params = ffi.new("struct hl_param[]", max(1, len(items)))
        for i, (key, value) in enumerate(items):
            k, s = ffi.new("char[]", key.encode()), ffi.new("char[]", str(value).encode())
            self._keep += [k, s]
            self.params[i].key, self.params[i].str = k, s
            self.params[i].num = value if isinstance(value, int) else 0
        self.nparams = len(items)
        self.env = ffi.new("struct hl_env *")
        cpus = spec["cpus"][:256]
        self.env.ncpus = len(cpus)
        self.env.worker_pid = os.getpid()
        for i, c in enumerate(cpus):
            self.env.cpus[i] = c
        self.err = ffi.new("char[]", 512)
        self.res = ffi.new("struct hl_result *")
        self.state = ffi.NULL

    def error(self) -> str:
        return self.ffi.string(self.err).decode(errors="replace") or "no message"

    def setup(self) -> str | None:
        self.state = self.lib.hl_setup(self.params, self.nparams, self.env, self.err, 512)
        return self.error() if self.state == self.ffi.NULL else None

    def pids(self) -> list[int]:
        buf = self.ffi.new("int[]", 256)
        n = self.lib.hl_pids(self.state, buf, 256)
        return [buf[i] for i in range(max(0, min(n, 256)))]

    def run(self) -> dict[str, Any] | str:
        """One repetition: the counters, or the error message."""
        self.ffi.memmove(self.res, b"\0" * self.ffi.sizeof("struct hl_result"),
                         self.ffi.sizeof("struct hl_result"))
        if self.lib.hl_run(self.state, self.res, self.err, 512) != 0:
            return self.error()
        r = self.res
        extra = {self.ffi.string(r.extra[i].name).decode(errors="replace"): r.extra[i].value
                 for i in range(min(r.nextra, 16))}
        return {"ops": r.ops, "bytes": r.bytes, "ns": r.ns, "cycles": r.cycles,
                "extra": extra}

    def teardown(self) -> None:
        if self.state != self.ffi.NULL:
            self.lib.hl_teardown(self.state)
            self.state = self.ffi.NULL


def main() -> int:
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                      # the workload's printf goes to stderr
    emit: Callable[..., None] = lambda kind, **kw: events.write(
        json.dumps({"type": kind, **kw}) + "\n")

    spec = json.loads(sys.stdin.readline())
    die_with_parent(spec["parent"])
    comm = name_process(spec["workload"])
    try:
        apply_cpu_profile(spec)
    except (OSError, system.SystemSettingError) as e:
        emit("failed", message=str(e), run=-1, bad_input=False)
        return 1
    w = Workload(spec)
    problem = w.setup()
    if problem is not None:
        bad = problem.startswith(BAD_PARAM)
        emit("failed", message="setup: " + problem.removeprefix(BAD_PARAM), run=-1,
             bad_input=bad)
        return 1
    # "go" lines from the session gate the runs: always the first recorded
    # one (perf attaches first), and every run when interleaving (`step`).
    step = spec.get("step", False)
    try:
        for i in range(spec["warmup"]):
            if step and not sys.stdin.readline():
                return 1                # the session went away
            out = w.run()
            if isinstance(out, str):
                emit("failed", message=f"warmup {i + 1}: {out}", run=-1, bad_input=False)
                return 1
            emit("run", index=-(i + 1), warmup=True, **out)
        emit("ready", pid=os.getpid(), pids=w.pids(), comm=comm)
        for i in range(spec["runs"]):
            if i == 0 or step:
                line = sys.stdin.readline()
                if not line:
                    return 1
                if line == "end\n":       # the session has what it needs: tear down
                    break
            out = w.run()
            if isinstance(out, str):
                n = spec.get("first", 0) + i      # the session's number for this run
                emit("failed", message=f"run {n + 1}: {out}", run=i, bad_input=False)
                return 1
            emit("run", index=i, warmup=False, **out)
        else:
            # One more line before teardown: the session stops perf first, so the
            # teardown and Python's exit are not counted among the hot symbols.
            if not sys.stdin.readline():
                return 1
    finally:
        w.teardown()
    emit("finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
