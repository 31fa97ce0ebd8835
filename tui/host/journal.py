"""The restore journal: the originals of a run's system changes, written before any change so
that a crash leaves them behind to restore.  This module holds the file itself: where it lives
(the machine's for root, else the user's), how it is written (atomically), locked, read and
checked, whose it is, and how its entries are written back.  `recovery` restores what a dead
run left; `holds` finds what a live one holds.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hotloop.host import sysfs
from hotloop.host.procs import pid_gone
from hotloop.host.settings import (
    CONTROL_CHARS,
    Change,
    brief,
    read_setting,
    setting_file,
    show_original,
    write_setting,
)
from hotloop.host.sysfs import SystemSettingError
from hotloop.paths import state_dir, state_dir_problem

JOURNAL_NAME = "restore.json"
LOCK_NAME = "restore.lock"
JOURNAL_VERSION = 1


_MAX_JOURNAL = 1 << 20                  # bytes; hotloop's own journals hold a few hundred


# Root's journal is one for the whole machine, as the settings are: runs of root with another
# HOME or XDG_STATE_HOME must see, and never revert, each other's.  /run is emptied at boot,
# as what the journal restores is.  Other users' runs (which can write none of root's
# settings) keep theirs in their state directory, and read root's to refuse riding on it.
SYSTEM_DIR = Path("/run/hotloop")
SYSTEM_DIR_VAR = "HOTLOOP_SYSTEM_DIR"


def system_dir() -> Path:
    """The machine-wide place.  HOTLOOP_SYSTEM_DIR (an absolute path) moves it, for tests
    that run beside real hotloops: it is trusted as a state directory is (this user's alone,
    state_dir_problem), and a run moved so still honours what the real place holds
    (held_elsewhere, apply), so the move hides nothing from it."""
    moved = os.environ.get(SYSTEM_DIR_VAR, "")
    return Path(moved) if moved and os.path.isabs(moved) else SYSTEM_DIR


def journal_dir() -> Path:
    """Where this process's restore journal lives: the machine's for root, else the user's."""
    return system_dir() if os.geteuid() == 0 else state_dir()


def journal_path() -> Path:
    return journal_dir() / JOURNAL_NAME


def holder_dirs() -> list[Path]:
    """Where a live run's journal may hold a setting this process would depend on: its own
    place, the machine's, and the real machine's when moved."""
    return list(dict.fromkeys([journal_dir(), system_dir(), SYSTEM_DIR]))


def boot_id() -> str:
    return sysfs.read_opt(sysfs.PROC / "sys" / "kernel" / "random" / "boot_id") or ""


def fsync_dir(path: Path) -> None:
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


