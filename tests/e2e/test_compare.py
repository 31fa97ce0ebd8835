"""hotloop compare: statistics, metadata check, shared histogram, symbol diff, formats, faults.

The result files are real: made once per module by the real command line (`python -m hotloop run
zero_null ...`).  Tests marked "synthetic" build samples or symbols by hand; they check pure
statistics or rendering only, never what a workload measures.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, hotloop

from hotloop import results
from hotloop.analysis import compare
from hotloop.analysis.compare import Verdict
from hotloop.errors import HotloopError
from hotloop.events import HotSymbol, HotSymbols
from hotloop.render import compare_formats, verdicts

RUNS = "6"
COUNT = "count=20000"


def _run(env: dict[str, str], cwd: Path, *args: str) -> Path:
    out = cwd / f"{len(list(cwd.glob('*.jsonl')))}-{args[0]}.jsonl"
    proc = subprocess.run([sys.executable, "-m", "hotloop", "run", *args, "--no-perf",
                           "--out", str(out)], capture_output=True, text=True, timeout=300,
                          env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real result files, made once for the module (the per-test isolation is function-scoped)."""
    home = tmp_path_factory.mktemp("compare")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(home / "config"),
               XDG_STATE_HOME=str(home / "state"), XDG_CACHE_HOME=str(home / "cache"))
    return {
        "small": _run(env, home, "zero_null", "--runs", RUNS, "--param", COUNT,
                      "--param", "block_size=512"),
        "big": _run(env, home, "zero_null", "--runs", RUNS, "--param", COUNT,
                    "--param", "block_size=65536"),
        "few": _run(env, home, "zero_null", "--runs", "3", "--param", COUNT,
                    "--param", "block_size=512"),
        "other": _run(env, home, "seqpacket", "--runs", "2", "--param", "msgs=2000"),
    }


def row(pair: compare.Pair, metric: str) -> compare.MetricDelta:
    return next(m for m in pair.metrics if m.metric == metric)


# --------------------------------------------------------------------------- statistics

def test_a_a_is_exactly_zero_and_not_significant(files):
    comp = compare.load_and_compare([files["small"], files["small"]])
    (pair,) = comp.pairs
    assert {m.metric for m in pair.metrics} >= {"bytes/s", "ns/op", "user_s", "sys_s"}
    for m in pair.metrics:
        assert m.change_pct == 0.0 and m.diff == 0.0, m
        assert not m.significant and m.verdict is Verdict.NO_CHANGE, m
        assert m.p_value == pytest.approx(1.0)
        assert m.ci_low is None or m.ci_low <= 0.0 <= m.ci_high
    assert pair.metadata == []
    text = compare_formats.render(comp)
    assert "+0.00%" in text and "no significant change" in text


def test_clearly_different_pair_is_significant_and_directions_follow_the_metric(files):
    """16 KiB blocks move far more bytes/s (higher is better: faster) but each op takes
    longer (ns/op, lower is better: slower) - both directions from one real pair."""
    pair = compare.load_and_compare([files["small"], files["big"]]).pairs[0]
    rate, per_op = row(pair, "bytes/s"), row(pair, "ns/op")
    assert rate.change_pct > 50 and rate.ci_low > 0 and rate.p_value < 0.05
    assert rate.significant and rate.verdict is Verdict.GOOD
    # ns/op moves about 3.7x, which live runs spread 20-30% on a loaded machine may leave
    # uncalled (one session a side assumes twice their spread): when called, it is "slower"
    # (the words on synthetic data: tests/unit/test_compare_stats.py)
    assert per_op.change_pct > 0
    assert per_op.verdict is Verdict.BAD or not per_op.significant
    # the other way round, a drop in ns/op (lower is better) is "faster"
    back = compare.load_and_compare([files["big"], files["small"]]).pairs[0]
    assert row(back, "ns/op").change_pct < 0
    assert row(back, "ns/op").verdict is Verdict.GOOD or not row(back, "ns/op").significant
    assert row(back, "bytes/s").verdict is Verdict.BAD
    assert [d.field for d in pair.metadata] == ["params.block_size"]


def test_fewer_than_five_runs_says_so(files):
    comp = compare.load_and_compare([files["small"], files["few"]])
    for m in comp.pairs[0].metrics:
        assert m.verdict is Verdict.TOO_FEW_RUNS and not m.significant
        assert m.n_new == 3
    assert "too few runs (n<5)" in compare_formats.render(comp)


# --------------------------------------------------------------------------- formats

