"""The Writer never leaves a result file without its header: the file is written hidden
(.NAME.PID.XXXXXXXX.tmp) and takes its name with its first line, so a process killed
before that (a dropped terminal 0.1 s after consent, a SIGKILL) leaves no empty NAME.jsonl,
only a hidden file the next run there removes.  A name taken between the choice and the
first line is handled as a taken name is (the next free one, refused, or --force).
tests/e2e/test_leftovers.py kills real runs around their start."""
from __future__ import annotations

import os
from pathlib import Path

import forge
import pytest

from hotloop import events as ev
from hotloop import results
from hotloop.errors import HotloopError
from hotloop.record import Header
from hotloop.results import gone
from hotloop.results.writer import WriteFailed, sweep_below, sweep_temps

NEVER_A_PID = 999_999_999              # beyond any pid_max (at most 2**22): a dead writer


def started(path: Path, perf_data: str = "") -> ev.Started:
    return ev.Started(Header.from_json(forge.header(perf_data=perf_data)), str(path))


def run0() -> ev.RunSample:
    return ev.RunSample(index=0, value=2e9, ops=1000, bytes=4000, ns=2000, cycles=0)


def visible(d: Path) -> list[str]:
    return sorted(n for n in os.listdir(d) if not n.startswith("."))


def hidden(d: Path) -> list[str]:
    return sorted(n for n in os.listdir(d) if n.startswith("."))


def test_before_its_first_line_a_result_file_is_not_there(tmp_path):
    w = results.Writer(tmp_path / "r.jsonl")
    assert visible(tmp_path) == []                  # killed now: nothing empty left
    assert len(hidden(tmp_path)) == 1 and hidden(tmp_path)[0].startswith(
        f".r.jsonl.{os.getpid()}.")
    w.write(started(w.path))
    assert visible(tmp_path) == ["r.jsonl"] and hidden(tmp_path) == []
    assert (tmp_path / "r.jsonl").read_text().startswith('{"type":"started"')
    w.close()
    assert results.read(tmp_path / "r.jsonl").partial


@pytest.mark.parametrize("on_exists", ["rename", "refuse", "replace"])
def test_closed_before_its_first_line_it_leaves_nothing(tmp_path, on_exists):
    # The console's abandon() on a dropped terminal, before the session's header.
    w = results.Writer(tmp_path / "r.jsonl", on_exists)
    w.close()
    assert os.listdir(tmp_path) == []


def test_a_name_taken_before_the_first_line_gives_the_next_free_one(tmp_path):
    w = results.Writer(tmp_path / "r.jsonl")
    (tmp_path / "r.jsonl").write_text("another's\n")     # meanwhile, by someone else
    (tmp_path / "r-2.jsonl").write_text("another's\n")
    first = w.write(started(w.path, perf_data="r.perf"))
    assert isinstance(first, ev.Started)
    assert w.path == tmp_path / "r-3.jsonl" and first.result_file == str(w.path)
    assert first.header.perf_data == "r-3.perf"          # its perf data beside it, too
    w.write(run0())
    w.close()
    assert (tmp_path / "r.jsonl").read_text() == "another's\n"
    res = results.read(tmp_path / "r-3.jsonl")
    assert res.header.perf_data == "r-3.perf" and len(res.runs) == 1
    assert hidden(tmp_path) == []


def test_an_out_taken_before_the_first_line_is_refused_in_one_line(tmp_path):
    out = tmp_path / "r.jsonl"
    w = results.Writer(out, "refuse")
    out.write_text("another's\n")
    with pytest.raises(WriteFailed, match=r"r\.jsonl: .*created meanwhile .*--force"):
        w.write(started(out))
    w.close()
    assert out.read_text() == "another's\n" and hidden(tmp_path) == []


