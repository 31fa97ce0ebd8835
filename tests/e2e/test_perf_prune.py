"""Kept perf data: pruned only where hotloop provably wrote it, and never created beside what is
not a regular file (a device, a pipe)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import hotloop, profile_dir
from test_perf import needs_perf

pytestmark = needs_perf

PLAN = """
    [plan.tight]
    workload = "zero_null"
    runs = 2
    perf_keep_mb = 0
    params = { count = 200000 }

    [plan.roomy]
    workload = "zero_null"
    runs = 2
    params = { count = 200000 }
    """


def run(tmp_path: Path, out: Path, *more: str, plan: str = "tight"):
    p = hotloop("run", plan, "--profiles", str(profile_dir(tmp_path, PLAN)), "--out",
                str(out), *more)
    assert p.returncode == 0, p.stderr
    return p


def age(path: Path, when: float) -> None:
    os.utime(path, (when, when), follow_symlinks=False)


def test_only_perf_data_hotloop_provably_wrote_is_pruned(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    # hotloop's own, older: pruned
    run(tmp_path, res / "old.jsonl", plan="roomy")
    assert json.loads((res / "old.jsonl").read_text().splitlines()[0])["header"][
        "perf_data"] == "old.perf"
    # hotloop's, but someone put a file of theirs in it: kept whole
    run(tmp_path, res / "shared.jsonl", plan="roomy")
    (res / "shared.perf" / "notes.txt").write_text("mine")
    # a user's directory beside a file of the same name (any content, or a result's copy)
    (res / "thesis.jsonl").write_text("chapter 1\n")
    (res / "thesis.perf").mkdir()
    (res / "thesis.perf" / "perf.data.1").write_bytes(b"x" * 1000)
    (res / "copy.jsonl").write_bytes((res / "old.jsonl").read_bytes())   # names old.perf
    (res / "copy.perf").mkdir()
    (res / "copy.perf" / "perf.data.2").write_bytes(b"y" * 1000)
    # a result whose perf directory is a symlink to a directory elsewhere: never followed
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "perf.data.3").write_bytes(b"z" * 1000)
    run(tmp_path, res / "linked.jsonl", plan="roomy")
    for f in (res / "linked.perf").iterdir():
        f.rename(outside / f.name)
    (res / "linked.perf").rmdir()
    (res / "linked.perf").symlink_to(outside)
    # a forged header naming a directory with a newline in its name
    (res / "nl.jsonl").write_text(json.dumps({"type": "started", "header": {
        "perf_data": "nl.perf\n"}}) + "\n")
    (res / "nl.perf").mkdir()
    (res / "nl.perf" / "perf.data.4").write_bytes(b"w" * 1000)
    for i, d in enumerate(["old", "shared", "thesis", "copy", "linked", "nl"]):
        age(res / f"{d}.perf", 1000 + i)
    p = run(tmp_path, res / "new.jsonl")
    assert not (res / "old.perf").exists()
    assert (res / "shared.perf" / "notes.txt").read_text() == "mine"
    assert len(list((res / "shared.perf").glob("perf.data.*"))) > 0
    assert (res / "thesis.perf" / "perf.data.1").read_bytes() == b"x" * 1000
    assert (res / "copy.perf" / "perf.data.2").exists()
    assert (res / "linked.perf").is_symlink() and (outside / "perf.data.3").exists()
    assert len(list(outside.glob("perf.data.*"))) > 1
    assert (res / "nl.perf" / "perf.data.4").exists()
    assert (res / "new.perf").is_dir()
    line, = [ln for ln in p.stderr.splitlines() if "older run" in ln]
    assert "perf data of 1 older run removed (old.perf)" in line


def test_a_users_directory_named_as_the_perf_data_is_not_written_into(tmp_path):
    (tmp_path / "mine.perf").mkdir()
    (tmp_path / "mine.perf" / "data.csv").write_text("1,2\n")
    p = run(tmp_path, tmp_path / "mine.jsonl")
    assert sorted(f.name for f in (tmp_path / "mine.perf").iterdir()) == ["data.csv"]
    said = [ln for ln in p.stderr.splitlines() if "perf data not kept" in ln]
    assert len(said) == 1 and "mine.perf" in said[0], p.stderr
    header = json.loads((tmp_path / "mine.jsonl").read_text().splitlines()[0])["header"]
    assert header["perf_data"] == ""


@pytest.mark.skipif(not os.access("/dev", os.W_OK), reason="needs /dev writable (root)")
def test_nothing_is_created_beside_a_device(tmp_path):
    assert not Path("/dev/null.perf").exists(), "a previous run left /dev/null.perf"
    try:
        p = run(tmp_path, Path("/dev/null"), "--force")
        assert not Path("/dev/null.perf").exists()
        said = [ln for ln in p.stderr.splitlines() if "perf data not kept" in ln]
        assert len(said) == 1 and "/dev/null" in said[0], p.stderr
    finally:
        if Path("/dev/null.perf").is_dir():         # the defect: clean up after it
            for f in Path("/dev/null.perf").iterdir():
                f.unlink()
            Path("/dev/null.perf").rmdir()


def test_nothing_is_created_beside_a_pipe(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    import subprocess
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.DEVNULL)
    try:
        p = run(tmp_path, fifo, "--force")
    finally:
        reader.wait(30)
    assert not (tmp_path / "fifo.perf").exists()
    assert sum("perf data not kept" in ln for ln in p.stderr.splitlines()) == 1


def test_a_results_directory_reached_through_a_symlink_is_pruned_as_any(tmp_path):
    """The directory the user named may be a symlink; nothing inside it is followed."""
    real = tmp_path / "data"
    real.mkdir()
    (tmp_path / "results").symlink_to(real)
    run(tmp_path, tmp_path / "results" / "old.jsonl", plan="roomy")
    age(real / "old.perf", 1000)
    run(tmp_path, tmp_path / "results" / "new.jsonl")
    assert not (real / "old.perf").exists() and (real / "new.perf").is_dir()
