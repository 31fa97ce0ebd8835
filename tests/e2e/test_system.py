"""hotloop.host: sysctls, planned changes, the restore journal, kernel facts, capabilities.

Uses the real, harmless sysctls net.core.busy_poll and net.core.busy_read (root
needed for the writing tests); the autouse fixtures keep the developer's state
dir out of it and always put both sysctls back.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import POLL, POLL_FILE, READ, READ_FILE, cpu_time, hotloop, needs_root_sysctl

from hotloop.host import sysfs
from hotloop.host.changes import Change, apply, describe_changes, plan_changes
from hotloop.host.doctor import capabilities
from hotloop.host.facts import check_expect, kernel_facts, mitigations_state
from hotloop.host.holds import describe_held, held_elsewhere
from hotloop.host.journal import boot_id, journal_path
from hotloop.host.recovery import recover
from hotloop.host.settings import read_sysctl
from hotloop.host.sysfs import SystemSettingError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def state_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "hotloop"


def cur(name: str) -> str:
    return read_sysctl(name)


def other_value(name: str) -> str:
    return "50" if cur(name) != "50" else "51"


# --------------------------------------------------------------------------- planning


def test_governor_and_boost_apply_and_restore(fake_cpufreq):
    root = fake_cpufreq
    changes, warnings = plan_changes({}, "performance", False, [0, 1, 2])
    assert warnings == []
    # cpu0 and cpu1 share a policy: one change for it.
    assert [(c.kind, c.target, c.original, c.value) for c in changes] == [
        ("governor", "cpu0", "powersave", "performance"),
        ("governor", "cpu2", "powersave", "performance"),
        ("boost", "boost", "1", "0"),
    ]
    assert describe_changes(changes, hint="") == (
        "would change: boost 1 -> 0, cpu0,2 governor powersave -> performance"
    )
    with apply(changes):
        assert (root / "cpufreq/policy0/scaling_governor").read_text().strip() == "performance"
        assert (root / "cpufreq/policy2/scaling_governor").read_text().strip() == "performance"
        assert (root / "cpufreq/boost").read_text().strip() == "0"
    assert (root / "cpufreq/policy0/scaling_governor").read_text().strip() == "powersave"
    assert (root / "cpufreq/policy2/scaling_governor").read_text().strip() == "powersave"
    assert (root / "cpufreq/boost").read_text().strip() == "1"
    assert not journal_path().exists()


# --------------------------------------------------------------------------- apply / restore / journal


@needs_root_sysctl
def test_apply_writes_journal_first_and_restore_removes_it(state_home):
    original = cur(POLL)
    value = other_value(POLL)
    changes, _ = plan_changes({POLL: value}, None, None, [])
    with apply(changes) as applied:
        assert cur(POLL) == value
        journal = json.loads((state_home / "restore.json").read_text())
        assert journal["pid"] == os.getpid()
        assert journal["entries"] == [{
            "kind": "sysctl", "target": POLL, "path": str(POLL_FILE),
            "original": original, "value": value,
        }]
        assert applied.changes[0].original == original
    assert cur(POLL) == original
    assert not (state_home / "restore.json").exists()
    assert [p.name for p in state_home.iterdir()] == ["restore.lock"]  # no temp files left
    assert applied.restore() == []  # idempotent


@needs_root_sysctl
def test_restore_returns_messages_and_restores_in_reverse():
    poll0, read0 = cur(POLL), cur(READ)
    # Two changes to the same sysctl: only reverse order ends at the true original.
    a = apply([Change("sysctl", POLL, "50"), Change("sysctl", READ, "51")])
    assert (cur(POLL), cur(READ)) == ("50", "51")
    msgs = a.restore()
    assert msgs == [f"restored {READ} to {read0}", f"restored {POLL} to {poll0}"]
    assert (cur(POLL), cur(READ)) == (poll0, read0)


@needs_root_sysctl
def test_apply_rereads_originals():
    original = cur(POLL)
    stale = Change("sysctl", POLL, "50", original="12345")  # plan is out of date
    with apply([stale]) as a:
        assert a.changes[0].original == original
    assert cur(POLL) == original


@needs_root_sysctl
def test_failure_mid_apply_restores_what_was_applied(state_home):
    poll0, read0 = cur(POLL), cur(READ)
    changes = [Change("sysctl", POLL, other_value(POLL)), Change("sysctl", READ, "not-a-number")]
    with pytest.raises(SystemSettingError) as info:
        apply(changes)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"cannot set {READ} to 'not-a-number': Invalid argument")
    assert "restored 1 value(s)" in msg
    assert (cur(POLL), cur(READ)) == (poll0, read0)
    assert not (state_home / "restore.json").exists()
    # The lock was released: a new apply works.
    with apply([Change("sysctl", POLL, other_value(POLL))]):
        pass


@needs_root_sysctl
def test_exception_inside_with_block_restores():
    original = cur(POLL)
    with pytest.raises(RuntimeError), apply([Change("sysctl", POLL, other_value(POLL))]):
        raise RuntimeError("workload crashed")
    assert cur(POLL) == original
    assert not journal_path().exists()


# --------------------------------------------------------------------------- checked writes


@needs_root_sysctl
@pytest.mark.parametrize("value", ["11\n22", "11\t22", "1\x002", "", "  ", "011", "4096 0131"])
def test_a_value_not_written_as_it_reads_is_refused_before_anything(state_home, value):
    poll0 = cur(POLL)
    with pytest.raises(SystemSettingError) as info:
        apply([Change("sysctl", POLL, value)])
    assert str(info.value).startswith(f"{POLL}: value {value!r}")
    assert "\n" not in str(info.value)
    with pytest.raises(SystemSettingError, match=f"sysctl '{POLL}': value"):
        plan_changes({POLL: value}, None, None, [])
    assert cur(POLL) == poll0 and not (state_home / "restore.json").exists()


@needs_root_sysctl
@pytest.mark.parametrize("value, why", [
    ("0x10", "it reads back as 16"),            # integer sysctls are parsed with base 0
    ("7 8", "the kernel took 2 of 3 bytes"),    # a second field for a one-field sysctl
])
def test_a_write_not_taken_whole_or_reading_back_otherwise_is_undone(state_home, value, why):
    poll0, read0 = cur(POLL), cur(READ)
    with pytest.raises(SystemSettingError) as info:
        apply([Change("sysctl", READ, other_value(READ)), Change("sysctl", POLL, value)])
    assert str(info.value) == (f"cannot set {POLL} to {value!r}: {why} "
                               f"(restored 2 value(s) already changed)")
    assert (cur(POLL), cur(READ)) == (poll0, read0)
    assert not (state_home / "restore.json").exists()


TCP_RMEM = Path("/proc/sys/net/ipv4/tcp_rmem")


@pytest.mark.skipif(not os.access(TCP_RMEM, os.W_OK), reason="needs writable tcp_rmem (root)")
def test_a_multi_field_sysctl_is_written_with_spaces_and_reads_back_with_tabs(state_home):
    name, before = "net.ipv4.tcp_rmem", TCP_RMEM.read_text()
    lo, mid, hi = before.split()
    value = f"{lo} {int(mid) + 1} {hi}"
    try:
        changes, _ = plan_changes({name: value}, None, None, [])
        assert describe_changes(changes, hint="") == \
            f"would change: {name} {lo} {mid} {hi} -> {value}"
        with apply(changes):
            assert cur(name) == value.replace(" ", "\t")
        assert TCP_RMEM.read_text() == before
    finally:
        if TCP_RMEM.read_text() != before:
            TCP_RMEM.write_text(before)


def test_apply_nothing_is_a_no_op(state_home):
    with apply([]) as a:
        assert a.journal is None
    assert not state_home.exists()


@needs_root_sysctl
def test_recover_after_sigkill(state_home):
    """A real hotloop-like process applies a change, gets SIGKILLed; recover() restores."""
    original = cur(POLL)
    value = other_value(POLL)
    code = textwrap.dedent(f"""
        import sys, time
        from hotloop.host.changes import apply, plan_changes
        changes, _ = plan_changes({{{POLL!r}: {value!r}}}, None, None, [])
        applied = apply(changes)
        print("applied", flush=True)
        time.sleep(60)
        applied.restore()
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(state_home.parent)}
    child = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "applied"
        assert cur(POLL) == value
        # While it runs, another hotloop's recover() must leave its settings alone.
        msgs = recover()
        assert len(msgs) == 1 and "left in place" in msgs[0] and f"pid {child.pid}" in msgs[0]
        assert cur(POLL) == value
        with pytest.raises(SystemSettingError, match=f"another hotloop \\(pid {child.pid}\\)"):
            apply([Change("sysctl", READ, "7")])
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    assert cur(POLL) == value  # the kill left it changed
    assert (state_home / "restore.json").exists()
    msgs = recover()
    assert msgs == [f"hotloop (pid {child.pid}) did not finish: restored {POLL} to {original}"]
    assert cur(POLL) == original
    assert not (state_home / "restore.json").exists()
    assert recover() == []  # idempotent


