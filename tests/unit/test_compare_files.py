"""hotloop compare on result files with known numbers: statistics, metadata check, shared
histogram, symbol diff, formats, sessions as sides, faults.

The files are forged (tests/forge.py) in the shape `hotloop run zero_null` writes: 512-byte
blocks at about 2.3 GB/s, 64 KiB blocks at about 13 GB/s, each session's runs scattered by about
1%.  A verdict here is the statistics' answer to those numbers, whatever the machine is doing;
tests/e2e/test_compare.py keeps what needs a real run (interleaved variants, compare's memory).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from pathlib import Path

import forge
import pytest

from hotloop import results
from hotloop.analysis import compare, comparison
from hotloop.analysis.comparison import Verdict
from hotloop.cli import main
from hotloop.errors import HotloopError
from hotloop.events import HotSymbol, HotSymbols
from hotloop.render import compare_formats, verdicts
from hotloop.render.compare_formats.shared import PAIRED_NOTE
from hotloop.render.warning_words import words

SEQPACKET = {**forge.ZERO_NULL, "name": "seqpacket", "source": "/forged/csrc/seqpacket.c",
             "procs": 2}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    home = tmp_path_factory.mktemp("compare")
    return {
        "small": forge.zero_null(home / "0-zero_null.jsonl", forge.NS_512),
        "big": forge.zero_null(home / "1-zero_null.jsonl", forge.NS_64K, block_size=65536),
        "few": forge.zero_null(home / "2-zero_null.jsonl", forge.NS_512, n=3),
        "other": forge.write(home / "3-seqpacket.jsonl",
                             forge.header(SEQPACKET, {"msg_size": 16, "msgs": 2000,
                                                      "type": "seqpacket"}, runs=2),
                             [forge.run(i, "bytes/s", ops=2000, bytes=32000, ns=40_000 + i)
                              for i in range(2)]),
    }


def row(pair: comparison.Pair, metric: str) -> comparison.MetricDelta:
    return next(m for m in pair.metrics if m.metric == metric)


@pytest.fixture
def calibrated(tmp_path: Path) -> None:
    """This (forged) machine calibrated for both block sizes, as `hotloop calibrate DIR`
    stores it: one session a side is then judged on that noise, not only given a direction."""
    for ns, size in ((forge.NS_512, 512), (forge.NS_64K, 65536)):
        d = forge.aa_sessions(tmp_path / f"aa-{size}", ns, block_size=size)
        assert main(["calibrate", str(d)]) == 0


# --------------------------------------------------------------------------- statistics

def test_a_a_is_exactly_zero_and_not_significant(files):
    comp = compare.load_and_compare([files["small"], files["small"]])
    (pair,) = comp.pairs
    assert {m.metric for m in pair.metrics} >= {"bytes/s", "ns/op", "user_s", "sys_s"}
    for m in pair.metrics:
        assert m.test.change_pct == 0.0 and m.test.diff == 0.0, m
        assert not m.test.significant and m.test.verdict is Verdict.NO_CHANGE, m
        assert m.test.p_value == pytest.approx(1.0)
        assert m.test.ci_low is None or m.test.ci_low <= 0.0 <= m.test.ci_high
    assert pair.metadata == []
    text = compare_formats.render(comp)
    assert "+0%" in text and "same within ±5%" in text


def test_clearly_different_pair_is_significant_and_directions_follow_the_metric(files,
                                                                              calibrated):
    """64 KiB blocks move far more bytes/s (higher is better: faster) but each op takes
    longer (ns/op, lower is better: slower) - both directions from one pair."""
    pair = compare.load_and_compare([files["small"], files["big"]]).pairs[0]
    rate, per_op = row(pair, "bytes/s"), row(pair, "ns/op")
    assert rate.test.change_pct > 50 and rate.test.ci_low > 0 and rate.test.p_value < 0.05
    assert rate.test.significant and rate.test.verdict is Verdict.GOOD
    assert per_op.test.change_pct > 0 and per_op.test.significant and per_op.test.verdict is Verdict.BAD
    # the other way round, a drop in ns/op (lower is better) is "faster"
    back = compare.load_and_compare([files["big"], files["small"]]).pairs[0]
    assert row(back, "ns/op").test.change_pct < 0 and row(back, "ns/op").test.verdict is Verdict.GOOD
    assert row(back, "bytes/s").test.verdict is Verdict.BAD
    assert [d.field for d in pair.metadata] == ["params.block_size"]


def test_fewer_than_five_runs_says_so(files):
    comp = compare.load_and_compare([files["small"], files["few"]])
    for m in comp.pairs[0].metrics:
        assert m.test.verdict is Verdict.TOO_FEW_RUNS and not m.test.significant
        assert m.test.n_new == 3
    assert "too few runs (n<5)" in compare_formats.render(comp)


# --------------------------------------------------------------------------- formats

@pytest.mark.parametrize("fmt", compare_formats.FORMATS)
def test_every_format_renders_and_parses(files, fmt, calibrated):
    comp = compare.load_and_compare([files["small"], files["big"], files["few"]])
    out = compare_formats.main_compare([files["small"], files["big"], files["few"]], fmt)
    n_rows = sum(len(p.metrics) for p in comp.pairs)
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == n_rows
        first = rows[0]
        # one session a side, calibrated in their boot and sitting: a call that says the
        # data could not check its calibration
        assert first["metric"] == "bytes/s" and first["verdict"] == (
            "faster (calibration unchecked: from their boot and sitting)")
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
        assert "+" in next(ln for ln in out.splitlines() if ln.startswith("|-"))
        assert out.count("\n|-") == len(comp.pairs)   # under the header, then between files
        assert "# warning:" in out
    elif fmt == "md":
        assert "|---" in out and "**faster (calibration unchecked" in out
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
    """Synthetic hot symbols on the results (perf is not part of this test)."""
    base = results.read(files["small"])
    new = results.read(files["big"])
    mk = lambda pcts: HotSymbols(tuple(HotSymbol(f"sym{i}", "[kernel.kallsyms]", p, True)
                                       for i, p in enumerate(pcts)), scope="session")
    base = dataclasses.replace(base, session_symbols=mk([5.0] * 20))
    new = dataclasses.replace(new, session_symbols=mk([5.0 + i for i in range(20)]))
    pair = compare.compare([base, new]).pairs[0]
    # every row in the pair (the json is for tools), the text its top 15
    assert pair.symbols is not None and len(pair.symbols) == 20
    assert pair.symbols[0].symbol == "sym19" and pair.symbols[0].delta == 19
    out = compare_formats.render(compare.compare([base, new]))
    assert "hot symbols" in out and "sym19" in out
    assert sum(x.startswith("  [k] sym") for x in out.splitlines()) == 15
    doc = json.loads(compare_formats.render(compare.compare([base, new]), "json"))
    assert len(doc["symbol_diffs"][0]["symbols"]) == 20
    # only one side has symbols: no diff
    assert compare.compare([results.read(files["small"]), new]).pairs[0].symbols is None


def test_synthetic_counters_are_shown_without_a_test(files):
    """Synthetic perf counters in the summary line: one value per session, no test."""
    a, b = results.read(files["small"]), results.read(files["big"])
    for r, cs in ((a, 1000), (b, 1500)):
        r.finished.counters.clear()
        r.finished.counters.update({"context-switches": cs, "cycles": None})
    m = row(compare.compare([a, b]).pairs[0], "perf:context-switches")
    assert m.test.change_pct == pytest.approx(50) and m.test.verdict is Verdict.NO_TEST
    assert m.test.p_value is None and not m.test.significant


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


def test_truncated_result_is_compared_and_flagged_partial(files, tmp_path, calibrated):
    """A crash mid-run: the summary line is gone and the last run line is cut in half."""
    lines = files["big"].read_text().splitlines()
    assert '"finished"' in lines[-1]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-2] + [lines[-2][: len(lines[-2]) // 2]]))
    comp = compare.load_and_compare([files["small"], cut])
    new = comp.pairs[0].new
    assert new.partial and new.runs == 5
    assert row(comp.pairs[0], "bytes/s").test.verdict is Verdict.GOOD
    text = compare_formats.render(comp)
    assert "PARTIAL" in text and "partial" in text.splitlines()[-1]
    doc = json.loads(compare_formats.render(comp, "json"))
    assert doc["results"][0]["partial"] and all(r["partial"] for r in doc["comparisons"])
    assert "(partial)" in compare_formats.render(comp, "md")
    # a partial baseline works too
    assert compare.load_and_compare([cut, files["big"]]).baseline.partial


# --------------------------------------------------------------------------- sessions as sides

# The centres of the sessions of one setting: about 1% apart, as separate sessions are.
SESSION_NS = (4_350_000, 4_390_000, 4_320_000)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three sessions of zero_null in one directory, two in another, and one of each of two
    other params."""
    home = tmp_path_factory.mktemp("sessions")
    stock, patched = home / "stock", home / "patched"
    for d, k in ((stock, 3), (patched, 2)):
        for i in range(k):
            forge.zero_null(d / f"{i}-zero_null.jsonl", SESSION_NS[i])
    return {"stock": stock, "patched": patched, "home": home,
            "other": forge.zero_null(home / "5-zero_null.jsonl", forge.NS_512,
                                     block_size=1024),
            "seqpacket": forge.write(home / "6-seqpacket.jsonl",
                                     forge.header(SEQPACKET, {"msgs": 2000}, runs=5),
                                     [forge.run(i, "bytes/s", ops=2000, bytes=32000,
                                                ns=40_000 + i) for i in range(5)])}


