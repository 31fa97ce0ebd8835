"""Result files edited by hand: one line naming file and line, never a traceback.

`results.read` is what `show`, `compare` and the console's compare screen read
through, so a field of the wrong type, a missing field, or a number that is no
measurement (NaN, infinities: not JSON; beyond what a float64 can do arithmetic
on) is refused there, once, for all of them.  Every file here is a forged good one
(tests/forge.py: 5 runs of zero_null) edited one way; the command line is called in this
process.  tests/e2e/test_result_reading.py checks that the one line reaches a terminal
from the real command, and the console's compare screen.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import forge
import pytest
from conftest import ROOT
from forge import Rows, delete_key, edited, first_run, header_key, insert, raw_run, rows_of, set_run

from hotloop import results
from hotloop.errors import HotloopError


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A good result file: 5 runs of zero_null, count=3000, as `hotloop run` writes them."""
    return forge.zero_null(tmp_path_factory.mktemp("good") / "good.jsonl",
                           forge.NS_512 * 3000 // 20000, count=3000, n=5)


RUN_LINE = -1          # the first recorded run's line: found at test time
NEXT_RUN_LINE = -2     # the line after it
AFTER_LAST = -3        # one past the good file's last line
CASES = [
    # what was done to the file, the line it names (1 = the header), words of the reason
    ("header-5", lambda rows: rows[0].__setitem__("header", 5), 1, "header: expected an object"),
    ("value-string", set_run("value", "12"), RUN_LINE, "value: expected a number, got '12'"),
    ("value-bool", set_run("value", True), RUN_LINE, "value: expected a number, got True"),
    ("value-null", set_run("value", None), RUN_LINE, "value: expected a number, got None"),
    ("run-without-ns", delete_key("ns"), RUN_LINE, "run line without 'ns'"),
    ("ops-float", set_run("ops", 1.5), RUN_LINE, "ops: expected an integer"),
    ("ops-negative", set_run("ops", -1), RUN_LINE, "ops: -1 is below 0"),
    # edited by hand: a value its counters do not give, runs out of turn, a line past the end
    ("value-negated", lambda rows: rows[first_run(rows)].__setitem__(
        "value", -rows[first_run(rows)]["value"]), RUN_LINE, "is not the bytes/s of its counters"),
    ("value-x100", lambda rows: rows[first_run(rows)].__setitem__(
        "value", 100 * rows[first_run(rows)]["value"]), RUN_LINE,
     "is not the bytes/s of its counters"),
    ("index-repeated", lambda rows: rows.insert(first_run(rows) + 1, rows[first_run(rows)]),
     NEXT_RUN_LINE, "run 0 where run 1 comes next"),
    ("warmup-numbered-up", lambda rows: rows[first_run(rows)].update(warmup=True), RUN_LINE,
     "a warmup numbered 0"),
    ("run-after-finished", lambda rows: rows.append(rows[first_run(rows)]), AFTER_LAST,
     "a line after the session's last"),
    ("extra-not-object", set_run("extra", [1]), RUN_LINE, "extra: expected an object"),
    ("extra-string", set_run("extra", {"user_s": "fast"}), RUN_LINE,
     "extra: user_s: expected a number"),
    ("symbols-not-list", insert({"type": "hot_symbols", "symbols": "abc", "scope": "session"}),
     RUN_LINE, "symbols: expected a list"),
    ("symbol-percent", insert({"type": "hot_symbols", "scope": "window", "symbols": [
        {"symbol": "f", "dso": "x", "percent": "9%", "kernel": False}]}), RUN_LINE,
     "symbols: item 0: percent: expected a number"),
    ("warning-list", insert({"type": "warning", "message": ["a"]}), RUN_LINE,
     "message: expected a string"),
    ("perf-start-no-started", insert({"type": "perf_start", "seconds": 1.0}), RUN_LINE,
     "perf_start line without 'started'"),
    ("perf-start-negative", insert({"type": "perf_start", "started": True, "seconds": -2}),
     RUN_LINE, "seconds: -2 is below 0"),
    ("not-an-object", insert([1, 2]), RUN_LINE, "expected an object, got [1, 2]"),
    ("unknown-type", insert({"type": "runs"}), RUN_LINE, "unknown type 'runs'"),
    ("nested-deep", insert("[" * 100_000), RUN_LINE, "nested too deep"),
    ("second-header", lambda rows: rows.insert(first_run(rows), rows[0]), RUN_LINE,
     "a second header line"),
    ("workload-not-object", header_key("workload", "zero_null"), 1,
     "header: workload: expected an object"),
    ("params-list", header_key("params", [1]), 1, "header: params: expected an object"),
    ("unit-number", lambda rows: rows[0]["header"]["workload"].__setitem__("unit", 5), 1,
     "header: workload: unit: expected a string"),
    ("cpus-number", lambda rows: rows[0]["header"]["cpu"].__setitem__("cpus", 5), 1,
     "header: cpu: cpus: expected a list"),
    # a key no format ever wrote: a typo read as nothing, were it not refused
    ("header-unknown-key", header_key("runz", 5), 1, "header: unknown key 'runz'"),
    ("plan-unknown-key", lambda rows: rows[0]["header"]["plan"].__setitem__("runz", 3), 1,
     "header: plan: unknown key 'runz'"),
    ("sysctl-unknown-key", lambda rows: rows[0]["header"].__setitem__(
        "sysctl", {"vm.x": {"before": "0", "after": "1"}}), 1,
     "header: sysctl: vm.x: unknown key 'after'"),
    ("counters-string", lambda rows: rows[-1].__setitem__("counters", "x"), 0,
     "counters: expected an object"),
    ("old-counters-string", lambda rows: rows[-1]["summary"].__setitem__("counters", "x"), 0,
     "summary: counters: format 1's, beside the line's own"),
    # numbers that are no measurement
    ("nan-token", raw_run('"value": ', '"value": NaN, "was": '), RUN_LINE, "NaN is not JSON"),
    ("infinity-extra", raw_run('"extra": {', '"extra": {"lat": -Infinity, '), RUN_LINE,
     "-Infinity is not JSON"),
    ("overflowing-literal", raw_run('"value": ', '"value": 1e999, "was": '), RUN_LINE,
     "value: inf is not a finite number"),
    ("huge", set_run("value", 1e308), RUN_LINE, "outside the range of a measurement"),
    ("huge-int", set_run("value", 10**400), RUN_LINE, "is not a finite number"),
    ("denormal", set_run("value", 5e-324), RUN_LINE, "outside the range of a measurement"),
]


def expected_line(case_line: int, good: Path) -> int:
    rows = rows_of(good)
    return {RUN_LINE: first_run(rows) + 1, NEXT_RUN_LINE: first_run(rows) + 2, 0: len(rows),
            AFTER_LAST: len(rows) + 1}.get(case_line, case_line)


@pytest.mark.parametrize("name, change, line, reason", CASES, ids=[c[0] for c in CASES])
def test_a_forged_line_is_refused_naming_file_and_line(tmp_path, good, name, change, line,
                                                       reason):
    bad = edited(good, tmp_path / f"{name}.jsonl", change)
    with pytest.raises(HotloopError) as e:
        results.read(bad)
    message = str(e.value)
    assert message.startswith(f"{bad}:{expected_line(line, good)}: "), message
    assert reason in message and "\n" not in message


@pytest.mark.parametrize("name", ["header-5", "value-string", "run-without-ns",
                                  "symbols-not-list", "nan-token"])
def test_show_and_compare_say_one_line_and_exit_2(tmp_path, good, name, cli):
    _, change, line, reason = next(c for c in CASES if c[0] == name)
    bad = edited(good, tmp_path / f"{name}.jsonl", change)
    where = f"{bad}:{expected_line(line, good)}: "
    for args in (["show", str(bad)], ["show", str(bad), "--format", "json"],
                 ["compare", str(good), str(bad)], ["compare", str(bad), str(good)],
                 ["compare", str(good), str(bad), "--format", "json"]):
        p = cli(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stdout == "" and "Traceback" not in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and where in p.stderr, p.stderr
        assert reason in p.stderr


def test_negative_zero_reads_as_zero_and_a_cut_last_line_as_partial(tmp_path, good, cli):
    def no_bytes(rows: Rows) -> None:              # a run that moved nothing: 0 B/s, as -0.0
        set_run("bytes", 0)(rows)
        set_run("value", -0.0)(rows)
    zero = edited(good, tmp_path / "zero.jsonl", no_bytes)
    value = results.read(zero).runs[0].value
    assert value == 0 and str(value) == "0.0"
    shown = cli("show", str(zero))
    assert shown.returncode == 0 and "-0 " not in shown.stdout, shown.stderr
    cut = tmp_path / "cut.jsonl"                # a crash in the middle of the last line
    text = good.read_text()
    cut.write_text(text[:text.rindex("\n", 0, len(text) - 1) + 20])
    res = results.read(cut)
    assert res.partial and len(res.runs) == 5


def test_not_a_regular_file_is_refused_not_read_forever(tmp_path, cli):
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for path in (Path("/dev/zero"), fifo, tmp_path):
        p = cli("show", str(path))
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert str(path) in p.stderr and "Traceback" not in p.stderr


OLD = ROOT / "tests" / "e2e" / "data"


def test_files_written_by_hotloop_0_1_still_read_show_and_compare(cli):
    """Result files of the first release (counters inside the summary, before the typed
    header) read back whole: `show` and `compare` on them as on today's."""
    old = [OLD / "zero_null-512-v0.1.jsonl", OLD / "zero_null-4096-v0.1.jsonl"]
    r = results.read(old[0])
    assert len(r.values) == 6 and r.finished is not None
    assert r.finished.counters["task-clock"] > 0 and r.finished.summary.n == 6
    assert r.header.format == 1 and r.header.workload.metric == "bytes/s"
    shown = cli("show", str(old[0]))
    assert shown.returncode == 0, shown.stderr
    assert "counters (perf stat, whole session)" in shown.stdout and "task-clock" in shown.stdout
    compared = cli("compare", *map(str, old), "--format", "json")
    assert compared.returncode == 0, compared.stderr
    rows = {row["metric"]: row for row in json.loads(compared.stdout)["comparisons"]}
    assert rows["bytes/s"]["change_pct"] > 0 and "perf:task-clock" in rows