def write_journal(state_home: Path, entries: list[dict]) -> None:
    state_home.mkdir(parents=True, exist_ok=True)
    (state_home / "restore.json").write_text(json.dumps({"version": 1, "pid": 999999, "entries": entries}))


@needs_root_sysctl
def test_recover_several_entries_idempotent(state_home):
    poll0, read0 = cur(POLL), cur(READ)
    entries = [
        {"kind": "sysctl", "target": POLL, "path": str(POLL_FILE), "original": poll0, "value": "50"},
        {"kind": "sysctl", "target": READ, "path": str(READ_FILE), "original": read0, "value": "51"},
    ]
    write_journal(state_home, entries)
    POLL_FILE.write_text("50")
    READ_FILE.write_text("51")
    msgs = recover()
    assert len(msgs) == 2 and all("pid 999999" in m for m in msgs)
    assert (cur(POLL), cur(READ)) == (poll0, read0)
    # A journal whose values are already back (crash before the first write) is harmless.
    write_journal(state_home, entries)
    assert len(recover()) == 2
    assert (cur(POLL), cur(READ)) == (poll0, read0)
    assert recover() == []


@needs_root_sysctl
def test_apply_recovers_a_stale_journal_first(state_home):
    poll0 = cur(POLL)
    write_journal(state_home, [
        {"kind": "sysctl", "target": POLL, "path": str(POLL_FILE), "original": poll0, "value": "50"}])
    POLL_FILE.write_text("50")
    with apply([Change("sysctl", READ, other_value(READ))]) as a:
        assert len(a.recovered) == 1 and POLL in a.recovered[0]
        assert cur(POLL) == poll0
        entries = json.loads((state_home / "restore.json").read_text())["entries"]
        assert [e["target"] for e in entries] == [READ]


