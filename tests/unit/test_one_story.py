"""One story per row (issue 33): the verdict's word, `significant`, the interval and the p a
format shows agree, in every format, on synthetic sessions with known numbers: one session a
side within and beyond the offset bound, three a side, and four sides corrected together."""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from synthetic_results import side, write

from hotloop.analysis import compare
from hotloop.render import compare_formats

DIRECTIONS = ("faster", "slower", "better", "worse", "higher", "lower")


def comparisons(tmp: Path) -> list[compare.Comparison]:
    rng = np.random.default_rng(33)
    one = [write(tmp / f"one{i}.jsonl", r * 1e9 * np.exp(rng.normal(0, 0.01, 20)))
           for i, r in enumerate((1.0, 1.05, 8.0, 0.3))]
    base = side(tmp / "base", 3, rng)
    family = [side(tmp / f"s{i}", 3, rng, change=c, label=f"k{i}")
              for i, c in enumerate((0.0, 0.012, 0.0, -0.10))]
    return [compare.load_and_compare(one),                  # 1 a side: +5%, x8, -70%
            compare.load_and_compare([base, *family])]      # 4 sides, 3 a side, Holm


def num(r: dict, k: str) -> float | None:
    return None if r[k] is None else float(r[k])


def agree(verdict: str, significant: bool, lo: float | None, hi: float | None,
          p: float | None) -> None:
    called = any(verdict.startswith(w) for w in DIRECTIONS)
    assert called == significant, (verdict, significant)
    if lo is not None and hi is not None:
        assert (lo > 0 or hi < 0) == significant, (verdict, lo, hi)
    if p is not None:
        assert (p < 0.05) == significant or not significant and lo is None, (verdict, p)
    assert "?" not in verdict, verdict


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_data_formats_tell_one_story_a_row(tmp_path: Path, fmt):
    seen = set()
    for comp in comparisons(tmp_path):
        out = compare_formats.render(comp, fmt)
        rows = json.loads(out)["comparisons"] if fmt == "json" else [
            {k: (None if v == "" else v) for k, v in r.items()}
            for r in csv.DictReader(io.StringIO(out))]
        for r in rows:
            sig = r["significant"] in (True, "yes")
            primary = r["exploratory"] in (False, "no")
            # the p a row was judged on: the adjusted one for the corrected primary rows
            p = num(r, "p_adjusted") if primary and r["p_adjusted"] is not None \
                else num(r, "p_value")
            agree(r["verdict"], sig, num(r, "ci_low"), num(r, "ci_high"), p)
            seen.add((sig, r["verdict"].split(":")[0].split(" (")[0]))
    # the cases are all there: called and not, beyond the bound, no verdict, corrected away
    words = {w for _, w in seen}
    assert {"faster", "slower", "no verdict"} <= words, seen
    assert any(w.startswith("not significant") for w in words) or \
        any(w in ("same within ±5%", "can't tell") for w in words), seen


@pytest.mark.parametrize("fmt", ["text", "md", "org"])
def test_tables_show_the_p_the_verdict_was_judged_on(tmp_path: Path, fmt):
    _, family = comparisons(tmp_path)
    out = compare_formats.render(family, fmt)
    from hotloop.render.units import p_value
    assert len(re.findall(r"\badj\b", out)) == len(family.pairs) == 4
    for p in family.pairs:
        t = next(m for m in p.metrics if m.primary).test
        assert t.correction == "holm" and t.p_adjusted is not None
        assert f"{p_value(t.p_adjusted)} adj" in out
