"""System settings and machine facts: sysctls, cpufreq, scheduling, restore journal.

Everything that reads or writes the running system lives here, so the rest of
hotloop (catalog, session, CLI, TUI, doctor) never touches /proc or /sys itself.

The safety contract for changes (sysctl, governor, boost):

* `plan_changes` works out what would change, without touching anything; features
  the machine lacks become warnings (or an error with `strict=True`).
* `apply` writes every original value to a restore journal (fsync + atomic
  rename) *before* the first write, then applies; a failure part-way restores
  what was already written.
* `Applied.restore` (or leaving the `with` block) puts the originals back in
  reverse order and removes the journal.
* `recover` runs at the start of every hotloop command: a journal left behind by
  a hotloop that was SIGKILLed or lost power is restored and reported.

A lock file held for the lifetime of an `Applied` (flock, released by the kernel
when the process dies) tells a crashed owner from one still running, so a second
hotloop started during a run does not "restore" the first one's settings.

The paths below are module globals on purpose: tests point them at fake trees.
"""
from __future__ import annotations

import errno
import fcntl
import fnmatch
import json
import os
import re
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

PROC = Path("/proc")
PROC_SYS = Path("/proc/sys")
CPU_SYS = Path("/sys/devices/system/cpu")
CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")

JOURNAL_NAME = "restore.json"
LOCK_NAME = "restore.lock"
JOURNAL_VERSION = 1

ChangeKind = Literal["sysctl", "governor", "boost"]


class SystemSettingError(Exception):
    """A one-line, user-facing problem with a system setting (no traceback wanted)."""


# --------------------------------------------------------------------------- helpers


def _read(path: Path) -> str:
    return path.read_text().strip()


