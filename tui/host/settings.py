"""One system setting at a time: sysctl names and values, cpufreq, reading and writing the files.
"""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hotloop.host import sysfs
from hotloop.host.cpus import online_cpus
from hotloop.host.sysfs import SystemSettingError

ChangeKind = Literal["sysctl", "governor", "boost"]


# --------------------------------------------------------------------------- sysctl

# Dotted names may not contain "..", slashes or empty parts; the slash form
# (net/ipv4/conf/eth0.1/rp_filter) is accepted for names whose parts hold dots.
_SYSCTL_PART = re.compile(r"^[A-Za-z0-9_\-.:+@]+$")


def sysctl_path(name: str) -> Path:
    """Map a sysctl name ("net.core.busy_poll" or "net/core/busy_poll") to its /proc/sys file."""
    if not isinstance(name, str) or not name:
        raise SystemSettingError(f"bad sysctl name {name!r}")
    parts = name.split("/") if "/" in name else name.split(".")
    if any(p in ("", ".", "..") or not _SYSCTL_PART.match(p) for p in parts):
        raise SystemSettingError(f"bad sysctl name {name!r}")
    return sysfs.PROC_SYS.joinpath(*parts)


def read_sysctl(name: str) -> str:
    """Current value of a sysctl, whitespace-trimmed; SystemSettingError if unknown/unreadable."""
    path = sysctl_path(name)
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        raise SystemSettingError(f"unknown sysctl {name!r} (no {path})") from None
    except IsADirectoryError:
        raise SystemSettingError(f"sysctl {name!r} is a directory, not a value") from None
    except OSError as e:
        raise SystemSettingError(f"sysctl {name!r} cannot be read: {e.strerror}") from None


@dataclass(frozen=True)
class Writable:
    """Whether a setting can be written; truthy when it can, `reason` says why not."""
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def sysctl_writable(name: str) -> Writable:
    """Can this process write the sysctl? Checked with access(2), nothing is written.

    /proc/sys honours the entry's mode even for root (kernel.osrelease is 0444),
    and a read-only /proc/sys mount (containers) shows up as EROFS, so access()
    answers both without side effects.
    """
    try:
        path = sysctl_path(name)
    except SystemSettingError as e:
        return Writable(False, str(e))
    if not path.exists():
        return Writable(False, f"unknown sysctl {name!r}")
    if path.is_dir():
        return Writable(False, f"sysctl {name!r} is a directory, not a value")
    if os.access(path, os.W_OK):
        return Writable(True)
    try:
        ro = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        ro = False
    if ro:
        return Writable(False, f"sysctl {name!r} is not writable: /proc/sys is mounted read-only")
    if os.geteuid() != 0 and path.stat().st_mode & 0o200:
        return Writable(False, f"sysctl {name!r} is not writable: permission denied (needs root)")
    return Writable(False, f"sysctl {name!r} is read-only")


def sysctl_value(name: str, value: Any) -> str:
    # TOML hands us ints, strings, bools or arrays (tcp_rmem = [4096, 131072, 6291456]).
    if isinstance(value, bool):
        text = "1" if value else "0"
    elif isinstance(value, (int, str)):
        text = str(value)
    elif isinstance(value, (list, tuple)) and all(
        isinstance(v, (int, str)) and not isinstance(v, bool) for v in value
    ):
        text = " ".join(str(v) for v in value)
    else:
        raise SystemSettingError(f"sysctl {name!r}: value {value!r} must be an integer, string or list")
    problem = value_problem(text)
    if problem:
        raise SystemSettingError(f"sysctl {name!r}: {problem}")
    return text


# A value is written with one write(), and the kernel parses that write up to the
# first character it cannot take: "11\n22" sets 11 (3 of 5 bytes taken), a NUL
# ends it, a tab is only how multi-field values read back. So no control
# characters in what we write; fields are separated by spaces.
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")
_OCTAL_LOOKING = re.compile(r"-?0[0-9]+")


