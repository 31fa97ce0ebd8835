"""A setting a live run holds is its own until it ends: `hotloop restore` leaves it alone, and
runs of other state directories (another HOME, XDG_STATE_HOME) neither ride on it nor revert it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import POLL, ROOT, hotloop, needs_root_sysctl
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


def test_a_killed_run_not_yet_reaped_holds_nothing(prof, busy_poll):
    """Its zombie keeps the pid and start time, but holds no lock and restores nothing."""
    proc = holder(prof, "z.jsonl")
    proc.kill()
    stat = Path(f"/proc/{proc.pid}/stat")
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":
        pass
    try:
        p = hotloop("restore")
        assert p.returncode == 0 and f"restored {POLL} to {busy_poll}" in p.stdout, p.stdout
        assert read_sysctl(POLL) == busy_poll
    finally:
        proc.communicate(timeout=30)


def elsewhere(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command line as another user of root would run it: another HOME, another
    XDG_STATE_HOME; the machine-wide place (the test's own, HOTLOOP_SYSTEM_DIR) is the same."""
    home = tmp_path / "other-home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), XDG_STATE_HOME=str(home / "state"),
               PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "hotloop", *args], capture_output=True,
                          text=True, timeout=120, env=env)


def test_a_run_of_another_state_dir_neither_rides_on_nor_reverts_a_held_setting(
        prof, busy_poll, tmp_path):
    (prof / "k2.toml").write_text(f'[kernel.poll78]\nsysctl = {{ "{POLL}" = 78 }}\n')
    proc = holder(prof, "a.jsonl")
    try:
        run = ["run", "faulty", "--profiles", str(prof), "--runs", "2", "--no-perf"]
        rides = elsewhere(tmp_path, *run, "--kernel", "poll", "--out", "b.jsonl")
        assert rides.returncode == 2, rides.stderr
        assert f"held by a running hotloop (pid {proc.pid})" in rides.stderr
        assert not Path("b.jsonl").exists()
        clobbers = elsewhere(tmp_path, *run, "--kernel", "poll78", "--apply-system",
                             "--out", "c.jsonl")
        assert clobbers.returncode == 2, clobbers.stderr
        assert f"pid {proc.pid}" in clobbers.stderr and read_sysctl(POLL) == "77"
        restore = elsewhere(tmp_path, "restore")
        assert restore.returncode == 1 and f"pid {proc.pid}" in restore.stdout
        assert read_sysctl(POLL) == "77"
    finally:
        end(proc)
    assert read_sysctl(POLL) == busy_poll


def test_a_run_killed_is_restored_by_the_next_hotloop_of_any_state_dir(prof, busy_poll,
                                                                        tmp_path):
    proc = holder(prof, "k.jsonl")
    proc.kill()
    proc.communicate(timeout=30)
    assert read_sysctl(POLL) == "77"
    p = elsewhere(tmp_path, "list", "plans")
    assert p.returncode == 0 and f"restored {POLL} to {busy_poll}" in p.stderr, p.stderr
    assert read_sysctl(POLL) == busy_poll


def test_roots_journal_is_one_for_the_machine(monkeypatch, tmp_path):
    from hotloop.host import journal
    monkeypatch.delenv("HOTLOOP_SYSTEM_DIR", raising=False)
    assert journal.journal_path() == Path("/run/hotloop/restore.json")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
    assert journal.journal_path() == Path("/run/hotloop/restore.json")
    monkeypatch.setenv("HOTLOOP_SYSTEM_DIR", "relative/dir")     # not honoured
    assert journal.journal_path() == Path("/run/hotloop/restore.json")
    monkeypatch.setenv("HOTLOOP_SYSTEM_DIR", str(tmp_path / "private"))
    assert journal.journal_path() == tmp_path / "private" / "restore.json"


