"""The differential profile on forged sessions with known samples and task-clock (issue #32):
a symbol's cost per op, the words and their rules, Benjamini-Hochberg on known p-values, and
the change explained adding up exactly.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import forge
import pytest

from hotloop import results
from hotloop.analysis import compare
from hotloop.analysis.symbols import SymbolVerdict
from hotloop.analysis.symcost import session_cost, side_cost
from hotloop.analysis.symdiff import bh
from hotloop.render import compare_formats

KERNEL = "[kernel.kallsyms]"
OPS = 6 * 20000                         # forge.zero_null: 6 runs of 20000 ops


def hot(samples: dict[str, int], total: int) -> dict[str, Any]:
    """A session's hot symbols: these counts, of `total` worker samples (the rest unlisted)."""
    syms = [{"symbol": name, "dso": KERNEL, "kernel": True, "samples": n,
             "percent": round(100 * n / total, 4)} for name, n in samples.items()]
    return {"type": "hot_symbols", "symbols": syms, "scope": "session", "window": 0,
            "samples": total, "variant": ""}


def session(path: Path, samples: dict[str, int], total: int = 1000,
            clock_ms: float | None = 120.0, **kw: Any) -> Path:
    return forge.zero_null(path, forge.NS_512, more=[hot(samples, total)],
                           counters={"task-clock": clock_ms}, **kw)


def test_a_symbols_cost_is_its_share_of_the_workers_samples_times_its_cpu_time_per_op(
        tmp_path: Path) -> None:
    # 120 ms of task-clock over 120000 ops: the worker's 1000 ns/op; read_zero's two names
    # hold 400 of its 1000 samples: 400 ns/op
    f = session(tmp_path / "s.jsonl", {"read_zero": 300, "read_zero.isra.0": 100,
                                       "do_syscall_64": 250})
    c = session_cost(results.read(f))
    assert c.ops == OPS and c.task_clock_ms == 120.0 and c.samples == 1000 and not c.why
    assert c.ns_per_op == pytest.approx(1000.0)
    rz = c.symbols["read_zero", KERNEL, True]
    assert rz.names == ("read_zero", "read_zero.isra.0") and rz.samples == 400
    assert rz.share == pytest.approx(0.4) and rz.ns_per_op == pytest.approx(400.0)
    assert c.symbols["do_syscall_64", KERNEL, True].ns_per_op == pytest.approx(250.0)
    side = side_cost([results.read(f)])
    assert [s.symbol for s in side.symbols] == ["read_zero", "do_syscall_64"]
    assert side.symbols[0].sd_ns is None            # one session: no spread


@pytest.mark.parametrize(("kw", "why"), [
    ({"clock_ms": None}, "no task-clock"),
    ({"end": None}, "partial session"),
])
def test_no_cost_where_the_data_give_none_never_zero(tmp_path: Path, kw: dict[str, Any],
                                                     why: str) -> None:
    c = session_cost(results.read(session(tmp_path / "s.jsonl", {"read_zero": 300}, **kw)))
    assert c.ns_per_op is None and c.symbols["read_zero", KERNEL, True].ns_per_op is None
    assert c.why.startswith(why)
    off = session_cost(results.read(forge.zero_null(tmp_path / "off.jsonl", forge.NS_512)))
    assert off.ns_per_op is None and off.why == "perf was off"   # its header says so