def value_problem(value: str) -> str | None:
    """Why a value may not be written to a setting, or None (one line, value shown with repr).

    "011" is refused rather than accepted and verified: integer sysctls are
    parsed with base 0 (proc_dointvec), so the kernel stores 9 while the profile
    and the result header say 011, which a reader takes for eleven. The read-back
    check would catch it too, but only after consent and a write, as a bare
    mismatch. The price: a string sysctl whose value really starts with 0 and a
    digit cannot be set from a profile.
    """
    m = CONTROL_CHARS.search(value)
    if m:
        return (f"value {value!r} holds the control character {m.group()!r}: a value is "
                f"one line, its fields separated by spaces")
    if not value.strip():
        return f"value {value!r} is empty: a setting cannot be set to nothing"
    for f in value.split():
        if _OCTAL_LOOKING.fullmatch(f):
            digits = f.lstrip("-")
            octal = f" ({f} is {int(f, 8)})" if set(digits) <= set("01234567") else ""
            return (f"value {value!r}: the kernel reads a number with a leading 0 as "
                    f"octal{octal}; write it without the leading 0")
    return None


_PLAIN = re.compile(r"[A-Za-z0-9_.,:/@%+=-]+( [A-Za-z0-9_.,:/@%+=-]+)*")


def show_value(value: str) -> str:
    """A value as it will be written: bare when that is unambiguous, else Python's repr.

    '' and '011' are quoted, so an empty value or a leading-zero string cannot
    pass for a number in a consent line; so are tabs, newlines, runs of spaces.
    """
    if _PLAIN.fullmatch(value) and not any(_OCTAL_LOOKING.fullmatch(f) for f in value.split()):
        return value
    return repr(value)


# --------------------------------------------------------------------------- cpufreq


def cpufreq_dir(cpu: int) -> Path:
    return sysfs.CPU_SYS / f"cpu{cpu}" / "cpufreq"


def has_cpufreq() -> bool:
    return any((cpufreq_dir(c) / "scaling_governor").exists() for c in online_cpus())


def available_governors(cpu: int) -> list[str]:
    text = sysfs.read_opt(cpufreq_dir(cpu) / "scaling_available_governors")
    return text.split() if text else []


def boost_control() -> tuple[Path, bool] | None:
    """The boost switch and whether it is inverted (intel_pstate's no_turbo)."""
    generic = sysfs.CPU_SYS / "cpufreq" / "boost"
    if generic.exists():
        return generic, False
    no_turbo = sysfs.CPU_SYS / "intel_pstate" / "no_turbo"
    if no_turbo.exists():
        return no_turbo, True
    return None


# --------------------------------------------------------------------------- setting files

_GOVERNOR_TARGET = re.compile(r"cpu(0|[1-9][0-9]{0,5})")
_BOOST_FILES = {"boost": ("cpufreq", "boost"), "intel_pstate.no_turbo": ("intel_pstate", "no_turbo")}
_MAX_VALUE = 1 << 16                    # bytes read back from one setting file


def setting_file(kind: Any, target: Any) -> tuple[Path, Path]:
    """The file a setting lives in and the tree it must stay inside, from its kind and name.

    Nothing else decides what hotloop writes: a journal's stored path is never
    trusted, so a forged entry can at most name another setting of its kind.
    """
    if kind == "sysctl":
        return sysctl_path(target), sysfs.PROC_SYS
    if kind == "governor":
        m = _GOVERNOR_TARGET.fullmatch(target) if isinstance(target, str) else None
        if m is None:
            raise SystemSettingError(f"bad governor target {brief(target)} (expected cpuN)")
        return cpufreq_dir(int(m[1])) / "scaling_governor", sysfs.CPU_SYS
    if kind == "boost":
        parts = _BOOST_FILES.get(target) if isinstance(target, str) else None
        if parts is None:
            raise SystemSettingError(f"bad boost target {brief(target)} "
                                     f"(expected {' or '.join(_BOOST_FILES)})")
        return sysfs.CPU_SYS.joinpath(*parts), sysfs.CPU_SYS
    raise SystemSettingError(f"unknown kind {brief(kind)} (expected sysctl, governor or boost)")