def write_journal(path: Path, data: dict[str, Any]) -> None:
    # Write-fsync-rename-fsync(dir): after a power cut the journal is either the
    # old one or the new one, never half a file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # The machine's journal is readable by all: other users' runs must see what root holds
    # (moved, its directory's mode says who may look).
    mode = 0o644 if path.parent == system_dir() else 0o600
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        os.write(fd, (json.dumps(data, indent=2) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


# write_journal's temp file, of the journal or of a copy set aside beside it
_TEMP = re.compile(r"\.restore\.json(\.[A-Za-z0-9-]+)?\.(?P<pid>[0-9]{1,9})\.tmp")


def sweep_temps(directory: Path) -> None:
    """Remove the temp files of journal writes whose process is gone (killed mid-write), in a
    journal directory that is this user's alone; nothing else, no symlink followed."""
    if state_dir_problem(directory):
        return
    try:
        names = [e.name for e in os.scandir(directory) if e.name.startswith(".restore.json")]
    except OSError:
        return
    for name in names:
        m = _TEMP.fullmatch(name)
        if m is None or not pid_gone(int(m["pid"])):
            continue                    # not ours, or its writer runs
        path = directory / name
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                path.unlink()
        except OSError:
            pass


def remove_journal(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    fsync_dir(path.parent)


def aside_path(path: Path, why: str) -> Path:
    """A free name beside the journal, for what is kept for a person to check."""
    stem = f"{path.name}.{why}-{time.strftime('%Y%m%d-%H%M%S')}"
    aside, n = path.with_name(stem), 1
    while os.path.lexists(aside):
        n += 1
        aside = path.with_name(f"{stem}-{n}")
    return aside


class RestoreLock:
    """An exclusive flock on restore.lock; the kernel drops it when the holder dies."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True,
                        mode=0o755 if directory == SYSTEM_DIR else 0o700)
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
        return f"it is {brief(entry)}, not an object"
    try:
        path, _ = setting_file(entry.get("kind"), entry.get("target"))
    except SystemSettingError as e:
        why = str(e)
        return why if len(why) <= 120 else why[:120] + "..."
    label = Change(entry["kind"], entry["target"], "").label()
    original = entry.get("original")
    if not isinstance(original, str):
        return f"{label}: its original is {brief(original)}, not a string"
    if CONTROL_CHARS.search(original.replace("\t", " ")):  # tabs: how multi-field values read
        return f"{label}: its original {brief(original)} holds a control character"
    try:
        original.encode()
    except UnicodeEncodeError:          # JSON allows lone surrogates; a file write does not
        return f"{label}: its original {brief(original)} is not valid text"
    if not isinstance(entry.get("value", ""), str):
        return f"{label}: its value is {brief(entry['value'])}, not a string"
    if "path" in entry and entry["path"] != str(path):
        return f"{label}: its path {brief(entry['path'])} is not the file of {label} ({path})"
    return None


def load_journal(path: Path, owners: frozenset[int] = frozenset()
                  ) -> tuple[dict[str, Any], list[dict[str, Any]], list[tuple[int, Any, str]]]:
    """Read and check a journal: (its header fields, entries to restore, entries set aside:
    (1-based number, entry, why)).  It must be this user's, or one of `owners`' (root's, read
    by a user).

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
        if st.st_uid != os.geteuid() and st.st_uid not in owners:
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
        raise ValueError(f"version {brief(data.get('version'))}, expected {JOURNAL_VERSION}")
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
    header = {k: data[k] for k in ("version", "pid", "pid_start", "boot_id", "created")
              if k in data}
    return header, good, bad


def journal_pid(header: Mapping[str, Any]) -> int | None:
    pid = header.get("pid")
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None


def process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks after boot, field 22 of /proc/PID/stat), or None
    when there is no such process, or only its zombie (killed, not yet reaped: it holds
    nothing): with the pid, who a process is (a pid is reused)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return None if fields[0] in (b"Z", b"X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def owner_alive(header: Mapping[str, Any]) -> bool:
    """Whether the process that wrote this journal, another than this one, still runs: its pid
    started when the journal says, in this boot.  The lock says the same while its file is
    there; this holds when the lock file was removed (and another created) under a live run.
    A journal without a start time (an older hotloop's) is left to the lock."""
    pid, start = journal_pid(header), header.get("pid_start")
    if pid is None or pid == os.getpid() or not isinstance(start, int) \
            or header.get("boot_id") != boot_id():
        return False
    return process_start(pid) == start


def live_owner(path: Path) -> bool:
    """Whether the journal at `path` belongs to another process that still runs."""
    try:
        return owner_alive(load_journal(path)[0])
    except (OSError, ValueError):
        return False


def journal_owner(path: Path) -> str:
    try:
        pid = journal_pid(load_journal(path)[0])
    except (OSError, ValueError):
        pid = None
    return f"pid {pid}" if pid else "another process"


def restore_entries(entries: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]], list[str]]:
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
                current: str | None = read_setting(kind, target)
            except OSError:
                current = None
            # Idempotent: already back (or never changed) needs no write.
            if current is None or sysfs.norm(current) != sysfs.norm(original):
                write_setting(kind, target, original)
            done.append(f"restored {label} to {show_original(original)}")
        except SystemSettingError as e:
            errors.append(f"could not restore {label} to {show_original(original)}: {e}")
            left.insert(0, entry)
    return done, left, errors


def finish_journal(path: Path, header: dict[str, Any], left: list[Any]) -> None:
    if left:
        # Keep only what still needs restoring, so the next start retries exactly that.
        write_journal(path, {**header, "entries": left})
    else:
        remove_journal(path)
