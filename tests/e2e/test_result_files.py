"""Result files: one run, one file, created exclusively; a file that cannot be
written stops the run with one line.

Two runs never share a file (default names: the second gets another; --out:
refused, or with --force replaced only once the new run has measured
something), and a full disk, /dev/full or a result directory removed mid-run
end the run at once: the worker stopped, the system restored, exit 1, one line
naming the file and the error.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, hotloop
from faulty import FAULTY_C, FAULTY_TOML, lines, start, wait_for_runs

from hotloop import catalog, results
from hotloop import events as ev
from hotloop.host.journal import journal_path
from hotloop.host.settings import read_sysctl, sysctl_path
from hotloop.run.session import Session

SYSCTL = "net.core.busy_poll"


@pytest.fixture
def prof(tmp_path: Path) -> Path:
    """The faulty workload and a kernel profile that changes a harmless sysctl."""
    d = tmp_path / "prof"
    d.mkdir()
    (d / "faulty.c").write_text(FAULTY_C)
    (d / "w.toml").write_text(FAULTY_TOML + f"""
[kernel.poll]
sysctl = {{ "{SYSCTL}" = 77 }}
""")
    return d


@pytest.fixture
def busy_poll():
    original = read_sysctl(SYSCTL)
    assert original != "77", "a previous test left busy_poll changed"
    yield original
    sysctl_path(SYSCTL).write_text(original)


def run_args(prof: Path, *more: str) -> list[str]:
    return ["run", "faulty", "--profiles", str(prof), "--warmup", "0", "--no-perf", *more]


def one_line(p, code: int) -> str:
    """The one error line (after the run's warnings, such as the sysctl it applied)."""
    assert p.returncode == code, p.stderr
    errors = [ln for ln in p.stderr.splitlines() if not ln.startswith("warning: ")]
    assert len(errors) == 1 and "Traceback" not in p.stderr, p.stderr
    return errors[0]


def no_temp_files(d: Path) -> bool:
    return not [f for f in os.listdir(d) if f.endswith(".tmp")]


# ------------------------------------------------------------------ one run, one file

def test_four_runs_started_at_once_with_default_paths_keep_four_files(prof, tmp_path,
                                                                      leftovers):
    hotloop(*run_args(prof, "--runs", "1", "--out", "warm.jsonl"))    # the build is cached
    while time.time() % 1 > 0.2:          # start early in a second: the same default name
        time.sleep(0.01)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-m", "hotloop", *run_args(prof, "--runs", "3")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(4)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errs
    files = sorted((tmp_path / "results").glob("*.jsonl"))
    assert len(files) == 4, files
    for f in files:
        res = results.read(f)
        assert len(res.runs) == 3 and res.finished is not None
        assert sum(r["type"] == "started" for r in lines(f)) == 1
    assert leftovers() == []


def test_a_second_run_with_the_same_out_is_refused_and_the_first_keeps_its_file(prof,
                                                                                leftovers):
    out = Path("same.jsonl")
    first = start(run_args(prof, "--runs", "1000", "--out", str(out)))
    wait_for_runs(out, 3)
    second = hotloop(*run_args(prof, "--runs", "2", "--out", str(out)))
    assert "same.jsonl: exists (pass --force to replace it)" in one_line(second, 2)
    forced = hotloop(*run_args(prof, "--runs", "2", "--out", str(out), "--force"))
    assert "same.jsonl: in use by another hotloop run" in one_line(forced, 2)
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=30)
    assert first.returncode == 130
    rows = lines(out)                     # every line JSON, one session's
    assert sum(r["type"] == "started" for r in rows) == 1 and rows[-1]["interrupted"]
    assert len(results.read(out).runs) >= 3
    assert no_temp_files(Path("."))
    assert leftovers() == []


def test_an_existing_out_survives_a_refused_run_and_a_forced_run_on_bad_input(prof):
    out = Path("keep.jsonl")
    assert hotloop(*run_args(prof, "--runs", "2", "--out", str(out))).returncode == 0
    before = out.read_bytes()
    p = hotloop(*run_args(prof, "--runs", "3", "--out", str(out)))
    assert "keep.jsonl: exists (pass --force" in one_line(p, 2)
    assert out.read_bytes() == before
    p = hotloop(*run_args(prof, "--out", str(out), "--force", "--param", "fault=badparam"))
    assert "cannot work with fault=badparam" in one_line(p, 2)
    assert out.read_bytes() == before and no_temp_files(Path("."))
    p = hotloop(*run_args(prof, "--runs", "3", "--out", str(out), "--force"))
    assert p.returncode == 0, p.stderr
    assert len(results.read(out).runs) == 3 and no_temp_files(Path("."))


