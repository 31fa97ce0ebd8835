"""A session on a small disk whose free space runs out: perf keeping its data stops (said once)
before the result file is short of room, and a result file the full disk ends says so in its
last line, whole.  A file system of the test's own (a 40 MB tmpfs, mounted as root), real perf,
real `hotloop run` processes."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, hotloop, profile_dir
from faulty import wait_for_runs
from test_perf import needs_perf

from hotloop import results
from hotloop.perf.keep import FREE_FLOOR

pytestmark = needs_perf

SIZE = 40 << 20
# perf_keep_mb stays its default (200 MB): larger than the disk
PLAN = """
    [plan.small_disk]
    workload = "zero_null"
    runs = RUNS
    warmup = 0
    perf_freq = 1999
    params = { count = COUNT }
    """


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 40 MB tmpfs of this test's, unmounted after it."""
    d = tmp_path / "disk"
    d.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(d)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield d
    finally:
        if subprocess.run(["umount", str(d)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)


def start(tmp_path: Path, out: Path, runs: int, count: int) -> subprocess.Popen[str]:
    d = profile_dir(tmp_path, PLAN.replace("RUNS", str(runs)).replace("COUNT", str(count)))
    return subprocess.Popen([sys.executable, "-m", "hotloop", "run", "small_disk", "--profiles",
                             str(d), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))


def free(d: Path) -> int:
    st = os.statvfs(d)
    return st.f_bavail * st.f_frsize


def fill(d: Path, leave: int) -> None:
    """A file of another's filling the disk until `leave` bytes are free (0: full)."""
    block = b"\0" * (64 << 10)
    with open(d / "filler", "ab") as f:
        try:
            while free(d) > leave:
                f.write(block[:max(4096, min(len(block), free(d) - leave))])
                f.flush()
        except OSError as e:
            assert e.errno == errno.ENOSPC, e


def wait_for(path: Path, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{path}: no {text!r} after {timeout}s")


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_perf_keeping_stops_once_before_the_disks_free_space_runs_low(
        tmp_path, disk, leftovers):
    """perf_keep_mb (200 MB) beyond the disk: once another's file leaves less than the floor
    free, the session keeps no more perf data, says so once, and ends whole."""
    out = disk / "r.jsonl"
    floor = min(FREE_FLOOR, os.statvfs(disk).f_blocks * os.statvfs(disk).f_frsize // 10)
    proc = start(tmp_path, out, runs=60, count=200_000)
    try:
        wait_for(out, '"scope":"window"')
        kept_before = len(list((disk / "r.perf").glob("perf.data.*.gz"))) \
            if (disk / "r.perf").exists() else 0
        fill(disk, floor // 2)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    said = [e["message"] for e in lines(out) if e["type"] == "warning"
            and "perf data no longer kept" in e["message"]]
    assert len(said) == 1, said
    assert "kept free for the result file" in said[0]
    r = results.read(out)
    assert r.finished is not None and len(r.runs) == 60
    assert r.session_symbols is not None and r.session_symbols.samples > 0
    # what was kept before stays, nothing plain is left, and the disk was not filled
    gz = list((disk / "r.perf").glob("perf.data.*.gz"))
    assert len(gz) >= kept_before
    assert not [p for p in (disk / "r.perf").iterdir() if p.name.startswith("perf.data")
                and not p.name.endswith(".gz")]
    assert free(disk) > 0
    assert "perf data no longer kept" in err
    assert leftovers() == []


def test_a_result_file_the_full_disk_ends_says_so_in_its_last_line(tmp_path, disk, leftovers):
    """The disk filled whole mid-session: the file ends with a whole `failed` line saying the
    disk is full, every run before it whole; `hotloop run` says it in one line and exits 1, and
    `show` gives that reason, not a crash."""
    out = disk / "r.jsonl"
    proc = start(tmp_path, out, runs=100_000, count=20_000)
    try:
        wait_for_runs(out, 3, timeout=120)
        fill(disk, 0)
        _, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    assert "the disk is full (the file's last line says so)" in err
    assert "Traceback" not in err
    text = out.read_text()
    assert text.endswith("\n")
    last = lines(out)[-1]                   # every line whole JSON, the last one the failure
    assert last["type"] == "failed" and "the disk is full" in last["message"]
    r = results.read(out)
    assert r.failed is not None and last["run"] == len(r.runs) > 3
    shown = hotloop("show", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "the disk is full" in shown.stdout and "crash" not in shown.stdout
    # the room kept for that line given back: the file holds no more blocks than its size
    assert os.stat(out).st_blocks * 512 <= os.stat(out).st_size + 8192
    assert leftovers() == []