def test_sides_made_of_sessions_directories_and_commas(sessions):
    stock, patched = sessions["stock"], sessions["patched"]
    comp = compare.load_and_compare([str(stock), str(patched)])
    base, new = comp.sides
    assert (base.sessions, new.sessions) == (3, 2) and (base.runs, new.runs) == (18, 12)
    assert base.name == "stock" and new.name == "patched"
    (pair,) = comp.pairs
    m = row(pair, "bytes/s")
    assert m.test.method == "sessions" and (m.test.sessions_baseline, m.test.sessions_new) == (3, 2)
    assert m.test.noise_source == "measured" and m.test.session_noise_pct is None
    assert m.test.ci_low < m.test.change_pct < m.test.ci_high
    # the same sessions named one by one, joined by commas, are the same comparison
    files = sorted(str(p) for p in stock.glob("*.jsonl"))
    again = compare.load_and_compare([",".join(files), str(patched)])
    assert row(again.pairs[0], "bytes/s").test.ci_low == pytest.approx(m.test.ci_low)
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


def test_bad_sides_are_one_line_exit_2(sessions, tmp_path, cli):
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
        p = cli("compare", *args)
        assert p.returncode == 2, (args, p.stderr)
        assert expected in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_one_file_named_twice_by_a_link_is_refused_either_kind(sessions, tmp_path, cli):
    # A symbolic and a hard link are the same file as the name they link: the same inode,
    # one rule for both (a copy, another inode, is counted once with a warning instead).
    one = sorted(sessions["stock"].glob("*.jsonl"))[0]
    (tmp_path / "sym.jsonl").symlink_to(one)
    os.link(one, tmp_path / "hard.jsonl")
    for name in ("hard.jsonl", "sym.jsonl"):
        link = tmp_path / name
        p = cli("compare", f"{one},{link}", str(sessions["patched"]))
        assert p.returncode == 2, (name, p.stdout, p.stderr)
        assert f"{link}: named twice in one side (as {one})" in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_one_session_a_side_without_calibration_says_so(sessions):
    a, b = sorted(sessions["stock"].glob("*.jsonl"))[:2]
    comp = compare.load_and_compare([a, b])
    m = row(comp.pairs[0], "bytes/s")
    assert m.test.noise_source == "assumed" and m.test.noise_pct >= 3.0
    assert not m.test.significant and m.test.verdict is Verdict.ONE_A_SIDE
    assert verdicts.word(m).startswith("no verdict: one session a side: cannot tell ")
    # at least an assumed 3% session noise: the interval is at least about ±8% wide (and
    # nothing beyond it is called either)
    assert m.test.ci_high - m.test.ci_low > 2 * 8
    hint = "hotloop calibrate zero_null"
    assert any(hint in w and "no noise profile" in w for w in map(words, comp.warnings))
    for fmt in ("text", "md", "org"):
        assert hint in compare_formats.render(comp, fmt)
    doc = json.loads(compare_formats.render(comp, "json"))
    assert doc["comparisons"][0]["session_noise_pct"] is None
    assert doc["noise_profile"] is None and any(hint in w for w in [x["text"] for x in doc["warnings"]])


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
    assert any("differ among themselves in kernel" in w for w in map(words, comp.warnings))
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


