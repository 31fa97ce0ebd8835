"""The command line as a user meets it, where it runs something: warnings once, a bad profile
file skipped by a run and counted by doctor, Ctrl-C's summary, shell completion in a real bash,
the console's screenshot, the console refused without a terminal and started on one.  What
starts no process (typos, bad files, help, list, show, --svg) is
tests/unit/test_command_line.py's."""
from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from conftest import ROOT, bad_profiles, hotloop
from faulty import FAULTY_C, FAULTY_TOML, lines
from faulty import start as _start
from faulty import wait_for_runs as _wait_for_runs

from hotloop import catalog, results
from hotloop.render.units import si


def one_line_exit_2(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "Traceback" not in p.stderr
    return p.stderr


@pytest.fixture
def prof(tmp_path: Path) -> Path:
    d = tmp_path / "prof"
    d.mkdir()
    (d / "faulty.c").write_text(FAULTY_C)
    (d / "w.toml").write_text(FAULTY_TOML + "\n[cpu.big]\ncpus = [0, 999]\n")
    return d


# --- 1. a warning prints once a batch ------------------------------------------------------

def test_a_warning_prints_once_in_a_two_variant_batch(prof):
    # Both variants use a CPU profile this machine cannot fully honour: the same warning
    # from each; perf's own warnings (where perf lacks something here) come twice too.
    p = hotloop("run", "faulty", "--profiles", str(prof), "--cpu", "big", "--runs", "2",
                "--warmup", "0", "--param", "at=5,6")
    assert p.returncode == 0, p.stderr
    said = [ln for ln in (p.stdout + p.stderr).splitlines() if "warning:" in ln]
    assert sum("CPU 999 is beyond this machine" in ln for ln in said) == 1, said
    messages = [re.sub(r"^.*?warning: (at=\d: )?", "", ln) for ln in said]
    assert len(messages) == len(set(messages)), said        # perf's too: each once
    for f in Path("results").glob("*.jsonl"):               # the files keep them all
        assert any("CPU 999" in w for w in results.read(f).warnings)


# --- 3. a bad profile file is skipped unless the command needs it --------------------------

def test_doctor_counts_a_bad_file_and_the_plans_it_takes_along(tmp_path):
    d = bad_profiles(tmp_path)
    doctor = hotloop("doctor", "--profiles", str(d))
    assert doctor.returncode == 0 and "1 bad file and 1 plan skipped" in doctor.stdout


def test_a_run_that_needs_nothing_from_a_bad_file_runs_and_says_it_was_skipped(tmp_path):
    d = bad_profiles(tmp_path)
    (d / "garbage.toml").write_text("[workload.w\nsource = ")
    p = hotloop("run", "fine", "--profiles", str(d))
    assert p.returncode == 0, p.stderr
    assert "median" in p.stdout
    assert "garbage.toml: malformed TOML" in p.stderr and "(file skipped)" in p.stderr
    err = one_line_exit_2(hotloop("run", "w", "--profiles", str(d)))   # it may define w
    assert "garbage.toml: malformed TOML" in err


# --- 4. Ctrl-C prints what was measured -----------------------------------------------------

def test_ctrl_c_prints_the_summary_so_far_and_exits_130(prof, tmp_path):
    out = tmp_path / "i.jsonl"
    proc = _start(["run", "faulty", "--profiles", str(prof), "--runs", "1000", "--warmup", "0",
                   "--out", str(out), "--no-perf"])
    _wait_for_runs(out, 3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "interrupted; the runs measured so far are in" in stderr
    n = len(results.read(out).runs)
    assert n >= 3
    assert "summary" in stdout and re.search(rf"^  n\s+{n}$", stdout, re.M), stdout
    assert "PARTIAL: interrupted" in stdout and "histogram" in stdout
    assert f"result file: {out}" in stdout
    rows = lines(out)
    assert rows[-1]["type"] == "failed" and rows[-1]["interrupted"]


# --- 6. shell completion ---------------------------------------------------------------------

def shim(tmp_path: Path) -> dict[str, str]:
    """An environment whose `hotloop` on PATH is this checkout's, and $HL_COMPLETION the bash
    script `hotloop completion bash` writes (written once: each completion sources it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / "hotloop"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -m hotloop \"$@\"\n")
    exe.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", PYTHONPATH=str(ROOT),
               HL_COMPLETION=str(bin_dir / "completion.bash"))
    made = subprocess.run(["hotloop", "completion", "bash"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert made.returncode == 0 and made.stderr == "", made.stderr
    Path(env["HL_COMPLETION"]).write_text(made.stdout)
    return env


def bash_complete(env: dict[str, str], *words: str) -> list[str]:
    """What bash offers after `words` (the last one the word being completed)."""
    quoted = " ".join(f"'{w}'" for w in words)
    script = ('source "$HL_COMPLETION" || exit 9\n'
              f"COMP_WORDS=({quoted}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n"
              'COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}\n'
              '_shtab_hotloop hotloop "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"\n'
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    return [w for w in p.stdout.splitlines() if w]


def test_the_bash_script_installs_a_completion(tmp_path):
    env = shim(tmp_path)
    p = hotloop("completion", "bash")
    assert p.returncode == 0 and p.stderr == ""
    assert "_shtab_hotloop" in p.stdout and "_hotloop_names" in p.stdout
    done = subprocess.run(["bash", "-c", "source <(hotloop completion bash) && complete -p hotloop"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(" hotloop") and "-F _shtab_hotloop" in done.stdout
    zsh = hotloop("completion", "zsh")
    assert zsh.returncode == 0 and zsh.stdout.startswith("#compdef hotloop")
    assert "_hotloop_names plan" in zsh.stdout and "_hotloop_names cpu" in zsh.stdout


def test_names_complete_from_the_catalogue(tmp_path, faulty):
    bundled = catalog.load()
    p = hotloop("completion", "--names", "plan")
    assert p.returncode == 0 and p.stderr == ""
    assert set(p.stdout.split()) == set(bundled.plans) | set(bundled.workloads)
    env = shim(tmp_path)
    assert bash_complete(env, "hotloop", "run", "seqp") == ["seqpacket-100", "seqpacket"]
    assert bash_complete(env, "hotloop", "run", "quick", "--cpu", "s") == ["same-core", "split"]
    assert bash_complete(env, "hotloop", "save", "x", "--workload", "zero") == ["zero_null"]
    assert set(bash_complete(env, "hotloop", "run", "q", "--kernel", "")) == {"busy-poll",
                                                                              "default"}
    # the --profiles directories already on the line count
    assert bash_complete(env, "hotloop", "run", "--profiles", str(faulty), "fau") == ["faulty"]


def test_completion_is_silent_about_a_profile_directory_that_is_not_there(tmp_path):
    missing = tmp_path / "nope"
    p = hotloop("completion", "--names", "cpu", "--profiles", str(missing))
    assert p.returncode == 0 and p.stderr == ""
    assert "split" in p.stdout.split()
    env = shim(tmp_path)
    assert bash_complete(env, "hotloop", "run", "--profiles", str(missing), "zero_") == \
        ["zero_null"]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.toml").write_text("[[[")
    p = hotloop("completion", "--names", "plan", "--profiles", str(bad))
    assert p.returncode == 0 and p.stderr == "" and "quick" in p.stdout.split()


# --- 5. the console's screenshot ---------------------------------------------------------------

def test_the_palettes_screenshot_goes_to_results_and_says_where(isolated):
    import asyncio
    import time

    from textual.command import CommandPalette

    from hotloop.console.app import HotloopApp

    async def go() -> None:
        app = HotloopApp()
        async with app.run_test(size=(120, 36)) as pilot:
            async def until(predicate, what: str) -> None:
                deadline = time.monotonic() + 10
                while not predicate():
                    assert time.monotonic() < deadline, what
                    await pilot.pause(0.02)
            await until(lambda: app.main_screen.form.base is not None, "the form")
            await pilot.press("ctrl+p")
            await until(lambda: isinstance(app.screen, CommandPalette), "the palette")
            await pilot.press(*"save screenshot")
            await until(lambda: "Save screenshot" in str(
                app.screen.query_one("CommandList").get_option_at_index(0).prompt), "found")
            # Textual's own "Screenshot" (to ~/Downloads, failing where that is missing) is gone
            found = app.screen.query_one("CommandList")
            prompts = [str(found.get_option_at_index(i).prompt)
                       for i in range(found.option_count)]
            assert all("Save screenshot" in p for p in prompts), prompts
            await pilot.press("enter")
            await until(lambda: list((isolated / "results").glob("*-screenshot.svg")), "saved")
            shot = next((isolated / "results").glob("*-screenshot.svg"))
            assert shot.read_text().startswith("<svg")
            notices = [n.message for n in app._notifications]
            assert any(f"saved to {shot.resolve()}" in m for m in notices), notices
    assert not (isolated / "results").exists()
    asyncio.run(go())


def test_events_into_a_closed_pipe_stop_the_run_without_a_made_up_signal(tmp_path):
    """`hotloop run ... --format events | head -c100`: the reader goes, the next write fails
    (EPIPE).  The run stops, its file ends failed saying the output was closed, and no
    signal is recorded (none came: a closed pipe is not a hang-up); exit 1."""
    out = tmp_path / "r.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--runs",
                             "100000", "--warmup", "0", "--no-perf", "--param", "count=2000",
                             "--format", "events", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout is not None
    assert len(proc.stdout.read(100)) == 100        # head -c100, then gone
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    last = json.loads(out.read_text().splitlines()[-1])
    assert last["type"] == "failed" and last["interrupted"], last
    assert last["signal"] == "" and "standard output was closed" in last["message"], last
    assert proc.returncode == 1, err


def test_list_plans_says_the_last_measured_time_of_a_repetition(tmp_path):
    """Once a plan has run here (its newest result under results/), `list plans` says what
    a repetition took then rather than ~?; the others keep ~?."""
    assert hotloop("save", "tiny", "--workload", "zero_null", "--runs", "3", "--warmup", "0",
                   "--param", "count=20000", "--no-perf").returncode == 0
    assert "tiny" in hotloop("list", "plans").stdout
    done = hotloop("run", "tiny", "--out", "results/t.jsonl")
    assert done.returncode == 0, done.stderr
    ns = sorted(r.ns for r in results.read(tmp_path / "results" / "t.jsonl").runs)[1]
    out = hotloop("list", "plans").stdout.splitlines()
    line = out[next(i for i, ln in enumerate(out) if ln.split()[:1] == ["tiny"]) + 1]
    assert f"3 repetitions x ~{si(ns / 1e9, 's')} each (last measured " in line, line
    assert "results/t.jsonl" in line
    assert "21 repetitions x ~? each" in "\n".join(out)           # quick: never run here


# --- the console wants a terminal ----------------------------------------------------------

NO_TERMINAL = ("hotloop: the console needs a terminal (stdin, stdout and stderr); for scripts "
               "use `hotloop run ...`")


def _close_stdin() -> None:
    os.close(0)


@pytest.mark.parametrize("how", ["stdin /dev/null, stdout a file", "stdin /dev/null",
                                 "stdin closed", "stdin closed by bash"])
def test_the_console_without_a_terminal_refuses_in_one_line(tmp_path, how):
    """Textual from /dev/null never ended (drawing into the file for ever); with stdin
    closed it died with a traceback."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "hotloop"]
    out = tmp_path / "out"
    kw: dict = {"stdin": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True,
                "timeout": 30, "env": env}
    if how == "stdin /dev/null, stdout a file":
        with open(out, "w") as f:
            p = subprocess.run(argv, stdout=f, **kw)
        assert out.read_text() == ""
    elif how == "stdin /dev/null":
        p = subprocess.run(argv, stdout=subprocess.PIPE, **kw)
    elif how == "stdin closed":
        p = subprocess.run(argv, stdout=subprocess.PIPE, preexec_fn=_close_stdin,
                           **{**kw, "stdin": None})
    else:
        p = subprocess.run(["bash", "-c", 'exec "$@" <&-', "bash", *argv],
                           stdout=subprocess.PIPE, **{**kw, "stdin": None})
    assert one_line_exit_2(p).strip() == NO_TERMINAL


def test_the_console_on_a_terminal_starts_and_q_quits(tmp_path):
    """The other side of the refusal: on a terminal (a pty for stdin, stdout and stderr) the
    console draws its plan and `q` ends it with 0."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "hotloop"], stdin=slave, stdout=slave,
                            stderr=slave, start_new_session=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm-256color"))
    os.close(slave)
    seen, sent = b"", False
    deadline = time.monotonic() + 60
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:             # EIO: the console has closed the terminal
                    break
            if not sent and b"quick" in seen:
                os.write(master, b"q")
                sent = True
        assert sent, seen[-2000:]
        assert proc.wait(timeout=30) == 0
        assert b"the console needs a terminal" not in seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
