"""What a session's perf costs before its first run: the perf processes `hotloop run` starts.
Probing what a recording will lack starts perf once (a `perf stat` of `true`, for the hardware
counters), not three times (its version, and its build options, which only --call-graph dwarf
needs); then one perf record and one perf stat a worker.  Each start here is 30-50 ms before
the session's first run (benchmarks/perf_overhead.py --commands).  perf record is spawned as
the worker starts (it samples the workload's CPUs: it needs no pid) and enabled at the worker's
Ready, so its own start is not before the first run: a worker whose setup waits for perf
record's start gets ready (and nothing perf started outlives a worker that never is)."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, hotloop
from faulty import lines
from test_perf import needs_perf

from hotloop.perf import recorder as perf_recorder
from hotloop.perf.recorder import PerfRecorder
from hotloop.run.process import WorkerProcess

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


# A workload whose setup waits for a file to be there (`flag`), having made another (`here`):
# the test's perf makes `flag` as perf record starts, so the worker is ready only if perf
# record was started before it was; `here` says the worker is in its setup.
GATE_C = r"""
#include "hotloop.h"
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
struct st { long loops; };
void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t len)
{
    const char *flag = hl_param_str(p, n, "flag", ""), *here = hl_param_str(p, n, "here", "");
    (void)env;
    if (*here) {
        int fd = open(here, O_CREAT | O_WRONLY, 0644);
        if (fd >= 0) close(fd);
    }
    for (int i = 0; *flag && access(flag, F_OK) != 0; i++) {
        if (i == 6000) {        /* a minute: never, were perf record started at Ready */
            hl_fail(err, len, "no perf record before the worker was ready");
            return NULL;
        }
        usleep(10000);
    }
    struct st *s = calloc(1, sizeof(*s));
    s->loops = hl_param_int(p, n, "loops", 1);
    return s;
}
int hl_run(void *state, struct hl_result *res, char *err, size_t len)
{
    struct st *s = state;
    struct hl_clock c;
    volatile unsigned long x = 0;
    (void)err; (void)len;
    hl_clock_start(&c);
    for (long i = 0; i < s->loops; i++)
        x += (unsigned long)i;
    hl_clock_stop(&c, res);
    res->ops = s->loops;
    return 0;
}
int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state) { free(state); }
"""
GATE_TOML = """
[workload.gate]
source = "gate.c"
metric = "ops/s"
params.flag = { default = "" }
params.here = { default = "" }
params.loops = { default = 1, min = 1 }
"""


def gate_profiles(tmp_path: Path) -> Path:
    d = tmp_path / "gate-profiles"
    d.mkdir()
    (d / "gate.c").write_text(GATE_C)
    (d / "w.toml").write_text(GATE_TOML)
    return d


def flagging_perf(tmp_path: Path, monkeypatch, flag: Path) -> Path:
    """A perf first on PATH that notes each start's arguments (noting_perf) and makes `flag`
    as a perf record starts, then is perf; the directory of its notes."""
    log = tmp_path / "perf-started"
    log.mkdir()
    perf_first_on_path(tmp_path, monkeypatch, "flagging-bin",
                       f"printf '%s\\n' \"$@\" > {log}/$$\n"
                       f"[ \"$1\" = record ] && : > {flag}")
    return log


def records(log: Path) -> list[list[str]]:
    return [a for f in log.iterdir() if (a := f.read_text().splitlines()) and a[0] == "record"]


def test_perf_record_is_started_before_the_worker_is_ready_and_samples_its_first_run(
        tmp_path, monkeypatch, leftovers):
    # the worker's setup waits for perf record's start: were perf started at the worker's
    # Ready (after its setup), the setup would wait for ever (its minute, then it fails)
    flag = tmp_path / "perf-record-started"
    log = flagging_perf(tmp_path, monkeypatch, flag)
    out = tmp_path / "r.jsonl"
    done = hotloop("run", "gate", "--profiles", str(gate_profiles(tmp_path)), "--runs", "2",
                   "--warmup", "0", "--cpu", "same-core", "--param", f"flag={flag}",
                   "--param", "loops=100000000", "--perf", "--no-keep-perf",
                   "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert len(records(log)) == 1 and flag.exists()
    rows = lines(out)
    assert [(r["started"], r["message"]) for r in rows if r["type"] == "perf_start"] \
        == [(True, "")]
    # the first run is in perf's first window: its own hot symbols, the hot loop's among them
    # (samples are given to runs by their time; a loop of 10^8 adds is some 0.1 s of CPU)
    runs = {r["window"]: r for r in rows if r["type"] == "hot_symbols" and r["scope"] == "run"}
    assert sorted(runs) == [0, 1], runs.keys()
    assert any(s["symbol"] == "hl_run" and s["dso"].startswith("_hl_gate")
               for s in runs[0]["symbols"]), runs[0]
    assert leftovers() == []


@pytest.mark.parametrize("fault", ["setup", "badparam"])
def test_a_worker_that_never_gets_ready_takes_the_perf_started_for_it(
        faulty, tmp_path, monkeypatch, leftovers, fault):
    """perf record spawned as the worker starts, the worker's setup fails: perf is stopped and
    reaped with it, and the perf data directory made for it (kept by default) is gone again,
    as it never was before (bad input discards the result file too)."""
    log = noting_perf(tmp_path, monkeypatch)
    out = tmp_path / "f.jsonl"
    done = hotloop("run", "faulty", "--profiles", str(faulty), "--param", f"fault={fault}",
                   "--warmup", "0", "--perf", "--out", str(out))
    assert done.returncode == (2 if fault == "badparam" else 1), done.stderr
    assert "Traceback" not in done.stderr
    assert len(records(log)) == 1             # it was started: the worker never was ready
    assert not (tmp_path / "f.perf").exists()
    assert out.exists() == (fault == "setup")
    if fault == "setup":
        assert not [r for r in lines(out) if r["type"] == "perf_start"]
    assert leftovers() == []


@pytest.mark.parametrize("how", ["ctrl-c", "sigkill"])
def test_perf_started_for_a_worker_in_its_setup_ends_with_hotloop(tmp_path, monkeypatch,
                                                                   leftovers, how):
    log = noting_perf(tmp_path, monkeypatch)
    here = tmp_path / "in-setup"
    out = tmp_path / "s.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "hotloop", "run", "gate", "--profiles",
         str(gate_profiles(tmp_path)), "--warmup", "0", "--perf",
         "--param", f"flag={tmp_path / 'never'}", "--param", f"here={here}", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while not (here.exists() and records(log)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert here.exists() and records(log), "no worker in its setup with perf record started"
        proc.send_signal(signal.SIGKILL if how == "sigkill" else signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == (-signal.SIGKILL if how == "sigkill" else 130), err
    assert leftovers(grace=5) == []             # perf record too (PDEATHSIG on a SIGKILL)
    if how == "ctrl-c":
        assert json.loads(out.read_text().splitlines()[-1])["interrupted"]
        assert not (tmp_path / "s.perf").exists()


def test_the_worker_runs_on_its_cpu_from_its_start():
    """perf samples the workload's CPUs from before the worker starts: the worker's maps and
    its name are seen only where it runs, so it is on its CPU from its exec, before its spec."""
    cpu = max(os.sched_getaffinity(0))

    async def started() -> set[int]:
        worker = await WorkerProcess.start(cpu)
        try:
            return os.sched_getaffinity(worker.proc.pid)
        finally:
            worker.kill()
            await worker.reap()
    assert asyncio.run(started()) == {cpu}


def sleeper_recording(cpu: int, *, prepare: bool) -> tuple[list[int], bool, list[str], bool]:
    """A recorder of a `sleep` on `cpu`, prepared (or not) before the sleep starts, then
    attached and started: the perf processes before its start, whether it started, perf
    record's arguments, and whether every perf it started is gone once it stopped."""
    async def go() -> tuple[list[int], bool, list[str], bool]:
        rec = PerfRecorder((), cpus=[cpu], counters=True)
        if prepare:
            await rec.prepare()
        before = rec.pids_of_perf
        sleeper = subprocess.Popen(["taskset", "-c", str(cpu), "sleep", "30"])
        try:
            rec.attach([sleeper.pid], "sleep")
            ok = await rec.start()
            assert rec._record.directory is not None
            argv = rec._record.argv(0, 0)
            procs = [p for p in (rec._record.proc, rec._stat.proc) if p is not None]
            await rec.stop()
            return before, ok, argv, all(p.returncode is not None for p in procs)
        finally:
            sleeper.kill()
            sleeper.wait()
    return asyncio.run(go())


