"""What a SIGKILLed hotloop leaves behind (a --force run's hidden new file, a journal's temp
file) is cleaned up by the next hotloop: only files of hotloop's own temp naming, whose
process is dead; nothing of a live run's, nothing that only looks like one."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import hotloop
from faulty import start as _start

from hotloop import results
from hotloop.host.journal import journal_path
from hotloop.results.writer import sweep_below, sweep_temps


def dead_pid() -> int:
    """The pid of a process that has ended."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_force_runs_hidden_file_is_removed_by_the_next_run_there(faulty, tmp_path,
                                                                    leftovers):
    out = tmp_path / "r.jsonl"
    args = ["run", "faulty", "--profiles", str(faulty), "--no-perf", "--runs", "2"]
    assert hotloop(*args, "--out", str(out)).returncode == 0
    before = out.read_bytes()
    # the new file replaces the old one with its first run: hung before it, it stays hidden
    proc = _start([*args, "--param", "fault=hang", "--param", "at=1", "--timeout", "600",
                   "--out", str(out), "--force"])
    deadline = time.monotonic() + 60
    while not (hidden := list(tmp_path.glob(".r.jsonl.*.tmp"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hidden, "the --force run wrote no hidden file"
    time.sleep(0.5)
    proc.kill()
    proc.communicate()
    assert leftovers(grace=5) == []
    assert hidden[0].exists() and out.read_bytes() == before
    # Look-alikes: a live process's, a dead one's with what hotloop never writes, a symlink,
    # a directory: all kept.
    live = tmp_path / f".r.jsonl.{os.getpid()}.abcd1234.tmp"
    live.write_text('{"type":"started"}\n')
    notes = tmp_path / f".thesis.jsonl.{dead_pid()}.abcd1234.tmp"
    notes.write_text("my notes\n")
    link = tmp_path / f".x.jsonl.{dead_pid()}.abcd1234.tmp"
    link.symlink_to(out)
    folder = tmp_path / f".y.jsonl.{dead_pid()}.abcd1234.tmp"
    folder.mkdir()
    p = hotloop(*args, "--out", str(tmp_path / "next.jsonl"))
    assert p.returncode == 0, p.stderr
    assert not hidden[0].exists()
    assert live.exists() and notes.read_text() == "my notes\n" and link.is_symlink() \
        and folder.is_dir()
    assert out.read_bytes() == before


def test_a_journals_temp_file_of_a_dead_hotloop_is_removed_by_the_next_command():
    d = journal_path().parent
    d.mkdir(parents=True, mode=0o700)
    dead = d / f".restore.json.{dead_pid()}.tmp"
    dead.write_text('{"version": 1, "entries": []}')
    live = d / f".restore.json.{os.getpid()}.tmp"
    live.write_text('{"version": 1, "entries": []}')
    other = d / "notes.txt"
    other.write_text("mine")
    p = hotloop("list", "plans")
    assert p.returncode == 0, p.stderr
    assert not dead.exists()
    assert live.exists() and other.exists()


def test_a_run_killed_around_its_start_leaves_no_empty_result_file(faulty, tmp_path,
                                                                   leftovers):
    """SIGKILLed at 30 moments around the result file's creation (the hostile test's dropped
    terminal 0.1 s after consent left a 0-byte file once in 14): every result file there has
    its header, and the next run there removes the hidden files the killed ones left."""
    d = tmp_path / "results"
    args = ["run", "faulty", "--profiles", str(faulty), "--no-perf", "--warmup", "0",
            "--runs", "100000", "--timeout", "600"]
    # When the file appears on this machine now (the build cached first): the kills spread
    # around that moment, from well before to after, however loaded the machine is.
    assert hotloop(*args[:-4], "--runs", "1", "--out", str(tmp_path / "warm.jsonl")) \
        .returncode == 0
    t0 = time.monotonic()
    proc = _start([*args, "--out", str(d / "probe.jsonl")])
    while not (d / "probe.jsonl").exists():
        assert proc.poll() is None and time.monotonic() - t0 < 120, proc.communicate()
        time.sleep(0.005)
    shown = time.monotonic() - t0
    proc.kill()
    proc.communicate()
    for i in range(30):
        proc = _start(args)                 # the console's way: a default name in results/
        time.sleep(shown * (0.6 + 0.6 * i / 29))
        proc.kill()
        proc.communicate()
        for f in os.listdir(d):
            if not f.startswith("."):
                assert (d / f).stat().st_size > 0, f"kill {i}: {f} is empty"
                results.read(d / f)         # its header, at least: it reads
    assert leftovers(grace=5) == []
    p = hotloop(*args[:-4], "--runs", "1", "--out", str(d / "next.jsonl"))
    assert p.returncode == 0, p.stderr
    assert [f for f in os.listdir(d) if f.startswith(".")] == []


@contextlib.contextmanager
def _small_disk(where: Path, **opts: str) -> Iterator[None]:
    """A real file system at `where` that runs out (of inodes, of space) at once: a tmpfs."""
    where.mkdir()
    options = ",".join(f"{k}={v}" for k, v in opts.items())
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_a_series_the_disk_breaks_leaves_no_empty_directory(isolated, leftovers):
    """No room for the first session's file: the series ends in one line, and neither its
    directory nor a kernel's folder made before the one that failed is left behind."""
    results_dir = isolated / "results"
    with _small_disk(results_dir, nr_inodes="3"):       # the root, the series, one folder
        one = hotloop("run", "zero_null", "--sessions", "3", "--runs", "3", "--no-perf")
        assert one.returncode == 2, one.stderr
        assert list(results_dir.iterdir()) == [], list(results_dir.rglob("*"))
        two = hotloop("run", "zero_null", "--kernel", "default", "--kernel", "busy-poll",
                      "--sessions", "2", "--runs", "3", "--no-perf")
        assert two.returncode == 2, two.stderr
        assert "cannot make a variant's directory" in two.stderr
        assert list(results_dir.iterdir()) == [], list(results_dir.rglob("*"))
    assert leftovers() == []


def test_a_calibration_the_disk_breaks_sets_its_session_aside(isolated, leftovers):
    """A full disk mid-session: calibrate sets the broken session aside as run --sessions
    does, so no later calibrate or compare of the directory reads it as a session."""
    results_dir = isolated / "results"
    with _small_disk(results_dir, size="8k"):
        p = hotloop("calibrate", "zero_null", "--runs", "5", "--no-perf",
                    "--param", "count=10000")
        assert p.returncode != 0 and "Traceback" not in p.stderr, p.stderr
        kept = sorted(f.name for f in results_dir.rglob("s*.jsonl*"))
        assert kept and not any(name.endswith(".jsonl") for name in kept), (kept, p.stderr)
    assert leftovers() == []


def _series_temp(root: Path, pid: int, kernel: str) -> Path:
    """What a series SIGKILLed before its first session's first line leaves."""
    folder = root / "20261202-101010-quick" / kernel
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / f".s01.jsonl.{pid}.abcd1234.tmp"
    temp.write_text("")
    return temp


def test_a_hidden_file_whose_pid_was_reused_is_swept_unless_a_writer_holds_it(tmp_path):
    """The pid in a hidden file's name may belong to another process by now: one that
    started after the file was last written did not make it (swept), unless the file is
    locked (a live hotloop writer holds it: kept).  A live process that started before the
    file is its writer, locked or not yet (kept)."""
    later = subprocess.Popen(["sleep", "600"])
    holder = None
    try:
        hour_ago = time.time() - 3600
        reused = _series_temp(tmp_path, later.pid, "reused")
        os.utime(reused, (hour_ago, hour_ago))
        held = _series_temp(tmp_path, later.pid, "held")
        os.utime(held, (hour_ago, hour_ago))
        holder = subprocess.Popen([sys.executable, "-c", (
            "import fcntl, sys, time; f = open(sys.argv[1]); fcntl.flock(f, fcntl.LOCK_EX); "
            "print(flush=True); time.sleep(600)"), str(held)], stdout=subprocess.PIPE)
        assert holder.stdout is not None and holder.stdout.readline() == b"\n"
        young = _series_temp(tmp_path, later.pid, "young")      # written after it started
        assert sweep_temps(held.parent) == {"s01.jsonl"}
        sweep_below(tmp_path)
        assert not reused.parent.exists()
        assert held.exists() and young.exists()
    finally:
        for p in (later, holder):
            if p is not None:
                p.kill()
                p.wait()


def test_a_killed_series_hidden_file_is_removed_by_the_next_run_in_any_directory_below(
        isolated):
    """A series SIGKILLed before its first session's first line (a VM booting) leaves
    results/TIME-PLAN/KERNEL/.s01.jsonl.PID.X.tmp in a directory no run writes again: the
    next run writing in results/ removes it, and the directories it leaves empty; a series
    that holds a session's file keeps it."""
    root = isolated / "results"
    killed = _series_temp(root, dead_pid(), "deb47")
    kept = root / "20261202-090909-quick" / "stock"
    kept.mkdir(parents=True)
    (kept / "s01.jsonl").write_text("a session\n")
    (kept / f".s02.jsonl.{dead_pid()}.abcd1234.tmp").write_text("")
    p = hotloop("run", "zero_null", "--runs", "3", "--no-perf")
    assert p.returncode == 0, p.stderr
    assert not killed.parent.parent.exists()
    assert sorted(os.listdir(kept)) == ["s01.jsonl"]


def test_a_home_that_is_not_there_is_not_made_and_builds_go_to_a_passing_cache(
        isolated, monkeypatch):
    """HOME=/nonexistent/x with no XDG_CACHE_HOME (a service's, a container's): root could
    make any path there, so nothing is; the build goes to a directory of the run's own in
    the temporary directory, said once, and removed when it ends."""
    home = isolated / "nonexistent" / "x"
    tmp = isolated / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("XDG_CACHE_HOME")
    p = hotloop("run", "zero_null", "--runs", "3", "--no-perf")
    assert p.returncode == 0, p.stderr
    assert not (isolated / "nonexistent").exists()
    said = [ln for ln in p.stderr.splitlines() if "is not a directory" in ln]
    assert len(said) == 1 and said[0].startswith(
        f"hotloop: warning: HOME {home} is not a directory: builds are cached in "
        f"{tmp}/hotloop-cache-"), p.stderr
    assert said[0].endswith("until this hotloop ends (set XDG_CACHE_HOME to keep them)")
    assert list(tmp.iterdir()) == []
    assert len(results.read(next(Path("results").glob("*.jsonl"))).runs) == 3
