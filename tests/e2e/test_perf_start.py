"""What a session's perf costs before its first run: the perf processes `hotloop run` starts.
Probing what a recording will lack starts perf once (a `perf stat` of `true`, for the hardware
counters), not three times (its version, and its build options, which only --call-graph dwarf
needs); then one perf record and one perf stat a worker.  Each start here is 30-50 ms before
the session's first run (benchmarks/perf_overhead.py --commands)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import hotloop
from test_perf import needs_perf

pytestmark = needs_perf


def perf_first_on_path(tmp_path: Path, monkeypatch, name: str, first: str) -> None:
    """A perf first on PATH (in tmp_path/NAME) that runs the shell line `first`, then is
    the real perf with the same arguments."""
    shim = tmp_path / name / "perf"
    shim.parent.mkdir()
    shim.write_text(f"#!/bin/sh\n{first}\nexec {shutil.which('perf')} \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}:{os.environ['PATH']}")


def noting_perf(tmp_path: Path, monkeypatch) -> Path:
    """A perf first on PATH that notes each start's arguments (a file a process, one
    argument a line), then is perf; the directory of its notes."""
    log = tmp_path / "perf-started"
    log.mkdir()
    perf_first_on_path(tmp_path, monkeypatch, "noting-bin", f"printf '%s\\n' \"$@\" > {log}/$$")
    return log


def test_a_session_probes_perf_once_then_records(tmp_path, monkeypatch, leftovers):
    log = noting_perf(tmp_path, monkeypatch)
    done = hotloop("run", "zero_null", "--runs", "2", "--warmup", "0", "--param", "count=2000",
                   "--perf", "--no-keep-perf", "--out", str(tmp_path / "r.jsonl"))
    assert done.returncode == 0, done.stderr
    started = [f.read_text().splitlines() for f in log.iterdir()]
    records = [a for a in started if a[0] == "record"]
    stats = [a for a in started if a[0] == "stat" and a[-1] != "true"]
    probes = [a for a in started if a not in records and a not in stats and a[0] != "script"]
    assert len(records) == 1 and len(stats) == 1, started
    assert probes == [[*probes[0][:-1], "true"]] and probes[0][0] == "stat", probes
    assert leftovers() == []