@pytest.mark.parametrize("fmt", compare_formats.FORMATS)
def test_every_format_renders_and_parses(files, fmt):
    comp = compare.load_and_compare([files["small"], files["big"], files["few"]])
    out = compare_formats.main_compare([files["small"], files["big"], files["few"]], fmt)
    n_rows = sum(len(p.metrics) for p in comp.pairs)
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == n_rows
        first = rows[0]
        assert first["metric"] == "bytes/s" and first["verdict"] == "faster"
        assert float(first["change_pct"]) > 50 and first["significant"] == "yes"
        assert first["higher_is_better"] == "yes" and first["partial"] == "no"
        assert "True" not in out and "False" not in out       # words, as the tables say
        # the params differ: said in its own column, as the other formats warn
        assert first["differs"].startswith("params.")
    elif fmt == "json":
        doc = json.loads(out)
        assert len(doc["comparisons"]) == n_rows
        for r in doc["comparisons"]:
            for key in ("metric", "baseline", "new", "change_pct", "ci_low", "ci_high",
                        "p_value", "significant", "verdict", "file", "label"):
                assert key in r
        assert {d["field"] for d in doc["metadata_differences"]} == {"params.block_size"}
        for i in range(3):              # each file's buckets hold all of its runs (percents
            assert sum(b["percents"][i] for b in doc["histogram"]["buckets"]) == \
                pytest.approx(100, abs=0.01)            # rounded to 3 decimals in json)
        assert [sum(b["counts"][i] for b in doc["histogram"]["buckets"]) for i in range(3)] \
            == [6, 6, 3]
    elif fmt == "org":
        assert "|-" in out and "+" in out.splitlines()[2]
        assert out.count("\n|-") == len(comp.pairs)   # under the header, then between files
        assert "# warning:" in out
    elif fmt == "md":
        assert "|---" in out and "**faster**" in out
    else:
        assert "faster" in out and "params.block_size 512 -> 65536" in out
        assert "distribution of bytes/s (shared buckets)" in out


def test_shared_histogram_uses_one_set_of_edges(files):
    comp = compare.load_and_compare([files["small"], files["big"]])
    h = comp.histogram
    assert h is not None
    widths = {round(b.high - b.low, 6) for b in h.buckets}
    assert len(widths) == 1
    assert [sum(b.counts[i] for b in h.buckets) for i in (0, 1)] == [6, 6]
    for i in (0, 1):
        assert sum(b.percents[i] for b in h.buckets) == pytest.approx(100)


@pytest.mark.parametrize("fmt", compare_formats.FORMATS)
def test_one_file_only_shows_its_summary(files, fmt):
    comp = compare.load_and_compare([files["small"]])
    assert comp.single and comp.pairs == []
    out = compare_formats.render(comp, fmt)
    if fmt == "json":
        doc = json.loads(out)
        assert doc["comparisons"] == [] and doc["summary"]["n"] == 6
    elif fmt == "csv":
        (r,) = list(csv.DictReader(io.StringIO(out)))
        assert r["n"] == "6" and float(r["median"]) > 0
    elif fmt == "text":
        assert "one file only" in out and "median" in out
    else:
        assert "median" in out


def test_synthetic_symbol_diff_top_15(files):
    """Synthetic hot symbols on real results (perf is not part of this test)."""
    base = results.read(files["small"])
    new = results.read(files["big"])
    mk = lambda pcts: HotSymbols(tuple(HotSymbol(f"sym{i}", "[kernel.kallsyms]", p, True)
                                       for i, p in enumerate(pcts)), scope="session")
    base = dataclasses.replace(base, session_symbols=mk([5.0] * 20))
    new = dataclasses.replace(new, session_symbols=mk([5.0 + i for i in range(20)]))
    pair = compare.compare([base, new]).pairs[0]
    assert pair.symbols is not None and len(pair.symbols) == 15
    assert pair.symbols[0].symbol == "sym19" and pair.symbols[0].delta == 19
    out = compare_formats.render(compare.compare([base, new]))
    assert "hot symbols" in out and "sym19" in out
    # only one side has symbols: no diff
    assert compare.compare([results.read(files["small"]), new]).pairs[0].symbols is None


def test_synthetic_counters_are_shown_without_a_test(files):
    """Synthetic perf counters in the summary line: one value per session, no test."""
    a, b = results.read(files["small"]), results.read(files["big"])
    for r, cs in ((a, 1000), (b, 1500)):
        r.finished.counters.clear()
        r.finished.counters.update({"context-switches": cs, "cycles": None})
    m = row(compare.compare([a, b]).pairs[0], "perf:context-switches")
    assert m.change_pct == pytest.approx(50) and m.verdict is Verdict.NO_TEST
    assert m.p_value is None and not m.significant