def test_a_prepared_recording_is_spawned_first_and_enabled_at_its_start():
    before, ok, argv, gone = sleeper_recording(0, prepare=True)
    assert len(before) == 1 and ok and gone     # perf record alone, before the pids
    assert argv[argv.index("-a") + 1:argv.index("-a") + 3] == ["-C", "0"]


def test_without_the_whole_cpus_perf_record_waits_for_the_pids(monkeypatch):
    # not root and perf_event_paranoid > 0 (this machine is root: a stand-in says so)
    monkeypatch.setattr(perf_recorder, "system_wide_allowed", lambda: False)
    before, ok, argv, gone = sleeper_recording(0, prepare=True)
    assert before == [] and ok and gone         # nothing before the pids: -p needs them
    assert "-a" not in argv and "-p" in argv


def test_a_prepared_recording_never_started_leaves_nothing(tmp_path):
    async def go() -> tuple[list[int], bool]:
        rec = PerfRecorder((), cpus=[0], keep_dir=tmp_path / "kept")
        await rec.prepare()
        spawned = rec.pids_of_perf
        proc = rec._record.proc
        result = await rec.stop()               # the worker was never ready
        assert result.windows == 0 and not result.symbols
        return spawned, proc is not None and proc.returncode is not None
    spawned, reaped = asyncio.run(go())
    assert len(spawned) == 1 and reaped
    assert not [d for d in os.listdir("/tmp") if d.startswith(f"hotloop-perf-{os.getpid()}-")]


def test_a_perf_that_cannot_be_spawned_as_the_worker_starts_is_said_and_the_runs_go_on(
        tmp_path, monkeypatch, leftovers):
    # a perf on PATH whose interpreter is not there: its exec fails (ENOENT) as perf record is
    # spawned, before the worker; said once the worker is ready, as any start that failed
    bad = tmp_path / "unspawnable"
    bad.mkdir()
    (bad / "perf").write_text(f"#!{tmp_path}/no-such-interpreter\n")
    (bad / "perf").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bad}:{os.environ['PATH']}")
    out = tmp_path / "u.jsonl"
    done = hotloop("run", "zero_null", "--runs", "2", "--warmup", "0", "--param", "count=2000",
                   "--perf", "--out", str(out))
    assert done.returncode == 0, done.stderr
    rows = lines(out)
    assert len([r for r in rows if r["type"] == "run"]) == 2
    (start,) = [r for r in rows if r["type"] == "perf_start"]
    assert not start["started"] and "No such file or directory" in start["message"], start
    said = [r["message"] for r in rows if r["type"] == "warning"
            and r["message"].startswith("perf: perf record could not start: ")]
    assert len(said) == 1 and start["message"] in said[0], said
    assert not (tmp_path / "u.perf").exists()
    assert leftovers() == []
