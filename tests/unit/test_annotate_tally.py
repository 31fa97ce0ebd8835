"""The session's tally of samples by address (perf/addrs.py) and the perf script reading it is
made from (perf/script.py), on fixed data: merging windows, the file written and read back,
and forged files refused in one line."""
from __future__ import annotations

import asyncio
import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from hotloop.perf import addrs
from hotloop.perf.addrs import AddressTally, AddrsError
from hotloop.perf.script import read_window

LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
MOD = "/home/u/.cache/hotloop/build/_hl_spin_1.so"
# perf script -F comm,pid,ip,sym,symoff,dso -G, as perf 6.1 prints it: the run's worker, a
# process it forked (its name inherited), another user's copy of the workload, perf itself,
# and where the worker mapped a stripped library (--show-mmap-events)
SCRIPT = f"""\
     hl100-spin 100 23720.648992: PERF_RECORD_MMAP2 100/100: [0x7fed74400000(0x1000) @ 0x2000 \
fe:00 2163201 3202807795]: r-xp /opt/stripped.so
  hl100-spin   100  ffffffff8225bc16 do_syscall_64+0x46 ([kernel.kallsyms])
  hl100-spin   100  ffffffff8225bc16 do_syscall_64+0x46 ([kernel.kallsyms])
  hl100-spin   100  7f00000025fd hl_run+0x1d ({MOD})
  hl100-spin   101  7f00000025fd hl_run+0x1d ({MOD})
  hl100-spin   100  7f0000002600 hl_run+0x20 ({MOD})
  hl100-spin   100  7fed744f34f7 __GI___getppid+0x7 ({LIBC})
  hl100-spin   100  7fed74400010 [unknown] (/opt/stripped.so)
  hl200-spin   200  7f00000025fd hl_run+0x1d (/other/_hl_spin_1.so)
  Web Content  300  7f00000025fd operator new(unsigned long)+0x10 (/usr/lib/libstdc++.so.6)
        perf   400  ffffffff816ef1bb link_path_walk+0xcb ([kernel.kallsyms])
not a sample line at all
"""


def test_one_perf_script_pass_gives_the_hot_symbols_and_the_samples_by_address():
    w = read_window(SCRIPT, comm="hl100-spin", pids={100, 101})
    assert [(s.symbol, s.dso, s.samples, s.kernel) for s in w.symbols] == [
        ("hl_run", "_hl_spin_1.so", 3, False),
        ("do_syscall_64", "[kernel.kallsyms]", 2, True),
        ("0x0000000000002010", "stripped.so", 1, False),
        ("__GI___getppid", "libc.so.6", 1, False)]
    assert w.symbols[0].percent == pytest.approx(3 / 7 * 100, abs=0.01)
    # a stripped binary's address is named by its offset in the file, as perf report named
    # it; the run's samples by address (the stripped binary's have no symbol to annotate)
    assert w.addresses == Counter({(MOD, "hl_run", 0x1d): 2, (MOD, "hl_run", 0x20): 1,
                                   ("[kernel.kallsyms]", "do_syscall_64", 0x46): 2,
                                   (LIBC, "__GI___getppid", 7): 1})


def test_a_recording_of_its_pids_counts_every_sample_and_a_name_with_spaces():
    w = read_window(SCRIPT)
    assert w.addresses[("/usr/lib/libstdc++.so.6", "operator new(unsigned long)", 0x10)] == 1
    assert w.addresses[("/other/_hl_spin_1.so", "hl_run", 0x1d)] == 1
    assert sum(s.samples for s in w.symbols) == 10


def test_a_pid_of_the_run_under_another_name_counts_for_annotate_not_the_hot_symbols():
    w = read_window(SCRIPT.replace("hl100-spin   101", "worker-2     101"), comm="hl100-spin",
                    pids={100, 101})
    assert w.addresses[(MOD, "hl_run", 0x1d)] == 2
    assert next(s.samples for s in w.symbols if s.symbol == "hl_run") == 2


def window(*hits: tuple[str, str, int, int]) -> Counter[tuple[str, str, int]]:
    return Counter({(d, s, off): n for d, s, off, n in hits})


