"""qemu and KVM on this machine: where qemu and virtme-ng are, what qemu says, and whether a
guest runs under KVM here (probed by booting the image for its banner, cached per qemu version,
image, this kernel and /dev/kvm's state).  An emulated (TCG) guest's numbers do not measure
this CPU: every place that shows them says so in tcg_warning's words.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotloop import paths
from hotloop.errors import HotloopError
from hotloop.visible import visible

VIRTME = "virtme-run"
QEMU = "qemu-system-x86_64"
INSTALL_VIRTME = "pip install 'hotloop[vm]': virtme-ng, beside hotloop's Python"
INSTALL_QEMU = "Debian: apt-get install qemu-system-x86"
PROBE_S = 20.0                      # a guest under KVM prints its banner within this


def tcg_warning(why: str) -> str:
    return (f"no usable KVM ({why}): guests are emulated; their numbers do not measure "
            f"this CPU")


def find_virtme() -> str | None:
    """virtme-run beside this Python first (pip put it in the venv's bin/, which need not be
    on PATH: `.venv/bin/hotloop` runs without activating it), then on PATH."""
    return shutil.which(VIRTME, path=str(Path(sys.executable).parent)) or shutil.which(VIRTME)


def tools() -> tuple[str, str]:
    """virtme-run (find_virtme) and qemu (PATH); HotloopError naming what is missing."""
    virtme = find_virtme()
    if virtme is None:
        raise HotloopError(f"a kernel profile with an image boots a VM: no `{VIRTME}` "
                           f"beside {sys.executable} nor on PATH ({INSTALL_VIRTME})")
    qemu = shutil.which(QEMU)
    if qemu is None:
        raise HotloopError(f"a kernel profile with an image boots a VM: no `{QEMU}` on "
                           f"PATH ({INSTALL_QEMU})")
    return virtme, qemu


def qemu_version(qemu: str) -> str:
    """"7.2.22" (qemu's first line), or "" when it does not say."""
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else ""


# --------------------------------------------------------------------------- KVM or not

@dataclass(frozen=True)
class Accel:
    kind: str                       # "kvm" or "tcg"
    why_not_kvm: str = ""           # tcg: why, in qemu's words where it said


def kvm_state() -> str:
    """/dev/kvm as the probe found it: absent, or its device, mode and this user's access."""
    try:
        st = os.stat("/dev/kvm")
    except OSError:
        return "absent"
    ok = os.access("/dev/kvm", os.R_OK | os.W_OK)
    return f"{st.st_rdev}:{stat.S_IMODE(st.st_mode):o}:{st.st_uid}:{st.st_gid}:{ok}"


def _cache_file() -> Path:
    return paths.cache_dir() / "vm" / "kvm.json"


def _read_cache(path: Path) -> dict[str, dict[str, Any]]:
    """The probes' cache, when it is this user's alone; else nothing (probed again)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return {}
        data = json.loads(path.read_text()[:1 << 20])
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)
            and isinstance(v.get("usable"), bool) and isinstance(v.get("why", ""), str)}


def _write_cache(path: Path, key: str, usable: bool, why: str) -> None:
    data = _read_cache(path)
    data[key] = {"usable": usable, "why": why[:500]}
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(list(data.items())[-50:])))
        os.replace(tmp, path)          # atomic: a reader sees the old or the new


def probe_kvm(qemu: str, image: Path, image_sha256: str, version: str) -> Accel:
    """Whether a guest runs under KVM here: qemu with `-accel kvm -cpu host` booting the
    image, its banner on the serial line within PROBE_S; cached per qemu version, image,
    this kernel and /dev/kvm's state."""
    state = kvm_state()
    if state == "absent":
        return Accel("tcg", "no /dev/kvm")
    if state.endswith(":False"):
        return Accel("tcg", "/dev/kvm is not readable and writable by this user")
    key = f"{version}|{image_sha256}|{os.uname().release}|{state}"
    cached = _read_cache(_cache_file()).get(key)
    if cached is not None:
        return Accel("kvm") if cached["usable"] else Accel("tcg", cached.get("why", "?"))
    usable, why = _probe(qemu, image)
    _write_cache(_cache_file(), key, usable, why)
    return Accel("kvm") if usable else Accel("tcg", why)


def _probe(qemu: str, image: Path) -> tuple[bool, str]:
    argv = ["setpriv", "--pdeathsig", "KILL", "--", qemu, "-accel", "kvm", "-cpu", "host",
            "-m", "256M", "-kernel", str(image), "-append", "console=ttyS0 panic=-1",
            "-display", "none", "-serial", "stdio", "-monitor", "none", "-nodefaults",
            "-no-reboot"]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        return False, f"qemu: {e.strerror}"
    out = bytearray()
    deadline = time.monotonic() + PROBE_S
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    try:
        while time.monotonic() < deadline and b"Linux version" not in out:
            chunk = b""
            with contextlib.suppress(BlockingIOError):
                chunk = proc.stdout.read(65536) or b""
            if not chunk:
                if proc.poll() is not None:
                    with contextlib.suppress(BlockingIOError, TypeError):
                        out += proc.stdout.read() or b""
                    break
                time.sleep(0.1)
            out += chunk[:1 << 16]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    text = out.decode(errors="replace")
    if "Linux version" in text:
        return True, ""
    return False, qemu_said(text.splitlines()) or \
        f"a guest under KVM printed nothing within {PROBE_S:g} s"


def qemu_said(lines: list[str]) -> str:
    """qemu's own error line, as "qemu: ...", or "" when it said none."""
    for line in lines:
        m = re.match(r"\s*qemu-system-\w+: (?:error: )?(.*)", line)
        if m and m.group(1).strip():
            return visible(f"qemu: {m.group(1).strip()}")[:300]
    return ""
