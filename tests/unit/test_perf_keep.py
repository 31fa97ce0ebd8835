"""The rule a session's kept perf data is held to its budget by (perf/keep.py), on synthetic
window files: thinned evenly over the session, the first window kept, said once, nothing past
the budget, a half-done compression done again."""
from __future__ import annotations

import gzip
import os
from pathlib import Path

from hotloop.perf.keep import UNFINISHED, KeptWindows, finish_dir

SIZE = 10_000


def windows(d: Path, n: int) -> list[str]:
    """n window files as perf names them, of incompressible bytes (a gzip of one is as big)."""
    names = [f"perf.data.20261202120000{i:04d}" for i in range(n)]
    for name in names:
        (d / name).write_bytes(os.urandom(SIZE))
    return names


def on_disk(d: Path) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in d.iterdir()}


def test_a_dead_sessions_windows_are_compressed_and_thinned_evenly_within_the_budget(tmp_path):
    names = windows(tmp_path, 64)
    (tmp_path / UNFINISHED).write_bytes(b"no header yet")
    # a compression killed half-way: the plain file is still there, its .gz cut short
    (tmp_path / (names[0] + ".gz")).write_bytes(b"\x1f\x8b cut short")
    kept = finish_dir(str(tmp_path), 200_000, 0)
    after = on_disk(tmp_path)
    assert sum(after.values()) <= 200_000
    assert after and all(n.endswith(".gz") for n in after), sorted(after)
    # evenly over the session: every stride-th window, the first among them
    positions = sorted(names.index(n.removesuffix(".gz")) for n in after)
    assert positions[0] == 0 and len(positions) > 4
    assert {b - a for a, b in zip(positions, positions[1:])} == {kept.stride}
    # 20 windows would fit: every 4th is 16 of them (every 2nd, 32, would not)
    assert kept.stride == 4 and len(after) == 16 and kept.dropped == 48
    with gzip.open(tmp_path / (names[0] + ".gz")) as f:      # written again, whole
        assert len(f.read()) == SIZE


def test_a_running_sessions_thinning_is_said_once_and_keeps_the_first_window(tmp_path):
    said: list[str] = []
    kept = KeptWindows(str(tmp_path), 100_000, compress=False, warn=said.append, budget_mb=0)
    names = windows(tmp_path, 8)
    kept.settle(set())
    for i in range(8, 40):                  # more windows after: thinned again, said once
        name = f"perf.data.20261202130000{i:04d}"
        (tmp_path / name).write_bytes(os.urandom(SIZE))
        kept.settle(set())
    after = on_disk(tmp_path)
    assert sum(after.values()) <= 100_000
    assert names[0] in after                # the first window
    assert len(said) == 1 and "reached its budget of 0 MB" in said[0]


def test_an_earlier_runs_files_in_the_directory_are_not_the_sessions(tmp_path):
    (tmp_path / "perf.data.2025010100000000.gz").write_bytes(os.urandom(SIZE))
    before = {"perf.data.2025010100000000.gz"}
    kept = KeptWindows(str(tmp_path), 0, compress=False)
    windows(tmp_path, 3)
    kept.settle(before)
    assert sorted(on_disk(tmp_path)) == ["perf.data.2025010100000000.gz"]


def test_a_home_that_is_not_there_is_not_made_for_the_perf_data_entry(tmp_path, monkeypatch):
    """The entry a running session holds for its perf data lives in the state directory;
    with HOME naming no directory (and no XDG_STATE_HOME) none is made there, as none is
    for the build cache: the session finishes its data itself."""
    from hotloop import paths
    from hotloop.perf import opened
    home = tmp_path / "nonexistent" / "x"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert opened.hold(tmp_path / "r.jsonl", 10) is None
    assert not (tmp_path / "nonexistent").exists()
    problem = paths.state_dir_problem()
    assert problem is not None and f"HOME {home} is not a directory" in problem
