"""Reading a result file holds what show and compare use, not the file: runs as columns
(results/runs.py), perf window lines checked and left in the file until asked for.  Measured
with tracemalloc (what Python allocates: the same on any machine, whatever its load)."""
from __future__ import annotations

import json
import tracemalloc

import forge
import pytest

from hotloop import results
from hotloop.analysis import metrics
from hotloop.errors import HotloopError


def peak_mb(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def test_runs_read_back_as_written_extras_and_variants_included(tmp_path):
    runs = [forge.run(0, "ns/op", ops=10, ns=1000, extra={"user_s": 0.5}, variant="a"),
            forge.run(1, "ns/op", ops=10, ns=2000, cycles=30, variant="a")]
    f = forge.write(tmp_path / "r.jsonl", forge.header(forge.SYSCALL, {}), runs)
    res = results.read(f)
    assert [(r.index, r.value, r.ns, r.cycles, r.extra, r.variant) for r in res.runs] == \
        [(0, 100.0, 1000, 0, {"user_s": 0.5}, "a"), (1, 200.0, 2000, 30, {}, "a")]
    assert res.values == [100.0, 200.0] and res.runs[-1].index == 1
    assert [r.index for r in res.runs[1:]] == [1]
    with pytest.raises(IndexError):
        res.runs[2]
    s = metrics.metric_values(res)
    assert list(s["user_s"].values) == [0.5] and list(s["cycles/op"].values) == [3.0]


def test_runs_are_held_as_columns_not_an_object_each(tmp_path):
    n = 4_000
    f = forge.zero_null(tmp_path / "many.jsonl", [100_000 + i for i in range(n)], n=n)
    res, peak = peak_mb(lambda: results.read(f))
    assert len(res.runs) == n and res.runs[n - 1].ns == 100_000 + n - 1
    assert peak < 1.5, peak             # an object a run: 4.6 MB here; columns: 0.3 MB


def test_window_lines_are_not_kept_and_come_checked_when_asked_for(tmp_path):
    windows = [forge.symbols([3.0] * 30, scope="window", window=i) for i in range(600)]
    f = forge.zero_null(tmp_path / "long.jsonl", 100_000, n=6,
                        more=[*windows, forge.symbols([50.0, 20.0])])
    res, peak = peak_mb(lambda: results.read(f))
    assert res.session_symbols is not None and len(res.runs) == 6
    assert peak < 1.5, peak             # the windows held: 8.7 MB here; not kept: 0.1
    assert [w.window for w in res.windows] == list(range(600))
    # as hotloop writes them (compact), show and compare skip them unparsed; a bad one is
    # one line naming it when they are asked for
    lines = [json.loads(x) for x in f.read_text().splitlines()]
    lines[10]["window"] = "seven"
    assert lines[10]["scope"] == "window"
    compact = tmp_path / "compact.jsonl"
    compact.write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    res = results.read(compact)
    assert len(res.runs) == 6 and res.session_symbols is not None
    with pytest.raises(HotloopError, match=r"compact.jsonl:11: .*window: expected an integer"):
        assert res.windows


def test_compare_holds_a_sides_runs_as_arrays_of_numbers(tmp_path):
    """compare of 20,000 runs a side: what it allocates beyond the files' runs is arrays of
    8-byte numbers, not a float object a run in lists (which took 277 MB of 300,000 runs a
    side where 150 was asked for: benchmarks/compare_memory.py)."""
    from hotloop.analysis.compare import load_and_compare
    n = 20_000
    a = forge.zero_null(tmp_path / "a.jsonl", [100_000 + (i * 7919) % 5000 for i in range(n)],
                        n=n, warmup=0)
    b = forge.zero_null(tmp_path / "b.jsonl", [101_000 + (i * 7919) % 5000 for i in range(n)],
                        n=n, warmup=0)
    load_and_compare([a, b])            # scipy's and numpy's first allocations, not counted
    comp, peak = peak_mb(lambda: load_and_compare([a, b]))
    assert comp.pairs[0].metrics[0].test.n_baseline == n
    per_run = peak * 1e6 / (2 * n)
    assert per_run < 120, per_run      # 258 bytes a run in lists of floats; 69 in arrays