def test_benjamini_hochberg_on_known_p_values() -> None:
    # by hand: sorted 0.005 0.01 0.03 0.04 -> x4/1 0.02, x4/2 0.02, x4/3 0.04, x4/4 0.04
    assert bh([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # step-up: the smallest's 0.06 is lowered to the second's 0.0315
    assert bh([0.02, 0.021, 0.5]) == pytest.approx([0.0315, 0.0315, 0.5])
    assert bh([0.9, 0.8]) == pytest.approx([0.9, 0.9]) and bh([]) == []
    assert bh([0.5] * 3 + [1.0]) == pytest.approx([2 / 3] * 3 + [1.0])


# Three sessions a side: read_zero doubles, do_syscall_64 stays (its sessions scatter),
# a rare symbol has 5 samples a session, one is only on the new side, one only on the old.
BASE = [{"read_zero": 200, "do_syscall_64": 300, "rare": 5, "old_path": 40},
        {"read_zero": 205, "do_syscall_64": 310, "rare": 4, "old_path": 42},
        {"read_zero": 196, "do_syscall_64": 290, "rare": 6, "old_path": 39}]
NEW = [{"read_zero": 400, "do_syscall_64": 305, "rare": 5, "new_path": 50},
       {"read_zero": 410, "do_syscall_64": 296, "rare": 5, "new_path": 48},
       {"read_zero": 395, "do_syscall_64": 308, "rare": 6, "new_path": 52}]


@pytest.fixture
def sides(tmp_path: Path) -> tuple[Path, Path]:
    for name, side in (("a", BASE), ("b", NEW)):
        for i, s in enumerate(side):
            session(tmp_path / name / f"s{i}.jsonl", s)
    return tmp_path / "a", tmp_path / "b"


def test_the_differential_test_words_each_symbol(sides: tuple[Path, Path]) -> None:
    comp = compare.load_and_compare(sides)
    (p,) = comp.pairs
    rows = {d.symbol: d for d in p.symbols or ()}
    rz = rows["read_zero"]
    assert rz.verdict is SymbolVerdict.COSTLIER and rz.significant and rz.word == "costlier"
    assert rz.baseline_ns_per_op == pytest.approx(1000 * (200 + 205 + 196) / 3 / 1000)
    assert rz.ci_low is not None and rz.ci_low > 0 and rz.q_value is not None
    assert rz.q_value >= rz.p_value and rz.q_value < 0.05
    # 300 samples a session: its counts alone spread it by 6% a session, too much for a
    # 5% margin at 3 a side
    dsc = rows["do_syscall_64"]
    assert dsc.verdict is SymbolVerdict.CANT_TELL and dsc.word.startswith("can't tell: ±")
    assert dsc.half_width_pct is not None and dsc.half_width_pct > 5
    # 5 samples a session: tested (its counts say how little that says), can't tell
    rare = rows["rare"]
    assert rare.verdict is SymbolVerdict.CANT_TELL and rare.p_value is not None
    assert rare.half_width_pct is not None and rare.half_width_pct > 50
    assert rows["new_path"].word == "new" and rows["new_path"].baseline_ns_per_op == 0
    assert rows["old_path"].word == "gone" and rows["old_path"].new_ns_per_op == 0
    assert rows["old_path"].baseline_ns_per_op == pytest.approx((40 + 42 + 39) / 3)
    assert p.symbols_tested == 5                    # all of them: 10+ samples over the sessions


def test_cant_tell_says_how_to_get_more(sides: tuple[Path, Path]) -> None:
    """Every format's note under the table, and the console's row in full, say what gives a
    symbol more samples a session, not only that the test cannot tell."""
    from hotloop.console.widgets.symbol_diff import Row, detail_text
    from hotloop.render.compare_formats.symbols import notes
    comp = compare.load_and_compare(sides)
    (p,) = comp.pairs
    more = "a higher --perf-freq, longer runs or more --runs, more --sessions"
    note, = notes(p)
    assert f"can't tell, for more: {more} (docs/differential.md)" in note
    assert "vs rest the symbol's change relative to the rest of the profile" in note
    for fmt in ("text", "md"):        # wrapped under the table: read as one paragraph
        out = re.sub(r"\s*\n[> ]*", " ", compare_formats.render(comp, fmt))
        assert more in out, fmt
    rare = next(d for d in p.symbols or () if d.symbol == "rare")
    assert rare.word.startswith("can't tell: ±")
    assert detail_text(Row(p, rare)).endswith(f"{rare.word} (for more: {more}) · a annotates")


def test_the_change_explained_adds_up_exactly(sides: tuple[Path, Path]) -> None:
    (p,) = compare.load_and_compare(sides).pairs
    e = p.explained
    assert e is not None and e.top[0].symbol == "read_zero"    # the largest change first
    # the total is the worker's (task-clock), the rest what the top rows leave of it
    assert e.baseline_ns_per_op == pytest.approx(1000.0)
    assert e.rest_baseline_ns_per_op == pytest.approx(
        1000.0 - math.fsum(r.baseline_ns_per_op or 0 for r in e.top), abs=1e-9)
    parts = math.fsum(r.change_ns or 0 for r in e.top) + e.rest_change
    assert e.change == pytest.approx(parts, abs=1e-9)
    # the new side's read_zero doubled (+201.3 ns/op), its whole CPU time did not: the rows
    # shown with their changes, the rest taking what the top rows leave
    assert e.top[0].change_ns == pytest.approx((400 + 410 + 395 - 200 - 205 - 196) / 3)


def test_one_session_a_side_shows_the_change_and_calls_nothing(tmp_path: Path) -> None:
    a = session(tmp_path / "a.jsonl", BASE[0])
    b = session(tmp_path / "b.jsonl", NEW[0])
    (p,) = compare.load_and_compare([a, b]).pairs
    rz = next(d for d in p.symbols or () if d.symbol == "read_zero")
    assert rz.verdict is SymbolVerdict.CANT_TELL and not rz.significant
    assert rz.word == "can't tell: one session a side" and "one session a side" in rz.why
    assert rz.cost_change_pct == pytest.approx(100.0)
    text = compare_formats.render(compare.load_and_compare([a, b]), "text")
    assert "(top 15 by |change|; none tested, the change shown: one session a side" in text
    row = next(x for x in text.splitlines() if x.startswith("  [k] read_zero"))
    assert row.endswith("can't tell: one session a side")


def test_without_task_clock_the_rows_are_shares_and_say_why(tmp_path: Path) -> None:
    a = session(tmp_path / "a.jsonl", BASE[0], clock_ms=None)
    b = session(tmp_path / "b.jsonl", NEW[0])
    (p,) = compare.load_and_compare([a, b]).pairs
    assert p.explained is None and "no task-clock" in p.symbol_note
    assert all(d.baseline_ns_per_op is None and d.word == "" for d in p.symbols or ())


def test_every_format_says_the_differential_profile(sides: tuple[Path, Path]) -> None:
    comp = compare.load_and_compare(sides)
    doc = json.loads(compare_formats.render(comp, "json"))
    (diff,) = doc["symbol_diffs"]
    rz = next(r for r in diff["symbols"] if r["symbol"] == "read_zero")
    # the names, kept for scripts, with the share keys as before
    assert {"baseline_ns_per_op", "new_ns_per_op", "change_pct", "ci_low", "ci_high",
            "p_value", "q_value", "significant", "verdict", "names", "baseline_pct",
            "new_pct", "delta", "symbol", "dso", "kernel"} <= rz.keys()
    assert rz["verdict"] == "costlier" and rz["significant"] is True
    assert diff["correction"] == "benjamini-hochberg" and diff["tested"] == 5
    e = diff["explained"]
    top = sum(r["new_ns_per_op"] - r["baseline_ns_per_op"] for r in e["top"])
    rest = e["rest_new_ns_per_op"] - e["rest_baseline_ns_per_op"]
    assert e["new_ns_per_op"] - e["baseline_ns_per_op"] == pytest.approx(top + rest, abs=1e-9)

    text = compare_formats.render(comp, "text")
    line = next(x for x in text.splitlines() if x.startswith("  change explained: "))
    # what is shown adds up too: the total, each part, the rest (rounding in the rest)
    total = float(line.split()[2])
    parts = line.split("): ", 1)[1]
    shown = [float(x) for x in re.findall(r"(?:^|\), |\], )\S+ ([+-]\d+\.\d)", parts)]
    rest = float(re.findall(r"the rest ([+-]\d+\.\d)$", parts)[0])
    assert len(shown) == 5 and total == pytest.approx(sum(shown) + rest, abs=1e-9)
    assert "read_zero +201.3 [" in line
    row = next(x for x in text.splitlines() if x.startswith("  [k] read_zero"))
    assert row.split()[-1] == "costlier"
    assert "| `read_zero` |" in compare_formats.render(comp, "md")
    assert "# change explained: " in compare_formats.render(comp, "org")
    csv_lines = compare_formats.render(comp, "csv").splitlines()
    assert any(x.startswith("b,") and ",symbol read_zero,ns/op," in x and ",costlier," in x
               for x in [line.replace(str(sides[1]), "b") for line in csv_lines])


def test_show_prints_a_symbols_cost_per_op_and_a_sides_spread(
        sides: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from hotloop.cli import main
    f = sorted(sides[0].glob("*.jsonl"))[0]
    assert main(["show", str(f)]) == 0
    out = capsys.readouterr().out
    assert "  worker CPU time  1000.0 ns/op (perf stat task-clock / ops)" in out
    row = next(x for x in out.splitlines() if x.startswith("  [k] read_zero") and "%" in x
               and "ns" not in x and len(x.split()) == 6)
    assert row.split()[3:] == ["200.0", "20.00%", "200"]    # ns/op, share, samples
    # a directory: the side's sessions, each symbol's mean cost and its spread
    assert main(["show", str(sides[0])]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 sessions in ")
    row = next(x for x in out.splitlines() if x.startswith("  [k] read_zero"))
    assert row.split()[3:5] == [f"{(200 + 205 + 196) / 3:.1f}", "±4.5"]
    assert main(["show", str(sides[0]), "--format", "csv"]) == 2


def test_show_says_why_there_is_no_cost(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from hotloop.cli import main
    f = session(tmp_path / "s.jsonl", BASE[0], clock_ms=None)
    assert main(["show", str(f)]) == 0
    assert "cost per op: none (" in capsys.readouterr().out
    assert main(["show", str(f), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["symbol_costs"]["worker_ns_per_op"] is None
    assert doc["symbol_costs"]["symbols"][0]["ns_per_op"] is None


def test_the_svg_colours_a_symbol_rows_word_only() -> None:
    from hotloop.render import svg
    lines = svg.coloured("  [k] read_zero  kernel  67.6  108.5  costlier\n"
                         "  [.] hl_run  x.so  15.8  18.7  cheaper\n"
                         "note: costlier means more ns/op")
    assert [(str(s.style), lines[0].plain[s.start:s.end]) for s in lines[0].spans] == \
        [("bold red", "costlier")]
    assert [str(s.style) for s in lines[1].spans] == ["bold green"]
    assert not lines[2].spans                       # prose keeps its colour


DRIFT = (1.00, 1.30, 0.80, 1.15, 0.90, 1.25)     # a round's load, shared by its two sessions


def test_a_series_tests_each_symbol_on_its_pairs_of_sessions(tmp_path: Path) -> None:
    """Kernels of one series: read_zero 3% costlier on B in every round, while the rounds
    move it by -20..+30% on both sides: paired by round it is called, unpaired it is not."""
    for i, drift in enumerate(DRIFT, start=1):
        for side, more in (("A", 1.0), ("B", 1.03)):
            head = forge.header(label=side, variant=side, runs=6,
                                batch={"id": "ser1", "interleaved": False, "variants": 2,
                                       "session": i})
            # 10,000 samples of read_zero a session: its counts alone spread it by 1%
            session(tmp_path / side / f"s{i:02d}.jsonl",
                    {"read_zero": round(10000 * drift * more), "do_syscall_64": 30000},
                    total=100000, head=head)
    sides = [tmp_path / "A", tmp_path / "B"]
    (p,) = compare.load_and_compare(sides).pairs
    rz = next(d for d in p.symbols or () if d.symbol == "read_zero")
    assert rz.method == "pairs" and rz.word == "costlier"
    assert rz.change_pct == pytest.approx(3.0, abs=0.1)
    (p,) = compare.load_and_compare(sides, pair_sessions=False).pairs
    rz = next(d for d in p.symbols or () if d.symbol == "read_zero")
    assert rz.method == "sessions" and rz.verdict is SymbolVerdict.CANT_TELL


def test_a_rows_interval_is_clear_of_0_exactly_when_the_row_is_called(tmp_path: Path) -> None:
    # hl_run about 7% costlier in every new session (p near 0.02 alone), ten symbols as
    # they were, each spread as its counts spread it (sd 22 of 500): tested with them,
    # Benjamini-Hochberg does not call hl_run, and its interval, adjusted for the 11 symbols
    # tested, holds 0 where its own 95% one did not
    jit = (-22, 0, 22)
    for name, hl in (("a", (1000, 1040, 960)), ("b", (1070, 1110, 1030))):
        for i, n in enumerate(hl):
            jitter = {f"steady_{k}": 500 + k + jit[(k + i) % 3] for k in range(10)}
            session(tmp_path / name / f"s{i}.jsonl", {"hl_run": n, **jitter}, total=10000)
    (p,) = compare.load_and_compare([tmp_path / "a", tmp_path / "b"]).pairs
    rows = {d.symbol: d for d in p.symbols or ()}
    hl = rows["hl_run"]
    assert hl.p_value is not None and hl.p_value < 0.05, hl
    assert hl.verdict is SymbolVerdict.CANT_TELL
    assert hl.q_value is not None and hl.q_value >= 0.05
    assert hl.ci_low_alone is not None and hl.ci_low_alone > 0          # alone: a call
    assert hl.ci_low is not None and hl.ci_high is not None and hl.ci_low < 0 < hl.ci_high
    for d in rows.values():
        if d.p_value is not None:
            assert d.ci_low is not None and d.ci_high is not None
            assert (d.ci_low > 0 or d.ci_high < 0) == d.significant, d.symbol


def test_a_called_rows_interval_is_widened_for_the_symbols_tested(
        sides: tuple[Path, Path]) -> None:
    (p,) = compare.load_and_compare(sides).pairs
    rz = next(d for d in p.symbols or () if d.symbol == "read_zero")
    assert rz.significant and rz.ci_low is not None and rz.ci_low > 0
    # 2 tested, 1 called: level 1 - 0.05 / 2 = 97.5%, wider than its own 95%
    assert rz.ci_low_alone is not None and rz.ci_high_alone is not None
    assert rz.ci_low < rz.ci_low_alone and rz.ci_high is not None
    assert rz.ci_high > rz.ci_high_alone


def test_a_symbol_sampled_a_few_times_on_one_side_only_is_cant_tell_not_new(
        tmp_path: Path) -> None:
    # tiny runs: 2 samples a session of a symbol the other side never sampled are chance,
    # not a symbol gone; 40 a session against none is a symbol gone
    for name, side in (("a", [{"read_zero": 300, "blip": 2, "old_path": 40}] * 3),
                       ("b", [{"read_zero": 300}] * 3)):
        for i, s in enumerate(side):
            session(tmp_path / name / f"s{i}.jsonl", s)
    (p,) = compare.load_and_compare([tmp_path / "a", tmp_path / "b"]).pairs
    rows = {d.symbol: d for d in p.symbols or ()}
    assert rows["blip"].verdict is SymbolVerdict.CANT_TELL and rows["blip"].q_value is None
    assert rows["blip"].word.startswith("can't tell")
    assert rows["old_path"].verdict is SymbolVerdict.GONE