# --------------------------------------------------------------------------- faults

def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg and msg
    return msg


def test_different_workloads_are_refused(files):
    with pytest.raises(HotloopError) as e:
        compare.load_and_compare([files["small"], files["other"]])
    assert "seqpacket" in _one_line(e) and "zero_null" in str(e.value)


def test_not_a_result_file_is_refused(files, tmp_path):
    for text in ("hello\n", '{"a": 1}\n', ""):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(text)
        with pytest.raises(HotloopError) as e:
            compare_formats.main_compare([files["small"], bad], "text")
        assert "bad.jsonl" in _one_line(e)
    with pytest.raises(HotloopError):
        compare_formats.main_compare([tmp_path / "missing.jsonl"], "text")
    with pytest.raises(HotloopError) as e:
        compare_formats.main_compare([files["small"]], "xml")
    assert "xml" in _one_line(e)


def test_zero_runs_are_refused(files, tmp_path):
    header_only = tmp_path / "header.jsonl"
    header_only.write_text(files["small"].read_text().splitlines()[0] + "\n")
    with pytest.raises(HotloopError) as e:
        compare.load_and_compare([header_only, files["small"]])
    assert "baseline" in _one_line(e)
    with pytest.raises(HotloopError) as e:
        compare.load_and_compare([files["small"], header_only])
    assert "header.jsonl" in _one_line(e)


