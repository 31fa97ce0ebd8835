"""The session <-> worker protocol, typed, used by both ends.

The session writes one `WorkerSpec` line on the worker's stdin, then control lines: `GO` lets
the next repetition run (always the first recorded one, so perf attaches first; every one
when `step`), `END` skips the runs left.  The worker answers with one JSON line per event on
its stdout: `Ready`, `Run`, `Note`, `Abort`, `Done` (what the session makes of them are its
own events, hotloop.events).  Both ends encode and decode here, through hotloop.codec, so a
field added on one side cannot be missed on the other.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar

from hotloop import codec

GO = b"go\n"
END = b"end\n"
# A workload's setup error that starts with this is bad input (exit 2), not a failure:
# HL_BAD_PARAM_PREFIX in csrc/hotloop.h (a test keeps the two equal).
BAD_PARAM = "bad param "
# The extra the worker adds to every run: its own CPU seconds over the run (all its threads),
# which analysis.metrics turns into CPU time per op (its CPU_EXTRA; a test keeps them equal).
CPU_EXTRA = "worker_cpu_s"


@dataclass(frozen=True)
class WorkerSpec:
    """What one worker process runs: the built module, its params, its CPU profile, its share."""
    parent: int                       # the session's pid: the worker dies with it
    workload: str
    module_path: str
    module_name: str
    params: dict[str, int | str]
    cpus: list[int]
    sched: str
    priority: int
    nice: int
    runs: int                         # recorded runs of this worker
    first: int                        # the session's number of its first run
    warmup: int
    step: bool                        # wait for a GO before every repetition

    def line(self) -> bytes:
        return (json.dumps(codec.object_json(self)) + "\n").encode()

    @classmethod
    def from_line(cls, line: str) -> WorkerSpec:
        return codec.from_json(cls, json.loads(line), unknown="refuse")


@dataclass(frozen=True)
class Ready:
    """Setup and warmups done: the pids perf should sample, the comm that tells them apart."""
    tag: ClassVar[str] = "ready"
    pid: int
    pids: list[int]
    comm: str


@dataclass(frozen=True)
class Run:
    """One repetition's counters, as hl_run filled them (warmups: index -1, -2, ...)."""
    tag: ClassVar[str] = "run"
    index: int
    warmup: bool
    ops: int
    bytes: int
    ns: int
    cycles: int
    # as hl_add_extra gave them, NaN and infinities too: the session fails the run naming one
    # (events.metric_value), where refusing the line would leave it waiting for one
    extra: dict[str, float] = field(default_factory=dict, metadata={"finite": False})


@dataclass(frozen=True)
class Note:
    """Something the worker wants said (a warning), the run going on."""
    tag: ClassVar[str] = "warning"
    message: str


@dataclass(frozen=True)
class Abort:
    """The worker stops early: `run` is its own index of the run that failed, -1 before the
    runs (the session's Failed event says it in the session's terms)."""
    tag: ClassVar[str] = "failed"
    message: str
    run: int
    bad_input: bool


@dataclass(frozen=True)
class Done:
    """Every run done and torn down: only Python's exit is left."""
    tag: ClassVar[str] = "finished"


Line = Ready | Run | Note | Abort | Done
# Both ends are one checkout: a key either does not know is refused.
LINES: codec.Tagged[Line] = codec.Tagged((Ready, Run, Note, Abort, Done), unknown="refuse")


def encode(line: Line) -> str:
    return json.dumps(LINES.to_json(line)) + "\n"


def decode(raw: bytes | str) -> Line:
    """One worker line; ValueError when it is not one (a workload that wrote to fd 1 behind
    the worker's back, a cut line): the session notes it and reads on."""
    try:
        msg = json.loads(raw)
    except RecursionError:
        raise ValueError("nested too deep") from None
    if not isinstance(msg, dict):
        raise ValueError("not an object")
    return LINES.from_json(msg)
