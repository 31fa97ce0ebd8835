"""A session stopped before its end (Ctrl-C on `hotloop run`) is a complete one: its result
file gets per-run and whole-session hot symbols from the perf windows it has, so `show` and
`annotate` work on it as on a finished session's."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, hotloop
from test_annotate import spin  # noqa: F401 - the fixture: a loop hl_run itself is hot in

from hotloop import results
from hotloop.perf.keep import WINDOW_FILE

needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")


def _wait_for_windows(path: Path, n: int, proc: subprocess.Popen[str],
                      timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists() and path.read_text().count('"scope":"window"') >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"{path}: fewer than {n} perf windows after {timeout}s")


@needs_perf
def test_a_run_stopped_by_ctrl_c_has_hot_symbols_that_show_and_annotate(
        spin, tmp_path, leftovers):  # noqa: F811 - the fixture
    out = tmp_path / "stopped.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "spin", "--profiles",
                             str(spin), "--runs", "100000", "--warmup", "0", "--perf",
                             "--keep-perf", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _wait_for_windows(out, 3, proc)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    res = results.read(out)
    assert res.failed is not None and res.failed.interrupted
    # the whole session's hot symbols, summed from its windows, with what annotate needs
    assert res.session_symbols is not None
    names = [s.symbol for s in res.session_symbols.symbols]
    assert "hl_run" in names
    windows = [w for w in res.windows if w.scope == "window"]
    assert res.session_symbols.samples == sum(w.samples for w in windows) > 0
    assert res.session_symbols.binaries and res.session_symbols.comms
    per_run = [line for line in out.read_text().splitlines() if '"scope":"run"' in line]
    assert per_run and all(json.loads(line)["window"] < len(res.runs) + 2 for line in per_run)
    shown = json.loads(hotloop("show", str(out), "--format", "json").stdout)
    assert "hl_run" in [s["symbol"] for s in shown["hot_symbols"]]
    annotated = hotloop("annotate", str(out), "hl_run", "--format", "json")
    assert annotated.returncode == 0, annotated.stderr
    assert json.loads(annotated.stdout)["samples"] > 0
    assert leftovers(grace=5) == []


@needs_perf
def test_show_dir_of_a_killed_session_says_perf_ran_and_finishes_its_data(
        tmp_path, leftovers, monkeypatch):
    """hotloop SIGKILLed mid-session, its perf data's entry in a state directory `show` does
    not read (another HOME, another user's): `show DIR` says perf ran but the session has no
    end, not that perf was off, and leaves its perf data compressed, nothing plain."""
    d = tmp_path / "res"
    out = d / "killed.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--runs",
                             "100000", "--warmup", "0", "--param", "count=300000", "--perf",
                             "--keep-perf", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _wait_for_windows(out, 3, proc)
        proc.kill()
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert leftovers() == []            # perf, gzip and the worker went with it
    done = [p for p in (d / "killed.perf").iterdir() if WINDOW_FILE.fullmatch(p.name)]
    if not done:
        # the reports kept up (each window gzipped once read): the window they had not
        # reached yet, as a loaded machine's kill leaves one, is made so from a kept one
        last = sorted((d / "killed.perf").glob("perf.data.*.gz"))[-1]
        last.with_suffix("").write_bytes(gzip.decompress(last.read_bytes()))
        last.unlink()
    plain = [p.name for p in (d / "killed.perf").iterdir()
             if p.name.startswith("perf.data") and not p.name.endswith(".gz")]
    assert plain, "nothing was left plain: the test shows nothing"
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "another-state"))
    shown = hotloop("show", str(d))
    assert shown.returncode == 0, shown.stderr
    said = " ".join(shown.stdout.split())     # wrapped to the terminal: one paragraph
    assert "perf ran (" in said and "no last line" in said, shown.stdout
    assert "perf off" not in shown.stdout and "did not run" not in shown.stdout
    assert "perf data of a session that did not end finished" in shown.stderr
    assert not [p.name for p in (d / "killed.perf").iterdir()
                if p.name.startswith("perf.data") and not p.name.endswith(".gz")]
    assert list((d / "killed.perf").glob("perf.data.*.gz"))
    again = hotloop("show", str(out))
    assert again.returncode == 0 and "finished" not in again.stderr     # once
