"""The worker process, one per plan: this module run as a program (run.process starts it).

It reads a JSON spec on stdin, pins itself and sets its scheduling, loads
the built workload module, runs setup, the warmups and the recorded runs,
and writes one JSON line per event on its original stdout.  The workload's
own stdout goes to stderr so a stray printf cannot corrupt the stream.

The lines both ways are typed in `hotloop.run.protocol`.  After `Ready` the worker
waits for a GO on stdin so the session can attach perf to the measured runs only; with
`step` it waits for one before every run, so a session can interleave several workers or
stop once it knows enough (`until_ci`): END instead of GO skips the runs left.
"""
from __future__ import annotations

import ctypes
import os
import sys
import time
from pathlib import Path
from typing import Any

from hotloop.host.procs import apply_sched, die_with_parent
from hotloop.host.sysfs import SystemSettingError
from hotloop.run import protocol
from hotloop.run.built import Built, load
from hotloop.run.protocol import Abort, Done, Ready, Run, WorkerSpec

PR_SET_NAME = 15


def name_process(workload: str) -> str:
    """Give the worker (and every child it forks: they inherit it) a comm of its own,
    so a system-wide perf recording can keep just this session's samples."""
    comm = f"hl{os.getpid()}-{workload}"[:15]
    ctypes.CDLL(None).prctl(PR_SET_NAME, comm.encode(), 0, 0, 0)
    return comm


def apply_cpu_profile(spec: WorkerSpec) -> None:
    """Pin to the profile's first CPU (process 0); set policy, priority and nice."""
    if spec.cpus:
        os.sched_setaffinity(0, {spec.cpus[0]})
    apply_sched(spec.sched, spec.priority, spec.nice)


class LoadedWorkload:
    """The loaded module with its params and env kept alive for C."""

    def __init__(self, spec: WorkerSpec):
        mod = load(Built(path=Path(spec.module_path), module_name=spec.module_name,
                         source_sha256="", compiler="", cflags=(), cached=True))
        self.ffi, self.lib = mod.ffi, mod.lib
        ffi = self.ffi
        # hotloop.h's limits, as the module was compiled with them
        self.max_cpus, self.err_len = self.lib.HL_MAX_CPUS, self.lib.HL_ERR_LEN
        self.max_extra = self.lib.HL_MAX_EXTRA
        self._keep: list[Any] = []
        items = list(spec.params.items())
        self.params = ffi.new("struct hl_param[]", max(1, len(items)))
        for i, (key, value) in enumerate(items):
            k, s = ffi.new("char[]", key.encode()), ffi.new("char[]", str(value).encode())
            self._keep += [k, s]
            self.params[i].key, self.params[i].str = k, s
            self.params[i].num = value if isinstance(value, int) else 0
        self.nparams = len(items)
        self.env = ffi.new("struct hl_env *")
        cpus = spec.cpus[:self.max_cpus]
        self.env.ncpus = len(cpus)
        self.env.worker_pid = os.getpid()
        for i, c in enumerate(cpus):
            self.env.cpus[i] = c
        self.err = ffi.new("char[]", self.err_len)
        self.res = ffi.new("struct hl_result *")
        self.state = ffi.NULL

    def error(self) -> str:
        return self.ffi.string(self.err).decode(errors="replace") or "no message"

    def setup(self) -> str | None:
        self.state = self.lib.hl_setup(self.params, self.nparams, self.env, self.err, self.err_len)
        return self.error() if self.state == self.ffi.NULL else None

    def pids(self) -> list[int]:
        buf = self.ffi.new("int[]", self.max_cpus)
        n = self.lib.hl_pids(self.state, buf, self.max_cpus)
        return [buf[i] for i in range(max(0, min(n, self.max_cpus)))]

    def run(self, index: int, warmup: bool) -> Run | str:
        """One repetition: the counters, or the error message."""
        self.ffi.memmove(self.res, b"\0" * self.ffi.sizeof("struct hl_result"),
                         self.ffi.sizeof("struct hl_result"))
        # The worker's CPU time over the run (all its threads, user and system): how much of
        # a CPU it had while the clock ran, which a busy machine's wall time does not say.
        # Read here, outside the measured section, so the measurement pays nothing for it.
        cpu = time.process_time_ns()
        if self.lib.hl_run(self.state, self.res, self.err, self.err_len) != 0:
            return self.error()
        cpu = time.process_time_ns() - cpu
        r = self.res
        extra = {self.ffi.string(r.extra[i].name).decode(errors="replace"): r.extra[i].value
                 for i in range(min(r.nextra, self.max_extra))}
        extra.setdefault(protocol.CPU_EXTRA, cpu / 1e9)
        return Run(index=index, warmup=warmup, ops=r.ops, bytes=r.bytes, ns=r.ns,
                   cycles=r.cycles, extra=extra)

    def teardown(self) -> None:
        if self.state != self.ffi.NULL:
            self.lib.hl_teardown(self.state)
            self.state = self.ffi.NULL


def main() -> int:
    events = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                      # the workload's printf goes to stderr
    def emit(line: protocol.Line) -> None:
        events.write(protocol.encode(line))

    spec = WorkerSpec.from_line(sys.stdin.readline())
    die_with_parent(spec.parent)
    comm = name_process(spec.workload)
    try:
        apply_cpu_profile(spec)
    except (OSError, SystemSettingError) as e:
        emit(Abort(message=str(e), run=-1, bad_input=False))
        return 1
    w = LoadedWorkload(spec)
    problem = w.setup()
    if problem is not None:
        bad = problem.startswith(protocol.BAD_PARAM)
        emit(Abort(message="setup: " + problem.removeprefix(protocol.BAD_PARAM), run=-1,
                    bad_input=bad))
        return 1
    # GO lines from the session gate the runs: always the first recorded
    # one (perf attaches first), and every run when interleaving (`step`).
    try:
        for i in range(spec.warmup):
            if spec.step and not sys.stdin.readline():
                return 1                # the session went away
            out = w.run(index=-(i + 1), warmup=True)
            if isinstance(out, str):
                emit(Abort(message=f"warmup {i + 1}: {out}", run=-1, bad_input=False))
                return 1
            emit(out)
        emit(Ready(pid=os.getpid(), pids=w.pids(), comm=comm))
        for i in range(spec.runs):
            if i == 0 or spec.step:
                line = sys.stdin.readline()
                if not line:
                    return 1
                if line == protocol.END.decode():   # the session has what it needs: tear down
                    break
            out = w.run(index=i, warmup=False)
            if isinstance(out, str):
                n = spec.first + i      # the session's number for this run
                emit(Abort(message=f"run {n + 1}: {out}", run=i, bad_input=False))
                return 1
            emit(out)
        else:
            # One more line before teardown: the session stops perf first, so the
            # teardown and Python's exit are not counted among the hot symbols.
            if not sys.stdin.readline():
                return 1
    finally:
        w.teardown()
    emit(Done())
    return 0


if __name__ == "__main__":
    sys.exit(main())