def brief(value: Any, limit: int = 60) -> str:
    """Untrusted JSON for a one-line message: escaped, and cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def _open_setting(kind: str, target: str, write: bool) -> int:
    """Open the setting's file, never one outside its tree or reached through a symlink out.

    A sysctl file is exactly sysfs.PROC_SYS/<name parts>, no symlink on the way
    (/proc/sys has none); cpufreq files sit behind the kernel's own cpuN/cpufreq
    -> ../cpufreq/policyN links, so there the resolved file must stay inside
    sysfs.CPU_SYS and keep its name. After opening, /proc/self/fd confirms the file
    opened is the file checked (nothing swapped in between). SystemSettingError
    for a refused path, OSError from the system.
    """
    path, root = setting_file(kind, target)
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if kind == "sysctl":
        allowed = real == os.path.join(real_root, os.path.relpath(path, root))
    else:
        allowed = real.startswith(real_root + os.sep) and os.path.basename(real) == path.name
    if not allowed:
        raise SystemSettingError(f"{path} leads to {real}, outside {root} or not its file")
    # O_NONBLOCK: a FIFO swapped in must not hang us; O_NOFOLLOW: nor a last-moment symlink.
    flags = (os.O_WRONLY if write else os.O_RDONLY) | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(real, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SystemSettingError(f"{path} is not a setting file")
        if os.readlink(f"/proc/self/fd/{fd}") != real:
            raise SystemSettingError(f"{path} changed while it was opened")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_setting(kind: str, target: str) -> str:
    """The setting's value, whitespace-trimmed, read through `_open_setting`."""
    fd = _open_setting(kind, target, write=False)
    try:
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
            size += len(chunk)
            if size > _MAX_VALUE:
                raise SystemSettingError(f"{setting_file(kind, target)[0]}: more than "
                                         f"{_MAX_VALUE} bytes, not a setting")
    finally:
        os.close(fd)
    return b"".join(chunks).decode(errors="replace").strip()


class NotAsWritten(SystemSettingError):
    """The write reached the file but the setting is not what was asked: it changed."""


def write_setting(kind: str, target: str, value: str) -> None:
    """Write `value` with one write(), check the kernel took all of it, read it back.

    SystemSettingError with the reason alone ("Invalid argument", "it reads
    back as 9"); the caller names the setting. A procfs/sysfs write is never
    retried for its rest: the kernel would parse the rest as a new value.
    """
    # An empty original (a string sysctl) is restored with a newline: a write
    # of no bytes never reaches the kernel's handler.
    data = value.encode() or b"\n"
    try:
        fd = _open_setting(kind, target, write=True)
        try:
            try:
                os.ftruncate(fd, 0)     # plain files (tests) stay exact; procfs/sysfs ignore it
            except OSError:
                pass
            n = os.write(fd, data)
        finally:
            os.close(fd)
    except OSError as e:
        raise SystemSettingError(e.strerror or str(e)) from None
    if n != len(data):
        raise NotAsWritten(f"the kernel took {n} of {len(data)} bytes")
    try:
        back = read_setting(kind, target)
    except OSError as e:
        raise NotAsWritten(f"cannot read it back: {e.strerror}") from None
    if sysfs.norm(back) != sysfs.norm(value):
        raise NotAsWritten(f"it reads back as {show_value(sysfs.norm(back))}")


@dataclass(frozen=True)
class Change:
    """One system value hotloop would write.

    `target` is what the user recognises: the sysctl name, "cpuN" for a governor
    (N's cpufreq policy), "boost" or "intel_pstate.no_turbo". `original` is the
    value at planning time (apply re-reads it, the system may have moved on).
    `path` is the file written, for people reading the journal: the file is
    always derived from kind and target (`setting_file`), and a `path` that
    names another file is refused.
    """
    kind: ChangeKind
    target: str
    value: str
    original: str | None = None
    path: str = ""
    source: str = ""                # the profile file that asks for it, for the consent line

    def file(self) -> Path:
        return setting_file(self.kind, self.target)[0]

    def label(self) -> str:
        if self.kind == "sysctl":
            return self.target
        if self.kind == "governor":
            return f"{self.target} governor"
        return self.target

    def describe(self) -> str:
        """"net.core.busy_poll 0 -> 50": the new value exactly as it will be written, and
        the profile file that asks for it when known ("... -> 50 (from /x/kernel.toml)")."""
        line = f"{self.label()} {show_original(self.original)} -> {show_value(self.value)}"
        return f"{line} (from {self.source})" if self.source else line


def show_original(original: str | None) -> str:
    """A value the kernel reported, for messages: multi-field values read back
    tab-separated and are shown with spaces, like the values people write."""
    return "?" if original is None else show_value(sysfs.norm(original))
