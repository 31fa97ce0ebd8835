"""Parsing perf's output (canned text as perf prints it), aggregating windows, the symbol diff."""
from __future__ import annotations

import pytest

from hotloop.analysis.symbols import diff_symbols
from hotloop.events import HotSymbol
from hotloop.perf.annotate import nothing_to_annotate
from hotloop.perf.parse import SEP, aggregate, parse_report, parse_stat_csv
from hotloop.render.report import dso_name, symbol_lines, symbol_name

# --------------------------------------------------------------------------- parser (canned)

CANNED_SEP = "\n".join([
    "# To display the perf.data header info, please use --header/--header-only options.",
    "#",
    "# Samples: 1K of event 'cpu-clock:pppH'",
    "#",
    "# Overhead\x1f     Samples\x1fShared Object    \x1fSymbol                         ",
    " 40.00% \x1f 400        \x1f[kernel.kallsyms]\x1f[k] read_zero",
    " 20.00% \x1f 200        \x1flibstdc++.so.6   \x1f[.] std::vector<std::pair<int, long>, std::allocator<std::pair<int, long> > >::_M_realloc_insert(int, long)",
    " 10.00% \x1f 100        \x1f[unknown]        \x1f[.] [unknown]",
    " 10.00% \x1f 100        \x1fdd               \x1f[.] 0x000000000000593c",
    "  9.00% \x1f 90         \x1f_hl_seqpacket_ab12.cpython-311-x86_64-linux-gnu.so\x1f[.] hl_run",
    "  6.00% \x1f 60         \x1f[kernel.kallsyms]\x1f[k] 0xffffffff81234567",
    "  5.00% \x1f 50         \x1flibc.so.6        \x1f[.] __GI___libc_write",
    "",
])

CANNED_ALIGNED = """\
# Samples: 887  of event 'cpu-clock:pppH'
#
# Overhead       Samples  Shared Object                                       Symbol
# ........  ............  ..................................................  .............
#
    76.55%           679  [kernel.kallsyms]                                   [k] read_zero
    10.00%            89  libfoo.so                                           [.] Foo<Bar, Baz>::operator()(int) const
     5.00%            44  _hl_seqpacket_ab12.cpython-311-x86_64-linux-gnu.so  [.] hl_run
     4.00%            36  [unknown]                                           [.] [unknown]
     4.45%            39  dd                                                  [.] 0x000000000000593c

#
# (Tip: use --percent-limit)
"""


# --------------------------------------------------------------------------- real perf


def test_parse_report_separator_odd_symbols():
    syms = parse_report(CANNED_SEP)
    assert len(syms) == 7
    assert abs(sum(s.percent for s in syms) - 100) < 0.01
    by = {s.symbol: s for s in syms}
    tmpl = "std::vector<std::pair<int, long>, std::allocator<std::pair<int, long> > >::_M_realloc_insert(int, long)"
    assert by[tmpl].dso == "libstdc++.so.6" and not by[tmpl].kernel and by[tmpl].samples == 200
    assert by["read_zero"].kernel and by["read_zero"].dso == "[kernel.kallsyms]"
    assert by["[unknown]"].dso == "[unknown]"
    assert by["0x000000000000593c"].dso == "dd"
    assert by["0xffffffff81234567"].kernel
    assert by["hl_run"].dso == "_hl_seqpacket_ab12.cpython-311-x86_64-linux-gnu.so"
    assert syms[0].symbol == "read_zero"


def test_parse_report_aligned_and_sym_only():
    syms = parse_report(CANNED_ALIGNED)
    by = {s.symbol: s for s in syms}
    assert set(by) == {"read_zero", "Foo<Bar, Baz>::operator()(int) const", "hl_run", "[unknown]",
                       "0x000000000000593c"}
    assert by["read_zero"].samples == 679 and by["read_zero"].kernel
    assert by["Foo<Bar, Baz>::operator()(int) const"].dso == "libfoo.so"
    # `--sort sym` only, no header: regex fallback, no DSO column
    only = parse_report("    50.00%  [k] do_syscall_64\n    50.00%  [.] a<b, c> d\n")
    assert [(s.symbol, s.kernel) for s in only] == [("do_syscall_64", True), ("a<b, c> d", False)]


@pytest.mark.parametrize("junk", ["", "\x00\x1f\x1f", "# only comments\n#\n", "100%\n", "abc%  [k]\n",
                                  "\x1f".join(["x"] * 9), "nan% \x1f \x1f \x1f [k]", "\n".join(["%"] * 50),
                                  "   12.5%  [x]", " 1e26% [k] x", " 101% [k] x", " -1% [k] x",
                                  "# Overhead\x1fSamples\n 1.0%\x1f\x1f\x1f"])
def test_lines_that_are_no_rows_of_perf_give_no_symbols(junk):
    """Junk gives nothing and raises nothing; among real rows it does not hide them."""
    assert parse_report(junk) == []
    mixed = parse_report(junk + "\n" + CANNED_SEP)
    assert [s.symbol for s in mixed] == [s.symbol for s in parse_report(CANNED_SEP)]


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
    """perf report's rows (separator mode): a stripped library's address is within its DSO;
    an address outside any known mapping is absolute, and stays as perf gives it."""
    text = "\n".join([
        f"# Overhead{SEP}Samples{SEP}Shared Object{SEP}Symbol",
        f"    41.00%{SEP}41{SEP}libfoo.so{SEP}[.] 0x0000000000001234",
        f"    30.00%{SEP}30{SEP}[unknown]{SEP}[.] 0x00007f53ec7162ab",
        f"    20.00%{SEP}20{SEP}[kernel.kallsyms]{SEP}[k] do_syscall_64",
        f"     9.00%{SEP}9{SEP}_hl_syscall_ab.cpython-311-x86_64-linux-gnu.so{SEP}[.] hl_run"])
    rows = parse_report(text)
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