def test_windows_add_up_by_address_and_know_where_a_symbol_is():
    t = AddressTally()
    t.add("perf.data.1", 0, window((MOD, "hl_run", 0x1d, 5), (LIBC, "getppid", 7, 1)))
    t.add("perf.data.2", 1, window((MOD, "hl_run", 0x1d, 2), (MOD, "hl_run", 0x20, 9)))
    t.add("perf.data.3", 2, window((LIBC, "getppid", 7, 4)))
    t.add("perf.data.2", 1, window((MOD, "hl_run", 0x1d, 100)))     # once only
    assert t.of("hl_run") == Counter({(MOD, 0x1d): 7, (MOD, 0x20): 9})
    held = t.held[(MOD, "hl_run")]
    assert (held.windows, held.best, held.best_samples) == (2, "perf.data.2", 11)
    assert held.durable == "perf.data.1"            # window 0 outlives any thinning
    assert t.held[(LIBC, "getppid")].windows == 2


def test_thinning_keeps_the_windows_the_stride_divides_so_those_are_the_durable_ones():
    t = AddressTally()
    for i in (3, 6, 8, 12):
        t.add(f"perf.data.{i}", i, window((MOD, "hl_run", 0, 1)))
    assert t.held[(MOD, "hl_run")].durable == "perf.data.8"


def test_two_recordings_of_a_session_merge_and_a_window_counts_once():
    a, b = AddressTally(), AddressTally()
    a.add("perf.data.1", 0, window((MOD, "hl_run", 0x1d, 5)))
    b.add("perf.data.2", 1, window((MOD, "hl_run", 0x1d, 2), (LIBC, "getppid", 7, 1)))
    a.merge(b)
    assert a.of("hl_run") == Counter({(MOD, 0x1d): 7})
    assert a.held[(MOD, "hl_run")].windows == 2 and set(a.windows) == {"perf.data.1",
                                                                         "perf.data.2"}
    with pytest.raises(ValueError, match="tallied twice"):
        a.merge(b)


def test_past_its_bound_a_tally_stops_rather_than_grow(monkeypatch):
    monkeypatch.setattr(addrs, "MOST_ADDRESSES", 3)
    t = AddressTally()
    t.add("perf.data.1", 0, window(*((MOD, "f", off, 1) for off in range(4))))
    assert t.full and not t.counts
    t.add("perf.data.2", 1, window((MOD, "f", 0, 1)))
    assert not t.counts


def written(tmp_path: Path, t: AddressTally) -> Path:
    path = tmp_path / addrs.FILE
    addrs.write(path, t.document())
    return path


def test_the_file_reads_back_as_it_was_written(tmp_path):
    t = AddressTally()
    t.add("perf.data.2026120215541030", 0, window((MOD, "hl_run", 0x1d, 5),
                                                  ("[kernel.kallsyms]", "do_syscall_64", 70, 3)))
    t.add("perf.data.2026120215541075", 1, window((MOD, "hl_run", 0x20, 1)))
    back = addrs.read(written(tmp_path, t))
    assert back == t
    assert not (tmp_path / addrs.TEMPORARY).exists()


class Session:
    """What stands for a session: its KeptWindows, when recording."""


def test_a_session_being_recorded_writes_its_tally_at_flush(tmp_path):
    async def go() -> AddressTally:
        session = Session()
        rec = addrs.recorded(session, str(tmp_path))
        assert addrs.recorded(session, str(tmp_path)) is rec
        rec.add("perf.data.1", 0, window((MOD, "hl_run", 0x1d, 5)))
        await rec.maybe_write()         # within WRITE_EVERY_S of its start: not yet
        assert not (tmp_path / addrs.FILE).exists()
        await rec.flush()
        return rec.tally
    tally = asyncio.run(go())
    assert addrs.read(tmp_path / addrs.FILE) == tally


def doc(**change: object) -> dict[str, object]:
    t = AddressTally()
    t.add("perf.data.1", 0, window((MOD, "hl_run", 0x1d, 5)))
    return {**t.document(), **change}