def test_a_forced_out_taken_before_the_first_line_is_replaced_with_the_first_run(tmp_path):
    out = tmp_path / "r.jsonl"
    w = results.Writer(out, "replace")
    out.write_text("another's\n")
    w.write(started(out))
    assert out.read_text() == "another's\n"             # nothing measured yet
    w.write(run0())
    w.close()
    assert len(results.read(out).runs) == 1 and hidden(tmp_path) == []


def test_a_live_runs_hidden_file_holds_its_name(tmp_path):
    a = results.Writer(tmp_path / "r.jsonl")
    b = results.Writer(tmp_path / "r.jsonl")
    assert b.path == tmp_path / "r-2.jsonl"
    with pytest.raises(HotloopError, match="in use by another hotloop run"):
        results.Writer(tmp_path / "r.jsonl", "refuse")
    for w in (b, a):
        w.write(started(w.path))
        w.close()
    assert visible(tmp_path) == ["r-2.jsonl", "r.jsonl"] and hidden(tmp_path) == []


def test_a_dead_writers_hidden_file_is_swept_with_or_without_its_header(tmp_path):
    empty = tmp_path / f".a.jsonl.{NEVER_A_PID}.abcd1234.tmp"
    empty.write_text("")
    headed = tmp_path / f".b.jsonl.{NEVER_A_PID}.abcd1234.tmp"
    headed.write_text('{"type":"started","header":{}}\n')
    mine = tmp_path / f".c.jsonl.{os.getpid()}.abcd1234.tmp"
    mine.write_text("")
    notes = tmp_path / f".d.jsonl.{NEVER_A_PID}.abcd1234.tmp"
    notes.write_text("my notes\n")
    assert sweep_temps(tmp_path) == {"c.jsonl"}          # a live one's name stays taken
    assert hidden(tmp_path) == sorted([mine.name, notes.name])


def _series_temp(root: Path, pid: int, kernel: str = "stock") -> Path:
    """What a series SIGKILLed before its first session's first line leaves."""
    folder = root / "20261202-101010-quick" / kernel
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / f".s01.jsonl.{pid}.abcd1234.tmp"
    temp.write_text("")
    return temp


def test_a_killed_series_hidden_file_and_its_empty_directories_are_swept_from_the_root(
        tmp_path):
    """A series' directory is never written again: the next run sweeps the series under its
    results directory (two levels), removing the dead writer's file and the directories
    that held nothing else; a directory holding anything more stays."""
    killed = _series_temp(tmp_path, NEVER_A_PID)
    kept = _series_temp(tmp_path / "other", NEVER_A_PID)
    (kept.parent / "s02.jsonl").write_text("a session's file\n")
    calibration = tmp_path / "20261202-111111-calib" / f".s01.jsonl.{NEVER_A_PID}.abcd1234.tmp"
    calibration.parent.mkdir()
    calibration.write_text("")
    sweep_below(tmp_path)
    assert not killed.parent.parent.exists() and not calibration.parent.exists()
    sweep_below(tmp_path / "other")
    assert not kept.exists() and (kept.parent / "s02.jsonl").exists()



def test_a_directory_that_is_a_file_is_named_as_one_not_file_exists(tmp_path):
    """A series' next session, its kernel's directory a file by then: said so, not "File
    exists"; and what became of a finished file's path says which directory went."""
    (tmp_path / "k1").write_text("")
    with pytest.raises(HotloopError) as e:
        results.Writer(tmp_path / "k1" / "s02.jsonl")
    assert str(e.value) == (f"{tmp_path / 'k1' / 's02.jsonl'}: cannot write the result file: "
                            f"{tmp_path / 'k1'} is a file, not a directory")
    assert gone.since(tmp_path / "k1" / "s01.jsonl") == f"{tmp_path / 'k1'} was replaced by a file"
    assert gone.since(tmp_path / "T" / "k2" / "s01.jsonl") == f"{tmp_path / 'T'} was deleted"
    assert gone.since(tmp_path / "s01.jsonl") == "it was deleted"