def test_recover_unreadable_journal_is_moved_aside(state_home):
    state_home.mkdir(parents=True)
    (state_home / "restore.json").write_text("{not json")
    msgs = recover()
    assert len(msgs) == 1 and "unreadable" in msgs[0]
    assert not (state_home / "restore.json").exists()
    assert any(p.name.startswith("restore.json.corrupt-") for p in state_home.iterdir())
    assert recover() == []


def test_hotloop_restore_exits_1_when_something_is_not_put_back(state_home):
    """A script that runs `hotloop restore` learns from its status whether to look closer."""
    state_home.mkdir(parents=True)
    (state_home / "restore.json").write_text("{not json")
    done = hotloop("restore")
    assert done.returncode == 1 and "unreadable" in done.stdout and "moved to" in done.stdout
    again = hotloop("restore")              # set aside before: nothing new to put back
    assert again.returncode == 0 and again.stdout.strip() == "nothing to restore"
    (state_home / "restore.json").mkdir()   # no journal at all: set aside the same way
    stuck = hotloop("restore")
    assert stuck.returncode == 1 and "not a regular file" in stuck.stdout, stuck.stdout


@pytest.fixture
def fake_proc_sys(tmp_path, monkeypatch):
    """A /proc/sys stand-in holding fake.ok = 2, for what the real one cannot show."""
    root = tmp_path / "proc-sys"
    (root / "fake").mkdir(parents=True)
    (root / "fake" / "ok").write_text("2\n")
    monkeypatch.setattr(sysfs, "PROC_SYS", root)
    return root


def test_recover_keeps_what_cannot_be_restored(state_home, fake_proc_sys):
    ok = fake_proc_sys / "fake" / "ok"
    write_journal(state_home, [
        {"kind": "sysctl", "target": "fake.ok", "path": str(ok), "original": "1", "value": "2"},
        {"kind": "sysctl", "target": "fake.gone", "path": str(fake_proc_sys / "fake" / "gone"),
         "original": "0", "value": "1"},
    ])
    msgs = recover()
    assert ok.read_text() == "1"
    assert any(m.startswith("could not restore fake.gone") for m in msgs)
    left = json.loads((state_home / "restore.json").read_text())["entries"]
    assert [e["target"] for e in left] == ["fake.gone"]


