"""Parsing perf's output (canned text as perf prints it), aggregating windows, the symbol diff."""
from __future__ import annotations

import pytest

from hotloop.analysis.symbols import diff_symbols
from hotloop.events import HotSymbol
from hotloop.perf.annotate import nothing_to_annotate
from hotloop.perf.parse import aggregate, parse_stat_csv
from hotloop.perf.script import read_window
from hotloop.render.report import symbol_lines
from hotloop.render.symbol_names import dso_name, symbol_name

# --------------------------------------------------------------------------- perf script

# `perf script -F comm,pid,ip,sym,symoff,dso -G` lines: a template with spaces and parentheses,
# the kernel, an address perf cannot name, another process (on the whole CPUs), a junk line
SCRIPT = """\
 hl7-spin  7  ffffffff81234567 read_zero+0x17 ([kernel.kallsyms])
 hl7-spin  7  ffffffff81234567 read_zero+0x17 ([kernel.kallsyms])
 hl7-spin  7  7f0000001000 std::vector<std::pair<int, long> >::insert(int, long)+0x4 (/usr/lib/libstdc++.so.6)
 hl7-spin  7  7f0000002000 [unknown] (/opt/stripped.so)
 other  9  ffffffff81234567 read_zero+0x17 ([kernel.kallsyms])
 not a sample at all
"""


def test_a_windows_perf_script_lines_are_its_hot_symbols():
    got = read_window(SCRIPT, comm="hl7-spin")
    rows = [(s.symbol, s.dso, s.samples, s.kernel) for s in got.symbols]
    assert rows == [("read_zero", "[kernel.kallsyms]", 2, True),
                    ("0x00007f0000002000", "stripped.so", 1, False),
                    ("std::vector<std::pair<int, long> >::insert(int, long)", "libstdc++.so.6", 1,
                     False)]
    assert sum(s.percent for s in got.symbols) == pytest.approx(100, abs=0.01)
    assert got.addresses[("[kernel.kallsyms]", "read_zero", 0x17)] == 2   # not the other's


# the same with each sample's time (perf script -F comm,pid,time,... --ns): three runs in one
# window, the runs ending at 100.5 s and 101.0 s
TIMED = """\
 hl7-spin  7 100.400000000:  ffffffff81234567 read_zero+0x17 ([kernel.kallsyms])
 hl7-spin  7 100.600000000:  ffffffff81234567 read_zero+0x17 ([kernel.kallsyms])
 hl7-spin  7 100.700000000:  7f0000003000 write+0x4 (/usr/lib/libc.so.6)
 hl7-spin  7 101.200000000:  ffffffff81234567 read_zero+0x17 ([kernel.kallsyms])
 other  9 100.800000000:  ffffffff81234567 read_zero+0x17 ([kernel.kallsyms])
"""


def test_a_windows_samples_go_to_the_runs_their_times_fall_in():
    got = read_window(TIMED, comm="hl7-spin", cuts=[100_500_000_000, 101_000_000_000], run=2)
    runs = {r: [(s.symbol, s.samples, s.percent) for s in syms] for r, syms in got.runs.items()}
    assert runs == {0: [("read_zero", 1, 100.0)],
                    1: [("read_zero", 1, 50.0), ("write", 1, 50.0)],
                    2: [("read_zero", 1, 100.0)]}
    assert [(s.symbol, s.samples) for s in got.symbols] == [("read_zero", 3), ("write", 1)]
    assert got.addresses[("[kernel.kallsyms]", "read_zero", 0x17)] == 3   # not the other's


def test_samples_with_no_time_are_the_windows_own_run():
    got = read_window(SCRIPT, comm="hl7-spin", cuts=[5, 6], run=4)
    assert list(got.runs) == [4] and got.runs[4] == got.symbols


def test_a_window_is_read_with_its_samples_times_from_a_monotonic_clock():
    from hotloop.perf.record import PerfRecord
    from hotloop.perf.script import script_argv
    rec = PerfRecord("perf", [7], cpus=[], comm=None, frequency=999, call_graph="none",
                     event=None, warn=lambda _: None)
    rec.directory = "/tmp/x"
    argv = rec.argv(3, 4)
    assert argv[argv.index("-k") + 1] == "CLOCK_MONOTONIC"   # time.monotonic_ns()'s clock
    script = script_argv("perf", "/tmp/x/perf.data.1")
    assert "time" in script[script.index("-F") + 1].split(",") and "--ns" in script


def test_lines_that_are_no_samples_give_no_symbols():
    for junk in ("", "\x00\x1f", "# only comments\n#\n", " x 1 zz [unknown] (", "\n" * 50):
        assert read_window(junk).symbols == []


def test_aggregate_and_diff():
    w1 = [HotSymbol("a", "[kernel.kallsyms]", 75.0, True, 3), HotSymbol("b", "libc.so.6", 25.0, False, 1)]
    w2 = [HotSymbol("b", "libc.so.6", 100.0, False, 4)]
    agg = aggregate([w1, w2])
    assert [(s.symbol, s.samples, s.percent) for s in agg] == [("b", 5, 62.5), ("a", 3, 37.5)]
    d = diff_symbols(w1, w2)
    assert [(r.symbol, r.baseline_pct, r.new_pct, r.delta) for r in d] == [("b", 25.0, 100.0, 75.0),
                                                                            ("a", 75.0, 0.0, -75.0)]
    assert d[1].kernel


def test_parse_stat_csv_unsupported_is_none():
    text = ("1001.52,msec,task-clock,1001515528,100.00,0.999,CPUs utilized\n"
            "10,,context-switches,1001513592,100.00,9.985,/sec\n"
            "<not supported>,,cycles,0,100.00,,\n"
            "<not counted>,,instructions,0,0.00,,\n")
    c = parse_stat_csv(text)
    assert c["task-clock"] == 1001.52 and c["context-switches"] == 10
    assert c["cycles"] is None and c["instructions"] is None and c["ipc"] is None
    c2 = parse_stat_csv("2000,,cycles,1,100.00,,\n3000,,instructions,1,100.00,1.5,insn per cycle\n")
    assert c2["ipc"] == 1.5


def test_an_address_perf_cannot_name_shows_with_its_dso_and_offset():
    """A stripped library's address is within its DSO; an address outside any known mapping
    is absolute, and stays as perf gives it."""
    rows = [HotSymbol("0x0000000000001234", "libfoo.so", 41.0, False, 41),
            HotSymbol("0x00007f53ec7162ab", "[unknown]", 30.0, False, 30),
            HotSymbol("do_syscall_64", "[kernel.kallsyms]", 20.0, True, 20),
            HotSymbol("hl_run", "_hl_syscall_ab.cpython-311-x86_64-linux-gnu.so", 9.0, False, 9)]
    assert [symbol_name(s) for s in rows] == [
        "[unknown] libfoo.so+0x1234", "0x00007f53ec7162ab", "do_syscall_64", "hl_run"]
    assert [s.named for s in rows] == [False, False, True, True]
    assert [dso_name(s.dso) for s in rows] == ["libfoo.so", "unknown", "kernel",
                                               "_hl_syscall_ab.so"]
    assert dso_name("/usr/lib/x86_64-linux-gnu/libc.so.6") == "libc.so.6"
    assert dso_name("[nf_tables]") == "nf_tables"
    assert "[unknown] libfoo.so+0x1234" in symbol_lines(rows)[0]
    assert "nothing to annotate" in nothing_to_annotate(rows[0])
    assert nothing_to_annotate(rows[3]) == ""
