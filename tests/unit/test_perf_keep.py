"""The rule a session's kept perf data is held to its budget by (perf/keep.py), on synthetic
window files: thinned evenly over the session, the first window kept, said once, nothing past
the budget, a half-done compression done again."""
from __future__ import annotations

import asyncio
import gzip
import os
from pathlib import Path

import pytest

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
    assert kept.unfinished and UNFINISHED not in after
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



def dump(kept: KeptWindows, d: Path, index: int) -> str:
    """Window `index` as perf completes it: its file written, then counted."""
    path = d / f"perf.data.20261202140000{index:04d}"
    path.write_bytes(os.urandom(SIZE))
    kept.dumped(index, str(path))
    return str(path)


def catch_up(kept: KeptWindows, paths: list[str], keep: bool) -> list[int]:
    """What the report loop does once perf report catches up, window 0 read already: each
    window read (then kept, or removed), or found dropped unread; those found dropped."""
    found = []

    async def go() -> None:
        for i, path in enumerate(paths):
            if i and not kept.take(i):
                found.append(i)
                continue
            kept.done_reading(i)
            if keep:
                await kept.add(i, path, ())
            else:
                os.unlink(path)
                kept.discard(i)
    asyncio.run(go())
    return found


def starved(kept: KeptWindows, d: Path, n: int) -> list[str]:
    """perf report reading window 0 while `n` more are dumped; the files on disk with the
    room for the one perf writes (as large as the last) never past the budget meanwhile."""
    paths = [dump(kept, d, 0)]
    assert kept.take(0)
    for i in range(1, n + 1):
        paths.append(dump(kept, d, i))
        assert sum(on_disk(d).values()) + SIZE <= (kept.budget or 0)
    return paths


@pytest.mark.parametrize("keep", [True, False], ids=["kept", "not-kept"])
def test_windows_waiting_for_their_report_are_held_to_the_budget_evenly(tmp_path, keep):
    """perf report stuck on window 0 while 40 more are dumped: what waits is dropped unread
    as the budget is passed, off the stride the kept windows are thinned by, never the next
    one to read; said once.  With nothing kept (--no-keep-perf) the same."""
    said: list[str] = []
    kept = KeptWindows(str(tmp_path), 100_000, compress=False, warn=said.append, budget_mb=0)
    paths = starved(kept, tmp_path, 40)
    assert kept.unread > 20 and kept.stride > 1
    waiting = sorted(kept.waiting)          # the one read, the next, an even sample of the rest
    assert waiting[:2] == [0, 1] and all(i % kept.stride == 0 for i in waiting[2:])
    fell = [m for m in said if m.startswith("report fell behind: ")]
    assert len(fell) == 1 and "dropped unread to keep within perf_keep_mb (0 MB)" in fell[0]
    # perf report catches up: each window dropped is found so, and none other
    found = catch_up(kept, paths, keep)
    assert len(found) == kept.unread and set(found).isdisjoint(waiting)
    after = on_disk(tmp_path)
    assert sum(after.values()) <= 100_000
    if keep:        # an even sample of the session kept, the first window among it
        positions = sorted(paths.index(str(tmp_path / n)) for n in after)
        assert positions[0] == 0 and all(p % kept.stride == 0 for p in positions)
    else:
        assert not after and not kept.waiting
    assert len([m for m in said if m.startswith("report fell behind")]) == 1


def test_a_report_that_keeps_up_drops_no_window_unread(tmp_path):
    """Windows read as they come, the budget reached by those kept: thinned, none unread;
    one window waiting while another is read is no backlog."""
    said: list[str] = []
    kept = KeptWindows(str(tmp_path), 100_000, compress=False, warn=said.append, budget_mb=0)

    async def go() -> None:
        paths = []
        for i in range(60):
            paths.append(dump(kept, tmp_path, i))
            if i:                       # the previous one read while this one waits
                kept.done_reading(i - 1)
                await kept.add(i - 1, paths[i - 1], ())
            assert kept.take(i)
            assert sum(on_disk(tmp_path).values()) + SIZE <= 100_000
    asyncio.run(go())
    assert kept.unread == 0 and kept.stride > 1
    assert not [m for m in said if "fell behind" in m]
    assert [m for m in said if "reached its budget" in m]


def test_windows_in_flight_larger_than_the_budget_leave_the_stride_alone(tmp_path):
    """A budget smaller than the windows in flight (read, next, written): what else waits
    goes, all at once, the stride not doubled for nothing (it would never come back down,
    and the windows kept after the backlog would be few)."""
    kept = KeptWindows(str(tmp_path), None, compress=False, budget_mb=0)
    starved(kept, tmp_path, 0)
    for i in range(1, 30):
        dump(kept, tmp_path, i)
    kept.budget = 3 * SIZE // 2
    kept.thin()
    assert kept.stride == 1 and sorted(kept.waiting) == [0, 1] and kept.unread == 28
    assert sorted(on_disk(tmp_path)) == sorted(os.path.basename(w.path)
                                               for w in kept.waiting.values())
