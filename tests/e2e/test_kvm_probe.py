"""The KVM probe's three outcomes, each driven on every machine: qemu aborts with its own
error line (nested KVM on some hosts), the guest hangs and prints nothing (nested KVM on
others), or it boots and prints its banner (a machine with working KVM).  This machine shows
at most one of them for real (tests/e2e/test_vm.py's doctor test reads that one), so a
stand-in qemu, a shell script that behaves as each kind of qemu does, drives the others
through the real probe and the real doctor row, and /dev/kvm is taken as present and usable
where the probe would otherwise stop before starting qemu."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hotloop.host import doctor, kvm

STAND_INS = {
    # qemu's own error line, as nested KVM makes it abort
    "aborts": 'echo "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69" >&2; exit 1',
    # a guest that never prints: qemu keeps running until the probe kills it
    "hangs": "exec sleep 600",
    # a guest under KVM prints the kernel's banner on the serial line, and keeps running
    "boots": 'echo "[    0.000000] Linux version 6.1.0-test (builder@host)"; exec sleep 600',
}


def stand_in_qemu(tmp_path: Path, mode: str) -> Path:
    """A directory holding a `qemu-system-x86_64` that behaves as `mode` says (and names its
    mode as its version, so the probe's cache keeps each apart)."""
    d = tmp_path / f"qemu-{mode}"
    d.mkdir()
    q = d / kvm.QEMU
    q.write_text("#!/bin/sh\n"
                 f'if [ "$1" = --version ]; then echo "QEMU emulator version 0.0-{mode}"; '
                 "exit 0; fi\n"
                 f"echo $$ > {d / 'pid'}\n{STAND_INS[mode]}\n")
    q.chmod(q.stat().st_mode | stat.S_IXUSR)
    return d


def fake_bzimage(path: Path) -> Path:
    """Enough of an x86 boot header for the image checks; the stand-ins never read it."""
    data = bytearray(0x400)
    data[0x1F1] = 1
    data[0x202:0x206] = b"HdrS"
    path.write_bytes(bytes(data))
    return path


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


@pytest.fixture
def kvm_present(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """/dev/kvm as a machine with it readable and writable has it, and a cache of the test's
    own: without /dev/kvm (or as a user without access) the probe never starts qemu."""
    monkeypatch.setattr(kvm, "kvm_state", lambda: "2536:600:0:0:True")
    monkeypatch.setattr(doctor, "kvm_state", lambda: "2536:600:0:0:True")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(kvm, "PROBE_S", 1.0)    # the hang is judged in a second, not 20


EXPECTED = {
    "aborts": (False, "qemu: failed to set MSR 0x10a to 0x69"),
    "hangs": (False, "a guest under KVM printed nothing within 1 s"),
    "boots": (True, ""),
}


@pytest.mark.parametrize("mode", sorted(STAND_INS))
def test_the_probe_tells_each_outcome_and_leaves_no_qemu(mode, tmp_path, kvm_present):
    d = stand_in_qemu(tmp_path, mode)
    assert kvm._probe(str(d / kvm.QEMU), fake_bzimage(tmp_path / "bzImage")) == EXPECTED[mode]
    assert gone(int((d / "pid").read_text()))           # killed with its process group


@pytest.mark.parametrize("mode", sorted(STAND_INS))
def test_doctors_kvm_row_for_each_outcome(mode, tmp_path, kvm_present, monkeypatch):
    d = stand_in_qemu(tmp_path, mode)
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    rows = {name: (ok, text) for name, ok, text in
            doctor.vm_rows({"k": str(fake_bzimage(tmp_path / "bzImage"))})}
    assert rows["qemu"] == (True, f"{d / kvm.QEMU} 0.0-{mode}")
    usable, why = EXPECTED[mode]
    assert rows["kvm"] == (usable, "/dev/kvm present and usable" if usable else
                           "/dev/kvm present, not usable: " + kvm.tcg_warning(why))
    # the answer is cached for this qemu, image, kernel and /dev/kvm: asked again, the same,
    # without starting qemu (its pid file is not written anew)
    (d / "pid").unlink()
    again = {name: (ok, text) for name, ok, text in
             doctor.vm_rows({"k": str(tmp_path / "bzImage")})}
    assert again["kvm"] == rows["kvm"] and not (d / "pid").exists()


def test_without_dev_kvm_no_qemu_is_started(tmp_path, monkeypatch):
    monkeypatch.setattr(kvm, "kvm_state", lambda: "absent")
    d = stand_in_qemu(tmp_path, "boots")
    accel = kvm.probe_kvm(str(d / kvm.QEMU), fake_bzimage(tmp_path / "bzImage"), "x", "0")
    assert accel == kvm.Accel("tcg", "no /dev/kvm") and not (d / "pid").exists()
    monkeypatch.setattr(kvm, "kvm_state", lambda: "2536:600:0:0:False")
    accel = kvm.probe_kvm(str(d / kvm.QEMU), tmp_path / "bzImage", "x", "0")
    assert accel == kvm.Accel("tcg", "/dev/kvm is not readable and writable by this user")
    assert not (d / "pid").exists()