def test_a_moved_machine_place_still_honours_what_the_real_one_holds(tmp_path, monkeypatch,
                                                                     fake_cpufreq):
    """HOTLOOP_SYSTEM_DIR moves where this run keeps its journal, never what it sees: a run
    holding a setting in the real place (here a stand-in for /run/hotloop) refuses it."""
    import textwrap

    from hotloop.host import holds, journal
    from hotloop.host.changes import Change, apply
    from hotloop.host.sysfs import SystemSettingError
    real = tmp_path / "real-run"
    code = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from hotloop.host import journal, sysfs
        from hotloop.host.changes import Change, apply
        sysfs.CPU_SYS = Path({str(fake_cpufreq)!r})
        journal.SYSTEM_DIR = Path({str(real)!r})
        applied = apply([Change("governor", "cpu0", "performance")])
        print("applied", flush=True)
        time.sleep(60)
    """)
    env = {k: v for k, v in os.environ.items() if k != "HOTLOOP_SYSTEM_DIR"}
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**env, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout.readline().strip() == "applied"
        assert (real / "restore.json").exists()
        monkeypatch.setattr(journal, "SYSTEM_DIR", real)
        assert journal.journal_path() != real / "restore.json"     # moved: elsewhere
        owner, held = holds.held_elsewhere(governor=True, cpus=[1])
        assert owner == f"pid {child.pid}" and [c.target for c in held] == ["cpu0"]
        with pytest.raises(SystemSettingError, match=f"held by a running hotloop "
                                                     f"\\(pid {child.pid}\\)"):
            apply([Change("governor", "cpu0", "powersave")])
        assert (fake_cpufreq / "cpufreq/policy0/scaling_governor").read_text() == "performance"
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


def test_another_users_run_sees_what_root_holds(prof, busy_poll, monkeypatch):
    """A user's run cannot open root's lock (0600: nobody may block root's runs), and still
    sees the hold: root's journal is readable by all, its owner known by pid and start time."""
    import json
    import shutil
    import tempfile
    shared = Path(tempfile.mkdtemp(prefix="hotloop-system-"))    # a place nobody reaches
    shared.chmod(0o755)
    monkeypatch.setenv("HOTLOOP_SYSTEM_DIR", str(shared))
    try:
        proc = holder(prof, "a.jsonl")
        try:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:                # the user: nobody, without a state directory
                try:
                    os.close(r)
                    os.environ["XDG_STATE_HOME"] = "/nonexistent-hotloop-test-state"
                    os.setgid(65534)
                    os.setuid(65534)
                    from hotloop.host.holds import held_elsewhere
                    owner, held = held_elsewhere(sysctls=[POLL])
                    os.write(w, json.dumps([owner, [c.value for c in held]]).encode())
                finally:
                    os._exit(0)
            os.close(w)
            with os.fdopen(r, "rb") as f:
                got = json.loads(f.read() or b"null")
            os.waitpid(pid, 0)
            assert got == [f"pid {proc.pid}", ["77"]]
        finally:
            end(proc)
    finally:
        shutil.rmtree(shared)


def test_a_journal_root_left_in_its_state_dir_before_is_still_restored(busy_poll, tmp_path,
                                                                       monkeypatch):
    """An older hotloop kept root's journal in the state directory: the next command still
    puts its settings back (while no run holds the machine's place), once."""
    import json

    from hotloop.host.recovery import recover
    monkeypatch.setenv("HOTLOOP_SYSTEM_DIR", str(tmp_path / "machine"))
    legacy = tmp_path / "state" / "hotloop" / "restore.json"
    legacy.parent.mkdir(parents=True, mode=0o700)
    legacy.write_text(json.dumps({"version": 1, "pid": 999999, "entries": [
        {"kind": "sysctl", "target": POLL, "original": busy_poll, "value": "77"}]}))
    sysctl_path(POLL).write_text("77")
    assert recover() == [f"hotloop (pid 999999) did not finish: restored {POLL} to {busy_poll}"]
    assert read_sysctl(POLL) == busy_poll and not legacy.exists()
    assert recover() == []
