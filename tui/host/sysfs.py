"""The kernel's files hotloop reads and writes, and reading them.

The paths are module globals on purpose: tests point them at fake trees, and every
other host module reaches them as `sysfs.PROC_SYS` so that works.
"""
from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")
PROC_SYS = Path("/proc/sys")
CPU_SYS = Path("/sys/devices/system/cpu")
CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")


class SystemSettingError(Exception):
    """A one-line, user-facing problem with a system setting (no traceback wanted)."""


def read(path: Path) -> str:
    return path.read_text().strip()


def read_opt(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def norm(value: str) -> str:
    # Multi-field sysctls read back tab-separated ("4096\t131072\t6291456"):
    # compare field by field, not byte by byte.
    return " ".join(value.split())
