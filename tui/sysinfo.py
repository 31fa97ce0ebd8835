"""Facts about the machine that every result header records."""
from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def vulnerabilities() -> dict[str, str]:
    d = Path("/sys/devices/system/cpu/vulnerabilities")
    return {f.name: _read(str(f)) for f in sorted(d.glob("*"))} if d.is_dir() else {}


def machine() -> dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "kernel_release": platform.release(),
        "kernel_version": platform.version(),
        "cmdline": _read("/proc/cmdline"),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count() or 1,
        "arch": platform.machine(),
        "python": platform.python_version(),
        "vulnerabilities": vulnerabilities(),
    }
