"""The restore journal: originals written before any change, restored after a crash.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hotloop.host import sysfs
from hotloop.host.cpus import online_cpus
from hotloop.host.procs import pid_gone
from hotloop.host.settings import (
    CONTROL_CHARS,
    Change,
    boost_control,
    brief,
    cpufreq_dir,
    read_setting,
    setting_file,
    show_original,
    show_value,
    sysctl_path,
    write_setting,
)
from hotloop.host.sysfs import SystemSettingError
from hotloop.paths import state_dir, state_dir_problem

JOURNAL_NAME = "restore.json"
LOCK_NAME = "restore.lock"
JOURNAL_VERSION = 1


# --------------------------------------------------------------------------- restore journal

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


def _aside(path: Path, why: str) -> Path:
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


def _load_journal(path: Path, owners: frozenset[int] = frozenset()
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


def _pid(header: Mapping[str, Any]) -> int | None:
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
    pid, start = _pid(header), header.get("pid_start")
    if pid is None or pid == os.getpid() or not isinstance(start, int) \
            or header.get("boot_id") != boot_id():
        return False
    return process_start(pid) == start


def live_owner(path: Path) -> bool:
    """Whether the journal at `path` belongs to another process that still runs."""
    try:
        return owner_alive(_load_journal(path)[0])
    except (OSError, ValueError):
        return False


def journal_owner(path: Path) -> str:
    try:
        pid = _pid(_load_journal(path)[0])
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


EARLIER_BOOT = "earlier-boot"


def _earlier_boot(path: Path, header: Mapping[str, Any], entries: int) -> str:
    """A journal a hotloop of an earlier boot left: what it changed (sysctls, cpufreq) went
    back to its boot value with the reboot, and writing its originals now would undo what
    this boot set (sysctl.conf, a tuned profile, the user).  Set aside, never restored."""
    aside = _aside(path, EARLIER_BOOT)
    try:
        os.replace(path, aside)
    except OSError as e:
        return (f"restore journal {path} is from an earlier boot and was not restored, but "
                f"cannot be moved aside ({e.strerror}): remove it by hand")
    pid = _pid(header)
    return (f"restore journal of {f'pid {pid}' if pid else 'a hotloop'} from an earlier boot "
            f"not restored ({entries} setting{'' if entries == 1 else 's'}: the reboot reset "
            f"them, and its originals would undo what this boot set); kept in {aside}")


def left_behind() -> set[Path]:
    """The journal and the copies set aside beside it for a look by hand: what a restore has
    not put back (not a journal of an earlier boot: its settings went with that boot)."""
    path = journal_path()
    try:
        return {p for p in path.parent.iterdir() if p.name.startswith(path.name)
                and not p.name.startswith(f"{path.name}.{EARLIER_BOOT}-")}
    except OSError:
        return set()


def recover(force: bool = False) -> list[str]:
    """Restore what a killed hotloop left changed; call at the start of every command.

    Returns one message per restored value (empty when there was nothing to do,
    the common case, which costs one stat()). A journal whose owner is still
    running is left alone (message says so) unless `force` (apply: the caller holds
    its lock; a live owner is still left alone). Never raises: the
    messages carry any failure, and the journal keeps what could not be
    restored. An entry that fails the checks (`_entry_problem`) is set aside in
    a file beside the journal, one message each, and the others are restored.
    """
    sweep_temps(journal_dir())          # what a journal write killed half-way left
    msgs = _recover(journal_path(), force)
    # Root's journal before it was the machine's, in its state directory: restored only while
    # no run holds the machine's (whose settings it might name).
    legacy = state_dir() / JOURNAL_NAME
    if os.geteuid() == 0 and legacy != journal_path() and os.path.lexists(legacy):
        try:
            machine = RestoreLock(journal_dir())
        except OSError:
            return msgs
        try:
            if machine.try_acquire() or force:
                msgs += _recover(legacy, force=False)
        finally:
            machine.release()
    return msgs


def _recover(path: Path, force: bool) -> list[str]:
    """recover() of the journal at `path`; `force`: the caller holds its lock."""
    if not os.path.lexists(path):
        return []
    problem = state_dir_problem(path.parent)
    if problem:
        return [problem]
    try:
        lock = RestoreLock(path.parent)
    except OSError as e:
        return [f"could not open the restore lock in {path.parent}: {e.strerror}"]
    try:
        if not lock.try_acquire() and not force:
            return [
                f"system settings changed by a running hotloop ({journal_owner(path)}) "
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
        if owner_alive(header):   # its lock file replaced under it: still its own
            pid = _pid(header)
            return [f"system settings changed by a running hotloop "
                    f"({f'pid {pid}' if pid else 'another process'}) left in place; they are "
                    f"restored when it ends"]
        then, now = header.get("boot_id"), boot_id()
        if isinstance(then, str) and then and now and then != now:
            return [_earlier_boot(path, header, len(entries) + len(bad))]
        msgs: list[str] = []
        kept: list[Any] = []
        if bad:
            aside = _aside(path, "rejected")
            try:
                write_journal(aside, {**header, "entries": [e for _, e, _ in bad]})
                where = f"kept in {aside}"
            except OSError as e:
                kept = [e for _, e, _ in bad]       # nothing dropped: it stays in the journal
                where = f"left in {path} ({aside}: {e.strerror})"
            msgs += [f"restore journal entry {i} set aside, not restored: {why}; {where}"
                     for i, _, why in bad]
        done, left, errors = restore_entries(entries)
        try:
            finish_journal(path, header, left + kept)
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


def _dir_problem(d: Path, owners: frozenset[int]) -> str | None:
    """Why a directory may not be read for a journal: this user's own place must be as a state
    directory is; another (the machine's, read by a user) may also be root's."""
    if not owners:
        return state_dir_problem(d)
    try:
        st = os.stat(d)
    except OSError as e:
        return e.strerror
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o022 \
            or st.st_uid not in owners | {os.geteuid()}:
        return "not a directory of this user's or root's alone"
    return None


def _live_journal(d: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The header and entries of the journal in `d` when a live run other than this one owns
    it (its lock held, or its pid and start time running), else None.  Reads only: the lock
    is probed shared, and not at all where this user may not open it (root's, for a user)."""
    path = d / JOURNAL_NAME
    owners = frozenset() if d == journal_dir() else frozenset({0})
    if not os.path.lexists(path) or _dir_problem(d, owners):
        return None
    try:
        fd = os.open(d / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        fd = -1
    try:
        held = False
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                held = True
            except OSError:
                pass
        header, entries, _ = _load_journal(path, owners)
    except (OSError, ValueError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    return (header, entries) if held or owner_alive(header) else None


def held_in(files: set[str], dirs: Iterable[Path]) -> tuple[str, list[Change]]:
    """The first live run, of the journals in `dirs`, holding any of these setting files (real
    paths): ("pid N", its changes of them), or ("", [])."""
    for d in dirs:
        found = _live_journal(d)
        if found is None:
            continue
        header, entries = found
        held = [Change(e["kind"], e["target"], e.get("value", ""), e["original"])
                for e in entries
                if os.path.realpath(setting_file(e["kind"], e["target"])[0]) in files]
        if held:
            pid = _pid(header)
            return (f"pid {pid}" if pid else "another process"), held
    return "", []


def held_elsewhere(sysctls: Iterable[str] = (), governor: bool = False, boost: bool = False,
                   cpus: Iterable[int] = ()) -> tuple[str, list[Change]]:
    """Which of these settings a running hotloop has changed and will put back when it ends.

    Returns (its owner, "pid N"; its changes as its journal holds them), or
    ("", []) when none: no journal, its owner dead (recover's business), or a
    directory not trusted. A run that merely finds such a value in place
    would otherwise ride on it and see it restored half-way. Reads only; the
    lock is probed only when a journal exists.  Every place a holder may be is
    read: this user's, and the machine's (root's, whatever its HOME).
    """
    if not any(os.path.lexists(d / JOURNAL_NAME) for d in holder_dirs()):
        return "", []
    files: set[str] = set()
    for name in sysctls:
        try:
            files.add(os.path.realpath(sysctl_path(name)))
        except SystemSettingError:
            pass
    if governor:
        files.update(os.path.realpath(cpufreq_dir(c) / "scaling_governor")
                     for c in (list(cpus) or online_cpus()))
    control = boost_control() if boost else None
    if control is not None:
        files.add(os.path.realpath(control[0]))
    return held_in(files, holder_dirs())


def describe_held(owner: str, held: list[Change]) -> str:
    """One line refusing a run that depends on settings `held_elsewhere` found."""
    values = ", ".join(f"{c.label()} = {show_value(c.value)}" for c in held)
    originals = ", ".join(show_original(c.original) for c in held)
    one = len(held) == 1
    return (f"{values} {'is' if one else 'are'} held by a running hotloop ({owner}), which "
            f"puts {'it' if one else 'them'} back to {originals} when it ends: this run "
            f"depends on {'it' if one else 'them'}; start it once that run is over")
