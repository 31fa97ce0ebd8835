"""Standard output on a full disk (`hotloop compare A B --format md > report.md` with no room
left; /dev/full is such a file): one line naming what failed, exit 1, never a traceback, for
each command that prints; a run's result file is still whole."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, hotloop

from hotloop import results

FULL = Path("/dev/full")
pytestmark = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
SAID = "hotloop: cannot write standard output: No space left on device"
RUN = ["run", "dd-zero-null", "--runs", "2", "--warmup", "0", "--no-perf"]


def into_full(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command line, as hotloop() runs it, its standard output /dev/full."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with FULL.open("w") as full:
        return subprocess.run([sys.executable, "-m", "hotloop", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=300, env=env)


def one_line(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == SAID, done.stderr
    assert done.stderr.count("hotloop: cannot write") == 1, done.stderr


def test_each_command_on_a_full_disk_is_one_line_and_exit_1(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    done = into_full(*RUN, "--format", "json", "--out", str(a))
    one_line(done)
    assert results.read(a).finished is not None         # the run itself is whole
    assert hotloop(*RUN, "--out", str(b)).returncode == 0
    for args in (["compare", str(a), str(b), "--format", "md"], ["compare", str(a), str(b)],
                 ["show", str(a)], ["show", str(a), "--format", "json"], ["list"],
                 ["list", "plans"], ["doctor"], ["completion", "bash"]):
        one_line(into_full(*args))


def test_a_reader_gone_stays_a_quiet_exit_0(tmp_path):
    """`hotloop list | head -1`: the reader gone before hotloop writes (its end of the pipe
    closed at once, so the first write meets EPIPE, whatever the output's size), hotloop's
    own status is 0 and it says nothing."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == "", err
