"""The command line as a user meets it, for what starts no process: typos blamed on the
command line, a bad profile file skipped or the error, help, `list plans`, `show --runs/--format
csv`, `--svg` pictures.  Called in this process on forged result files (tests/forge.py);
tests/e2e/test_cli.py runs what needs a run, a shell or a signal.
"""
from __future__ import annotations

import csv
import io
import subprocess
import xml.dom.minidom
from pathlib import Path

import forge
import pytest
from conftest import bad_profiles

from hotloop import results
from hotloop.visible import csv_text


def one_line_exit_2(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "Traceback" not in p.stderr
    return p.stderr


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5 runs of zero_null, count=3000, as `hotloop run` writes them."""
    return forge.zero_null(tmp_path_factory.mktemp("good") / "good.jsonl",
                           forge.NS_512 * 3000 // 20000, count=3000, n=5)


# --- 2. typos are the command line's -------------------------------------------------------

@pytest.mark.parametrize("args, said", [
    (["run", "quick", "--cpu", "splitt"], "--cpu splitt: unknown CPU profile 'splitt'; "
                                          "did you mean split?"),
    (["run", "quick", "--kernel", "stok"], "--kernel stok: unknown kernel profile 'stok'"),
    (["run", "quick", "--kernel", "busy_pol"], "did you mean busy-poll?"),
    (["run", "seqpaket"], "unknown plan or workload 'seqpaket'; did you mean seqpacket?"),
    (["save", "mine", "--workload", "zero_nul"], "--workload zero_nul: unknown workload "
                                                 "'zero_nul'; did you mean zero_null?"),
    (["save", "mine", "--workload", "zero_null", "--cpu", "splitt"], "did you mean split?"),
    (["run", "zero_null", "--param", "blok_size=1"], "did you mean block_size?"),
    (["calibrate", "zero_null", "--cpu", "sam-core"], "did you mean same-core?"),
    (["run", "quick", "--cpu", "zzzzzz"], "unknown CPU profile 'zzzzzz' (known: default,"),
])
def test_a_typo_on_the_command_line_is_blamed_on_it_with_a_suggestion(args, said, cli):
    err = one_line_exit_2(cli(*args))
    assert said in err
    assert "plans.toml" not in err and ".toml" not in err       # no file is to blame
    if "zzzzzz" in args:
        assert "did you mean" not in err                        # nothing close: no guess
    assert not Path("results").exists()


# --- 3. a bad profile file is skipped unless the command needs it --------------------------

def test_a_bad_file_is_skipped_with_one_line_naming_file_line_and_key(tmp_path, cli):
    d = bad_profiles(tmp_path)
    p = cli("list", "plans", "--profiles", str(d))
    assert p.returncode == 0, p.stderr
    warnings = p.stderr.strip().splitlines()
    assert warnings[0] == (f"hotloop: warning: {d}/broken.toml:2: [cpu.c] nice: expected an "
                           f"integer, got a string (file skipped)")
    assert "plan q skipped: its CPU profile c is in a file skipped" in warnings[1]
    assert len(warnings) == 2
    assert "fine" in p.stdout and "quick" in p.stdout and " p " not in p.stdout


@pytest.mark.parametrize("args", [
    ["run", "p"],                          # the plan the bad file defines
    ["run", "q"],                          # a plan that needs its CPU profile
    ["run", "zero_null", "--cpu", "c"],    # the profile it defines, named on the line
    ["calibrate", "p"],
    ["save", "mine", "--workload", "zero_null", "--cpu", "c"],
    ["save", "p", "--workload", "zero_null"],   # would be defined twice once it is fixed
])
def test_a_bad_file_that_defines_what_the_command_needs_is_the_error(tmp_path, args, cli):
    d = bad_profiles(tmp_path)
    err = one_line_exit_2(cli(*args, "--profiles", str(d)))
    assert f"{d}/broken.toml:2: [cpu.c] nice: expected an integer" in err
    assert not Path("results").exists()


@pytest.mark.parametrize("args, said", [
    (["--sessions", "100"], "--sessions 100: at most 99 a kernel"),
    (["--sessions", "100", "--host", "lab1"], "--sessions 100: at most 99 a kernel"),
    (["--kernel", "default", "--kernel", "busy-poll"],
     "calibrate: --kernel default --kernel busy-poll: calibrate measures one kernel's noise; "
     "calibrate each kernel on its own"),
    (["--cpu", "default", "--cpu", "split"],
     "calibrate: --cpu default --cpu split: calibrate measures one CPU profile's noise; "
     "calibrate each CPU profile on its own"),
])
def test_calibrates_arguments_are_refused_as_runs_are_before_anything_runs(args, said, cli):
    """calibrate takes run's bound on sessions, in run's words, and one kernel: a second
    --kernel is refused, not silently measured instead of the first."""
    err = one_line_exit_2(cli("calibrate", "zero_null", *args))
    assert err == f"hotloop: {said}\n"
    assert not Path("results").exists()
    if "--sessions" in args:
        assert one_line_exit_2(cli("run", "zero_null", "--sessions", "100")) == f"hotloop: {said}\n"


def test_completion_without_a_shell_is_bad_usage(cli):
    assert "name the shell: bash or zsh" in one_line_exit_2(cli("completion"))
    assert "invalid choice" in one_line_exit_2(cli("completion", "fish"))


# --- 7. help and plans ------------------------------------------------------------------------

def test_help_says_no_arguments_open_the_console_and_shows_examples(cli):
    p = cli("--help")
    assert p.returncode == 0
    assert "With no arguments, hotloop opens the console" in p.stdout
    assert "examples:" in p.stdout and "hotloop run quick" in p.stdout
    assert "source <(hotloop completion bash)" in p.stdout


def test_list_plans_says_what_a_run_takes_without_inventing_a_cost(tmp_path, cli):
    assert cli("save", "ab", "--workload", "zero_null", "--runs", "30", "--warmup", "2",
                   "--processes", "3").returncode == 0
    p = cli("list", "plans")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert ("20 runs + 1 warmup: 21 repetitions x ~? each (at most 1h45m at the 300 s timeout)"
            in out)
    assert "10 runs + 1 warmup: 3 variants x 11 = 33 repetitions" in out     # page-pool
    assert "30 runs + 2 warmups in each, 3 processes: 36 repetitions" in out
    assert "True" not in out and "False" not in out


# --- 8. every run --------------------------------------------------------------------------------

def test_show_lists_every_run_and_writes_csv(good, cli):
    res = results.read(good)
    p = cli("show", str(good), "--runs")
    assert p.returncode == 0, p.stderr
    table = p.stdout.split("\nruns\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert table[0].split() == ["run", "value", "ops", "ns", "sys_s", "user_s"]
    assert len(table) == 1 + len(res.runs)
    assert table[1].split()[0] == "1" and "B/s" in table[1]
    assert f"{res.runs[0].ops:,}" in table[1] and f"{res.runs[0].ns:,}" in table[1]
    assert "\nruns\n" not in cli("show", str(good)).stdout         # only when asked
    rows = list(csv.reader(io.StringIO(cli("show", str(good), "--format", "csv").stdout)))
    assert rows[0] == ["run", "value", "unit", "ops", "bytes", "ns", "cycles", "sys_s", "user_s"]
    assert len(rows) == 1 + len(res.runs)
    for row, run in zip(rows[1:], res.runs):
        assert float(row[1]) == run.value and row[2] == "B/s"
        assert int(row[3]) == run.ops and int(row[5]) == run.ns
    assert "invalid choice" in one_line_exit_2(cli("show", str(good), "--format", "xml"))


# --- 9. pictures ---------------------------------------------------------------------------------

def test_show_and_compare_draw_svg_pictures(good, tmp_path, cli):
    pic = tmp_path / "show.svg"
    p = cli("show", str(good), "--svg", str(pic))
    assert p.returncode == 0, p.stderr
    assert "median" in p.stdout and f"as a picture: {pic}" in p.stderr
    doc = pic.read_text()
    xml.dom.minidom.parseString(doc)                         # an SVG document
    assert doc.startswith("<svg") and "histogram" in doc and "█" in doc
    both = tmp_path / "cmp.svg"
    p = cli("compare", str(good), str(good), "--svg", str(both))
    assert p.returncode == 0, p.stderr
    doc = both.read_text()
    xml.dom.minidom.parseString(doc)
    assert "verdict" in doc and "distribution" in doc and "░" in doc   # a mark a side


@pytest.mark.parametrize("command", ["show", "compare"])
def test_svg_into_a_missing_directory_is_one_line(good, tmp_path, command, cli):
    files = [str(good)] * (2 if command == "compare" else 1)
    err = one_line_exit_2(cli(command, *files, "--svg", str(tmp_path / "no" / "x.svg")))
    assert f"--svg {tmp_path / 'no' / 'x.svg'}: no such directory" in err
    err = one_line_exit_2(cli(command, *files, "--svg", str(tmp_path)))
    assert "is a directory" in err
    full = cli(command, *files, "--svg", "/dev/full")      # a full disk: no bad usage
    assert full.returncode == 1, full.stderr
    assert full.stderr.strip().splitlines()[-1] == \
        "hotloop: --svg /dev/full: cannot write: No space left on device"


# --- text from a file reaches the terminal inert -------------------------------------------

def test_csv_from_a_forged_file_sends_no_escape_sequence(tmp_path, good, cli):
    """csv is data, but it lands on a terminal too: a unit or an extra's name holding an
    escape sequence is written inert, as the other formats write it."""
    import json as _json
    rows = good.read_text().splitlines()
    head = _json.loads(rows[0])
    head["header"]["workload"]["unit"] = "B\x1b[2J/s"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([_json.dumps(head), *rows[1:]]) + "\n")
    for args in (["show", str(bad), "--format", "csv"],
                 ["compare", str(bad), str(good), "--format", "csv"]):   # its unit: the baseline's
        p = cli(*args)
        assert p.returncode == 0, p.stderr
        assert "\x1b" not in p.stdout and "B\\x1b[2J/s" in p.stdout, args


def test_csv_text_from_a_forged_file_is_never_a_spreadsheets_formula(tmp_path, cli):
    """A label, a name or a unit starting with = + - @ would be a formula in a spreadsheet
    that opens the csv (OWASP's CSV injection): it is written as text, behind a single quote.
    Numbers are numbers: a slower side's negative diff keeps its minus, unquoted."""
    base = forge.zero_null(tmp_path / "base.jsonl", forge.NS_512)
    link = forge.zero_null(tmp_path / "link.jsonl", forge.NS_512 * 6 // 5,
                           head=forge.header(label='=HYPERLINK("x")'))
    cmd = forge.zero_null(tmp_path / "cmd.jsonl", forge.NS_512 * 6 // 5,
                          head=forge.header(label="-cmd"))
    p = cli("compare", str(base), str(link), str(cmd), "--format", "csv")
    assert p.returncode == 0, p.stderr
    rows = [r for r in csv.DictReader(io.StringIO(p.stdout)) if r["metric"] == "bytes/s"]
    assert [(r["label"], r["name"]) for r in rows] == [("'=HYPERLINK(\"x\")",) * 2,
                                                       ("'-cmd",) * 2]
    assert all(float(r["diff"]) < 0 and r["diff"].startswith("-") for r in rows)
    single = cli("compare", str(link), "--format", "csv")
    assert single.returncode == 0, single.stderr
    (one,) = csv.DictReader(io.StringIO(single.stdout))
    assert one["label"] == "'=HYPERLINK(\"x\")" and float(one["median"]) > 0
    unit = forge.edited(cmd, tmp_path / "unit.jsonl", lambda rows: rows[0]["header"][
        "workload"].__setitem__("unit", "@SUM(1+1)"))
    shown = list(csv.reader(io.StringIO(cli("show", str(unit), "--format", "csv").stdout)))
    assert {row[2] for row in shown[1:]} == {"'@SUM(1+1)"}
    assert float(shown[1][1]) > 0


@pytest.mark.parametrize("text, cell", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-cmd", "'-cmd"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\\tx"), ("\rx", "'\\rx"), ("lab1 (stock)", "lab1 (stock)"), ("", ""),
])
def test_a_csv_text_cell_is_inert(text, cell):
    assert csv_text(text) == cell
