"""perf through the real session and CLI: live windows, aggregates, degradation, no leftovers."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, hotloop, path_without, profile_dir
from faulty import lines
from faulty import wait_for_runs as _wait_for_runs

from hotloop import results

needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")


@needs_perf
def test_a_perf_run_reports_kernel_hot_symbols_in_perf_report_shape(tmp_path, leftovers, cli):
    out = tmp_path / "z.jsonl"
    # 1M reads a run: some 1,700 samples, of which hl_run's loop gets 0.4-1.6% (300000 gave
    # it 2-8 of 500: too close to none)
    p = hotloop("run", "zero_null", "--runs", "4", "--param", "count=1000000", "--perf",
                "--out", str(out), "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    syms = doc["hot_symbols"]
    assert 0 < len(syms) <= 30
    assert [s["percent"] for s in syms] == sorted((s["percent"] for s in syms), reverse=True)
    kernel = [s for s in syms if s["kernel"]]
    assert kernel and all(s["dso"] == "[kernel.kallsyms]" for s in kernel)
    names = {s["symbol"] for s in syms}
    assert names & {"read_zero", "iov_iter_zero", "__arch_clear_user", "clear_user",
                    "rep_stos_alternative", "vfs_read", "do_syscall_64"}, names
    assert any(s["symbol"] == "hl_run" and s["dso"].startswith("_hl_zero_null") for s in syms)
    # the counters perf stat could read; unsupported ones are null, never 0
    counters = doc["summary"]["counters"]
    assert counters["task-clock"] > 0
    assert all(v is None or v > 0 or k in ("cpu-migrations", "page-faults")
               for k, v in counters.items())
    rows = lines(out)
    scopes = [r["scope"] for r in rows if r["type"] == "hot_symbols"]
    assert "window" in scopes and scopes.count("session") == 1 and "run" in scopes
    text = cli("show", str(out)).stdout
    assert "hot symbols" in text and "[k] " in text and "[kernel.kallsyms]" in text
    assert leftovers() == []


@needs_perf
def test_windows_arrive_at_least_every_two_seconds_during_a_long_run(faulty, tmp_path):
    # One repetition of a few seconds: windows must come every <= 2 s, not just at its end.
    # (perf report runs at SCHED_IDLE, on the CPU the workload leaves free.)
    import asyncio
    import time

    from hotloop import catalog
    from hotloop import events as ev
    from hotloop.run.session import Session

    cat = catalog.load([faulty])
    plan = catalog.with_overrides(cat.plan_for("zero_null"), runs=1, warmup=0, perf=True,
                                  params={"count": 12_000_000})
    session = Session(cat.resolve(plan), tmp_path / "long.jsonl")

    async def collect() -> list[tuple[float, ev.Event]]:
        return [(time.monotonic(), e) async for e in session.events()]

    def cpu_idle() -> tuple[int, int]:
        """(idle, total) jiffies of every CPU so far, from /proc/stat."""
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return ticks[3] + ticks[4], sum(ticks)

    before = cpu_idle()
    events = asyncio.run(collect())
    after = cpu_idle()
    start = next(t for t, e in events if isinstance(e, ev.Started))
    end, run = next((t, e) for t, e in events if isinstance(e, ev.RunSample))
    assert run.ns > 2.5e9, "the repetition is too short to show live windows"
    # perf's output rotates every second whatever the load: each window is reported
    windows = [e for _, e in events if isinstance(e, ev.HotSymbols) and e.scope == "window"]
    assert len(windows) >= int(run.ns / 1e9) and windows[0].window == 0
    times = [start] + [t for t, e in events
                       if isinstance(e, ev.HotSymbols) and e.scope == "window" and t < end]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # ...and reported live when a CPU was there for perf report, which runs at SCHED_IDLE:
    # on a machine whose every CPU is busy with other work it waits, as it should
    idle_share = (after[0] - before[0]) / max(1, after[1] - before[1])
    if idle_share * (os.cpu_count() or 1) >= 0.5:      # half a CPU or more was left idle
        assert len(gaps) >= 2 and max(gaps) < 2.5, (gaps, idle_share)   # 1 s + the report


@needs_perf
def test_perf_data_is_kept_compressed_by_default_and_perf_report_opens_it(tmp_path):
    out = tmp_path / "k.jsonl"
    p = hotloop("run", "zero_null", "--runs", "2", "--param", "count=200000", "--perf",
                "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "perf data" not in p.stderr          # kept as a matter of course: no warning
    kept = sorted((tmp_path / "k.perf").glob("perf.data*"))
    assert kept
    assert results.read(out).header.perf_data == "k.perf"
    assert all(f.suffix == ".gz" for f in kept)    # gzipped once the run is over
    plain = tmp_path / "plain.data"
    with gzip.open(kept[0]) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    rep = subprocess.run(["perf", "report", "-i", str(plain), "--stdio"],
                         capture_output=True, text=True)
    assert rep.returncode == 0 and "%" in rep.stdout
    none = tmp_path / "n.jsonl"
    p = hotloop("run", "zero_null", "--runs", "2", "--param", "count=200000", "--perf",
                "--no-keep-perf", "--out", str(none))
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "n.perf").exists()
    assert results.read(none).header.perf_data == ""


@needs_perf
def test_the_oldest_perf_data_goes_beyond_the_plans_budget_never_a_result(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    for i, name in enumerate(("old", "older", "oldest")):
        # as hotloop leaves them: the header names the directory, which holds hotloop's mark
        (res / f"{name}.jsonl").write_text(json.dumps(
            {"type": "started", "header": {"perf_data": f"{name}.perf"}}) + "\n")
        (res / f"{name}.perf").mkdir()
        (res / f"{name}.perf" / ".hotloop-perf").write_text(f"{name}.jsonl\n")
        with open(res / f"{name}.perf" / "perf.data.1", "wb") as f:
            f.truncate(600_000)                 # 0.6 MB each, sparse
        os.utime(res / f"{name}.perf", (1000 - i * 100, 1000 - i * 100))
    (res / "orphan.perf").mkdir()               # no result file of its own: not ours
    (res / "orphan.perf" / "perf.data.1").write_bytes(b"x" * 1000)
    d = profile_dir(tmp_path, """
        [plan.tight]
        workload = "zero_null"
        runs = 2
        perf_keep_mb = 1
        params = { count = 200000 }
        """)
    p = hotloop("run", "tight", "--profiles", str(d), "--out", str(res / "new.jsonl"))
    assert p.returncode == 0, p.stderr
    # this run's data and the newest older one's fit in 1 MB; the two oldest went
    assert sorted(x.name for x in res.glob("*.perf")) == ["new.perf", "old.perf", "orphan.perf"]
    assert sorted(x.name for x in res.glob("*.jsonl")) == ["new.jsonl", "old.jsonl",
                                                          "older.jsonl", "oldest.jsonl"]
    line, = [ln for ln in p.stderr.splitlines() if "older run" in ln]
    assert "perf data of 2 older runs removed (oldest.perf, older.perf)" in line
    assert "within 1 MB (plan key perf_keep_mb)" in line


def test_without_perf_the_run_happens_and_a_warning_says_how_to_fix_it(tmp_path):
    env_path = path_without(tmp_path, "perf")
    out = tmp_path / "np.jsonl"
    env = dict(os.environ, PATH=env_path, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "hotloop", "run", "zero_null", "--runs", "2",
                        "--param", "count=20000", "--perf", "--out", str(out)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "perf" in p.stderr and "linux-perf" in p.stderr
    res = results.read(out)
    assert len(res.runs) == 2 and any("linux-perf" in w for w in res.warnings)
    doctor = subprocess.run([sys.executable, "-m", "hotloop", "doctor"], capture_output=True,
                            text=True, env=env)
    assert doctor.returncode == 0
    perf_line = next(ln for ln in doctor.stdout.splitlines() if ln.split()[1:2] == ["perf"])
    assert perf_line.split()[0] == "no" and "linux-perf" in perf_line


@needs_perf
def test_doctor_says_what_perf_can_do_here():
    p = hotloop("doctor")
    assert p.returncode == 0
    perf_line = next(ln for ln in p.stdout.splitlines() if ln.split()[1:2] == ["perf"])
    assert perf_line.split()[0] == "yes"
    assert "counters" in p.stdout and "perf_event_paranoid" in p.stdout


@needs_perf
@pytest.mark.parametrize("how", ["crash", "ctrl-c", "sigkill"])
def test_perf_never_outlives_the_session(faulty, tmp_path, leftovers, how):
    out = tmp_path / f"{how}.jsonl"
    args = ["run", "faulty", "--profiles", str(faulty), "--perf", "--warmup", "0",
            "--out", str(out)]
    if how == "crash":
        p = hotloop(*args, "--param", "fault=segv", "--param", "at=4")
        assert p.returncode == 1 and "SIGSEGV" in p.stderr
    else:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "hotloop", *args, "--runs", "1000"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        _wait_for_runs(out, 3)
        proc.send_signal(signal.SIGKILL if how == "sigkill" else signal.SIGINT)
        proc.communicate(timeout=30)
        assert proc.returncode == (-signal.SIGKILL if how == "sigkill" else 130)
    assert leftovers(grace=5) == []         # perf and perf report too (PDEATHSIG)
    assert results.read(out).runs


@pytest.fixture
def kptr_restrict_2():
    """kernel.kptr_restrict=2 hides kernel addresses even from root; always put back."""
    path = Path("/proc/sys/kernel/kptr_restrict")
    original = path.read_text().strip()
    path.write_text("2")
    try:
        yield
    finally:
        path.write_text(original)


@needs_perf
def test_hidden_kernel_symbols_are_a_warning_with_the_fix_and_the_run_goes_on(
        tmp_path, kptr_restrict_2):
    out = tmp_path / "kp.jsonl"
    p = hotloop("run", "zero_null", "--runs", "2", "--param", "count=100000", "--perf",
                "--out", str(out))
    assert p.returncode == 0, p.stderr
    res = results.read(out)
    assert len(res.runs) == 2
    assert any("kptr_restrict=2" in w and "sysctl kernel.kptr_restrict=0" in w
               for w in res.warnings), res.warnings


@needs_perf
def test_missing_hardware_counters_are_said_never_shown_as_zero(tmp_path, cli):
    from hotloop.perf.probe import capabilities
    caps = {c.name: c for c in capabilities()}
    out = tmp_path / "hw.jsonl"
    p = hotloop("run", "zero_null", "--runs", "2", "--param", "count=100000", "--perf",
                "--out", str(out))
    assert p.returncode == 0, p.stderr
    res = results.read(out)
    counters = res.finished.counters
    if caps["hardware counters"].available:     # a machine with a PMU
        assert counters["cycles"] > 0 and counters["ipc"] > 0
    else:                                       # a VM like this one
        assert counters["cycles"] is None and counters["ipc"] is None
        assert any("hardware counters" in w for w in res.warnings)
        assert "not supported here" in cli("show", str(out)).stdout


@needs_perf
def test_each_session_keeps_only_its_own_samples_when_sharing_cpus(tmp_path):
    # perf samples whole CPUs (per-task events would tax every context switch);
    # the worker's process name keeps each session to its own samples.
    p = hotloop("run", "zero_null", "syscall", "--interleave", "--cpu", "same-core",
                "--runs", "3", "--perf", "--format", "json")
    assert p.returncode == 0, p.stderr
    for doc in json.loads(p.stdout)["results"]:
        modules = {s["dso"] for s in doc["hot_symbols"] if s["dso"].startswith("_hl_")}
        assert modules and all(m.startswith(f"_hl_{doc['workload']}_") for m in modules), \
            (doc["workload"], modules)


@needs_perf
def test_stop_while_perf_stops_ends_as_stopped_and_windows_count_up(tmp_path, leftovers):
    # stop() as the last run arrives lands while perf is being stopped and the
    # worker told to tear down; with two workers, windows are numbered straight on.
    import asyncio

    from hotloop import catalog
    from hotloop import events as ev
    from hotloop.run.session import Session

    cat = catalog.load()
    plan = catalog.with_overrides(cat.plan_for("zero_null"), runs=4, warmup=0, perf=True,
                                  processes=2, params={"count": 1_500_000})
    session = Session(cat.resolve(plan), tmp_path / "s.jsonl")

    async def collect() -> list[ev.Event]:
        seen = []
        async for e in session.events():
            seen.append(e)
            if isinstance(e, ev.RunSample) and e.index == 1:    # worker 1's last run
                session.stop()
        return seen

    events = asyncio.run(collect())
    assert isinstance(events[-1], ev.Failed) and events[-1].interrupted
    windows = [e.window for e in events if isinstance(e, ev.HotSymbols) and e.scope == "window"]
    assert windows == sorted(set(windows))
    assert json.loads((tmp_path / "s.jsonl").read_text().splitlines()[-1])["interrupted"]
    assert leftovers() == []


def test_perf_that_never_started_is_recorded_and_said_by_show_and_compare(tmp_path, cli):
    """A header says perf on whether or not perf ran: the file records whether it started.
    Side B's first two sessions run with a `perf` that exits at once (as one that never
    answers its control pipe does in an emulated guest), its third and side A's with the
    real one; show and compare say so in every format, and B measured without perf."""
    broken = tmp_path / "broken-perf"
    broken.mkdir()
    (broken / "perf").write_text("#!/bin/sh\nexit 1\n")
    (broken / "perf").chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    failing = dict(env, PATH=f"{broken}{os.pathsep}{env['PATH']}")
    for side, n, bad in (("A", 2, 0), ("B", 3, 2)):
        (tmp_path / side).mkdir()
        for i in range(n):
            p = subprocess.run([sys.executable, "-m", "hotloop", "run", "zero_null", "--runs",
                                "2", "--param", "count=20000", "--perf",
                                "--out", str(tmp_path / side / f"s{i}.jsonl")],
                               capture_output=True, text=True, env=failing if i < bad else env)
            assert p.returncode == 0, p.stderr
    a, b = tmp_path / "A", tmp_path / "B"
    res = results.read(b / "s0.jsonl")
    assert res.header.perf and [(s.started, s.message) for s in res.perf_starts] == [
        (False, "no ack from perf: it exited with status 1")]
    assert res.perf_not_started == "no ack from perf: it exited with status 1"
    good = results.read(b / "s2.jsonl")
    assert [s.started for s in good.perf_starts] == [True] and good.perf_not_started is None
    shown = cli("show", str(b / "s0.jsonl")).stdout
    assert "warning: perf was asked for but did not start (no ack from perf: it exited with " \
        "status 1): no hot symbols, no counters" in " ".join(shown.split())   # wrapped
    doc = json.loads(cli("show", str(b / "s0.jsonl"), "--format", "json").stdout)
    assert doc["perf"] == {"asked": True, "started": False,
                           "not_started": "no ack from perf: it exited with status 1"}
    assert json.loads(cli("show", str(b / "s2.jsonl"), "--format", "json").stdout)["perf"] \
        == {"asked": True, "started": True, "not_started": None}
    said = ("2 of 3 sessions of side B: perf was asked for but did not start (no ack from "
            "perf: it exited with status 1): no symbol diff with this side")
    differ = ("sides differ in perf: on in A, on in 1 of 3 sessions of B: perf's overhead is "
              "in some sessions' numbers only")
    for fmt in ("text", "md", "org", "json"):
        out = cli("compare", str(a), str(b), "--format", fmt).stdout
        # org continues a wrapped comment on a comment line of its own
        flat = " ".join(out.replace("\n#   ", " ").split())
        for line in (said, differ):
            assert line in flat, (fmt, line, out)
    doc = json.loads(cli("compare", str(a), str(b), "--format", "json").stdout)
    assert not any("side A" in w["text"] for w in doc["warnings"])     # its perf ran in each


@needs_perf
def test_perf_with_the_modules_hidden_as_in_a_guest_samples_as_ever(tmp_path, leftovers):
    """What a VM's guest asks for (run/guest.py): perf record in a mount namespace of its
    own, the kernel's modules directory hidden; the session samples, counts and ends as
    without it, and leaves no process."""
    out = tmp_path / "hidden.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HOTLOOP_PERF_HIDE_MODULES="1")
    p = subprocess.run([sys.executable, "-m", "hotloop", "run", "zero_null", "--runs", "3",
                        "--param", "count=200000", "--perf", "--out", str(out)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    res = results.read(out)
    assert [s.started for s in res.perf_starts] == [True], res.warnings
    assert res.session_symbols is not None and any(s.kernel for s in res.session_symbols.symbols)
    assert res.finished is not None and res.finished.counters.get("task-clock")
    assert not any("perf" in w and "fail" in w for w in res.warnings), res.warnings
    assert leftovers() == []
