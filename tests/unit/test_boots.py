"""Sessions and boots (issue 23): across a reboot the boot is the replicate; one boot a side
with nothing that measured a reboot is "cannot call", in every format; a calibration from one
boot is not used across boots.  On synthetic sessions with known numbers."""
from __future__ import annotations

import csv
import io
import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from synthetic_results import side, write

from hotloop import results
from hotloop.analysis import boots, compare, comparison, judge, noise
from hotloop.analysis.comparison import Verdict
from hotloop.cli import main
from hotloop.render import calibration, compare_formats
from hotloop.render.units import pct
from hotloop.render.warning_words import words

FORMATS = ("text", "md", "org", "csv", "json")
VM = {"accel": "kvm", "cpus": 2, "memory": "1G", "image": "/boot/vmlinuz-forged"}


def one(path: Path, rate: float, boot: str, **kw: object) -> Path:
    """One session of 20 runs around `rate` bytes/s, spread 1% (fixed: no randomness)."""
    rng = np.random.default_rng(zlib.crc32(path.name.encode()))   # the same every run
    return write(path, rate * np.exp(rng.normal(0, 0.01, 20)), boot=boot, **kw)  # type: ignore


def primary(comp: comparison.Comparison, k: int = 0) -> comparison.MetricDelta:
    return next(m for m in comp.pairs[k].metrics if m.primary)


# --------------------------------------------------------------------------- boots of sides

@pytest.mark.parametrize("fmt", FORMATS)
def test_one_session_a_side_within_one_boot_gives_no_verdict_and_no_direction(tmp_path: Path,
                                                                              fmt):
    # -20%, far beyond the 3% assumed; but an A/A pair whose sessions were 6% apart was called
    # 22% of the time on that assumption, and nothing in one session a side can see it: no
    # call, and no "slower?" either (read as a weak yes)
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1")
    b = one(tmp_path / "b.jsonl", 0.8e9, "boot-1", label="patched")
    comp = compare.load_and_compare([a, b])
    row = primary(comp)
    assert row.test.boots == boots.ONE and row.test.noise_source == "assumed"
    assert row.test.verdict is Verdict.ONE_A_SIDE and not row.test.significant
    assert not row.test.verdict.called and not row.test.verdict.judged
    change = pct(row.test.change_pct)
    assert change.startswith("-2")
    said = (f"no verdict: one session a side: cannot tell {change} from a session's offset; "
            f"run 2+ sessions a side or calibrate")
    out = compare_formats.render(comp, fmt)
    if fmt == "json":
        r = json.loads(out)["comparisons"][0]
        assert r["verdict"] == said and r["significant"] is False
        assert r["noise_source"] == "assumed"
    elif fmt == "csv":
        (r,) = [x for x in csv.DictReader(io.StringIO(out)) if x["metric"] == "bytes/s"]
        assert (r["verdict"], r["significant"]) == (said, "no")
    else:
        assert said in out and "slower" not in out
        assert "only a change beyond it gets a verdict" in out     # the warning says why
    assert judge.gate(comp, "worse") == []                # and no gate trips on it


