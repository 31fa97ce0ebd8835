"""The workload library (tcp_rr, pool, syscall, pipe), run through the real CLI.

Small params keep each run short; the point is that every workload builds,
runs, reports what it claims, rejects what cannot work with exit 2, fails a
run whose helper process dies with exit 1, and leaves nothing running.
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, hotloop, tagged_pids

LAT = ("lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_p999_ns")


def run_json(*args: str, timeout: float = 300) -> dict:
    p = hotloop("run", *args, "--no-perf", "--format", "json", "--out", "r.jsonl",
                timeout=timeout)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def params(*kv: str) -> list[str]:
    return [a for x in kv for a in ("--param", x)]


# ---------------------------------------------------------------- syscall

@pytest.mark.parametrize("call", ["getppid", "getpid", "getuid"])
@pytest.mark.parametrize("path", ["libc", "syscall"])
def test_syscall_counts_calls_in_ns_per_op(call, path, leftovers):
    doc = run_json("syscall", "--runs", "2", "--cpu", "same-core",
                   *params("calls=20000", f"call={call}", f"path={path}"))
    assert doc["metric"] == "ns/op" and doc["higher_is_better"] is False
    for r in doc["runs"]:
        assert r["ops"] == 20000 and r["bytes"] == 0
        assert 1 < r["value"] < 100_000         # a real kernel entry, not an elided loop
        assert r["value"] == pytest.approx(r["ns"] / r["ops"], rel=1e-6)
    assert leftovers() == []


def test_syscall_unknown_call_is_bad_input():
    p = hotloop("run", "syscall", "--no-perf", *params("call=fork"))
    assert p.returncode == 2 and "call" in p.stderr and "fork" in p.stderr


# ------------------------------------------------------------------- pool

@pytest.mark.parametrize("mode,loops", [("fast_path", 200_000), ("ptr_ring", 200_000),
                                        ("slow", 2_000), ("baseline", 200_000)])
def test_pool_modes_report_ns_and_cycles_per_op(mode, loops):
    doc = run_json("pool", "--runs", "2", "--cpu", "same-core",
                   *params(f"mode={mode}", f"loops={loops}"))
    assert doc["metric"] == "ns/op"
    for r in doc["runs"]:
        assert r["ops"] == loops and r["ns"] > 0
        if os.uname().machine in ("x86_64", "i686"):
            assert r["cycles"] > 0              # the TSC
    if mode == "slow":
        assert doc["summary"]["median"] > 100      # mmap+fault+munmap: far above 100 ns


def test_pool_default_loops_depend_on_mode():
    doc = run_json("pool", "--runs", "1", *params("mode=slow"))
    assert doc["runs"][0]["ops"] == 100_000


def test_pool_ring_of_size_zero_is_bad_input():
    p = hotloop("run", "pool", "--no-perf", *params("mode=ptr_ring", "ring_size=0"))
    assert p.returncode == 2 and "ring_size" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_pool_ring_of_one_slot_works():
    doc = run_json("pool", "--runs", "1", *params("mode=ptr_ring", "ring_size=1", "loops=10000"))
    assert doc["runs"][0]["ops"] == 10000


# ------------------------------------------------------------------- pipe

@pytest.mark.parametrize("cpu", ["same-core", "split"])
def test_pipe_round_trips(cpu, leftovers):
    doc = run_json("pipe", "--runs", "2", "--cpu", cpu, *params("round_trips=2000"))
    for r in doc["runs"]:
        assert r["ops"] == 2000 and r["bytes"] == 4000
        assert r["value"] > 100                  # two context switches at least
    assert leftovers() == []


# ----------------------------------------------------------------- tcp_rr

def test_tcp_rr_reports_transactions_and_latency_percentiles(leftovers):
    doc = run_json("tcp_rr", "--runs", "2", "--cpu", "split",
                   *params("flows=20", "transactions=5000", "request_size=10",
                           "response_size=100"))
    assert doc["metric"] == "ops/s" and doc["unit"] == "trans/s"
    assert doc["higher_is_better"] is True
    for r in doc["runs"]:
        assert r["ops"] == 5000 and r["bytes"] == 5000 * 110
        lat = [r["extra"][k] for k in LAT]
        assert 0 < lat[0] <= lat[1] <= lat[2] <= lat[3]
    assert set(LAT) <= set(doc["summary"])
    assert leftovers() == []


def test_tcp_rr_1000_flows_per_thread_and_two_threads(leftovers):
    doc = run_json("tcp_rr", "--runs", "1", "--cpu", "split",
                   *params("flows=1000", "threads=2", "transactions=20000"))
    assert doc["runs"][0]["ops"] == 20000
    assert leftovers() == []


def test_tcp_rr_large_messages_cross_partial_sends():
    doc = run_json("tcp_rr", "--runs", "1",
                   *params("flows=4", "transactions=200", "request_size=200000",
                           "response_size=300000"))
    assert doc["runs"][0]["bytes"] == 200 * 500000


@pytest.mark.parametrize("param,words", [("flows=0", "flows"),
                                         ("request_size=99999999", "request_size"),
                                         ("response_size=0", "response_size")])
def test_tcp_rr_impossible_params_are_bad_input(param, words, leftovers):
    p = hotloop("run", "tcp_rr", "--no-perf", *params(param))
    assert p.returncode == 2, p.stderr
    assert words in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert leftovers() == []


def test_tcp_rr_request_over_wmem_max_is_bad_input_from_setup():
    wmem_max = int(Path("/proc/sys/net/core/wmem_max").read_text())
    if wmem_max >= 16_777_216:
        pytest.skip("net.core.wmem_max is above the TOML's own maximum")
    p = hotloop("run", "tcp_rr", "--no-perf", *params(f"request_size={wmem_max + 1}"))
    assert p.returncode == 2
    assert "net.core.wmem_max" in p.stderr and "request_size" in p.stderr


def test_tcp_rr_port_in_use_fails_the_run_and_a_free_port_works(leftovers):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    try:
        p = hotloop("run", "tcp_rr", "--no-perf", "--runs", "1",
                    *params(f"port={port}", "transactions=100"))
        assert p.returncode == 1
        assert f"127.0.0.1:{port}" in p.stderr and "in use" in p.stderr
        assert leftovers() == []
    finally:
        s.close()
    doc = run_json("tcp_rr", "--runs", "1", *params(f"port={port}", "transactions=100"))
    assert doc["runs"][0]["ops"] == 100


def _has_cap_sys_resource() -> bool:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> 24 & 1)
    return False


def test_tcp_rr_rlimit_too_low_says_so(leftovers):
    if _has_cap_sys_resource():
        pytest.skip("CAP_SYS_RESOURCE lets the workload raise the hard limit")
    import resource

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "hotloop", "run", "tcp_rr", "--no-perf", "--runs",
                        "1", "--param", "flows=1000", "--param", "transactions=100"],
                       capture_output=True, text=True, timeout=120, env=env, preexec_fn=low)
    assert p.returncode == 1, p.stderr
    assert "RLIMIT_NOFILE" in p.stderr and "1000 flows" in p.stderr
    assert leftovers() == []


def test_tcp_rr_raises_the_soft_nofile_limit_to_the_hard_one(leftovers):
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 2200:
        pytest.skip("hard RLIMIT_NOFILE below what 1000 flows need")

    def low_soft() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "hotloop", "run", "tcp_rr", "--no-perf", "--runs",
                        "1", "--param", "flows=1000", "--param", "transactions=2000",
                        "--out", "r.jsonl"],
                       capture_output=True, text=True, timeout=120, env=env,
                       preexec_fn=low_soft)
    assert p.returncode == 0, p.stderr
    assert leftovers() == []


# ------------------------------------------------- a helper that dies mid-run

def _worker_child() -> int | None:
    """The pid of a process forked by this test's worker (the server/echo child)."""
    pids = tagged_pids()
    def cmd(pid: int) -> bytes:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return b""
    def ppid(pid: int) -> int:
        try:
            return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return -1
    workers = {p for p in pids if b"hotloop.run.worker" in cmd(p)}
    for p in pids:
        if ppid(p) in workers:
            return p
    return None


