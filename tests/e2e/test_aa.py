"""--aa end to end: one variant against itself, run in turn, interleaved and as a series,
through the real command line and workers: two sides of one plan, compared."""
from __future__ import annotations

import json

from conftest import hotloop

from hotloop import results

FAST = ["--param", "count=20000", "--no-perf"]


def _sides(cmp: dict) -> list[str]:
    return [s["name"] for s in [cmp["baseline"], *cmp["results"]]]


def test_aa_interleaved_is_one_plan_as_two_sides_compared_paired(tmp_path, leftovers):
    p = hotloop("run", "zero_null", "--aa", "--interleave", "--runs", "6", *FAST,
                "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert _sides(doc["comparison"]) == ["a1", "a2"]
    files = sorted((tmp_path / "results").glob("*.jsonl"))
    assert [f.name.rsplit("-", 1)[1] for f in files] == ["a1.jsonl", "a2.jsonl"]
    heads = [results.read(f).header for f in files]
    assert heads[0].plan == heads[1].plan and heads[0].params == heads[1].params
    assert heads[0].batch and heads[0].batch.interleaved and heads[0].batch == heads[1].batch
    row = next(r for r in doc["comparison"]["comparisons"] if r["metric"] == "bytes/s")
    assert row["method"] == "paired"
    # no difference in what ran: nothing said about the variants differing
    assert "differ in" not in p.stdout
    assert not leftovers()


def test_aa_named_twice_as_a_series(tmp_path, leftovers):
    p = hotloop("run", "zero_null", "--param", "block_size=512,512", "--aa", "--sessions",
                "2", "--runs", "3", *FAST, "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)["series"]
    assert doc["variants"] == ["block_size=512 a1", "block_size=512 a2"]
    assert doc["order"] == ["block_size=512 a1 s01", "block_size=512 a2 s01",
                            "block_size=512 a2 s02", "block_size=512 a1 s02"]
    (d,) = list((tmp_path / "results").iterdir())
    assert sorted(x.name for x in d.iterdir()) == ["block_size=512_a1", "block_size=512_a2"]
    assert not leftovers()