def test_truncated_result_is_compared_and_flagged_partial(files, tmp_path):
    """A crash mid-run: the summary line is gone and the last run line is cut in half."""
    lines = files["big"].read_text().splitlines()
    assert '"finished"' in lines[-1]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-2] + [lines[-2][: len(lines[-2]) // 2]]))
    comp = compare.load_and_compare([files["small"], cut])
    new = comp.pairs[0].new
    assert new.partial and new.runs == 5
    assert row(comp.pairs[0], "bytes/s").verdict is Verdict.GOOD
    text = compare_formats.render(comp)
    assert "PARTIAL" in text and "partial" in text.splitlines()[-1]
    doc = json.loads(compare_formats.render(comp, "json"))
    assert doc["results"][0]["partial"] and all(r["partial"] for r in doc["comparisons"])
    assert "(partial)" in compare_formats.render(comp, "md")
    # a partial baseline works too
    assert compare.load_and_compare([cut, files["big"]]).baseline.partial


# --------------------------------------------------------------------------- sessions as sides

@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real sessions: three of zero_null in one directory, two in another, and one of each of
    two other params; made once for the module."""
    home = tmp_path_factory.mktemp("sessions")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(home / "config"),
               XDG_STATE_HOME=str(home / "state"), XDG_CACHE_HOME=str(home / "cache"))
    stock, patched = home / "stock", home / "patched"
    for d, k in ((stock, 3), (patched, 2)):
        d.mkdir()
        for _ in range(k):
            _run(env, d, "zero_null", "--runs", RUNS, "--param", COUNT)
    return {"stock": stock, "patched": patched, "home": home,
            "other": _run(env, home, "zero_null", "--runs", RUNS, "--param", COUNT,
                          "--param", "block_size=1024"),
            "seqpacket": _run(env, home, "seqpacket", "--runs", "5", "--param", "msgs=2000")}


def test_sides_made_of_sessions_directories_and_commas(sessions):
    stock, patched = sessions["stock"], sessions["patched"]
    comp = compare.load_and_compare([str(stock), str(patched)])
    base, new = comp.sides
    assert (base.sessions, new.sessions) == (3, 2) and (base.runs, new.runs) == (18, 12)
    assert base.name == "stock" and new.name == "patched"
    (pair,) = comp.pairs
    m = row(pair, "bytes/s")
    assert m.method == "sessions" and (m.sessions_baseline, m.sessions_new) == (3, 2)
    assert m.noise_source == "measured" and m.session_noise_pct is None
    assert m.ci_low < m.change_pct < m.ci_high
    # the same sessions named one by one, joined by commas, are the same comparison
    files = sorted(str(p) for p in stock.glob("*.jsonl"))
    again = compare.load_and_compare([",".join(files), str(patched)])
    assert row(again.pairs[0], "bytes/s").ci_low == pytest.approx(m.ci_low)
    # a side's histogram pools its sessions
    h = comp.histogram
    assert [sum(b.counts[i] for b in h.buckets) for i in (0, 1)] == [18, 12]
    text = compare_formats.render(comp)
    assert "3 sessions, 18 runs" in text and "sessions as replicates" in text
    assert "measured from the sides' own sessions" in text
    assert "| 3 vs 2 |" in compare_formats.render(comp, "md")
    doc = json.loads(compare_formats.render(comp, "json"))
    r = doc["comparisons"][0]
    assert (r["sessions_baseline"], r["sessions_new"], r["session_noise_pct"]) == (3, 2, None)
    assert doc["baseline"]["sessions"] == 3 and len(doc["baseline"]["files"]) == 3
    csv_row = next(csv.DictReader(io.StringIO(compare_formats.render(comp, "csv"))))
    assert csv_row["sessions_baseline"] == "3" and csv_row["method"] == "sessions"
    assert "3/2" in compare_formats.render(comp, "org")


def test_bad_sides_are_one_line_exit_2(sessions, tmp_path):
    stock = sessions["stock"]
    one = sorted(stock.glob("*.jsonl"))[0]
    empty = tmp_path / "empty"
    empty.mkdir()
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.jsonl").write_text(one.read_text())
    (mixed / "b.jsonl").write_text(sessions["seqpacket"].read_text())
    params = f"{one},{sessions['other']}"
    for args, expected in [
        ([str(empty), str(stock)], "no result files"),
        ([str(stock), str(mixed)], "workload"),
        ([params, str(stock)], "params"),
        ([f"{one},{one}", str(stock)], "named twice"),
    ]:
        p = hotloop("compare", *args)
        assert p.returncode == 2, (args, p.stderr)
        assert expected in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_one_session_a_side_without_calibration_says_so(sessions):
    a, b = sorted(sessions["stock"].glob("*.jsonl"))[:2]
    comp = compare.load_and_compare([a, b])
    m = row(comp.pairs[0], "bytes/s")
    assert m.noise_source == "assumed" and m.noise_pct >= 3.0
    # live runs: how noisy they were decides which of the two no-call words it gets
    assert not m.significant and m.verdict in (Verdict.WITHIN_NOISE, Verdict.TOO_NOISY)
    assert verdicts.word(m).startswith(("within assumed noise (±", "too noisy to call: runs "))
    # at least an assumed 3% session noise: nothing smaller than about 8% is called
    assert m.ci_high - m.ci_low > 2 * 8
    hint = "hotloop calibrate zero_null"
    assert any(hint in w and "no noise profile" in w for w in comp.warnings)
    for fmt in ("text", "md", "org"):
        assert hint in compare_formats.render(comp, fmt)
    doc = json.loads(compare_formats.render(comp, "json"))
    assert doc["comparisons"][0]["session_noise_pct"] is None
    assert doc["noise_profile"] is None and any(hint in w for w in doc["warnings"])


def test_interleaved_variants_are_compared_round_by_round(tmp_path):
    p = hotloop("run", "zero_null", "--param", "count=5000", "--param", "spin=0,1000",
                "--interleave", "--runs", "15", "--no-perf", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    files = [r["result_file"] for r in doc["results"]]
    batch = [results.read(Path(f)).header.batch for f in files]
    assert batch[0] is not None and batch[0].interleaved and batch[0] == batch[1]
    row_ = next(r for r in doc["comparison"]["comparisons"] if r["metric"] == "bytes/s")
    # live runs on a shared machine: the paired test may not call spin=1000 (its interval
    # reached +51% once under load); when it does, the word is "slower"
    assert row_["method"] == "paired" and row_["change_pct"] < 0, row_
    assert row_["verdict"] == "slower" or not row_["significant"], row_
    assert row_["noise_source"] is None
    # a paired change comes from the rounds: its diff says the same, whatever the medians do
    for r in doc["comparison"]["comparisons"]:
        if r["change_pct"] and r["method"] == "paired":
            assert (r["diff"] > 0) == (r["change_pct"] > 0), r
    text = hotloop("compare", *files).stdout
    assert compare_formats.PAIRED_NOTE in text
    # what the variants differ in is what the batch asked for: said, not warned about
    assert not any("differs" in w for w in doc["comparison"]["warnings"])
    assert "the variants differ in: params.spin 0 -> 1000" in text
    assert "differs in more than the kernel" not in text
    # five worker processes a variant by default: the paired test's blocks
    assert results.read(Path(files[0])).header.plan.processes == 5
    one = hotloop("run", "zero_null", "--param", "count=5000", "--param", "spin=0,400",
                  "--interleave", "--runs", "8", "--processes", "1", "--no-perf",
                  "--format", "json")
    assert one.returncode == 0, one.stderr
    comparison = json.loads(one.stdout)["comparison"]
    row_ = next(r for r in comparison["comparisons"] if r["metric"] == "bytes/s")
    assert row_["verdict"] == "too few processes (n<3)" and not row_["significant"]
    assert any("--processes 5" in w for w in comparison["warnings"])
    # two separate (not interleaved) sessions of the same settings are not paired
    comp = compare.load_and_compare([files[0], files[0]])
    assert comp.pairs[0].method == "exact"


def test_compare_memory_does_not_grow_with_resamples_times_runs(tmp_path):
    """20,000 runs a side: a bootstrap holding resamples x runs took 1.6 GB here; the
    order-statistic methods hold the runs.  benchmarks/compare_memory.py measures 100,000."""
    import numpy as np

    from hotloop import events as ev
    from hotloop.record import Header, Summary, WorkloadInfo
    from hotloop.results import Writer
    rng = np.random.default_rng(3)
    paths = []
    for name, shift in (("a", 0.0), ("b", 0.01)):
        path = tmp_path / f"{name}.jsonl"
        w = Writer(path)
        w.write(ev.Started(Header(host="h", workload=WorkloadInfo(
            "synthetic", metric="ns/op", unit="ns/op", higher_is_better=False))))
        for i, v in enumerate(np.exp(rng.normal(np.log(100) + shift, 0.02, 20000))):
            ns = int(v * 1000)              # the value is what its counters say
            w.write(ev.RunSample(index=i, value=ns / 1000, ops=1000, bytes=0, ns=ns, cycles=0))
        w.write(ev.Finished(Summary()))
        w.close()
        paths.append(str(path))
    probe = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'hotloop', "
             f"'compare', {paths[0]!r}, {paths[1]!r}, '--format', 'json'], check=True, "
             "stdout=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) < 300 * 1024, f"{int(p.stdout) / 1024:.0f} MB"


def test_a_side_is_of_one_kernel_and_a_session_of_one_side(sessions, tmp_path):
    stock = sorted(sessions["stock"].glob("*.jsonl"))
    patched = sorted(sessions["patched"].glob("*.jsonl"))
    # a side that mixes kernels is compared, and said
    forged = tmp_path / "other-kernel.jsonl"
    lines = patched[0].read_text().splitlines()
    head = json.loads(lines[0])
    head["header"]["kernel_release"] = "6.1-patched"
    forged.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    comp = compare.load_and_compare([f"{stock[0]},{forged}", str(sessions["patched"])])
    assert any("differ among themselves in kernel" in w for w in comp.warnings)
    # the same file on two different sides is refused; a side against itself is fine
    with pytest.raises(HotloopError) as e:
        compare.load_and_compare([f"{stock[0]},{stock[1]}", f"{stock[1]},{patched[0]}"])
    assert "in two sides" in _one_line(e)
    same = compare.load_and_compare([str(sessions["stock"]), str(sessions["stock"])])
    assert same.pairs[0].method == "exact"


def test_sides_are_named_by_as_much_of_their_path_as_tells_them_apart(files, tmp_path):
    """Two sessions both called s1, in A/ and A2/: A/s1 and A2/s1, not s1 and s1#2; a label
    with a newline (a forged header) is shown escaped, never as a line of its own."""
    for d in ("A", "A2"):
        (tmp_path / d).mkdir()
    a, b = tmp_path / "A" / "s1.jsonl", tmp_path / "A2" / "s1.jsonl"
    a.write_bytes(files["small"].read_bytes())
    b.write_bytes(files["big"].read_bytes())
    comp = compare.load_and_compare([a, b])
    assert [s.name for s in comp.sides] == ["A/s1", "A2/s1"]
    assert "baseline = the first side" in compare_formats.render(comp)
    rows = files["big"].read_text().split("\n")
    head = json.loads(rows[0])
    head["header"]["label"] = "patched\nbaseline  FAKE"
    b.write_text("\n".join([json.dumps(head), *rows[1:]]))
    comp = compare.load_and_compare([a, b])
    assert comp.sides[1].name == "patched\\nbaseline  FAKE"
    for fmt in ("text", "md", "org"):
        out = compare_formats.render(comp, fmt)
        assert not any(line.startswith("baseline  FAKE") for line in out.splitlines()), fmt
        assert "patched\\nbaseline  FAKE" in out, fmt
