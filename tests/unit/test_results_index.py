"""The results directory listed from each file's first and last lines, never its runs, and an
index of what each file gave, kept by path, size and mtime (results/index.py)."""
from __future__ import annotations

import os
from pathlib import Path

import forge
import pytest

from hotloop.results import index


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def garbled(path: Path) -> Path:
    """A finished file whose run lines are not JSON: a listing that read them would fail."""
    lines = path.read_text().splitlines()
    lines[1:-1] = ["{{{ not a run" for _ in lines[1:-1]]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_file_is_listed_from_its_header_and_last_line_not_its_runs(tmp_path):
    d = tmp_path / "results"
    garbled(forge.zero_null(d / "done.jsonl", 100_000, n=7, block_size=4096))
    failed = forge.zero_null(d / "failed.jsonl", 100_000, n=5, end={
        "type": "failed", "message": "interrupted", "run": 5, "interrupted": True})
    garbled(failed)
    forge.zero_null(d / "sub" / "crashed.jsonl", 100_000, n=4, end=None)
    (d / "notes.jsonl").write_text("this is not a result\n")
    by_name = {e.name: e for e in index.scan(d)}
    done = by_name["done"]
    assert (done.ok, done.runs, done.partial, done.workload) == (True, 7, False, "zero_null")
    assert "block_size=4096" in done.params and done.label == "stock"
    assert done.date == "11-30 08:00:00"
    assert (by_name["failed"].runs, by_name["failed"].partial) == (5, True)
    # no last line (a crash, or a run still writing): the runs are counted, not read
    assert (by_name["sub/crashed"].runs, by_name["sub/crashed"].partial) == (4, True)
    bad = by_name["notes"]
    assert not bad.ok and bad.label == "not a result" and bad.runs is None
    assert bad.error.endswith("notes.jsonl:1: not a hotloop result line (not JSON)")


def test_an_unchanged_file_is_listed_from_the_index_a_changed_one_read_again(tmp_path):
    d = tmp_path / "results"
    f = forge.zero_null(d / "a.jsonl", 100_000, n=6)
    assert index.scan(d)[0].runs == 6
    st = f.stat()
    # the same size and mtime: the index's answer, the file not opened again
    text = f.read_text()
    f.write_text(text.replace('"n": 6', '"n": 9'))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert index.scan(d)[0].runs == 6
    assert index.scan(d, cached=False)[0].runs == 9
    # another mtime: read again
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert index.scan(d)[0].runs == 9


def test_the_filter_keeps_entries_with_every_word(tmp_path):
    d = tmp_path / "results"
    forge.zero_null(d / "20261130-080000-bs512.jsonl", 100_000, block_size=512)
    forge.zero_null(d / "20261130-080100-bs16k.jsonl", 100_000, block_size=16384)
    entries = index.scan(d)
    assert [e.name for e in entries if e.matches("16K zero")] == ["bs16k"]
    assert [e.name for e in entries if e.matches("block_size=512")] == ["bs512"]
    assert len([e for e in entries if e.matches("")]) == 2