def _read_opt(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _norm(value: str) -> str:
    # Multi-field sysctls read back tab-separated ("4096\t131072\t6291456"):
    # compare field by field, not byte by byte.
    return " ".join(value.split())


def parse_cpu_list(text: str) -> list[int]:
    """Parse a kernel CPU list ("0-3,5,7-8"; empty means none) into sorted CPUs."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return sorted(cpus)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """The inverse of parse_cpu_list: [0, 1, 2, 5] -> "0-2,5"."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(set(cpus)):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [cpu]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def online_cpus() -> list[int]:
    text = _read_opt(CPU_SYS / "online")
    if text is None:  # no sysfs (odd container): trust the affinity mask
        return sorted(os.sched_getaffinity(0))
    return parse_cpu_list(text)


def present_cpus() -> list[int]:
    text = _read_opt(CPU_SYS / "present")
    return parse_cpu_list(text) if text is not None else online_cpus()


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
    return PROC_SYS.joinpath(*parts)


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


def _sysctl_value(name: str, value: Any) -> str:
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
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
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
    m = _CONTROL.search(value)
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


def _cpufreq_dir(cpu: int) -> Path:
    return CPU_SYS / f"cpu{cpu}" / "cpufreq"


def has_cpufreq() -> bool:
    return any((_cpufreq_dir(c) / "scaling_governor").exists() for c in online_cpus())


def available_governors(cpu: int) -> list[str]:
    text = _read_opt(_cpufreq_dir(cpu) / "scaling_available_governors")
    return text.split() if text else []


def _boost_control() -> tuple[Path, bool] | None:
    """The boost switch and whether it is inverted (intel_pstate's no_turbo)."""
    generic = CPU_SYS / "cpufreq" / "boost"
    if generic.exists():
        return generic, False
    no_turbo = CPU_SYS / "intel_pstate" / "no_turbo"
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
        return sysctl_path(target), PROC_SYS
    if kind == "governor":
        m = _GOVERNOR_TARGET.fullmatch(target) if isinstance(target, str) else None
        if m is None:
            raise SystemSettingError(f"bad governor target {_brief(target)} (expected cpuN)")
        return _cpufreq_dir(int(m[1])) / "scaling_governor", CPU_SYS
    if kind == "boost":
        parts = _BOOST_FILES.get(target) if isinstance(target, str) else None
        if parts is None:
            raise SystemSettingError(f"bad boost target {_brief(target)} "
                                     f"(expected {' or '.join(_BOOST_FILES)})")
        return CPU_SYS.joinpath(*parts), CPU_SYS
    raise SystemSettingError(f"unknown kind {_brief(kind)} (expected sysctl, governor or boost)")


def _brief(value: Any, limit: int = 60) -> str:
    """Untrusted JSON for a one-line message: escaped, and cut short."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def _open_setting(kind: str, target: str, write: bool) -> int:
    """Open the setting's file, never one outside its tree or reached through a symlink out.

    A sysctl file is exactly PROC_SYS/<name parts>, no symlink on the way
    (/proc/sys has none); cpufreq files sit behind the kernel's own cpuN/cpufreq
    -> ../cpufreq/policyN links, so there the resolved file must stay inside
    CPU_SYS and keep its name. After opening, /proc/self/fd confirms the file
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


def _read_setting(kind: str, target: str) -> str:
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


class _NotAsWritten(SystemSettingError):
    """The write reached the file but the setting is not what was asked: it changed."""


def _set(kind: str, target: str, value: str) -> None:
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
        raise _NotAsWritten(f"the kernel took {n} of {len(data)} bytes")
    try:
        back = _read_setting(kind, target)
    except OSError as e:
        raise _NotAsWritten(f"cannot read it back: {e.strerror}") from None
    if _norm(back) != _norm(value):
        raise _NotAsWritten(f"it reads back as {show_value(_norm(back))}")


# --------------------------------------------------------------------------- planned changes


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

    def file(self) -> Path:
        return setting_file(self.kind, self.target)[0]

    def label(self) -> str:
        if self.kind == "sysctl":
            return self.target
        if self.kind == "governor":
            return f"{self.target} governor"
        return self.target

    def describe(self) -> str:
        """"net.core.busy_poll 0 -> 50": the new value exactly as it will be written."""
        return f"{self.label()} {show_original(self.original)} -> {show_value(self.value)}"


def show_original(original: str | None) -> str:
    """A value the kernel reported, for messages: multi-field values read back
    tab-separated and are shown with spaces, like the values people write."""
    return "?" if original is None else show_value(_norm(original))


def describe_changes(changes: Iterable[Change], hint: str = "pass --apply-system") -> str:
    """One line for the consent refusal: "would change: a 0 -> 50, b 1 -> 2; pass --apply-system"."""
    changes = list(changes)
    if not changes:
        return "no system changes needed"
    # Governor changes repeat per CPU policy: group the identical ones.
    parts: list[str] = []
    gov: dict[tuple[str | None, str], list[int]] = {}
    for c in changes:
        if c.kind == "governor":
            gov.setdefault((c.original, c.value), []).append(int(c.target.removeprefix("cpu")))
        else:
            parts.append(c.describe())
    for (orig, value), cpus in gov.items():
        parts.append(f"cpu{format_cpu_list(cpus)} governor {show_original(orig)} -> "
                     f"{show_value(value)}")
    line = "would change: " + ", ".join(parts)
    return f"{line}; {hint}" if hint else line


def plan_changes(
    sysctls: Mapping[str, Any] | None,
    governor: str | None,
    boost: bool | None,
    cpus: Iterable[int] | None,
    strict: bool = False,
) -> tuple[list[Change], list[str]]:
    """Work out what a CPU + kernel profile would change; touches nothing.

    Returns (changes, warnings). Values already in place are left out: they need
    neither consent nor restoring. Bad input (unknown or unwritable sysctl, bad
    value type) raises SystemSettingError; a feature this machine lacks (no
    cpufreq, no boost switch, governor not offered) is a warning, or a
    SystemSettingError when `strict`.
    """
    changes: list[Change] = []
    warnings: list[str] = []

    def lacking(msg: str) -> None:
        if strict:
            raise SystemSettingError(msg.replace(" skipped:", ":", 1) + " (strict profile)")
        warnings.append(msg)

    for name, raw in (sysctls or {}).items():
        value = _sysctl_value(name, raw)
        current = read_sysctl(name)
        if _norm(current) == _norm(value):
            continue
        writable = sysctl_writable(name)
        if not writable:
            raise SystemSettingError(writable.reason)
        changes.append(Change("sysctl", name, value, current, str(sysctl_path(name))))

    cpu_list = sorted(set(cpus or [])) or online_cpus()

    if governor is not None:
        if not has_cpufreq():
            lacking(f"governor {governor!r} skipped: no cpufreq on this machine")
        else:
            seen: set[Path] = set()
            for cpu in cpu_list:
                d = _cpufreq_dir(cpu)
                gov_file = d / "scaling_governor"
                if not gov_file.exists():
                    lacking(f"governor {governor!r} skipped on cpu{cpu}: no cpufreq for it")
                    continue
                # CPUs sharing a cpufreq policy share one file: change it once.
                real = gov_file.resolve()
                if real in seen:
                    continue
                seen.add(real)
                offered = available_governors(cpu)
                if offered and governor not in offered:
                    lacking(
                        f"governor {governor!r} skipped on cpu{cpu}: "
                        f"not offered (have {' '.join(offered)})"
                    )
                    continue
                current = _read(gov_file)
                if current != governor:
                    changes.append(Change("governor", f"cpu{cpu}", governor, current, str(gov_file)))

    if boost is not None:
        control = _boost_control()
        want = "on" if boost else "off"
        if control is None:
            lacking(f"boost {want!r} skipped: no cpufreq boost control on this machine")
        else:
            path, inverted = control
            value = "1" if (boost != inverted) else "0"
            current = _read(path)
            if current != value:
                target = "intel_pstate.no_turbo" if inverted else "boost"
                changes.append(Change("boost", target, value, current, str(path)))

    return changes, warnings


# --------------------------------------------------------------------------- restore journal

_MAX_JOURNAL = 1 << 20                  # bytes; hotloop's own journals hold a few hundred


def state_dir() -> Path:
    """$XDG_STATE_HOME/hotloop, else ~/.local/state/hotloop (XDG says: ignore a relative value)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "hotloop"


def journal_path() -> Path:
    return state_dir() / JOURNAL_NAME


def state_dir_problem(directory: Path | None = None) -> str | None:
    """Why the state directory may not hold a restore journal, or None.

    The journal says what to write into /proc/sys, so whoever may write the
    directory decides what the next hotloop (maybe root's) writes there: it
    must be this user's and writable by nobody else. Missing is fine: it is
    then created 0700.
    """
    d = directory or state_dir()
    try:
        st = os.stat(d)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot use the state directory {d}: {e.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"refusing the state directory {d}: it is not a directory"
    if st.st_uid != os.geteuid():
        return (f"refusing the state directory {d}: it belongs to uid {st.st_uid}, not to "
                f"this user (uid {os.geteuid()}); no setting is changed or restored from it")
    if st.st_mode & 0o022:
        return (f"refusing the state directory {d}: others may write to it (mode "
                f"{stat.S_IMODE(st.st_mode):04o}); no setting is changed or restored from it "
                f"until `chmod go-w {d}`")
    return None


def _boot_id() -> str:
    return _read_opt(PROC / "sys" / "kernel" / "random" / "boot_id") or ""


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_journal(path: Path, data: dict[str, Any]) -> None:
    # Write-fsync-rename-fsync(dir): after a power cut the journal is either the
    # old one or the new one, never half a file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, (json.dumps(data, indent=2) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _remove_journal(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    _fsync_dir(path.parent)


def _aside(path: Path, why: str) -> Path:
    """A free name beside the journal, for what is kept for a person to check."""
    stem = f"{path.name}.{why}-{time.strftime('%Y%m%d-%H%M%S')}"
    aside, n = path.with_name(stem), 1
    while os.path.lexists(aside):
        n += 1
        aside = path.with_name(f"{stem}-{n}")
    return aside


class _Lock:
    """An exclusive flock on restore.lock; the kernel drops it when the holder dies."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        # O_CLOEXEC: an exec'd worker must not keep the lock.
        self.fd: int | None = os.open(directory / LOCK_NAME,
                                      os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)

    def try_acquire(self) -> bool:
        assert self.fd is not None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return False
            raise

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing drops the flock
            self.fd = None


def _entry_problem(entry: Any) -> str | None:
    """Why a journal entry may not be restored, or None. Its file comes from kind and
    target alone; a stored path must name that very file."""
    if not isinstance(entry, dict):
        return f"it is {_brief(entry)}, not an object"
    try:
        path, _ = setting_file(entry.get("kind"), entry.get("target"))
    except SystemSettingError as e:
        why = str(e)
        return why if len(why) <= 120 else why[:120] + "..."
    label = Change(entry["kind"], entry["target"], "").label()
    original = entry.get("original")
    if not isinstance(original, str):
        return f"{label}: its original is {_brief(original)}, not a string"
    if _CONTROL.search(original.replace("\t", " ")):  # tabs: how multi-field values read
        return f"{label}: its original {_brief(original)} holds a control character"
    try:
        original.encode()
    except UnicodeEncodeError:          # JSON allows lone surrogates; a file write does not
        return f"{label}: its original {_brief(original)} is not valid text"
    if not isinstance(entry.get("value", ""), str):
        return f"{label}: its value is {_brief(entry['value'])}, not a string"
    if "path" in entry and entry["path"] != str(path):
        return f"{label}: its path {_brief(entry['path'])} is not the file of {label} ({path})"
    return None


def _load_journal(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[int, Any, str]]]:
    """Read and check a journal: (its header fields, entries to restore, entries set aside:
    (1-based number, entry, why)).

    ValueError when it cannot be read as a journal at all; FileNotFoundError
    passes through (its owner finished meanwhile).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise ValueError("it is a symbolic link" if e.errno == errno.ELOOP else e.strerror) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("it is not a regular file")
        if st.st_uid != os.geteuid():
            raise ValueError(f"it belongs to uid {st.st_uid}, not to this user")
        raw = b""
        while len(raw) <= _MAX_JOURNAL and (chunk := os.read(fd, 1 << 16)):
            raw += chunk
    except OSError as e:
        raise ValueError(e.strerror) from None
    finally:
        os.close(fd)
    if len(raw) > _MAX_JOURNAL:
        raise ValueError(f"it is larger than {_MAX_JOURNAL} bytes")
    try:
        data = json.loads(raw)
    except RecursionError:
        raise ValueError("it is nested too deeply") from None
    except ValueError as e:             # JSONDecodeError, UnicodeDecodeError, huge ints
        raise ValueError(f"not JSON: {' '.join(str(e).split())[:120]}") from None
    if not isinstance(data, dict):
        raise ValueError("it is not a JSON object")
    if data.get("version") != JOURNAL_VERSION:
        raise ValueError(f"version {_brief(data.get('version'))}, expected {JOURNAL_VERSION}")
    entries = data.get("entries")
    if not isinstance(entries, list):
        raise ValueError("its entries are not a list")
    good: list[dict[str, Any]] = []
    bad: list[tuple[int, Any, str]] = []
    for i, entry in enumerate(entries, 1):
        why = _entry_problem(entry)
        if why:
            bad.append((i, entry, why))
        else:
            good.append(entry)
    header = {k: data[k] for k in ("version", "pid", "boot_id", "created") if k in data}
    return header, good, bad


def _pid(header: Mapping[str, Any]) -> int | None:
    pid = header.get("pid")
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None


def _journal_owner(path: Path) -> str:
    try:
        pid = _pid(_load_journal(path)[0])
    except (OSError, ValueError):
        pid = None
    return f"pid {pid}" if pid else "another process"


def _restore_entries(entries: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """Write originals back in reverse order: (restored messages, entries left, errors).

    Entries are checked ones (`_entry_problem`): each write goes to the file
    its kind and target name, whole, and is read back.
    """
    done: list[str] = []
    left: list[dict[str, Any]] = []
    errors: list[str] = []
    for entry in reversed(entries):
        kind, target, original = entry["kind"], entry["target"], entry["original"]
        label = Change(kind, target, "").label()
        try:
            try:
                current: str | None = _read_setting(kind, target)
            except OSError:
                current = None
            # Idempotent: already back (or never changed) needs no write.
            if current is None or _norm(current) != _norm(original):
                _set(kind, target, original)
            done.append(f"restored {label} to {show_original(original)}")
        except SystemSettingError as e:
            errors.append(f"could not restore {label} to {show_original(original)}: {e}")
            left.insert(0, entry)
    return done, left, errors


def _finish(path: Path, header: dict[str, Any], left: list[Any]) -> None:
    if left:
        # Keep only what still needs restoring, so the next start retries exactly that.
        _write_journal(path, {**header, "entries": left})
    else:
        _remove_journal(path)


def recover(force: bool = False) -> list[str]:
    """Restore what a killed hotloop left changed; call at the start of every command.

    Returns one message per restored value (empty when there was nothing to do,
    the common case, which costs one stat()). A journal whose owner is still
    running is left alone (message says so) unless `force`. Never raises: the
    messages carry any failure, and the journal keeps what could not be
    restored. An entry that fails the checks (`_entry_problem`) is set aside in
    a file beside the journal, one message each, and the others are restored.
    """
    path = journal_path()
    if not os.path.lexists(path):
        return []
    problem = state_dir_problem(path.parent)
    if problem:
        return [problem]
    try:
        lock = _Lock(path.parent)
    except OSError as e:
        return [f"could not open the restore lock in {path.parent}: {e.strerror}"]
    try:
        if not lock.try_acquire() and not force:
            return [
                f"system settings changed by a running hotloop ({_journal_owner(path)}) "
                f"left in place; they are restored when it ends"
            ]
        try:
            header, entries, bad = _load_journal(path)
        except FileNotFoundError:
            return []  # its owner finished between our stat() and the lock
        except ValueError as e:
            aside = _aside(path, "corrupt")
            try:
                os.replace(path, aside)
            except OSError:
                aside = path
            return [f"restore journal {path} unreadable ({e}); moved to {aside}: "
                    f"check its values by hand"]
        msgs: list[str] = []
        kept: list[Any] = []
        if bad:
            aside = _aside(path, "rejected")
            try:
                _write_journal(aside, {**header, "entries": [e for _, e, _ in bad]})
                where = f"kept in {aside}"
            except OSError as e:
                kept = [e for _, e, _ in bad]       # nothing dropped: it stays in the journal
                where = f"left in {path} ({aside}: {e.strerror})"
            msgs += [f"restore journal entry {i} set aside, not restored: {why}; {where}"
                     for i, _, why in bad]
        done, left, errors = _restore_entries(entries)
        try:
            _finish(path, header, left + kept)
        except OSError as e:
            errors.append(f"could not update {path}: {e.strerror}")
        pid = _pid(header)
        prefix = f"hotloop ({f'pid {pid}' if pid else 'a previous hotloop'}) did not finish: "
        msgs += [prefix + m for m in done] + errors
        if left:
            msgs.append(f"kept {len(left)} unrestored value(s) in {path}; `hotloop restore` retries")
        return msgs
    except Exception as e:  # noqa: BLE001 - runs before every command: never block them
        return [f"restore journal {path} not restored ({type(e).__name__}: "
                f"{' '.join(str(e).split())[:200]}); `hotloop restore` retries"]
    finally:
        lock.release()


def held_elsewhere(sysctls: Iterable[str] = (), governor: bool = False, boost: bool = False,
                   cpus: Iterable[int] = ()) -> tuple[str, list[Change]]:
    """Which of these settings a running hotloop has changed and will put back when it ends.

    Returns (its owner, "pid N"; its changes as its journal holds them), or
    ("", []) when none: no journal, its owner dead (recover's business), or a
    state directory not trusted. A run that merely finds such a value in place
    would otherwise ride on it and see it restored half-way. Reads only; the
    lock is probed only when a journal exists.
    """
    path = journal_path()
    if not os.path.lexists(path) or state_dir_problem(path.parent):
        return "", []
    try:
        lock = _Lock(path.parent)
    except OSError:
        return "", []
    try:
        if lock.try_acquire():
            return "", []
        header, entries, _ = _load_journal(path)
    except (OSError, ValueError):
        return "", []
    finally:
        lock.release()
    files: set[str] = set()
    for name in sysctls:
        try:
            files.add(os.path.realpath(sysctl_path(name)))
        except SystemSettingError:
            pass
    if governor:
        files.update(os.path.realpath(_cpufreq_dir(c) / "scaling_governor")
                     for c in (list(cpus) or online_cpus()))
    control = _boost_control() if boost else None
    if control is not None:
        files.add(os.path.realpath(control[0]))
    held = [Change(e["kind"], e["target"], e.get("value", ""), e["original"]) for e in entries
            if os.path.realpath(setting_file(e["kind"], e["target"])[0]) in files]
    pid = _pid(header)
    return (f"pid {pid}" if pid else "another process"), held


def describe_held(owner: str, held: list[Change]) -> str:
    """One line refusing a run that depends on settings `held_elsewhere` found."""
    values = ", ".join(f"{c.label()} = {show_value(c.value)}" for c in held)
    originals = ", ".join(show_original(c.original) for c in held)
    one = len(held) == 1
    return (f"{values} {'is' if one else 'are'} held by a running hotloop ({owner}), which "
            f"puts {'it' if one else 'them'} back to {originals} when it ends: this run "
            f"depends on {'it' if one else 'them'}; start it once that run is over")


@dataclass
class Applied:
    """System changes in force; restore() (or leaving `with`) puts the originals back.

    `changes` carry the originals as read at apply time. `recovered` holds the
    messages of a stale journal found (and restored) before applying.
    `errors` collects restore failures that happened while another exception
    was already propagating out of the `with` block.
    """
    changes: list[Change]
    journal: Path | None
    recovered: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _lock: _Lock | None = field(default=None, repr=False)
    _done: bool = field(default=False, repr=False)

    def restore(self) -> list[str]:
        """Restore originals in reverse order and remove the journal; idempotent.

        Returns what was restored. If a value cannot be put back, every other one
        still is, the journal keeps the failed ones (the next start retries), and
        SystemSettingError is raised with one line.
        """
        if self._done:
            return []
        self._done = True
        try:
            if not self.changes or self.journal is None:
                return []
            entries = [_entry(c) for c in self.changes]
            done, left, errors = _restore_entries(entries)
            try:
                _finish(self.journal, _journal_data([]), left)
            except OSError as e:
                errors.append(f"could not update {self.journal}: {e.strerror}")
            if errors:
                raise SystemSettingError(
                    "; ".join(errors) + (f" (kept in {self.journal}, retried on next start)" if left else "")
                )
            return done
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> Applied:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self.restore()
        except SystemSettingError as e:
            if exc_type is None:
                raise
            # Don't mask the error that ended the run; keep ours for the caller.
            self.errors.append(str(e))


def _entry(c: Change) -> dict[str, Any]:
    return {"kind": c.kind, "target": c.target, "path": str(c.file()),
            "original": c.original, "value": c.value}


def _journal_data(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": JOURNAL_VERSION,
        "pid": os.getpid(),
        "boot_id": _boot_id(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "entries": entries,
    }


def _check_change(c: Change) -> None:
    """Refuse, before anything is touched, a change hotloop could not write exactly."""
    file = c.file()                     # SystemSettingError for a bad kind or target
    if c.path and c.path != str(file):
        raise SystemSettingError(f"{c.label()}: {c.path} is not its file ({file})")
    problem = value_problem(c.value) if isinstance(c.value, str) else "value must be a string"
    if problem:
        raise SystemSettingError(f"{c.label()}: {problem}")


def apply(changes: Iterable[Change]) -> Applied:
    """Apply changes, journalling the originals first; returns the Applied handle.

    A stale journal (its owner died) is restored first, into `Applied.recovered`.
    If another live hotloop holds the journal, the state directory is not
    trusted, or any write fails, is not taken whole or does not read back as
    written, raises SystemSettingError with one line; everything already
    written is then restored before raising, and the journal is removed.
    """
    changes = list(changes)
    if not changes:
        return Applied([], None)
    for c in changes:
        _check_change(c)
    path = journal_path()
    problem = state_dir_problem(path.parent)
    if problem:
        raise SystemSettingError(problem)
    try:
        lock = _Lock(path.parent)
    except OSError as e:
        raise SystemSettingError(f"cannot create the restore journal in {path.parent}: {e.strerror}") from None
    if not lock.try_acquire():
        owner = _journal_owner(path)
        lock.release()
        raise SystemSettingError(f"another hotloop ({owner}) has system settings applied; wait for it to end")
    try:
        recovered = recover(force=True) if os.path.lexists(path) else []
        # Re-read originals now: the plan may be minutes old (a TUI confirmation).
        fresh: list[Change] = []
        for c in changes:
            try:
                current = _read_setting(c.kind, c.target)
            except OSError as e:
                raise SystemSettingError(f"cannot read {c.label()}: {e.strerror}") from None
            except SystemSettingError as e:
                raise SystemSettingError(f"cannot read {c.label()}: {e}") from None
            fresh.append(Change(c.kind, c.target, c.value, current, str(c.file())))
        entries = [_entry(c) for c in fresh]
        try:
            _write_journal(path, _journal_data(entries))
        except OSError as e:
            raise SystemSettingError(f"cannot write the restore journal {path}: {e.strerror}") from None
    except BaseException:
        lock.release()
        raise

    applied = Applied(fresh, path, recovered=recovered, _lock=lock)
    written: list[Change] = []
    try:
        for c in fresh:
            try:
                _set(c.kind, c.target, c.value)
            except SystemSettingError as e:
                if isinstance(e, _NotAsWritten):
                    written.append(c)       # it did change: counted among the restored
                raise SystemSettingError(f"cannot set {c.label()} to {c.value!r}: {e}") from None
            written.append(c)
    except BaseException as failure:  # Ctrl-C mid-apply too
        # Roll back: restore every entry (unwritten ones are already equal, so a
        # no-op) and drop the journal.
        try:
            applied.restore()
        except SystemSettingError as e:
            if isinstance(failure, SystemSettingError):
                raise SystemSettingError(f"{failure}; and {e}") from None
        if isinstance(failure, SystemSettingError) and written:
            raise SystemSettingError(
                f"{failure} (restored {len(written)} value(s) already changed)"
            ) from None
        raise
    return applied


# --------------------------------------------------------------------------- kernel facts


def vulnerabilities() -> dict[str, str]:
    d = CPU_SYS / "vulnerabilities"
    try:
        names = sorted(p.name for p in d.iterdir())
    except OSError:
        return {}
    out: dict[str, str] = {}
    for name in names:
        text = _read_opt(d / name)
        if text is not None:
            out[name] = text
    return out


def cmdline() -> str:
    return _read_opt(PROC / "cmdline") or ""


def mitigations_state(vulns: Mapping[str, str] | None = None, cmd: str | None = None) -> str:
    """"off", "on", "not affected" or "unknown", from the cmdline and vulnerabilities files.

    `mitigations=off` on the cmdline decides. Otherwise any "Mitigation:" line
    means on; "Vulnerable" with no mitigation anywhere means off (e.g. each
    mitigation disabled by its own flag); all "Not affected" means nothing to do.
    """
    cmd = cmdline() if cmd is None else cmd
    if "mitigations=off" in cmd.split():
        return "off"
    vulns = vulnerabilities() if vulns is None else vulns
    if not vulns:
        return "unknown"
    texts = list(vulns.values())
    if any(t.startswith("Mitigation") for t in texts):
        return "on"
    if any(t.startswith("Vulnerable") for t in texts):
        return "off"
    return "not affected"


def cpu_model() -> str:
    text = _read_opt(PROC / "cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model", "Processor"):
            return value.strip()
    return os.uname().machine


def kernel_facts(sysctl_names: Iterable[str] = ()) -> dict[str, Any]:
    """What a result header records about the kernel, plus the touched sysctls' values now."""
    u = os.uname()
    vulns = vulnerabilities()
    cmd = cmdline()
    sysctls: dict[str, str | None] = {}
    for name in sysctl_names:
        try:
            sysctls[name] = read_sysctl(name)
        except SystemSettingError:
            sysctls[name] = None
    return {
        "release": u.release,
        "version": u.version,
        "machine": u.machine,
        "cmdline": cmd,
        "cpu_model": cpu_model(),
        "mitigations": mitigations_state(vulns, cmd),
        "vulnerabilities": vulns,
        "sysctl": sysctls,
    }


_REGEX_ONLY = re.compile(r"[\\^$+(){}|]")


def release_matches(pattern: str, release: str) -> bool:
    """Glob ("6.18*") unless the pattern uses regex-only syntax (\\ ^ $ + ( ) { } |).

    Why not try both: "4.3*" read as a regex matches "6.18.44" ("44"), so a
    pattern must mean one thing.
    """
    if _REGEX_ONLY.search(pattern):
        try:
            return re.search(pattern, release) is not None
        except re.error as e:
            raise SystemSettingError(f"expect.release: bad regular expression {pattern!r}: {e}") from None
    return fnmatch.fnmatchcase(release, pattern)


def check_expect(expect: Mapping[str, Any]) -> list[str]:
    """Check a kernel profile's `expect` table against the running kernel; one message per mismatch.

    Keys: release (glob or regex on uname release), cmdline_contains (list of
    strings, or one string), mitigations ("on" | "off"). Unknown keys and wrong
    types raise SystemSettingError (bad profile, not a mismatch).
    """
    problems: list[str] = []
    for key in expect:
        if key not in ("release", "cmdline_contains", "mitigations"):
            raise SystemSettingError(
                f"expect.{key}: unknown key (known: release, cmdline_contains, mitigations)"
            )
    if "release" in expect:
        pattern = expect["release"]
        if not isinstance(pattern, str):
            raise SystemSettingError("expect.release: must be a string pattern")
        release = os.uname().release
        if not release_matches(pattern, release):
            problems.append(f"kernel release {release} does not match {pattern!r}")
    if "cmdline_contains" in expect:
        wanted = expect["cmdline_contains"]
        if isinstance(wanted, str):
            wanted = [wanted]
        if not isinstance(wanted, list) or not all(isinstance(w, str) for w in wanted):
            raise SystemSettingError("expect.cmdline_contains: must be a list of strings")
        cmd = cmdline()
        for w in wanted:
            # Plain substring: "isolcpus=" and "nohz_full=1" both work.
            if w not in cmd:
                problems.append(f"kernel cmdline does not contain {w!r}")
    if "mitigations" in expect:
        want = expect["mitigations"]
        if want not in ("on", "off"):
            raise SystemSettingError("expect.mitigations: must be \"on\" or \"off\"")
        state = mitigations_state()
        if state not in (want, "not affected"):
            problems.append(f"mitigations are {state}, profile expects {want}")
    return problems


# --------------------------------------------------------------------------- capabilities


@dataclass(frozen=True)
class Capability:
    """One line of `hotloop doctor`; `value` is the machine-readable part, if any."""
    name: str
    available: bool
    detail: str
    value: Any = None


def _cpu_flags() -> set[str]:
    text = _read_opt(PROC / "cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def _probe_realtime() -> tuple[bool, str, bool]:
    """Try SCHED_FIFO 1 and nice -1 on a throwaway thread: (rt ok, rt error, negative nice ok).

    Linux applies sched_setscheduler(0)/setpriority(tid) to the calling thread
    only, and the thread exits right after, so nothing needs restoring.
    """
    out: dict[str, Any] = {"rt": False, "err": "", "nice": False}

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            out["rt"] = True
        except OSError as e:
            out["err"] = e.strerror or str(e)
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -1)
            out["nice"] = True
        except OSError:
            pass

    t = threading.Thread(target=probe, name="hotloop-rt-probe", daemon=True)
    t.start()
    t.join(2.0)
    return out["rt"], out["err"], out["nice"]


def capabilities() -> list[Capability]:
    """What this machine lets hotloop do (fast: sysfs reads and one short thread)."""
    caps: list[Capability] = []

    online = online_cpus()
    usable = sorted(os.sched_getaffinity(0))
    offline = _read_opt(CPU_SYS / "offline") or ""
    detail = f"{len(online)} online ({format_cpu_list(online)})"
    if usable != online:
        detail += f", this process may use {format_cpu_list(usable)}"
    if offline:
        detail += f", offline {offline}"
    if len(usable) < 2:
        detail += ": one CPU, profiles that split processes share it"
    caps.append(Capability("cpus", len(usable) >= 2, detail, len(online)))

    if has_cpufreq():
        cpu = next(c for c in online if (_cpufreq_dir(c) / "scaling_governor").exists())
        current = _read_opt(_cpufreq_dir(cpu) / "scaling_governor") or "?"
        driver = _read_opt(_cpufreq_dir(cpu) / "scaling_driver") or "?"
        govs = available_governors(cpu)
        caps.append(Capability(
            "cpufreq", True,
            f"driver {driver}, governor {current}, available: {' '.join(govs) or '?'}", govs,
        ))
    else:
        caps.append(Capability(
            "cpufreq", False, "no cpufreq (VM or disabled): governor settings are skipped", []))

    control = _boost_control()
    if control is None:
        caps.append(Capability("boost", False, "no boost control: boost settings are skipped"))
    else:
        path, inverted = control
        raw = _read_opt(path) or "?"
        on = (raw == "1") != inverted
        caps.append(Capability("boost", True, f"{path.name} = {raw} (boost {'on' if on else 'off'})", on))

    smt_control = _read_opt(CPU_SYS / "smt" / "control")
    smt_active = _read_opt(CPU_SYS / "smt" / "active") == "1"
    caps.append(Capability(
        "smt", smt_active,
        f"SMT active (control: {smt_control})" if smt_active
        else f"no SMT (control: {smt_control or 'absent'})", smt_active,
    ))

    isolated = parse_cpu_list(_read_opt(CPU_SYS / "isolated") or "")
    nohz_text = _read_opt(CPU_SYS / "nohz_full")
    nohz = parse_cpu_list(nohz_text) if nohz_text and nohz_text != "(null)" else []
    caps.append(Capability(
        "isolated cpus", bool(isolated or nohz),
        f"isolcpus: {format_cpu_list(isolated) or 'none'}; nohz_full: {format_cpu_list(nohz) or 'none'}",
        {"isolcpus": isolated, "nohz_full": nohz},
    ))

    rt, err, nice = _probe_realtime()
    lo, hi = os.sched_get_priority_min(os.SCHED_FIFO), os.sched_get_priority_max(os.SCHED_FIFO)
    runtime = _read_opt(PROC / "sys" / "kernel" / "sched_rt_runtime_us")
    if rt:
        detail = f"SCHED_FIFO/RR allowed (priority {lo}-{hi})"
        if runtime and runtime != "-1":
            detail += f", RT throttled to {runtime} us per {_read_opt(PROC / 'sys' / 'kernel' / 'sched_rt_period_us') or '?'} us"
    else:
        detail = f"SCHED_FIFO not allowed: {err}; fifo/rr profiles cannot run as this user"
    detail += "; negative nice " + ("allowed" if nice else "not allowed")
    caps.append(Capability("sched_setscheduler", rt, detail, {"fifo": rt, "negative_nice": nice}))

    try:
        ro = bool(os.statvfs(PROC_SYS).f_flag & os.ST_RDONLY)
    except OSError:
        ro = True
    sample = sysctl_writable("net.core.busy_poll") if (PROC_SYS / "net/core/busy_poll").exists() \
        else sysctl_writable("kernel.sched_rt_runtime_us")
    if ro:
        caps.append(Capability("sysctl writable", False, "/proc/sys is mounted read-only", False))
    elif sample:
        caps.append(Capability("sysctl writable", True, "/proc/sys is writable (kernel profiles can set sysctls)", True))
    else:
        caps.append(Capability("sysctl writable", False, sample.reason, False))

    flags = _cpu_flags()
    clock = _read_opt(CLOCKSOURCE) or "?"
    if "tsc" in flags:
        stable = [f for f in ("constant_tsc", "nonstop_tsc") if f in flags]
        ok = "constant_tsc" in flags
        caps.append(Capability(
            "tsc", ok,
            f"TSC present ({' '.join(stable) or 'not constant: cycles drift with frequency'}), clocksource {clock}",
            ok,
        ))
    else:
        caps.append(Capability("tsc", False, f"no TSC: cycles are not measured (clocksource {clock})", False))

    return caps


# --------------------------------------------------------------------------- scheduling (worker side)

SCHED_POLICIES: dict[str, int] = {
    "other": os.SCHED_OTHER,
    "fifo": os.SCHED_FIFO,
    "rr": os.SCHED_RR,
    "batch": os.SCHED_BATCH,
    "idle": os.SCHED_IDLE,
}


def validate_priority(policy: str, priority: int) -> str | None:
    """Problem with a (policy, priority) pair, or None: fifo/rr take 1-99, the others 0."""
    if policy not in SCHED_POLICIES:
        return f"unknown sched policy {policy!r} (one of: {', '.join(SCHED_POLICIES)})"
    if not isinstance(priority, int) or isinstance(priority, bool):
        return f"priority {priority!r} must be an integer"
    p = SCHED_POLICIES[policy]
    lo, hi = os.sched_get_priority_min(p), os.sched_get_priority_max(p)
    if not lo <= priority <= hi:
        allowed = f"{lo}-{hi}" if lo != hi else f"only {lo}"
        return f"priority {priority} out of range for sched {policy} ({allowed})"
    return None


def validate_nice(nice: int) -> str | None:
    if not isinstance(nice, int) or isinstance(nice, bool):
        return f"nice {nice!r} must be an integer"
    if not -20 <= nice <= 19:
        return f"nice {nice} out of range (-20 to 19)"
    return None


def validate_cpus(cpus: Iterable[int]) -> str | None:
    """Problem with a CPU list for pinning, or None: beyond the machine, offline, or outside our cpuset."""
    cpus = list(cpus)
    present = present_cpus()
    online = set(online_cpus())
    usable = os.sched_getaffinity(0)
    for cpu in cpus:
        if not isinstance(cpu, int) or isinstance(cpu, bool) or cpu < 0:
            return f"CPU {cpu!r} is not a CPU number"
        if cpu not in present:
            return f"CPU {cpu} is beyond this machine (CPUs {format_cpu_list(present)})"
        if cpu not in online:
            return f"CPU {cpu} is offline (online: {format_cpu_list(online)})"
        if cpu not in usable:
            return f"CPU {cpu} is not allowed for this process (cpuset {format_cpu_list(usable)})"
    return None


def apply_sched(policy: str, priority: int = 0, nice: int = 0) -> None:
    """Set the calling process's (main thread's) policy, priority and nice; children inherit.

    Raises SystemSettingError with one line, e.g. "sched fifo priority 50: Operation not permitted".
    """
    problem = validate_priority(policy, priority) or validate_nice(nice)
    if problem:
        raise SystemSettingError(problem)
    # nice first: it matters for other/batch/idle and is harmless for fifo/rr.
    if nice != os.getpriority(os.PRIO_PROCESS, 0):
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except OSError as e:
            raise SystemSettingError(f"nice {nice}: {e.strerror}") from None
    try:
        os.sched_setscheduler(0, SCHED_POLICIES[policy], os.sched_param(priority))
    except OSError as e:
        raise SystemSettingError(f"sched {policy} priority {priority}: {e.strerror}") from None