def test_a_journal_from_an_earlier_boot_is_set_aside_never_restored(state_home, fake_proc_sys):
    """Users reboot between sessions: what a killed hotloop changed went back with the
    reboot, and its originals written now would undo what this boot set."""
    ok = fake_proc_sys / "fake" / "ok"
    write_journal(state_home, [
        {"kind": "sysctl", "target": "fake.ok", "path": str(ok), "original": "1", "value": "2"}])
    journal = state_home / "restore.json"
    data = json.loads(journal.read_text())
    journal.write_text(json.dumps({**data, "boot_id": "0" * 8 + "-earlier-boot"}))
    msg, = recover()
    assert ok.read_text() == "2\n"                      # this boot's value, untouched
    assert msg.startswith("restore journal of pid 999999 from an earlier boot not restored "
                          "(1 setting: the reboot reset them") and "kept in " in msg
    assert not journal.exists() and recover() == []
    aside, = state_home.glob("restore.json.*")
    assert aside.name.startswith("restore.json.earlier-boot-")
    assert json.loads(aside.read_text())["entries"][0]["target"] == "fake.ok"
    done = hotloop("restore")                           # nothing left changed: status 0
    assert done.returncode == 0 and done.stdout.strip() == "nothing to restore"
    # this boot's own journal is restored as ever
    write_journal(state_home, [
        {"kind": "sysctl", "target": "fake.ok", "path": str(ok), "original": "1", "value": "2"}])
    journal.write_text(json.dumps({**data, "boot_id": boot_id()}))
    assert any(m.endswith("restored fake.ok to 1") for m in recover())
    assert ok.read_text().strip() == "1"


# --------------------------------------------------------------------------- a journal not to be trusted


def _one_line_each(msgs: list[str]) -> None:
    assert msgs and all(m and "\n" not in m and "Traceback" not in m for m in msgs)