def _kill_helper_mid_run(workload: str, *args: str,
                         sig: int = signal.SIGKILL) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", workload, "--no-perf",
                             "--out", "r.jsonl", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    child = None
    while child is None and time.monotonic() < deadline and proc.poll() is None:
        child = _worker_child()
        time.sleep(0.05)
    assert child is not None, "the workload's helper process never appeared"
    out = Path("r.jsonl")                       # into the runs: the first one recorded
    while time.monotonic() < deadline and proc.poll() is None and \
            '"warmup":false' not in (out.read_text() if out.exists() else ""):
        time.sleep(0.05)
    child = _worker_child() or child            # a reader forked for each run: this one's
    os.kill(child, sig)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_tcp_rr_server_killed_mid_run_fails_the_run(leftovers):
    p = _kill_helper_mid_run("tcp_rr", "--runs", "50", "--warmup", "0",
                             *params("transactions=200000"))
    assert p.returncode == 1, p.stderr
    assert "server" in p.stderr and "killed by signal 9" in p.stderr
    assert leftovers() == []


def test_pipe_child_killed_mid_run_fails_the_run(leftovers):
    p = _kill_helper_mid_run("pipe", "--runs", "50", "--warmup", "0", "--cpu", "same-core",
                             *params("round_trips=200000"))
    assert p.returncode == 1, p.stderr
    assert "echo child" in p.stderr and "killed by signal 9" in p.stderr
    assert leftovers() == []


@pytest.mark.parametrize("sig, said", [
    (signal.SIGKILL, "reader (pid {}) was killed by signal 9 (Killed)"),
    # Python's SIGINT handler, inherited by the C reader, swallowed it: the run went on
    (signal.SIGINT, "reader (pid {}) was killed by signal 2 (Interrupt)"),
])
def test_seqpacket_reader_killed_mid_run_says_how_the_reader_ended(sig, said, leftovers):
    """The AF_UNIX seqpacket stream test's reader gone mid-run: the writer's next write
    fails (EPIPE), and the run says why the reader went, not only "Broken pipe"."""
    p = _kill_helper_mid_run("seqpacket", "--runs", "50", "--warmup", "0",
                             *params("msgs=2000000"), sig=sig)
    assert p.returncode == 1, p.stderr
    line = next(ln for ln in p.stderr.splitlines() if "reader" in ln)
    assert re.search(re.escape(said).replace(re.escape("{}"), r"\d+"), line), line
    assert leftovers() == []
