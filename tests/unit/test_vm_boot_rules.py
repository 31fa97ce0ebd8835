"""A VM's boot, the rules on fixed data: the image deleted mid-series is said in one set of
words whoever notices it (virtme-run's "X does not exist", the session's own check), and the
console tells the kernel's start from the boot loader's words.  The boot itself:
tests/e2e/test_vm_boot_silent.py."""
from __future__ import annotations

import pytest
from test_vm_rules import image_plan

from hotloop.errors import SessionFailed
from hotloop.run import start, vm


def test_an_image_deleted_is_worded_alike_by_virtme_and_by_the_session(tmp_path):
    s = start.here(image_plan(tmp_path), tmp_path / "r.jsonl", start.Choices())
    assert isinstance(s, vm.VmSession)
    image = tmp_path / "bz"
    image.unlink()
    with pytest.raises(SessionFailed) as checked:
        s._check_image()                # the next session, before it boots
    s._stderr.append(f"{image} does not exist")     # virtme-run's words, mid-boot
    assert s._no_header(1) == str(checked.value) == \
        f"[kernel.vmk] image: no such file: {image}"


def test_a_virtme_failure_with_the_image_there_is_virtmes_words(tmp_path):
    s = start.here(image_plan(tmp_path), tmp_path / "r.jsonl", start.Choices())
    assert isinstance(s, vm.VmSession)
    s._stderr.append("qemu-system-x86_64: -m 1G: cannot set up guest memory")
    assert s._no_header(1) == "VM vmk: qemu: -m 1G: cannot set up guest memory"


@pytest.mark.parametrize("console, spoke", [
    (b"", False),
    (b"Probing EDD (edd=off to disable)... ok\n", False),       # the boot loader only
    (b"Probing EDD (edd=off to disable)... ok\n[    0.000000] Linux version 6.1.0\n", True),
    (b"Linux version 6.1.0-47-amd64 (debian-kernel@lists.debian.org)\n", True),
])
def test_the_kernel_has_spoken_once_its_log_is_on_the_console(tmp_path, console, spoke):
    f = tmp_path / "console"
    f.write_bytes(console)
    assert vm._kernel_spoke(f) is spoke


def test_a_console_never_written_is_silent(tmp_path):
    assert not vm._kernel_spoke(tmp_path / "none")
    assert vm._last_words(tmp_path / "none") == ""
    (tmp_path / "c").write_bytes(b"Probing EDD ...\x1b[2J ok\n\n")
    assert vm._last_words(tmp_path / "c") == "Probing EDD ...\\x1b[2J ok"
