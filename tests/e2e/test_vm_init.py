"""What qemu's wrapper does to the kernel's command line virtme-ng gives it, with a stand-in
qemu that writes down its arguments (no boot): the guest's init of the session goes before
virtme-ng's, which it is told of, and a session directory whose path the command line cannot
carry leaves virtme-ng's init as it was.  The init itself runs in a real guest's boot: the
sessions of tests/e2e/test_vm.py come home through it, and test_vm_kcore.py's guest finds
no udev running."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import profile_dir

from hotloop import catalog
from hotloop.run import guest

VIRTME_INIT = "/venv/lib/python3.11/site-packages/virtme/guest/bin/virtme-ng-init"
APPEND = (f"virtme_root_mods=1 console=ttyS0 earlyprintk=serial,ttyS0,115200 quiet "
          f"loglevel=0 virtme_root_user=1 quiet loglevel=1 module_blacklist=kvm "
          f"init={VIRTME_INIT}")


def files(tmp_path: Path, d: Path) -> Path:
    """The session's files in `d`, qemu a stand-in writing its arguments one a line."""
    image = Path("/boot/vmlinuz-6.1.0-47-amd64")
    if not image.exists():
        pytest.skip(f"needs {image}")
    prof = profile_dir(tmp_path, f'[kernel.k]\nimage = "{image}"\ncpus = 1\n')
    rp = catalog.load([prof]).resolve(catalog.Plan(name="p", workload="syscall", kernel="k"),
                                      here=False)
    qemu = tmp_path / "qemu-args"
    qemu.write_text(f'#!/bin/sh\nfor a do printf "%s\\n" "$a"; done > {tmp_path}/args\n')
    qemu.chmod(0o755)
    d.mkdir(parents=True)
    _, wrapper = guest.write_files(d, rp, 1, ["run", "syscall"], 20, str(qemu))
    subprocess.run([wrapper, "-kernel", str(image), "-append", APPEND], check=True,
                   capture_output=True, timeout=30)
    return tmp_path / "args"


def test_the_guests_init_starts_before_virtme_ngs_which_it_is_told_of(tmp_path):
    d = tmp_path / "cache" / "s-1-ab"
    args = files(tmp_path, d).read_text().splitlines()
    append = args[args.index("-append") + 1]
    assert append.endswith(f" hotloop_init={VIRTME_INIT} init={d / guest.INIT_FILE}"), append
    assert append.count("init=") == 2 and " quiet" not in append
    init = d / guest.INIT_FILE
    assert init.read_text() == guest.INIT and os.access(init, os.X_OK)
    # the init's shell is the guest's /bin/sh, this machine's: its syntax checked here
    subprocess.run(["sh", "-n", str(init)], check=True, timeout=30)


def test_a_session_directory_the_command_line_cannot_carry_keeps_virtme_ngs_init(tmp_path):
    d = tmp_path / "my cache" / "s-1-ab"
    args = files(tmp_path, d).read_text().splitlines()
    append = args[args.index("-append") + 1]
    assert append == APPEND.replace(" quiet", "").replace("quiet ", ""), append
