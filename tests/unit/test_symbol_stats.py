"""The differential profile's statistics (issue #41) on synthetic counts with known answers: the
session factor, the moderated variance, censored counts of an older file's top 100, the three
words; and a session's list of every symbol sampled, its floor stored.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import forge
import numpy as np
import pytest

from hotloop import events as ev
from hotloop import results
from hotloop.analysis import compare, symstats
from hotloop.analysis.symbols import SymbolDelta, SymbolVerdict, irq_reenable
from hotloop.analysis.symcost import OLD_SESSION_TOP, session_cost
from hotloop.perf.tally import Sum

KERNEL = "[kernel.kallsyms]"
OPS = 6 * 20000


def hot(samples: dict[str, int], total: int, floor: int | None = 1) -> dict[str, Any]:
    syms = [{"symbol": name, "dso": KERNEL, "kernel": True, "samples": n,
             "percent": round(100 * n / total, 4)} for name, n in samples.items()]
    out = {"type": "hot_symbols", "symbols": syms, "scope": "session", "window": 0,
           "samples": total, "variant": ""}
    if floor is not None:
        out["floor"] = floor
    return out


def session(path: Path, samples: dict[str, int], total: int, clock_ms: float,
            floor: int | None = 1) -> Path:
    return forge.zero_null(path, forge.NS_512, more=[hot(samples, total, floor)],
                           counters={"task-clock": clock_ms})


# a profile: 40 symbols, counts a session as a timer's ticks would give them (each within its
# Poisson spread of the mean, fixed here so the answer is known)
PROFILE = {f"sym_{k:02d}": 4000 // (k + 1) for k in range(40)}
JITTER = (0.99, 1.0, 1.01, 0.995, 1.005)


def sides(tmp: Path, k: int, drift: tuple[float, ...], change: float = 1.0,
          target: str = "sym_03") -> tuple[Path, Path]:
    """k sessions a side, the worker's CPU time a session scaled by `drift` (every symbol
    with it), `target` `change` times costlier on the new side."""
    for name, more in (("a", 1.0), ("b", change)):
        for i in range(k):
            counts = {s: max(1, round(n * JITTER[(i + j) % 5] * (more if s == target else 1)))
                      for j, (s, n) in enumerate(PROFILE.items())}
            total = sum(counts.values())
            # the clock: the session's drift times the CPU time its samples stand for
            session(tmp / name / f"s{i}.jsonl", counts, total,
                    total / 10 * drift[(i + (name == "b")) % len(drift)])
    return tmp / "a", tmp / "b"


def rows_of(a: Path, b: Path) -> dict[str, SymbolDelta]:
    (p,) = compare.load_and_compare([a, b]).pairs
    return {d.symbol: d for d in p.symbols or ()}


def test_the_size_factors_are_the_median_of_ratios() -> None:
    counts = np.array([[100, 200, 100], [50, 100, 50], [30, 60, 30], [10, 80, 10.0]])
    f = symstats.size_factors(counts, np.zeros_like(counts, dtype=bool),
                              np.array([1.0, 1.0, 1.0]))
    # session 2 holds twice the counts of every symbol but the last: the median says 2
    assert f[1] / f[0] == pytest.approx(2.0) and f[2] / f[0] == pytest.approx(1.0)
    assert float(np.prod(f)) == pytest.approx(1.0)
    # too few well-sampled symbols: the sessions' totals
    few = symstats.size_factors(counts[:2], np.zeros((2, 3), dtype=bool),
                                np.array([1.0, 4.0, 1.0]))
    assert few[1] / few[0] == pytest.approx(4.0)


def test_trigamma_inverse_and_the_prior_fit_on_known_answers() -> None:
    from scipy import special
    for x in (0.01, 0.5, 3.0, 100.0):
        assert float(special.polygamma(1, symstats.trigamma_inverse(x))) == pytest.approx(x)
    rng = np.random.default_rng(3)
    # variances drawn from a scaled F(4, 10) around 2: the fit finds d0 near 10, f0 near 2
    draws = 2 * rng.chisquare(4, 20000) / 4 / (rng.chisquare(10, 20000) / 10)
    d0, f0 = symstats.fit_f(draws, 4)
    assert 8 < d0 < 12 and 1.8 < f0 < 2.2
    # no spread beyond chi-square's: an infinite prior
    d0, f0 = symstats.fit_f(rng.chisquare(4, 20000) / 4, 4)
    assert d0 > 100 and f0 == pytest.approx(1.0, rel=0.05)


def test_session_drift_moves_no_symbol(tmp_path: Path) -> None:
    # the worker's CPU time a session moves by -20..+25%: every symbol with it, and none is
    # called; the symbols' ns/op move, their parts do not
    a, b = sides(tmp_path, 5, (0.8, 1.25, 1.0, 0.9, 1.15))
    rows = rows_of(a, b)
    assert not [r.symbol for r in rows.values() if r.significant]
    big = rows["sym_00"]
    assert big.change_pct is not None and abs(big.change_pct) < 1.0
    assert big.verdict is SymbolVerdict.SAME and big.word == "same within ±5%"
    assert big.ci_low is not None and big.ci_high is not None
    assert big.ci_low > -5 and big.ci_high < 5


def test_a_symbol_30pct_costlier_is_found_through_20pct_drift(tmp_path: Path) -> None:
    a, b = sides(tmp_path, 5, (0.8, 1.25, 1.0, 0.9, 1.15), change=1.3)
    rows = rows_of(a, b)
    t = rows["sym_03"]
    assert t.verdict is SymbolVerdict.COSTLIER and t.word == "costlier" and t.significant
    assert t.change_pct == pytest.approx(30.0, abs=2.0)
    assert [r.symbol for r in rows.values() if r.significant] == ["sym_03"]
    # the ns/op change is absolute: the sides' means, the drift in them
    assert t.cost_change_pct is not None and t.change_ns is not None


def test_no_uncalled_row_says_same_beside_an_interval_wider_than_10pct(tmp_path: Path) -> None:
    a, b = sides(tmp_path, 3, (1.0, 1.1, 0.95))
    for r in rows_of(a, b).values():
        assert r.verdict is not None
        if r.verdict is SymbolVerdict.SAME:
            assert r.ci_low is not None and r.ci_high is not None
            assert r.ci_low > -10 and r.ci_high < 10
        if r.verdict is SymbolVerdict.CANT_TELL:
            assert r.word.startswith("can't tell: ±"), r.word
            assert r.ci_low is not None and r.ci_high is not None
            assert not (r.ci_low > -5 and r.ci_high < 5)
    # the smallest: 100 samples a session, +-20% and more: the sessions a side it would take
    tail = rows_of(a, b)["sym_39"]
    assert tail.verdict is SymbolVerdict.CANT_TELL
    assert tail.sessions_for is not None and tail.sessions_for > 3
    assert f"({tail.sessions_for} a side for 10%)" in tail.word


def old_session(path: Path, counts: dict[str, int], clock_ms: float) -> Path:
    """An older file: no floor, its top 100 listed only."""
    top = dict(sorted(counts.items(), key=lambda kv: -kv[1])[:OLD_SESSION_TOP])
    return session(path, top, sum(counts.values()), clock_ms, floor=None)


def test_an_older_files_cut_is_censored_not_zero(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # 130 symbols, the 100th of some 25 samples; edge_sym sits at the cut: listed in the
    # baseline's sessions (26 samples), cut from the new side's (19).  Read as 0 there it is
    # "gone"; censored at the cut it is not called
    base = {f"s{k:03d}": 2000 // (k + 1) + 5 for k in range(130)}
    for name, edge in (("a", (1, 1, 1)), ("b", (0, 0, 0))):
        for i, e in enumerate(edge):
            counts = {**base, "edge_sym": 19 if e == 0 else 26}
            old_session(tmp_path / name / f"s{i}.jsonl", counts, 100.0)
    c = session_cost(results.read(tmp_path / "b" / "s1.jsonl"))
    cut = min(s.samples for s in c.symbols.values())
    assert c.cut == cut and ("edge_sym", KERNEL, True) not in c.symbols
    rows = rows_of(tmp_path / "a", tmp_path / "b")
    edge = rows["edge_sym"]
    assert edge.censored and not edge.significant
    assert edge.verdict not in (SymbolVerdict.NEW, SymbolVerdict.GONE)
    assert not [r.symbol for r in rows.values() if r.significant]
    # what the same files said when a symbol cut counted 0
    monkeypatch.setattr("hotloop.analysis.symcost.OLD_SESSION_TOP", 10**6)
    assert rows_of(tmp_path / "a", tmp_path / "b")["edge_sym"].verdict is SymbolVerdict.GONE


def test_a_symbol_absent_from_a_full_list_had_no_sample(tmp_path: Path) -> None:
    # a new file lists every symbol sampled (floor 1): absent is 0, not censored, and 40
    # a session against none is gone
    for name, extra in (("a", {"old_path": 40}), ("b", {})):
        for i in range(3):
            counts = {**{f"s{k:03d}": 2000 // (k + 1) + 5 for k in range(120)}, **extra}
            session(tmp_path / name / f"s{i}.jsonl", counts, sum(counts.values()), 100.0)
    c = session_cost(results.read(tmp_path / "b" / "s0.jsonl"))
    assert c.cut is None
    rows = rows_of(tmp_path / "a", tmp_path / "b")
    assert rows["old_path"].verdict is SymbolVerdict.GONE and not rows["old_path"].censored
    assert rows["old_path"].word == "gone" and rows["old_path"].significant


def test_a_session_keeps_every_symbol_and_its_floor_is_read_back(tmp_path: Path) -> None:
    s = Sum()
    s.add([ev.HotSymbol(f"f{k}", "x", 0.0, False, k + 1) for k in range(150)], 150 * 151 // 2)
    assert len(s.top(None)) == 150 and len(s.top(100)) == 100
    f = session(tmp_path / "s.jsonl", {"a": 5, "b": 1}, 6, 10.0, floor=1)
    r = results.read(f)
    assert r.session_symbols is not None and r.session_symbols.floor == 1
    back = ev.from_json(ev.to_json(r.session_symbols))
    assert isinstance(back, ev.HotSymbols) and back.floor == 1
    with pytest.raises(ValueError, match="floor"):
        ev.from_json({**ev.to_json(r.session_symbols), "floor": -1})


@pytest.mark.parametrize(("name", "marked"), [
    ("_raw_spin_unlock_irqrestore", True), ("_raw_spin_unlock_irq", True),
    ("__local_bh_enable_ip", True), ("__do_softirq", True), ("handle_softirqs", True),
    ("trace_hardirqs_on", False), ("read_zero", False), ("_raw_spin_lock", False),
    ("irqentry_exit", False),
])
def test_the_symbols_that_reenable_interrupts_are_marked(name: str, marked: bool) -> None:
    assert irq_reenable(name) is marked


def test_sessions_for_a_10pct_change_grow_with_the_variance() -> None:
    small = symstats.SymbolTest(0.0, -0.1, 0.1, 1.0, 0.001, 10.0, 0.4)
    big = symstats.SymbolTest(0.0, -0.1, 0.1, 1.0, 0.01, 10.0, 0.4)
    # 2 var (z / log 1.1)^2: 2 x 0.001 x (2.80 / 0.0953)^2 = 1.73 -> 2; 0.01 -> 17.3 -> 18
    assert small.sessions_for(10) == 2 and big.sessions_for(10) == 18
    assert math.isclose(big.sessions_for(10) / 18, 1.0)


def test_cpu_clock_sampling_is_said_and_the_interrupts_on_symbols_marked(
        tmp_path: Path) -> None:
    from hotloop.render import compare_formats
    warn = {"type": "warning", "message": "perf: hardware counters: cycles/instructions not "
                                          "supported: sampling falls back to cpu-clock, no IPC"}
    for name in ("a", "b"):
        for i in range(3):
            counts = {"_raw_spin_unlock_irqrestore": 300 + i, "read_zero": 500 - i,
                      "do_syscall_64": 200 + 2 * i}
            forge.zero_null(tmp_path / name / f"s{i}.jsonl", forge.NS_512,
                            more=[warn, hot(counts, 1000)], counters={"task-clock": 100.0})
    comp = compare.load_and_compare([tmp_path / "a", tmp_path / "b"])
    rows = {d.symbol: d for d in comp.pairs[0].symbols or ()}
    assert rows["_raw_spin_unlock_irqrestore"].irq and rows["_raw_spin_unlock_irqrestore"].timer
    assert not rows["read_zero"].irq and rows["read_zero"].timer
    text = compare_formats.render(comp, "text")
    note = next(x for x in text.splitlines() if "sampled on cpu-clock" in x)
    assert "_raw_spin_unlock_irqrestore may hold time from an interrupts-off region" in note
    # without the warning (a PMU's cycles): no note, no mark
    for f in (tmp_path / "a").glob("*.jsonl"):
        f.write_text("\n".join(x for x in f.read_text().splitlines() if "cpu-clock" not in x)
                     + "\n")
    for f in (tmp_path / "b").glob("*.jsonl"):
        f.write_text("\n".join(x for x in f.read_text().splitlines() if "cpu-clock" not in x)
                     + "\n")
    comp = compare.load_and_compare([tmp_path / "a", tmp_path / "b"])
    assert not any(d.irq or d.timer for d in comp.pairs[0].symbols or ())
    assert "sampled on cpu-clock" not in compare_formats.render(comp, "text")


def test_two_symbols_alike_in_every_session_are_not_called_on_nothing(tmp_path: Path) -> None:
    # too few symbols for a prior, and sessions identical by chance: their spread 0 would
    # make a 1% difference a p of 0; the counts' own variance (1/1000 a session) stays
    for name, a in (("a", 1000), ("b", 1010)):
        for i in range(3):
            session(tmp_path / name / f"s{i}.jsonl", {"hot": a, "other": 1000}, 2000 + a, 100.0)
    rows = rows_of(tmp_path / "a", tmp_path / "b")
    assert not rows["hot"].significant and rows["hot"].verdict is SymbolVerdict.CANT_TELL
    assert rows["hot"].p_value is not None and rows["hot"].p_value > 0.05
