"""The core path, really run: compile, pinned worker, result file, report, faults."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT, hotloop, tagged_pids
from faulty import FAULTY_C, lines
from faulty import start as _start
from faulty import wait_for_runs as _wait_for_runs

from hotloop import results


def test_seqpacket_runs_and_reports_summary_and_histogram(tmp_path, leftovers):
    p = hotloop("run", "seqpacket", "--runs", "6", "--param", "msgs=20000", "--no-perf",
                "--cpu", "split")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for word in ("median", "mean", "stdev", "CV", "min", "max", "histogram"):
        assert word in out
    # the rate in bytes/s on its SI scale: MB/s here when quiet, kB/s when the machine is busy
    assert re.search(r"\d [kMG]?B/s", out), out
    files = list((tmp_path / "results").glob("*-seqpacket.jsonl"))
    assert len(files) == 1
    rows = lines(files[0])
    head = rows[0]["header"]
    assert rows[0]["type"] == "started"
    for key in ("hotloop", "host", "kernel_release", "cmdline", "cpu_model", "compiler",
                "cflags", "source_sha256", "plan", "cpu", "kernel", "params"):
        assert key in head, key
    assert head["cpu"]["cpus"] == [0, 1]
    runs = [r for r in rows if r["type"] == "run" and not r["warmup"]]
    assert len(runs) == 6
    for r in runs:                         # the reader's rate, from its own counters
        assert r["bytes"] == 20000 * 16 and r["ops"] == 20000
        assert r["value"] == pytest.approx(r["bytes"] * 1e9 / r["ns"])
        assert r["cycles"] > 0             # this machine has a TSC
    assert rows[-1]["type"] == "finished" and rows[-1]["summary"]["n"] == 6
    assert leftovers() == []


def test_zero_null_json_document_and_show(tmp_path, cli):
    out = tmp_path / "results" / "z.jsonl"
    p = hotloop("run", "zero_null", "--runs", "5", "--param", "block_size=4096",
                "--param", "count=5000", "--out", str(out), "--format", "json", "--no-perf")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["workload"] == "zero_null" and doc["metric"] == "bytes/s"
    assert doc["unit"] == "B/s" and doc["higher_is_better"] is True
    assert len(doc["runs"]) == 5 and doc["summary"]["n"] == 5
    assert set(doc["summary"]) >= {"n", "median", "mean", "stdev", "cv", "min", "max"}
    assert {"user_s", "sys_s"} <= set(doc["runs"][0]["extra"])
    assert all(r["bytes"] == 4096 * 5000 for r in doc["runs"])
    assert doc["hot_symbols"] == [] and doc["result_file"] == str(out)
    assert doc["summary"]["min"] <= doc["summary"]["median"] <= doc["summary"]["max"]

    shown = cli("show", str(out))
    assert shown.returncode == 0 and "histogram" in shown.stdout and "zero_null" in shown.stdout
    again = json.loads(cli("show", str(out), "--format", "json").stdout)
    assert again["runs"] == doc["runs"]


def test_a_compile_error_is_the_compilers_first_lines_and_exit_2(faulty):
    (faulty / "faulty.c").write_text('#include "hotloop.h"\nint x = y;\n')
    p = hotloop("run", "faulty", "--profiles", str(faulty))
    assert p.returncode == 2
    assert "does not compile" in p.stderr and "faulty.c:2" in p.stderr and "'y' undeclared" \
        in p.stderr.replace("‘", "'").replace("’", "'")
    assert len(p.stderr.strip().splitlines()) == 1
    assert not Path("results").exists()


def test_a_bad_param_combination_from_setup_is_bad_input(faulty, leftovers):
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "fault=badparam")
    assert p.returncode == 2, p.stderr
    assert "at: cannot work with fault=badparam" in p.stderr
    assert not list(Path("results").glob("*.jsonl"))
    assert leftovers() == []


def test_a_setup_failure_is_a_failed_run(faulty):
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "fault=setup")
    assert p.returncode == 1
    assert "setup: no such device" in p.stderr


def test_a_crashing_worker_exits_1_naming_run_and_signal_and_keeps_runs(faulty, leftovers):
    out = Path("r.jsonl")
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "fault=segv",
                "--param", "at=4", "--warmup", "1", "--runs", "10", "--out", str(out),
                "--no-perf")
    assert p.returncode == 1
    # run 4 of the workload is the warmup plus 3 recorded: recorded run 3 crashed
    assert "run 3: worker killed by SIGSEGV" in p.stderr
    res = results.read(out)
    assert len(res.runs) == 2 and res.partial and res.failed.signal == "SIGSEGV"
    assert "PARTIAL" in p.stdout
    assert leftovers() == []


def test_an_error_from_hl_run_names_the_run(faulty):
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "fault=error",
                "--warmup", "0", "--no-perf")
    assert p.returncode == 1
    assert "run 3: the device went away" in p.stderr


def test_a_hung_run_times_out_and_leaves_nothing_behind(faulty, leftovers):
    # a run that hangs for good: ended by its timeout, or by this call's after 300 s
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "fault=hang",
                "--warmup", "0", "--timeout", "1", "--no-perf")
    assert p.returncode == 1
    assert "run 3: no result within the timeout of 1s" in p.stderr
    assert leftovers() == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_kills_children_keeps_valid_jsonl_and_exits_128_plus_it(faulty, leftovers,
                                                                         sig):
    # Ctrl-C, a kill, a dropped SSH session: the same clean end.
    out = Path("t.jsonl")
    proc = _start(["run", "faulty", "--profiles", str(faulty), "--param", "fault=child",
                   "--runs", "1000", "--warmup", "0", "--out", str(out), "--no-perf"])
    _wait_for_runs(out, 3)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig, err     # as a shell reports it: 130, 143, 129
    assert "interrupted" in err
    rows = lines(out)                          # every line parses: valid JSON Lines
    assert rows[-1]["type"] == "failed" and rows[-1]["interrupted"]
    assert rows[-1]["signal"] == sig.name      # which one, as the console records SIGHUP
    assert results.read(out).runs
    assert leftovers() == []


def _end_tagged() -> None:
    """After a hotloop that failed a test: SIGKILL what it left (checked before this)."""
    for pid in tagged_pids():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_helpers_that_hold_the_workers_pipes_do_not_hang_the_end(faulty, leftovers):
    # 50 helpers forked without hl_child_init: nothing makes them die with the worker,
    # and they hold its stdout and stderr open after it has exited.
    out = Path("o.jsonl")
    try:
        p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "fault=orphans",
                    "--runs", "3", "--warmup", "0", "--timeout", "10", "--out", str(out),
                    "--no-perf", timeout=60)
        assert p.returncode == 0, p.stderr
        rows = lines(out)
        assert rows[-1]["type"] == "finished" and rows[-1]["summary"]["n"] == 3
        assert leftovers() == []             # the helpers went with the worker's group
    finally:
        _end_tagged()


def test_a_crash_with_helpers_holding_its_pipes_is_the_crash_not_a_timeout(faulty,
                                                                           leftovers):
    out = Path("s.jsonl")
    try:
        p = hotloop("run", "faulty", "--profiles", str(faulty), "--param",
                    "fault=orphans-segv", "--param", "at=2", "--runs", "5", "--warmup",
                    "0", "--timeout", "20", "--out", str(out), "--no-perf", timeout=90)
        assert p.returncode == 1
        assert "run 2: worker killed by SIGSEGV" in p.stderr, p.stderr
        res = results.read(out)
        assert len(res.runs) == 1 and res.failed.signal == "SIGSEGV"
        assert leftovers() == []
    finally:
        _end_tagged()


def test_a_line_of_2_mib_from_the_workload_is_read_on_and_said(faulty, leftovers):
    # printf without a newline, longer than any line buffer: the run goes on, and the
    # output is reported (its size and tail), not lost in a stall.
    out = Path("b.jsonl")
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "at=2",
                "--param", "fault=bigline", "--runs", "3", "--warmup", "0",
                "--timeout", "10", "--out", str(out), "--no-perf", timeout=90)
    assert p.returncode == 0, p.stderr
    said = [w for w in results.read(out).warnings if "stdout/stderr" in w]
    assert len(said) == 1 and f"wrote {2 << 20:,} bytes" in said[0] and "xxxx" in said[0]
    assert len(said[0]) < 400                 # the tail, not the 2 MiB
    assert "wrote 2,097,152 bytes" in p.stderr
    assert results.read(out).finished is not None
    assert leftovers() == []


def test_sigkill_of_hotloop_takes_the_worker_and_its_children_along(faulty, leftovers):
    out = Path("k.jsonl")
    proc = _start(["run", "faulty", "--profiles", str(faulty), "--param", "fault=child",
                   "--runs", "1000", "--warmup", "0", "--out", str(out), "--no-perf"])
    _wait_for_runs(out, 3)
    proc.kill()
    proc.wait()
    assert leftovers(grace=5) == []
    res = results.read(out)               # what was measured is still there
    assert res.partial and len(res.runs) >= 3


def test_concurrent_builds_of_one_source_do_not_race(tmp_path):
    src = tmp_path / "w.c"
    src.write_text(textwrap.dedent(FAULTY_C) + "\n/* unique */\n")
    code = ("import sys; from pathlib import Path; from hotloop.run import build; "
            "b = build.build(Path(sys.argv[1])); build.load(b); print(b.path)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(src)], stdout=subprocess.PIPE,
                              text=True, env=env) for _ in range(4)]
    outs = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(outs) == 1 and Path(outs.pop()).exists()


def test_runs_spread_over_several_worker_processes(faulty, tmp_path, leftovers):
    # Each worker is a new process (its own memory layout): 7 runs over 3 workers
    # are 3+2+2, each worker with its own warmup; the runs are numbered straight through.
    out = tmp_path / "p.jsonl"
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--runs", "7", "--warmup", "1",
                "--processes", "3", "--out", str(out), "--no-perf")
    assert p.returncode == 0, p.stderr
    rows = [r for r in lines(out) if r["type"] == "run"]
    assert [r["index"] for r in rows] == [-1, 0, 1, 2, -1, 3, 4, -1, 5, 6]
    res = results.read(out)
    assert len(res.runs) == 7 and res.finished.summary.n == 7
    assert hotloop("run", "faulty", "--profiles", str(faulty), "--processes", "0").returncode == 2
    assert leftovers() == []


def test_a_crash_with_several_workers_ends_the_session(faulty, tmp_path, leftovers):
    # The first worker crashes on its 3rd run: no later worker starts.
    out = tmp_path / "c.jsonl"
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "fault=segv",
                "--param", "at=3", "--runs", "6", "--warmup", "0", "--processes", "2",
                "--out", str(out), "--no-perf")
    assert p.returncode == 1
    assert "run 3: worker killed by SIGSEGV" in p.stderr
    assert len(results.read(out).runs) == 2
    assert sum(1 for r in lines(out) if r["type"] == "started") == 1
    assert leftovers() == []


def test_a_symbol_nothing_defines_is_bad_input_not_a_crash(faulty):
    src = (faulty / "faulty.c").read_text()
    (faulty / "faulty.c").write_text(src.replace("int hl_pids(", "int hl_pids_typo("))
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--no-perf")
    assert p.returncode == 2
    assert "does not link: undefined symbol hl_pids" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_a_run_reporting_no_ops_fails_instead_of_a_wrong_figure(faulty):
    p = hotloop("run", "faulty", "--profiles", str(faulty), "--param", "fault=noops",
                "--warmup", "0", "--no-perf")
    assert p.returncode == 1
    assert "run 1: the workload reported 0 ops" in p.stderr


def test_output_into_a_closed_pipe_is_quiet():
    p = subprocess.run(f"{sys.executable} -m hotloop list | head -1", shell=True, text=True,
                       capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.stdout.strip() == "workloads"
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_flood_of_tiny_runs_still_stops_at_once(tmp_path, leftovers, sig):
    # Thousands of lines a second queue up between the worker and the session: the
    # cancel must not be lost while one is being handed over.
    out = tmp_path / "flood.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--param",
                             "count=1", "--runs", "1000000", "--warmup", "0", "--no-perf",
                             "--timeout", "30", "--out", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _wait_for_runs(out, 300)        # the pipe behind them (64 KiB) filled in milliseconds
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    assert lines(out)[-1]["interrupted"]     # a lost cancel: its 1,000,000 runs finished
    assert leftovers() == []


def holds_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(fd) == str(path):
                return True
        except OSError:
            continue
    return False


def test_ctrl_c_while_another_hotloop_holds_the_build_lock_ends_at_once(faulty, leftovers):
    """A build waits for another's lock (or a compiler that hangs): Ctrl-C must not wait with it."""
    import fcntl

    (faulty / "faulty.c").write_text(FAULTY_C + "\n/* a source no build has seen */\n")
    build_dir = Path(os.environ["XDG_CACHE_HOME"]) / "hotloop" / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)            # "another hotloop" building
        proc = _start(["run", "faulty", "--profiles", str(faulty), "--runs", "3", "--no-perf"])
        # started, and waiting on the lock: it has the lock file open, however long a busy
        # machine took to get it there (a fixed sleep was not always enough)
        deadline = time.monotonic() + 60
        while not holds_open(proc.pid, build_dir / ".lock"):
            assert proc.poll() is None and time.monotonic() < deadline, "never opened the lock"
            time.sleep(0.05)
        time.sleep(0.2)                             # in its wait (50 ms polls)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)       # the lock is still held: no waiting it out
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert leftovers() == []
