"""The session <-> worker protocol: what one end encodes the other decodes, and nothing else."""
from __future__ import annotations

import json
import re

import pytest

from hotloop import paths
from hotloop.run import protocol
from hotloop.run.protocol import Abort, Done, Note, Ready, Run, WorkerSpec


@pytest.mark.parametrize("line", [
    Ready(pid=12, pids=[13, 14], comm="hl12-seqpacket"),
    Run(index=-1, warmup=True, ops=1000, bytes=4096000, ns=123456, cycles=0, extra={"user_s": 0.5}),
    Run(index=7, warmup=False, ops=1, bytes=0, ns=1, cycles=2**63),
    # an extra that is no measurement reaches the session, which fails the run naming it
    Run(index=0, warmup=False, ops=1, bytes=0, ns=1, cycles=0, extra={"lat": float("-inf")}),
    Note(message="a warning\nwith a newline"),
    Abort(message="run 3: boom", run=2, bad_input=False),
    Done(),
])
def test_every_line_reads_back_as_written(line):
    assert protocol.decode(protocol.encode(line)) == line


@pytest.mark.parametrize("raw, why", [
    (b"[1, 2]", "not an object"),
    (b'{"type": "runs"}', "unknown type 'runs'"),
    (b'{"pid": 1}', 'no "type"'),
    (b'{"type": "ready", "pid": "12", "pids": [], "comm": "x"}', "pid"),
    (b'{"type": "run", "index": 0, "warmup": 0, "ops": 1, "bytes": 0, "ns": 1, "cycles": 0}', "warmup"),
    (b'{"type": "run", "index": true, "warmup": false, "ops": 1, "bytes": 0, "ns": 1, "cycles": 0}',
     "index"),
    (b'{"type": "failed", "message": "x", "run": 0}', "bad_input"),
    (b'{"type": "finished", "extra": 1}', "extra"),
    (b'printf from a workload\n', "Expecting value"),
    (b'{"type": []}', "unknown type"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, "nested too deep", id="nested-100000-deep"),
])
def test_anything_else_is_refused_with_a_reason(raw, why):
    with pytest.raises(ValueError, match=why):
        protocol.decode(raw)


def test_the_spec_reads_back_and_the_bad_param_prefix_is_the_headers():
    spec = WorkerSpec(parent=1, workload="w", module_path="/x.so", module_name="m",
                      params={"a": 1, "b": "x"}, cpus=[0, 1], sched="other", priority=0, nice=0,
                      runs=10, first=5, warmup=1, step=True)
    assert WorkerSpec.from_line(spec.line().decode()) == spec
    assert json.loads(spec.line())["step"] is True
    header = paths.HEADER.read_text()
    assert re.search(r'#define HL_BAD_PARAM_PREFIX "([^"]*)"', header).group(1) == protocol.BAD_PARAM


def test_a_plans_runs_split_over_its_processes_in_turn():
    from hotloop.catalog import process_shares
    assert process_shares(10, 3) == [4, 3, 3]
    assert process_shares(2, 5) == [1, 1]           # no process without a run
    assert process_shares(6, 1) == [6]


def test_a_nan_extra_reaches_the_session_which_fails_the_run_naming_it():
    from hotloop import events as ev
    line = protocol.decode(b'{"type": "run", "index": 0, "warmup": false, "ops": 1, "bytes": 0, '
                           b'"ns": 1, "cycles": 0, "extra": {"lat": NaN}}')
    assert isinstance(line, Run)
    with pytest.raises(ValueError, match="extra 'lat' from hl_add_extra: nan is not a finite"):
        ev.metric_value("lat", line.ops, line.bytes, line.ns, line.cycles, line.extra)
