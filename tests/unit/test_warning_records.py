"""A comparison's warnings as records (analysis.compare_warnings): every code worded and
documented, json carrying code, text, command and facts, the console's command on a line of
its own, the mail keeping the codes about the sides; and compare's json as a dict view."""
from __future__ import annotations

import json
import re
from pathlib import Path

import forge
import pytest

from hotloop.analysis import compare
from hotloop.analysis import compare_warnings as cw
from hotloop.analysis.comparison import Comparison
from hotloop.render import compare_formats, mail, warning_words
from hotloop.results import read

DOCS = Path(__file__).resolve().parents[2] / "docs" / "formats.md"


@pytest.fixture
def differing(tmp_path: Path) -> tuple[Comparison, list[Path]]:
    """One session a side, 512-byte blocks against 65536 (more than the kernel differs),
    perf off, no calibration: differs-beyond-kernel and no-noise-profile."""
    a = forge.zero_null(tmp_path / "a.jsonl", 1_000_000)
    b = forge.zero_null(tmp_path / "b.jsonl", 900_000, block_size=65536)
    return compare.load_and_compare([a, b]), [a, b]


def test_every_kind_has_one_code_its_words_and_its_docs():
    kinds = cw.kinds()
    codes = [k.code for k in kinds]
    assert len(kinds) >= 25 and all(codes) and len(set(codes)) == len(codes), codes
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", c) for c in codes), codes
    fallback = warning_words.words.dispatch(cw.CompareWarning)
    assert [k.code for k in kinds if warning_words.words.dispatch(k) is fallback] == []
    section = DOCS.read_text().split("## A comparison's warnings")[1].split("\n## ")[0]
    documented = set(re.findall(r"^- `([a-z-]+)`:", section.split("The codes, and")[1], re.M))
    assert set(codes) <= documented, set(codes) - documented
    assert documented <= set(codes), documented - set(codes)     # no stale code in the docs
    with pytest.raises(TypeError, match="no words"):
        warning_words.words(cw.CompareWarning())


def test_json_carries_each_warnings_code_text_command_and_facts(differing):
    comp, _ = differing
    codes = [w.code for w in comp.warnings]
    assert "differs-beyond-kernel" in codes and "no-noise-profile" in codes, codes
    doc = compare_formats.document(comp)
    # the dict view is the json document: JSON's own types (no default= needed), no NaN
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
    assert json.loads(compare_formats.render(comp, "json")) == doc
    said = {w["code"]: w for w in doc["warnings"]}
    assert [w["text"] for w in doc["warnings"]] == [warning_words.words(w)
                                                    for w in comp.warnings]
    differs = said["differs-beyond-kernel"]
    assert differs["command"] is None
    assert differs["facts"] == {"side": comp.sides[1].name, "differences": [
        {"field": "params.block_size", "baseline": 512, "new": 65536}]}
    assert differs["text"].endswith("in more than the kernel: params.block_size 512 -> 65536")
    none = said["no-noise-profile"]
    assert none["command"].startswith("hotloop calibrate zero_null --param block_size=512")
    assert none["text"].endswith(f"or measure this machine's: {none['command']}")
    assert none["facts"]["key"]["workload"] == "zero_null" and none["facts"]["batch"] is False
    assert "command" not in none["facts"]


def test_the_console_puts_a_command_after_a_colon_on_a_line_of_its_own(differing):
    comp, _ = differing
    (none,) = [w for w in comp.warnings if isinstance(w, cw.NoNoiseProfile)]
    assert none.command is not None
    lead, command = warning_words.advice(none).split("\n")
    assert command == f"    {none.command}" and lead.endswith("measure this machine's:")
    # a command inside a parenthesis stays in its sentence (hotloop doctor's)
    shaky = cw.Unstable(side="stock", sessions=2, cv_pct=20.0, limit_pct=10.0, pinned=(2, 3))
    assert warning_words.advice(shaky) == warning_words.words(shaky)
    assert "(hotloop doctor says what it allows; the runs were pinned to cpus 2,3: keep " \
        "other work off them, e.g. isolcpus=2,3 nohz_full=2,3" in warning_words.words(shaky)
    # a side whose name (a forged label) says the command too: the command is still the
    # record's, after the last colon
    forged = cw.CalibrationOneBoot(side="p: hotloop calibrate results/aa/", baseline="s",
                                   sessions=8, spread="one boot", relation="across boots")
    *said, last = warning_words.advice(forged).split("\n")
    assert last == "    hotloop calibrate results/aa/" and len(said) == 1, said
    assert said[0].startswith("p: hotloop calibrate results/aa/: noise profile not used")
    # one without a command is its sentence
    differs = next(w for w in comp.warnings if isinstance(w, cw.DiffersBeyondKernel))
    assert warning_words.advice(differs) == warning_words.words(differs)


def test_the_mail_keeps_what_the_sides_differ_in_and_no_advice(differing):
    comp, files = differing
    text = " ".join(mail.compare_mail(comp, [[read(f)] for f in files]).split())
    assert "note: " + comp.sides[1].name + " differs from the baseline in more than the " \
        "kernel: params.block_size 512 -> 65536" in text
    assert "no noise profile" not in text and "hotloop calibrate" not in text
    kept = [w.code for w in comp.warnings if warning_words.about_the_sides(w)]
    assert kept == ["differs-beyond-kernel"]


def test_a_command_the_sentence_names_is_the_records():
    """Each record whose kind carries a command says it in its sentence, word for word."""
    with_command = [
        cw.Unstable(side="s", sessions=1, cv_pct=12.0, limit_pct=10.0, pinned=()),
        cw.CalibrationOneBoot(side="p", baseline="s", sessions=8, spread="one boot",
                              relation="across boots"),
        cw.CalibrationDropped(side="p", metric="ns/op", measured_pct=3.5, calibrated_pct=0.4,
                              p=0.001),
        cw.CannotCallAcrossBoots(side="p", metric="ns/op", possibly=False,
                                 sessions_baseline=1, sessions_new=1),
        cw.NoNoiseProfile(key={"workload": "w", "params": {}, "cpu": "default", "perf": False,
                               "host": "h"}, ignored=False, batch=True, offset_pct=25.0,
                          per_within=2.0, command="hotloop calibrate w --no-perf --sessions 8"),
    ]
    for w in with_command:
        assert w.command and w.command in warning_words.words(w), w
        assert "command" not in w.facts()
    assert warning_words.words(with_command[3]).endswith(
        "(A/A sessions one a boot: hotloop calibrate results/aa/)")
    assert "run the variants with --interleave" in warning_words.words(with_command[4])
