"""The perf directories of sessions still keeping data, so that what a killed hotloop left is
finished (compressed, thinned to its budget) by the next hotloop command.

A session that keeps perf data holds an entry in STATE/perf-open (the directory and its
budget), locked (flock, exclusive) for as long as it runs; its own end, a stop or a Ctrl-C
finishes the data and removes the entry.  The kernel drops the lock when the process goes,
however it dies: an entry nobody holds is a dead session's.  Whoever finishes one takes that
same lock first (and skips an entry removed meanwhile), so two hotloops never finish one
directory at once.  Light on purpose: every command looks here before doing anything else.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hotloop.paths import state_dir, state_dir_problem


def _entries() -> Path:
    return state_dir() / "perf-open"


@dataclass
class OpenEntry:
    """An entry of STATE/perf-open, locked: the result file whose perf data it names, and
    that data's budget."""
    path: Path
    fd: int
    result: Path
    budget_mb: int

    def release(self) -> None:
        """The data is finished: the entry goes, then its lock."""
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _lock(path: Path, create: bool) -> int | None:
    """`path` opened and locked, or None (held by another, gone, or not a plain file)."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_nlink == 0:      # finished and removed as we opened it
            raise OSError(errno.ENOENT, "removed")
    except OSError:
        os.close(fd)
        return None
    return fd


def hold(result: Path, budget_mb: int) -> OpenEntry | None:
    """An entry for the perf data beside `result`, held until `release()`; None when one
    cannot be made (no state directory): the session then finishes its data all the same,
    only a SIGKILL's would wait for a later session's pruning."""
    result = Path(os.path.abspath(result))
    d = _entries()
    if state_dir_problem(d.parent):     # a HOME that is not there is not made
        return None
    try:
        os.makedirs(d, 0o700, exist_ok=True)
    except OSError:
        return None
    path = d / hashlib.sha256(os.fsencode(result)).hexdigest()[:32]
    fd = _lock(path, create=True)
    if fd is None:
        return None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"result": os.fsdecode(result), "budget_mb": budget_mb}
                                ).encode())
    except OSError:
        os.close(fd)
        return None
    return OpenEntry(path, fd, result, budget_mb)


def detach(entry: OpenEntry) -> bool:
    """Hand the finishing of `entry`'s data to a process of its own, detached (its own session,
    nice 19, idle I/O), which inherits the entry's lock; whether it started.  This process lets
    go of its copy of the entry."""
    argv = [sys.executable, "-m", "hotloop.results.perf_data", str(entry.fd)]
    ionice = shutil.which("ionice")

    def setup() -> None:
        with contextlib.suppress(OSError):
            os.nice(19)
    try:
        subprocess.Popen([ionice, "-c", "3", *argv] if ionice else argv,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, pass_fds=(entry.fd,),
                         start_new_session=True, preexec_fn=setup)
    except OSError:
        return False
    with contextlib.suppress(OSError):
        os.close(entry.fd)
    return True


def from_fd(fd: int) -> OpenEntry | None:
    """The entry of a locked descriptor handed over by `detach`."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        doc = json.loads(os.read(fd, 65536))
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        return OpenEntry(path, fd, Path(doc["result"]), int(doc["budget_mb"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def any_left() -> bool:
    """Whether any entry is there at all (cheap: most commands find none)."""
    try:
        with os.scandir(_entries()) as it:
            return any(True for _ in it)
    except OSError:
        return False


def left() -> Iterator[OpenEntry]:
    """The entries of dead sessions, each locked for its finishing (`release()` once done);
    those of sessions still running, or being finished by another hotloop, are skipped."""
    d = _entries()
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return
    for name in names:
        fd = _lock(d / name, create=False)
        if fd is None:
            continue
        try:
            with os.fdopen(os.dup(fd), "rb") as f:
                doc = json.loads(f.read(65536))
            entry = OpenEntry(d / name, fd, Path(doc["result"]), int(doc["budget_mb"]))
        except (OSError, ValueError, KeyError, TypeError):
            # not an entry hotloop wrote whole (killed while writing it): nothing to finish
            OpenEntry(d / name, fd, Path(), 0).release()
            continue
        yield entry
