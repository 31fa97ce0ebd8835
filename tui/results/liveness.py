"""Why a result file has no last line: its run still going, or a crash.

A file without its `finished` or `failed` line is either still being written or what a crash
left.  The Writer (hotloop.results.writer) holds its file locked (flock, exclusive) for the
whole session, and the kernel drops that lock when the process goes, however it dies: a lock
held now is a run still writing, on this machine.  The file's age is no proof (a run waits
minutes between lines on a slow workload; a crashed one may have written a second ago), nor
is a pid in a header (another machine's, or reused).
"""
from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from hotloop.results.reader import Result

RUNNING = "still running: no last line yet (a hotloop run is writing it)"
UNKNOWN = "no last line yet: still running, or a crash"
CRASHED = "the file ends early (a crash?)"


def being_written(path: Path) -> bool | None:
    """True when a hotloop run holds the file (it is writing it), False when none does,
    None when this cannot be told (no such file now, a file system without flock)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        # shared, and let go at once: a writer's exclusive lock refuses it
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return True if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def partial_reason(result: Result) -> str:
    """Why `result` reads as partial: its `failed` line's message, or whether its run is
    still writing it (see `being_written`)."""
    if result.failed is not None:
        return result.failed.message
    alive = being_written(result.path)
    return RUNNING if alive else CRASHED if alive is False else UNKNOWN
