"""A setting a live run holds is its own until it ends: `hotloop restore` leaves it alone, and
runs of other state directories (another HOME, XDG_STATE_HOME) neither ride on it nor revert it."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import POLL, hotloop, needs_root_sysctl
from faulty import FAULTY_C, FAULTY_TOML
from faulty import start as _start
from faulty import wait_for_runs as _wait_for_runs

from hotloop.host.journal import journal_path
from hotloop.host.settings import read_sysctl, sysctl_path

pytestmark = needs_root_sysctl


@pytest.fixture
def busy_poll():
    original = read_sysctl(POLL)
    assert original != "77", "a previous test left busy_poll changed"
    yield original
    sysctl_path(POLL).write_text(original)


@pytest.fixture
def prof(tmp_path: Path) -> Path:
    d = tmp_path / "prof"
    d.mkdir()
    (d / "faulty.c").write_text(FAULTY_C)
    (d / "k.toml").write_text(FAULTY_TOML + f'\n[kernel.poll]\nsysctl = {{ "{POLL}" = 77 }}\n')
    return d


def holder(prof: Path, out: str) -> subprocess.Popen[str]:
    """A run holding busy_poll = 77 for as long as the test needs."""
    proc = _start(["run", "faulty", "--profiles", str(prof), "--kernel", "poll",
                   "--apply-system", "--runs", "1000", "--out", out, "--no-perf"])
    _wait_for_runs(Path(out), 2)
    assert read_sysctl(POLL) == "77"
    return proc


def end(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130


@pytest.mark.parametrize("lock", ["kept", "removed"])
def test_restore_by_hand_leaves_a_live_runs_settings_alone(prof, busy_poll, lock):
    proc = holder(prof, "a.jsonl")
    try:
        if lock == "removed":           # its lock file gone: the journal still names it
            (journal_path().parent / "restore.lock").unlink()
        p = hotloop("restore")
        assert p.returncode == 1, p.stdout + p.stderr
        assert f"pid {proc.pid}" in p.stdout and "left in place" in p.stdout, p.stdout
        assert len((p.stdout + p.stderr).strip().splitlines()) == 1
        assert read_sysctl(POLL) == "77" and journal_path().exists()
        listed = hotloop("list", "plans")       # nor does any other command's recovery
        assert listed.returncode == 0 and read_sysctl(POLL) == "77"
    finally:
        end(proc)
    assert read_sysctl(POLL) == busy_poll and not journal_path().exists()
