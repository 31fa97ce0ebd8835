"""A kernel image that does not boot, for real: a Debian bzImage copied with its boot header
intact and its body halting boots in qemu (emulated) and says nothing on its console.  The
session says on stderr that the guest boots, gives it up once its console has been silent
for the short bound (60 s emulated, not the boot's 15 minutes), in one line; the image
deleted meanwhile is said in the next session's words as in any other's.  One boot that
never starts: about a minute and a half of one worker."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import profile_dir
from test_vm import IMAGE, vm_env

pytestmark = pytest.mark.xdist_group("vm")


HLT = b"\xf4"


def corrupt_copy(src: Path, dest: Path) -> Path:
    """`src` with its real-mode setup and boot header as they are, every byte of its body
    HLT.  The setup code prints its first lines, masks the interrupts and jumps into the
    body, where the vCPU halts for good: qemu waits, idle, until the session gives the guest
    up (a zeroed body had it emulate instructions all the while, 17-31 s of CPU)."""
    data = bytearray(src.read_bytes())
    setup = ((data[0x1f1] or 4) + 1) * 512
    data[setup:] = HLT * (len(data) - setup)
    dest.write_bytes(bytes(data))
    return dest


@pytest.mark.skipif(not IMAGE.exists(), reason=f"needs {IMAGE}")
def test_a_kernel_that_does_not_start_fails_its_session_in_one_line(tmp_path, leftovers):
    image = corrupt_copy(IMAGE, tmp_path / "vmlinuz-broken")
    d = profile_dir(tmp_path, f"""
        [kernel.broken]
        image = "{image}"
        cpus = 1
        """)
    began = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--profiles",
                          str(d), "--kernel", "broken", "--sessions", "2", "--runs", "2",
                          "--param", "count=2000", "--no-perf"], env=vm_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said = []
    assert p.stderr is not None
    for line in p.stderr:                   # stderr is a pipe here, not a terminal
        said.append(line.rstrip("\n"))
        if line.startswith("broken s01: failed") and image.exists():
            image.unlink()                  # deleted mid-series: the next session's
    out = p.stdout.read() if p.stdout else ""
    p.wait(timeout=60)
    took = time.monotonic() - began
    text = "\n".join(said)
    assert p.returncode == 1, text + out
    assert f"hotloop: VM broken: booting {image} (emulated, 1 vCPU)" in said, text
    silent = [ln for ln in said if ln.startswith("broken s01: failed: ")]
    assert len(silent) == 1, text
    assert "the kernel did not start: its console silent for 60 s after qemu booted" \
        in silent[0] and "Probing EDD" in silent[0], silent
    assert f"broken s02: failed: [kernel.broken] image: no such file: {image}" in said, text
    assert "does not exist" not in text + out
    assert "Traceback" not in text
    assert took < 600                       # far below the boot's bound, 900 s
    assert not leftovers()