@pytest.mark.parametrize("boot", ["boot-1", "boot-2"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_an_obvious_change_is_called_without_a_calibration(tmp_path: Path, fmt, boot, capsys):
    """Eightfold, one session a side, nothing calibrated (in one boot or across a reboot):
    beyond any offset a session or a boot plausibly carries, so it is a call, worded with the
    bound it beat, significant, its interval and p the bound's, and the gate fails on it.
    It read "faster? beyond assumed session noise" (or "cannot call") and gated nothing."""
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1")
    b = one(tmp_path / "b.jsonl", 8e9, boot, label="patched")
    comp = compare.load_and_compare([a, b])
    row = primary(comp)
    assert row.test.verdict is Verdict.GOOD and row.test.significant
    assert row.test.noise_pct == pytest.approx(25)
    assert row.test.ci_low > 0 and row.test.p_value < 0.05
    unit = "a session" if boot == "boot-1" else "a boot"
    noun = "session" if boot == "boot-1" else "boot"
    said = f"faster: beyond any {noun}'s offset (up to 25% {unit})"
    out = compare_formats.render(comp, fmt)
    if fmt == "json":
        r = json.loads(out)["comparisons"][0]
        assert (r["verdict"], r["significant"]) == (said, True) and r["ci_low"] > 0
    elif fmt == "csv":
        (r,) = [x for x in csv.DictReader(io.StringIO(out)) if x["metric"] == "bytes/s"]
        assert (r["verdict"], r["significant"]) == (said, "yes")
    else:
        assert said in out
    assert main(["compare", str(a), str(b), "--fail-on", "better"]) == 3
    assert said in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--fail-on", "worse"]) == 0
    # half again as fast is within what two sessions' offsets can make: no verdict
    c = one(tmp_path / "c.jsonl", 1.5e9, boot, label="patched")
    assert not primary(compare.load_and_compare([a, c])).test.significant


@pytest.mark.parametrize("fmt", FORMATS)
def test_one_session_a_side_from_two_boots_cannot_be_called_in_any_format(tmp_path: Path, fmt):
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1")
    b = one(tmp_path / "b.jsonl", 0.8e9, "boot-2", label="patched")
    comp = compare.load_and_compare([a, b])
    row = primary(comp)
    assert row.test.verdict is Verdict.ACROSS_BOOTS and not row.test.significant
    # the interval is the one a boot's largest plausible offset allows: it holds the -20%
    assert row.test.ci_low < -20 < 0 < row.test.ci_high and row.test.p_value > 0.05
    assert row.test.change_pct == pytest.approx(-20, abs=2)     # the change is still shown
    out = compare_formats.render(comp, fmt)
    if fmt == "json":
        r = json.loads(out)["comparisons"][0]
        assert r["verdict"] == "cannot call: one session a side, from different boots"
        assert r["boots"] == "across boots" and r["boots_baseline"] == r["boots_new"] == 1
        assert r["significant"] is False and r["ci_low"] < 0 < r["ci_high"]
        assert any("cannot call" in w for w in [x["text"] for x in json.loads(out)["warnings"]])
    elif fmt == "csv":                  # data, no warnings: its columns say it
        (r,) = [x for x in csv.DictReader(io.StringIO(out)) if x["metric"] == "bytes/s"]
        assert r["verdict"] == "cannot call: one session a side, from different boots"
        assert (r["boots"], r["boots_baseline"], r["significant"]) == ("across boots", "1",
                                                                       "no")
    else:
        assert "cannot call: one session a side, from different boots" in out
        assert "nothing measured how much a reboot moves bytes/s" in out    # the warning


def test_files_that_do_not_say_their_boot_are_taken_as_possibly_different(tmp_path: Path):
    a = one(tmp_path / "a.jsonl", 1e9, "")
    b = one(tmp_path / "b.jsonl", 0.8e9, "", label="patched")
    comp = compare.load_and_compare([a, b])
    row = primary(comp)
    assert row.test.verdict is Verdict.ACROSS_BOOTS and row.test.boots == boots.UNKNOWN
    assert "cannot call: one session a side, boots unknown" in compare_formats.render(comp)
    assert any("2 sessions do not say which boot" in w for w in map(words, comp.warnings))
    # one that says and one that does not: still not known to be one boot
    c = one(tmp_path / "c.jsonl", 0.8e9, "boot-1", label="patched")
    d = one(tmp_path / "d.jsonl", 1e9, "boot-1")
    assert primary(compare.load_and_compare([d, b])).test.boots == boots.UNKNOWN
    assert primary(compare.load_and_compare([d, c])).test.boots == boots.ONE


def test_two_kernels_are_two_boots_whatever_the_files_say(tmp_path: Path):
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1", kernel="6.1.0-47-amd64")
    b = one(tmp_path / "b.jsonl", 0.8e9, "boot-1", kernel="6.1.0-50-amd64", label="patched")
    assert primary(compare.load_and_compare([a, b])).test.verdict is Verdict.ACROSS_BOOTS


def test_a_session_in_a_vm_is_a_boot_of_its_own(tmp_path: Path):
    """A VM booted for each session: the same boot_id (the guest's kernel may well repeat
    one) does not make two sessions one boot; a series of them is boots as replicates."""
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1", vm=VM)
    b = one(tmp_path / "b.jsonl", 0.8e9, "boot-1", vm=VM, label="patched")
    assert primary(compare.load_and_compare([a, b])).test.verdict is Verdict.ACROSS_BOOTS
    rng = np.random.default_rng(3)
    for d, change in (("A", 0.0), ("B", -0.10)):
        for i in range(4):
            write(tmp_path / d / f"s{i}.jsonl",
                  1e9 * (1 + change) * np.exp(rng.normal(rng.normal(0, 0.01), 0.01, 20)),
                  boot="boot-1", vm=VM)
    row = primary(compare.load_and_compare([tmp_path / "A", tmp_path / "B"]))
    assert (row.test.boots_baseline, row.test.boots_new) == (4, 4)
    assert row.test.verdict is Verdict.BAD


def test_sessions_of_one_boot_are_one_replicate_across_boots(tmp_path: Path):
    """Three sessions of stock in one boot, three of patched in another: one boot a side,
    however many sessions; the same sessions each in a boot of its own: six replicates."""
    rng = np.random.default_rng(4)
    a = side(tmp_path / "a", 3, rng, boots=["s"] * 3)
    b = side(tmp_path / "b", 3, rng, change=-0.10, boots=["p"] * 3, label="patched")
    comp = compare.load_and_compare([a, b])
    row = primary(comp)
    assert row.test.verdict is Verdict.ACROSS_BOOTS
    assert (row.test.sessions_baseline, row.test.boots_baseline) == (3, 1)
    for fmt in ("text", "md", "org", "csv"):
        assert "cannot call: one boot a side, a reboot between" in \
            compare_formats.render(comp, fmt)
    assert any("one boot a side (3 and 3 sessions)" in w for w in map(words, comp.warnings))
    assert "patched vs stock (baseline), boots as replicates (1 vs 1)" in \
        compare_formats.render(comp)
    c = side(tmp_path / "c", 3, rng, boots=["c1", "c2", "c3"])
    d = side(tmp_path / "d", 3, rng, change=-0.10, boots=["d1", "d2", "d3"], label="patched")
    row = primary(compare.load_and_compare([c, d]))
    assert (row.test.boots_baseline, row.test.boots_new) == (3, 3)
    assert row.test.verdict is Verdict.BAD and row.test.noise_source == "measured"


def test_a_boots_sessions_are_averaged_into_one_replicate(tmp_path: Path):
    """Two boots a side, two sessions each: the test has 2 + 2 replicates (df 2), and a
    side's centre is the mean of its boots' (not of its sessions')."""
    rates = {"a": [1.00e9, 1.02e9, 1.10e9, 1.12e9], "b": [1.0e9, 1.0e9, 1.0e9, 1.0e9]}
    for d, boot_of in (("a", ["x", "x", "y", "y"]), ("b", ["u", "u", "w", "w"])):
        for i, rate in enumerate(rates[d]):
            one(tmp_path / d / f"s{i}.jsonl", rate, boot_of[i])
    comp = compare.load_and_compare([tmp_path / "a", tmp_path / "b"])
    t = primary(comp).test
    assert (t.sessions_baseline, t.boots_baseline, t.boots_new) == (4, 2, 2)
    assert t.noise_source == "measured"
    centre = np.exp(np.mean([np.mean(np.log([1.00e9, 1.02e9])),
                             np.mean(np.log([1.10e9, 1.12e9]))]))
    assert t.baseline == pytest.approx(centre, rel=0.01)


# --------------------------------------------------------------------------- calibrations

def profile_file(tmp: Path, result: Path, session_boots: list[str] | None,
                 session_var: float = 1e-4, times: list[str] | None = None) -> Path:
    """A calibration of 8 sessions in these boots; by default taken at `result`'s time (in
    its sitting, so usable at one session a side where its boots match)."""
    header = results.read(result).header
    key = noise.key_of(header)
    doc = {"hotloop_noise": 2, "key": key, "sessions": 8,
           "times": times if times is not None else [header.time] * 8,
           "metrics": {"bytes/s": {"session_var": session_var, "sigma_within": 0.01,
                                   "median_var": 5e-6, "runs": 20, "df": 7}},
           "session_cost_s": 1, "run_cost_s": 0.01}
    if session_boots is not None:
        doc["boots"] = session_boots
    path = tmp / f"profile-{len(set(session_boots or []))}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_calibration_from_one_boot_is_not_used_across_boots(tmp_path: Path, fmt):
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1")
    b = one(tmp_path / "b.jsonl", 0.8e9, "boot-2", label="patched")
    within = profile_file(tmp_path, a, ["boot-0"] * 8)
    comp = compare.load_and_compare([a, b], within)
    row = primary(comp)
    assert row.test.verdict is Verdict.ACROSS_BOOTS and row.test.noise_source == "unmeasured"
    assert row.test.calibration == "not used: its 8 sessions: one boot"
    out = compare_formats.render(comp, fmt)
    if fmt == "json":
        doc = json.loads(out)
        assert doc["comparisons"][0]["calibration"] == "not used: its 8 sessions: one boot"
        assert doc["noise_profile"]["boots"] == "one boot"
        assert any("noise profile not used (its 8 sessions: one boot)" in w
                   for w in [x["text"] for x in doc["warnings"]])
    elif fmt == "csv":
        (r,) = [x for x in csv.DictReader(io.StringIO(out)) if x["metric"] == "bytes/s"]
        assert r["calibration"] == "not used: its 8 sessions: one boot"
    else:
        assert "noise profile not used (its 8 sessions: one boot)" in out
    if fmt == "text":
        assert "session noise: not measured: one boot a side" in out


def test_a_calibration_at_one_session_a_side_is_used_only_from_their_boot_and_sitting(
        tmp_path: Path, capsys):
    """One session a side cannot check a calibration: one taken when the machine was quieter
    called 76% of A/A pairs.  So there it is used only when measured in the compared
    sessions' boot and within an hour of them (it saw the noise they had), and says so;
    from another boot or sitting it is not used (the row as if none: no verdict on -20%)."""
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1")
    b = one(tmp_path / "b.jsonl", 0.8e9, "boot-1", label="patched")
    here = profile_file(tmp_path, a, ["boot-1"] * 8)
    comp = compare.load_and_compare([a, b], here)
    row = primary(comp)
    assert row.test.noise_source == "calibrated" and row.test.calibration is None
    assert row.test.verdict is Verdict.BAD and row.test.noise_check["action"] == "sitting"
    assert any("measured in their boot and sitting" in w for w in map(words, comp.warnings))
    later = results.read(a).header.time.replace("T08:", "T11:")
    for cal, why in ((profile_file(tmp_path, a, ["boot-0"] * 8), "not measured in this boot"),
                     (profile_file(tmp_path / "later", a, ["boot-1"] * 8, times=[later] * 8)
                      if (tmp_path / "later").mkdir() is None else None, "another sitting"),
                     (profile_file(tmp_path / "old", a, ["boot-1"] * 8, times=[])
                      if (tmp_path / "old").mkdir() is None else None, "not recorded")):
        assert cal is not None
        comp = compare.load_and_compare([a, b], cal)
        row = primary(comp)
        assert row.test.calibration is not None and why in row.test.calibration, why
        assert row.test.verdict is Verdict.ONE_A_SIDE and not row.test.significant
        assert row.test.noise_source == "assumed" and row.test.noise_check is None
        assert any("noise profile not used (one session a side cannot check it" in w
                   for w in map(words, comp.warnings))
        assert main(["compare", str(a), str(b), "--fail-on", "worse", "--noise",
                     str(cal)]) == 4                # kept out of the gate
    # two sessions a side: their own spread checks it, whatever its boot or time
    a2 = one(tmp_path / "a2.jsonl", 1.01e9, "boot-1")
    b2 = one(tmp_path / "b2.jsonl", 0.81e9, "boot-1", label="patched")
    row = primary(compare.load_and_compare([f"{a},{a2}", f"{b},{b2}"],
                                           profile_file(tmp_path, a, ["boot-0"] * 8)))
    assert row.test.noise_check["action"] in ("pooled", "dropped")
    assert row.test.calibration is None


def test_a_calibration_one_session_a_boot_is_used_across_boots_where_checked(tmp_path: Path):
    a = [one(tmp_path / f"a{i}.jsonl", 1e9 * (1 + 0.01 * i), f"a-boot-{i}") for i in range(2)]
    b = [one(tmp_path / f"b{i}.jsonl", 0.8e9 * (1 - 0.01 * i), f"b-boot-{i}", label="patched")
         for i in range(2)]
    comp = compare.load_and_compare([",".join(map(str, a)), ",".join(map(str, b))],
                                    profile_file(tmp_path, a[0], [f"b{i}" for i in range(8)]))
    row = primary(comp)
    assert "calibrated" in (row.test.noise_source or "") and row.test.verdict is Verdict.BAD
    assert not any("not used" in w for w in map(words, comp.warnings))
    # one boot a side: nothing checks it there, and no boot is both theirs and its
    one_each = compare.load_and_compare(a[:1] + b[:1], profile_file(
        tmp_path, a[0], [f"b{i}" for i in range(8)]))
    assert primary(one_each).test.verdict is Verdict.ACROSS_BOOTS


@pytest.mark.parametrize("session_boots, why", [
    (None, "boots unknown"),                            # a profile from before boots
    (["b1"] * 4 + ["b2"] * 4, "some share a boot"),
    (["b1"] * 7 + [""], "boots unknown"),
    (["b1", "b2"], "boots unknown"),                    # forged: not one a session
])
def test_a_calibration_that_does_not_show_a_boot_a_session_is_not_used_across_boots(
        tmp_path: Path, session_boots, why):
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1")
    b = one(tmp_path / "b.jsonl", 0.8e9, "boot-2", label="patched")
    row = primary(compare.load_and_compare([a, b], profile_file(tmp_path, a, session_boots)))
    assert row.test.calibration == f"not used: its 8 sessions: {why}"
    assert row.test.verdict is Verdict.ACROSS_BOOTS


def test_calibrate_records_the_boots_and_warns_when_there_is_one(tmp_path: Path, capsys,
                                                                   isolated: Path):
    rng = np.random.default_rng(5)
    d = side(tmp_path / "aa", 8, rng, boots=["one"] * 8)
    assert main(["calibrate", str(d)]) == 0
    out = capsys.readouterr().out
    assert "warning: its sessions ran in one boot, back to back: it measured no reboot" in out
    (saved,) = noise.stored()
    assert saved[1] is not None and saved[1].boots == ["one"] * 8
    assert json.loads(saved[0].read_text())["boots"] == ["one"] * 8
    across = noise.estimate([results.read(p) for p in sorted(
        side(tmp_path / "bb", 8, rng, boots=[f"b{i}" for i in range(8)]).glob("*.jsonl"))])
    assert across.boot_spread == boots.ACROSS and calibration.boot_warnings(across) == []


# --------------------------------------------------------------------------- the gate

def test_the_gate_fails_closed_where_it_cannot_judge(tmp_path: Path, capsys):
    """A side the gate cannot judge exits 4 with the reason on stderr (it passed with 0
    before: a gate that passes what it could not see reads as a pass); --pass-unjudged asks
    for 0; --strict, whose meaning this is now, is accepted with a deprecation line."""
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1")
    b = one(tmp_path / "b.jsonl", 0.8e9, "boot-2", label="patched")
    args = ["compare", str(a), str(b), "--fail-on", "worse"]
    assert main(args) == 4
    err = capsys.readouterr().err
    assert "no verdict for patched (cannot call" in err and err.rstrip().endswith("exit 4")
    assert main([*args, "--pass-unjudged"]) == 0
    assert "passed as asked (--pass-unjudged)" in capsys.readouterr().err
    assert main([*args, "--strict"]) == 4
    assert "--strict is deprecated" in capsys.readouterr().err
    assert main([*args[:3], "--strict"]) == 2       # --strict alone: bad usage
    assert "--strict needs --fail-on" in capsys.readouterr().err
    assert main([*args[:3], "--pass-unjudged"]) == 2
    assert "--pass-unjudged needs --fail-on" in capsys.readouterr().err
    assert main([*args, "--strict", "--pass-unjudged"]) == 2
    c = one(tmp_path / "c.jsonl", 0.8e9, "boot-1", label="patched")
    # one boot, one session a side, not calibrated: -20% is no call
    one_boot = ["compare", str(a), str(c), "--fail-on", "worse"]
    assert main(one_boot) == 4
    assert main([*one_boot, "--pass-unjudged"]) == 0
    # calibrated in that boot, judged: found worse is 3 whatever the options; judged and
    # fine is 0
    cal = ["--noise", str(profile_file(tmp_path, a, ["boot-1"] * 8))]
    assert main([*one_boot, *cal]) == 3
    assert main([*one_boot, *cal, "--pass-unjudged"]) == 3
    assert main(["compare", str(a), str(c), "--fail-on", "better", *cal]) == 0


def test_a_direction_stays_unjudged_when_corrected_for_several_sides(tmp_path: Path, capsys):
    """Holm turned a "slower?" row that did not hold once corrected into "not significant
    once corrected": judged, so a third side made --strict exit 0 where two gave 4.  A row
    with no verdict stays one, corrected or not."""
    a = one(tmp_path / "a.jsonl", 1e9, "boot-1")
    slow = one(tmp_path / "slow.jsonl", 0.915e9, "boot-1", label="patched")
    same = one(tmp_path / "same.jsonl", 1e9, "boot-1", label="other")
    alone = primary(compare.load_and_compare([a, slow]))
    assert alone.test.verdict is Verdict.ONE_A_SIDE
    row = primary(compare.load_and_compare([a, slow, same]))
    assert row.test.verdict is Verdict.ONE_A_SIDE and row.test.family == 2
    assert not row.test.verdict.judged
    assert main(["compare", str(a), str(slow), str(same), "--fail-on", "worse"]) == 4
    assert "no verdict for patched (no verdict: one session a side" in capsys.readouterr().err


def test_a_calibration_of_vm_sessions_is_one_session_a_boot(tmp_path: Path):
    """Each VM session booted for it: a calibration of them measured reboots, whatever
    boot_id the guests happened to give."""
    rng = np.random.default_rng(6)
    for i in range(8):
        write(tmp_path / "vm" / f"s{i}.jsonl", 1e9 * np.exp(rng.normal(0, 0.01, 20)),
              boot="guest", vm=VM)
    profile = noise.estimate([results.read(p) for p in sorted((tmp_path / "vm").glob("*"))])
    assert profile.boot_spread == boots.ACROSS and len(set(profile.boots)) == 8