def test_a_journal_path_that_is_not_the_named_setting_is_never_written(state_home, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("safe\n")
    poll0, read0 = cur(POLL), cur(READ)
    write_journal(state_home, [
        {"kind": "sysctl", "target": POLL, "path": str(victim), "original": "pwned", "value": "1"},
        # Under /proc/sys, but another setting than the one named.
        {"kind": "sysctl", "target": POLL, "path": str(READ_FILE), "original": "9", "value": "1"},
    ])
    msgs = recover()
    _one_line_each(msgs)
    assert len(msgs) == 2 and all("set aside, not restored" in m for m in msgs)
    assert f"entry 1 set aside, not restored: {POLL}: its path" in msgs[0]
    assert victim.read_text() == "safe\n"
    assert (cur(POLL), cur(READ)) == (poll0, read0)
    # Nothing lost: the entries wait beside the journal for a person to check.
    assert not (state_home / "restore.json").exists()
    aside = [p for p in state_home.iterdir() if p.name.startswith("restore.json.rejected-")]
    assert len(aside) == 1 and len(json.loads(aside[0].read_text())["entries"]) == 2
    assert recover() == []


BAD_ENTRIES = {
    "original-0": {"kind": "sysctl", "target": READ, "original": 0, "value": "1"},
    "original-null": {"kind": "sysctl", "target": READ, "original": None, "value": "1"},
    "path-null": {"kind": "sysctl", "target": READ, "path": None, "original": "0", "value": "1"},
    "path-int": {"kind": "sysctl", "target": READ, "path": 7, "original": "0", "value": "1"},
    "value-list": {"kind": "sysctl", "target": READ, "original": "0", "value": ["1"]},
    "original-newline": {"kind": "sysctl", "target": READ, "original": "1\n2", "value": "1"},
    "original-surrogate": {"kind": "sysctl", "target": READ, "original": "\ud800", "value": "1"},
    "dotdot": {"kind": "sysctl", "target": "../../../tmp/x", "original": "0"},
    "empty-part": {"kind": "sysctl", "target": "net.core..busy_read", "original": "0"},
    "target-list": {"kind": "sysctl", "target": ["net", "core"], "original": "0"},
    "governor-dotdot": {"kind": "governor", "target": "cpu0/../../../../tmp/x",
                        "original": "performance"},
    "boost-unknown": {"kind": "boost", "target": "no_turbo", "original": "1"},
    "kind-int": {"kind": 1, "target": READ, "original": "0"},
    "no-kind": {"target": READ, "original": "0"},
    "string": "net.core.busy_read=0",
    "null": None,
}


@needs_root_sysctl
@pytest.mark.parametrize("bad, command", [(b, "restore") for b in BAD_ENTRIES]
                         + [(b, "list") for b in ("original-0", "original-null", "path-null")])
def test_a_bad_journal_entry_is_set_aside_in_one_line_and_blocks_nothing(state_home, bad,
                                                                          command):
    poll0, read0 = cur(POLL), cur(READ)
    value = other_value(POLL)
    POLL_FILE.write_text(value)
    write_journal(state_home, [
        {"kind": "sysctl", "target": POLL, "path": str(POLL_FILE), "original": poll0, "value": value},
        BAD_ENTRIES[bad]])
    READ_FILE.write_text("1")
    try:
        _bad_entry_set_aside(state_home, command, poll0)
    finally:
        READ_FILE.write_text(read0)         # the machine as the test found it


def _bad_entry_set_aside(state_home: Path, command: str, poll0: str) -> None:
    from conftest import hotloop
    p = hotloop(*(["list", "plans"] if command == "list" else [command]))
    # restore says by its status that an entry needs a look by hand; other commands go on
    assert p.returncode == (1 if command == "restore" else 0), p.stderr
    assert "Traceback" not in p.stderr
    said = p.stdout + p.stderr
    assert len([ln for ln in said.splitlines() if "entry 2 set aside, not restored" in ln]) == 1
    assert f"restored {POLL} to {poll0}" in said        # the good entry is restored
    assert cur(POLL) == poll0
    assert cur(READ) == "1"                             # the bad one touched nothing
    assert not (state_home / "restore.json").exists()
    assert hotloop("list", "plans").stderr == ""        # set aside for good


@pytest.mark.parametrize("make, why", [
    (lambda j: j.mkdir(), "not a regular file"),
    (lambda j: os.mkfifo(j), "not a regular file"),
    (lambda j: j.symlink_to(j.parent.parent / "victim"), "symbolic link"),
    (lambda j: j.write_text('{"version": 1, "entries": [' + "0," * 600_000 + "0]}"), "larger than"),
    (lambda j: j.write_text("[" * 100_000), "nested too deeply"),
    (lambda j: j.write_bytes(b'{"version": 1, "entries": [], "pid": "\xff"}'), "not JSON"),
    (lambda j: j.write_text("[]"), "not a JSON object"),
    (lambda j: j.write_text('{"version": 2, "entries": []}'), "version 2"),
    (lambda j: j.write_text('{"version": 1, "entries": {"a": 1}}'), "entries are not a list"),
], ids=["directory", "fifo", "symlink", "huge", "deep", "binary", "array", "version", "entries"])
def test_a_journal_that_is_no_journal_is_moved_aside_in_one_line(state_home, tmp_path, make, why):
    victim = tmp_path / "state" / "victim"
    state_home.mkdir(parents=True)
    victim.write_text("safe\n")
    journal = state_home / "restore.json"
    make(journal)
    out: list[list[str]] = []
    t = threading.Thread(target=lambda: out.append(recover()), daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():                    # blocked reading a FIFO: give it an EOF, then fail
        os.close(os.open(journal, os.O_WRONLY | os.O_NONBLOCK))
        t.join(10)
        pytest.fail("recover() hung on the journal")
    msgs = out[0]
    _one_line_each(msgs)
    assert len(msgs) == 1 and "unreadable" in msgs[0] and why in msgs[0], msgs
    assert not os.path.lexists(journal)
    assert any(p.name.startswith("restore.json.corrupt-") for p in state_home.iterdir())
    assert victim.read_text() == "safe\n"
    assert recover() == []


def test_symlinks_out_of_the_setting_trees_are_not_followed(state_home, fake_proc_sys,
                                                            fake_cpufreq, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text("safe\n")
    (outside / "scaling_governor").write_text("safe\n")
    (fake_proc_sys / "fake" / "link").symlink_to(outside / "x")     # the file itself
    (fake_proc_sys / "evil").symlink_to(outside)                    # a directory on the way
    (fake_cpufreq / "cpu2" / "cpufreq").unlink()                    # cpufreq links, but out
    (fake_cpufreq / "cpu2" / "cpufreq").symlink_to(outside)
    write_journal(state_home, [
        {"kind": "sysctl", "target": "fake.link", "original": "1"},
        {"kind": "sysctl", "target": "evil.x", "original": "2"},
        {"kind": "governor", "target": "cpu2", "original": "pwned"},
    ])
    msgs = recover()
    _one_line_each(msgs)
    assert [m.split(":")[0] for m in msgs[:3]] == [
        "could not restore cpu2 governor to pwned", "could not restore evil.x to 2",
        "could not restore fake.link to 1"]
    assert all("outside" in m for m in msgs[:3])
    assert (outside / "x").read_text() == "safe\n"
    assert (outside / "scaling_governor").read_text() == "safe\n"
    # Applying refuses them too, and writes nothing.
    for change in (Change("sysctl", "fake.link", "5"), Change("sysctl", "evil.x", "5"),
                   Change("governor", "cpu2", "performance")):
        with pytest.raises(SystemSettingError, match="outside"):
            apply([change])
    assert (outside / "x").read_text() == "safe\n"
    # The kernel's own cpuN/cpufreq -> ../cpufreq/policyN links stay usable.
    with apply([Change("governor", "cpu1", "performance")]):
        assert (fake_cpufreq / "cpufreq/policy0/scaling_governor").read_text() == "performance"
    assert (fake_cpufreq / "cpufreq/policy0/scaling_governor").read_text() == "powersave"


def test_a_change_whose_path_is_not_its_file_is_refused(state_home, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("safe\n")
    with pytest.raises(SystemSettingError, match=f"{POLL}: {victim} is not its file"):
        apply([Change("sysctl", POLL, "5", path=str(victim))])
    assert victim.read_text() == "safe\n"
    assert not (state_home / "restore.json").exists()


@needs_root_sysctl
@pytest.mark.parametrize("spoil, why", [
    (lambda d: d.chmod(0o777), "others may write to it (mode 0777)"),
    (lambda d: d.chmod(0o720), "others may write to it (mode 0720)"),
    (lambda d: os.chown(d, 65534, 65534), "belongs to uid 65534"),
], ids=["0777", "group-writable", "someone-else"])
def test_a_state_dir_others_control_is_refused(state_home, spoil, why):
    from conftest import hotloop
    poll0 = cur(POLL)
    write_journal(state_home, [
        {"kind": "sysctl", "target": POLL, "path": str(POLL_FILE), "original": "12", "value": "1"}])
    spoil(state_home)
    msgs = recover()
    assert len(msgs) == 1 and msgs[0].startswith(f"refusing the state directory {state_home}")
    assert why in msgs[0]
    assert cur(POLL) == poll0 and (state_home / "restore.json").exists()
    p = hotloop("restore")
    assert p.returncode == 1 and why in p.stdout and cur(POLL) == poll0     # not restored
    with pytest.raises(SystemSettingError, match=why.replace("(", r"\(").replace(")", r"\)")):
        apply([Change("sysctl", POLL, other_value(POLL))])
    assert cur(POLL) == poll0


def test_held_elsewhere_names_what_a_running_hotloop_holds(state_home, fake_cpufreq):
    code = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from hotloop.host import sysfs
        from hotloop.host.changes import Change, apply
        sysfs.CPU_SYS = Path({str(fake_cpufreq)!r})
        applied = apply([Change("governor", "cpu0", "performance")])
        print("applied", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert child.stdout.readline().strip() == "applied"
        # cpu1 shares cpu0's cpufreq policy: the same file, so the same setting.
        owner, held = held_elsewhere(governor=True, cpus=[1])
        assert owner == f"pid {child.pid}"
        assert [(c.target, c.value, c.original) for c in held] == [
            ("cpu0", "performance", "powersave")]
        assert describe_held(owner, held) == (
            f"cpu0 governor = performance is held by a running hotloop (pid {child.pid}), which "
            f"puts it back to powersave when it ends: this run depends on it; start it once "
            f"that run is over")
        assert held_elsewhere(governor=True, cpus=[2])[1] == []
        assert held_elsewhere(sysctls=[POLL], boost=True)[1] == []
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
    # Its owner is gone: nothing is held, and the next start restores it.
    assert held_elsewhere(governor=True, cpus=[1]) == ("", [])
    assert recover() == [
        f"hotloop (pid {child.pid}) did not finish: restored cpu0 governor to powersave"]
    assert (fake_cpufreq / "cpufreq/policy0/scaling_governor").read_text() == "powersave"


def test_no_journal_recover_is_cheap(state_home):
    t = cpu_time()                      # CPU, not the wall clock a busy machine stretches
    assert recover() == []
    assert cpu_time() - t < 0.05
    assert not state_home.exists()


# --------------------------------------------------------------------------- kernel facts / expect


def test_kernel_facts():
    facts = kernel_facts([POLL, "net.core.no_such_thing"])
    assert facts["release"] == os.uname().release
    assert facts["cmdline"] == Path("/proc/cmdline").read_text().strip()
    vdir = Path("/sys/devices/system/cpu/vulnerabilities")
    if vdir.is_dir():
        assert set(facts["vulnerabilities"]) == {p.name for p in vdir.iterdir()}
    assert facts["sysctl"] == {POLL: cur(POLL), "net.core.no_such_thing": None}
    assert facts["mitigations"] in ("on", "off", "not affected", "unknown")
    json.dumps(facts)  # goes into a JSON header as is


def test_check_expect():
    release = os.uname().release
    major = release.split(".")[0]
    assert check_expect({}) == []
    assert check_expect({"release": f"{major}.*"}) == []
    assert check_expect({"release": rf"^{major}\."}) == []  # regex
    msgs = check_expect({"release": "1.2.*"})
    assert msgs == [f"kernel release {release} does not match '1.2.*'"]
    word = Path("/proc/cmdline").read_text().split()[0]
    assert check_expect({"cmdline_contains": [word]}) == []
    assert check_expect({"cmdline_contains": ["hotloop_never_there=1"]}) == [
        "kernel cmdline does not contain 'hotloop_never_there=1'"]
    state = mitigations_state()
    if state in ("on", "off"):
        other = "off" if state == "on" else "on"
        assert check_expect({"mitigations": state}) == []
        assert check_expect({"mitigations": other}) == [
            f"mitigations are {state}, profile expects {other}"]


# --------------------------------------------------------------------------- capabilities


def test_capabilities_sane_and_fast():
    t = cpu_time()                      # CPU (its children's too), not the wall clock
    caps = {c.name: c for c in capabilities()}
    assert cpu_time() - t < 1.0
    assert set(caps) == {"cpus", "cpufreq", "boost", "smt", "isolated cpus",
                         "sched_setscheduler", "sysctl writable", "tsc"}
    assert caps["cpus"].value == os.cpu_count()
    assert caps["cpufreq"].available == Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").exists()
    flags = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")), "")
    assert caps["tsc"].available == ("constant_tsc" in flags.split())
    if os.geteuid() == 0:
        assert caps["sysctl writable"].available
    for c in caps.values():
        assert c.detail and "\n" not in c.detail
    # The probe thread must not have changed this process's scheduling.
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


# --------------------------------------------------------------------------- scheduling helpers


def _in_child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=30)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for SCHED_FIFO")
def test_apply_sched_in_a_child():
    r = _in_child("""
        import os
        from hotloop.host.procs import apply_sched
        apply_sched("fifo", 10, 0)
        print(os.sched_getscheduler(0) == os.SCHED_FIFO, os.sched_getparam(0).sched_priority)
        apply_sched("batch", 0, 5)
        print(os.sched_getscheduler(0) == os.SCHED_BATCH, os.getpriority(os.PRIO_PROCESS, 0))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "10", "True", "5"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to an unprivileged user")
def test_apply_sched_errors_are_one_line():
    r = _in_child("""
        import os, resource
        from hotloop.host.procs import apply_sched
        from hotloop.host.sysfs import SystemSettingError
        resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
        resource.setrlimit(resource.RLIMIT_NICE, (0, 0))
        os.setgid(65534); os.setuid(65534)
        for args in (("fifo", 50, 0), ("other", 0, -5), ("fifo", 100, 0)):
            try:
                apply_sched(*args)
            except SystemSettingError as e:
                print(e)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "sched fifo priority 50: Operation not permitted",
        "nice -5: Permission denied",
        "priority 100 out of range for sched fifo (1-99)",
    ]