def test_compare_command_formats(tmp_path, cli):
    a = forge.zero_null(tmp_path / "a.jsonl", forge.NS_512 * 3000 // 20000, count=3000, n=5)
    b = forge.zero_null(tmp_path / "b.jsonl", forge.NS_512 * 3030 // 20000, count=3000, n=5)
    org = cli("compare", str(a), str(b), "--format", "org")
    assert org.returncode == 0 and "|-" in org.stdout
    same = json.loads(cli("compare", str(a), str(a), "--format", "json").stdout)
    row = next(r for r in same["comparisons"] if r["metric"] == "bytes/s")
    assert row["change_pct"] == 0 and row["significant"] is False
    bad = cli("compare", str(a), str(tmp_path / "nope.jsonl"))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- interleaved

def interleaved(home: Path, spins: tuple[int, int], rounds: int, processes: int,
                drift: float = 0.04) -> list[Path]:
    """Two variants of one interleaved batch (spin=A vs spin=B), one run each a round: every
    round drifts the same way for both (a frequency change, a neighbour), each run scatters
    by its own +-0.3%, and each spin iteration costs 1 ns a block."""
    batch = {"id": "forgedbatch00001", "interleaved": True, "variants": 2}
    out = []
    for spin in spins:
        variant = f"spin={spin}"
        head = forge.header(params={"block_size": 512, "count": 5000, "spin": spin},
                            runs=rounds, variant=variant, batch=batch)
        head["plan"] = {**head["plan"], "processes": processes}
        ns = [round((1_100_000 + 5000 * spin) * (1 + drift * ((i * 7) % 5 - 2) / 2)
                    * (1 + 0.003 * (-1) ** (i + len(out))))      # and its own +-0.3%
              for i in range(rounds)]
        out.append(forge.zero_null(home / f"{len(out)}-{variant}.jsonl", ns, count=5000, head=head,
                                   variant=variant))
    return out


def test_interleaved_variants_are_compared_round_by_round(tmp_path, cli):
    """What a real interleaved batch writes (tests/e2e/test_compare.py runs one), with a
    known cost: spin=1000 is slower, found by the paired test on the rounds."""
    files = [str(p) for p in interleaved(tmp_path, (0, 1000), rounds=15, processes=5)]
    doc = json.loads(cli("compare", *files, "--format", "json").stdout)
    row_ = next(r for r in doc["comparisons"] if r["metric"] == "bytes/s")
    assert row_["method"] == "paired" and row_["verdict"] == "slower", row_
    assert row_["significant"] and row_["noise_source"] is None
    for r in doc["comparisons"]:
        if r["change_pct"] and r["method"] == "paired":
            assert (r["diff"] > 0) == (r["change_pct"] > 0), r
    text = cli("compare", *files).stdout
    assert " ".join(PAIRED_NOTE.split()) in " ".join(text.split())     # wrapped to COLUMNS
    # the same drift on both sides with no cost between them: no change
    same = [str(p) for p in interleaved(tmp_path / "same", (0, 0), rounds=15, processes=5)]
    row_ = next(r for r in json.loads(cli("compare", *same, "--format", "json").stdout)
                ["comparisons"] if r["metric"] == "bytes/s")
    assert row_["method"] == "paired" and row_["verdict"] == "same within ±5%", row_
    # one worker process a variant: no verdict, whatever the numbers
    one = [str(p) for p in interleaved(tmp_path / "one", (0, 1000), rounds=8, processes=1)]
    comparison = json.loads(cli("compare", *one, "--format", "json").stdout)
    row_ = next(r for r in comparison["comparisons"] if r["metric"] == "bytes/s")
    assert row_["verdict"] == "too few processes (n<3)" and not row_["significant"]
    assert any("--processes 5" in w for w in [x["text"] for x in comparison["warnings"]])
    # the same session on both sides is not paired
    assert compare.load_and_compare([files[0], files[0]]).pairs[0].method == "exact"


def test_json_carries_a_forged_label_as_it_is_and_text_shows_it_inert(tmp_path, cli):
    # JSON escapes a control character itself (\u001b): a reader gets the real string back,
    # not "\\x1b" as text; the text formats show it as an escape, never send it.
    nasty = {"label": "st\x1b[31mock", "kernel_release": "6.1\x1b[2J", "variant": "v\u202eX"}
    head = forge.header(params={"block_size": 512, "count": 20000, "spin": 0}, **nasty)
    a = forge.zero_null(tmp_path / "a.jsonl", forge.NS_512, head=head)
    b = forge.zero_null(tmp_path / "b.jsonl", forge.NS_512 * 11 // 10)
    p = cli("compare", str(a), str(b), "--format", "json")
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout and "\\\\x1b" not in p.stdout
    doc = json.loads(p.stdout)
    base = doc["baseline"]
    assert (base["label"], base["kernel"], base["variant"]) == (
        nasty["label"], nasty["kernel_release"], nasty["variant"])
    assert base["name"] == nasty["variant"]         # named by its variant
    p = cli("compare", str(b), str(a), "--format", "json")
    doc = json.loads(p.stdout)
    assert doc["results"][0]["label"] == nasty["label"]
    assert {r["label"] for r in doc["comparisons"]} == {nasty["label"]}
    shown = cli("show", str(a), "--format", "json")
    assert json.loads(shown.stdout)["label"] == nasty["label"] and "\x1b" not in shown.stdout
    for fmt in ("text", "md", "org", "csv"):          # the forged side a row's (csv: only)
        p = cli("compare", str(b), str(a), "--format", fmt)
        assert p.returncode == 0 and "\x1b" not in p.stdout, (fmt, p.stderr)
        assert "\u202e" not in p.stdout and "v\\u202eX" in p.stdout, (fmt, p.stdout)


def _perf_side(d: Path, label: str, perf: list[bool], symbols: list[bool]) -> Path:
    """Sessions of zero_null labelled `label`, each with perf on or off in its header and
    with hot symbols or without (perf asked for but not started, or its report failed)."""
    for i, (on, syms) in enumerate(zip(perf, symbols)):
        head = forge.header(params={"block_size": 512, "count": 20000, "spin": 0}, label=label)
        head["plan"]["perf"] = on
        forge.zero_null(d / f"{i}.jsonl", SESSION_NS[i], head=head,
                        more=[forge.symbols([40.0, 20.0])] if syms else [])
    return d


def _said(comp: comparison.Comparison, cli, a: Path, b: Path) -> list[str]:
    """The warnings, after checking every format says each of those on perf (text shows a
    header difference under its pair, in words of its own)."""
    for fmt in ("text", "md", "org", "json"):
        out = cli("compare", str(a), str(b), "--format", fmt).stdout
        flat = " ".join(out.split())
        for w in map(words, comp.warnings):
            if "hot symbols" not in w and "differ in perf" not in w:
                continue
            assert " ".join(w.split()) in flat, (fmt, w)
    return [words(w) for w in comp.warnings]


def test_sessions_without_hot_symbols_are_warned_of_in_every_format(tmp_path, cli):
    # perf asked for on both sides, and failed in 3 of 4 sessions (no ack from perf, its
    # report timed out): no symbol section, and it must say why
    a = _perf_side(tmp_path / "A", "stock", [True, True], [True, False])
    b = _perf_side(tmp_path / "B", "patched", [True, True], [False, False])
    comp = compare.load_and_compare([a, b])
    assert comp.pairs[0].symbols is None
    said = _said(comp, cli, a, b)
    assert ("1 of 2 sessions of side stock has no hot symbols (perf did not run or failed): "
            "no symbol diff with this side") in said
    assert "2 of 2 sessions of side patched have no hot symbols (perf did not run or failed): " \
        "no symbol diff with this side" in said
    assert not any("differ in perf" in w for w in said)     # both asked for it


def test_sides_that_differ_in_perf_on_or_off_are_warned_of(tmp_path, cli):
    a = _perf_side(tmp_path / "A", "stock", [True, True], [True, True])
    b = _perf_side(tmp_path / "B", "patched", [False, False], [False, False])
    comp = compare.load_and_compare([a, b])
    said = _said(comp, cli, a, b)
    assert ("sides differ in perf: on in stock, off in patched: perf's overhead is in one "
            "side's numbers only") in said
    assert not any("side stock" in w for w in said)         # its symbols are all there
    c = _perf_side(tmp_path / "C", "mixed", [True, False], [True, False])
    said = [words(w) for w in compare.load_and_compare([b, c]).warnings]
    assert ("sides differ in perf: off in patched, on in 1 of 2 sessions of mixed: perf's "
            "overhead is in some sessions' numbers only") in said
    # neither side asked for perf: nothing is missing, nothing differs
    quiet = compare.load_and_compare([b, _perf_side(tmp_path / "D", "other", [False] * 2,
                                                    [False] * 2)])
    assert not any("perf" in w for w in map(words, quiet.warnings)), quiet.warnings