def test_out_at_a_directory_a_symlink_or_a_device(prof, tmp_path):
    p = hotloop(*run_args(prof, "--runs", "2", "--out", str(tmp_path)))
    assert "is a directory" in one_line(p, 2)
    target = tmp_path / "target.jsonl"
    assert hotloop(*run_args(prof, "--runs", "2", "--out", str(target))).returncode == 0
    kept = target.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    p = hotloop(*run_args(prof, "--runs", "2", "--out", str(link)))
    assert "exists" in one_line(p, 2) and target.read_bytes() == kept
    p = hotloop(*run_args(prof, "--runs", "3", "--out", str(link), "--force"))
    assert p.returncode == 0, p.stderr
    assert not link.is_symlink() and len(results.read(link).runs) == 3   # the link replaced,
    assert target.read_bytes() == kept                                   # not written through
    p = hotloop(*run_args(prof, "--runs", "2", "--out", "/dev/null", "--format", "json"))
    assert p.returncode == 0, p.stderr      # the report is what was written, not read back
    doc = json.loads(p.stdout)
    assert len(doc["runs"]) == 2 and doc["result_file"] == "/dev/null"


def test_a_session_whose_file_name_is_taken_writes_the_next_free_one(tmp_path, leftovers):
    # The console's way: a default name, taken by another run since it was chosen.
    cat = catalog.load()
    plan = catalog.with_overrides(cat.plan_for("zero_null"), runs=2, warmup=0, perf=False,
                                  params={"count": 1000})
    taken = tmp_path / "x.jsonl"
    taken.write_text("another run's\n")
    s = Session(cat.resolve(plan), taken)

    async def go() -> list[ev.Event]:
        return [e async for e in s.events()]

    events = asyncio.run(go())
    assert s.result_file == tmp_path / "x-2.jsonl"
    assert isinstance(events[0], ev.Started) and events[0].result_file == str(s.result_file)
    assert taken.read_text() == "another run's\n"
    assert len(results.read(s.result_file).runs) == 2
    assert leftovers() == []


# ------------------------------------------------------------------ cannot write

def test_out_dev_full_stops_the_run_and_restores_the_system(prof, busy_poll, leftovers):
    for fmt in ("text", "json"):
        p = hotloop(*run_args(prof, "--kernel", "poll", "--apply-system", "--runs", "3",
                              "--out", "/dev/full", "--format", fmt))
        err = one_line(p, 1)
        assert "hotloop: /dev/full: cannot write the result file: No space left on device" \
            in err
        assert p.stdout == ""
        assert read_sysctl(SYSCTL) == busy_poll
        assert not journal_path().exists()
    assert leftovers() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_mid_run_stops_it_in_one_line_and_keeps_what_fit(prof, tmp_path,
                                                                     busy_poll, leftovers):
    disk = tmp_path / "small"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "r.jsonl"
        p = hotloop("run", "zero_null", "--param", "count=100", "--runs", "100000",
                    "--kernel", "poll", "--apply-system", "--profiles", str(prof),
                    "--no-perf", "--out", str(out), "--format", "json")
        err = one_line(p, 1)
        assert f"{out}: cannot write the result file: No space left on device" in err
        assert p.stdout == ""
        assert read_sysctl(SYSCTL) == busy_poll
        res = results.read(out)               # the runs that fit, the cut line dropped
        assert res.partial and len(res.runs) > 10
    finally:
        subprocess.run(["umount", str(disk)], check=True)
    assert leftovers() == []


@contextlib.contextmanager
def frozen(pid: int) -> Iterator[None]:
    """The process stopped (SIGSTOP, its state T) for the block, then let go on."""
    os.kill(pid, signal.SIGSTOP)
    try:
        while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            time.sleep(0.01)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def test_a_result_directory_removed_mid_run_stops_it(prof, tmp_path, leftovers):
    d = tmp_path / "gone"
    out = d / "r.jsonl"
    # 1000 runs of 20 ms: a run that does not stop on the deletion writes them all
    proc = start(run_args(prof, "--param", "fault=child", "--runs", "1000", "--out", str(out),
                          "--format", "json"))
    wait_for_runs(out, 3)
    with open(out) as held:                   # the file deleted, still read here
        with frozen(proc.pid):                # its writer: no line between count and rmtree
            before = held.read().count("\n")
            shutil.rmtree(d)
        stdout, err = proc.communicate(timeout=60)
        held.seek(0)
        left = held.read()
    assert proc.returncode == 1, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{out}: cannot write the result file: {d} was deleted during the run" in err
    assert stdout == ""
    # it stopped at the first line it wrote after: that one at most, whole, then nothing
    assert before <= left.count("\n") <= before + 1 and left.endswith("\n"), left[-300:]
    assert [json.loads(ln)["type"] for ln in left.splitlines()][-1] == "run"
    assert not d.exists()                     # nothing made again where the file was
    assert leftovers() == []                  # the worker and its children too


def test_names_taken_at_once_are_numbered_once(tmp_path):
    """Two sessions that name their files in the same second (the variants of a batch, two
    runs started together), a file of that second already there: the second gets -3, not
    -2-2 (the default name was numbered once when chosen, again when created)."""
    d = tmp_path / "results"
    d.mkdir()
    now = time.time()
    for ahead in range(10):                     # whatever second the names are taken in
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + ahead))
        (d / f"{stamp}-p.jsonl").write_text("")
    first, second = results.default_path("p", d), results.default_path("p", d)
    a, b = results.Writer(first), results.Writer(second)
    try:
        names = sorted([a.path.name, b.path.name])
    finally:
        a.discard()
        b.discard()
    stem = first.name.split("-p")[0] + "-p"
    assert names == [f"{stem}-2.jsonl", f"{stem}-3.jsonl"], names