# Forged tallies and what the line says of each (named by that: gzip's bytes hold its time,
# and pytest-xdist's workers must collect the same ids)
FORGED = [
    (b"", "not one whole gzip stream"),
    (b"PERFILE2 not gzip", "cannot decompress"),
    (gzip.compress(b"{"), "not a tally hotloop wrote"),
    (gzip.compress(b"\xff\xfe"), "not a tally hotloop wrote"),
    (gzip.compress(b"[" * 200_000), "not a tally hotloop wrote"),
    (gzip.compress(json.dumps({"kind": "other"}).encode()), "not hotloop's tally"),
    (gzip.compress(json.dumps(doc(format=2)).encode()), "format 2, not 1"),
    (gzip.compress(json.dumps(doc(windows=[["../etc/passwd", 0]])).encode()), "window"),
    (gzip.compress(json.dumps(doc(windows=[["perf.data.1", -1]])).encode()), "window number"),
    (gzip.compress(json.dumps(doc(windows=[["perf.data.1", True]])).encode()),
     "window number"),
    (gzip.compress(json.dumps(doc(dsos=[])).encode()), "DSO number"),
    (gzip.compress(json.dumps(doc(symbols=[[0, "hl_run", 1, "perf.data.1", 5, "perf.data.1",
                                            0, [29, 5, 30]]])).encode()), "not hotloop's"),
    (gzip.compress(json.dumps(doc(symbols=[[0, "hl_run", 1, "perf.data.1", 5, "perf.data.1",
                                            0, [29, 1e300]]])).encode()), "samples"),
    (gzip.compress(json.dumps(doc(symbols=[[0, "hl_run", 1, "perf.data.9", 5, "perf.data.1",
                                            0, [29, 5]]])).encode()), "not among"),
    (gzip.compress(json.dumps(doc(symbols=[[0, "hl_run", 1, "perf.data.1", 5, "perf.data.1",
                                            0, [-1, 5]]])).encode()), "offset"),
    (gzip.compress(b"{}") + b"more", "not one whole gzip stream"),
]


@pytest.mark.parametrize("forged, said", FORGED,
                         ids=[f"{i}-{said}" for i, (_, said) in enumerate(FORGED)])
def test_a_forged_file_is_one_line_never_a_traceback(tmp_path, forged, said):
    path = tmp_path / addrs.FILE
    path.write_bytes(forged)
    with pytest.raises(AddrsError) as e:
        addrs.read(path)
    line, = str(e.value).splitlines()
    assert line.startswith(f"{path}: ") and said in line and "remove it" in line


def test_a_file_beyond_sane_bounds_is_refused_before_it_is_unpacked(tmp_path, monkeypatch):
    path = tmp_path / addrs.FILE
    path.write_bytes(gzip.compress(b" " * 5000 + json.dumps(doc()).encode()))
    monkeypatch.setattr(addrs, "MOST_UNPACKED", 4096)
    with pytest.raises(AddrsError, match="expands beyond"):
        addrs.read(path)
    monkeypatch.setattr(addrs, "MOST_PACKED", 10)
    with pytest.raises(AddrsError, match="larger than"):
        addrs.read(path)
    monkeypatch.undo()
    monkeypatch.setattr(addrs, "MOST_ADDRESSES", 0)
    with pytest.raises(AddrsError, match="more windows or symbols than any session has"):
        addrs.read(path)


def test_a_symlink_in_its_place_is_not_followed(tmp_path):
    target = written(tmp_path, AddressTally())
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(AddrsError, match="cannot read it"):
        addrs.read(link)


def test_a_tally_that_cannot_be_written_is_said_once_and_the_recording_goes_on(tmp_path):
    said: list[str] = []

    async def go() -> None:
        rec = addrs.recorded(Session(), str(tmp_path / "gone"))     # no such directory
        rec.warn = said.append
        for i in range(3):
            rec.add(f"perf.data.{i}", i, window((MOD, "hl_run", 0x1d, 1)))
            await rec.flush()
    asyncio.run(go())
    line, = said
    assert "the samples by address not written" in line and "No such file" in line
    assert not (tmp_path / "gone").exists()
