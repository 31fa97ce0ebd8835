"""Reading a profile's files: only a regular file, and only up to a size a profile may have.

A --profiles directory may be anyone's: a FIFO named x.toml would block the read forever (the
console on a blank screen, a shell's Tab), a symlink to /dev/zero would fill memory, a
300 MB TOML would be read whole.  So a file is opened only once stat says it is a regular
file (opening a device may do something), checked again on the open descriptor (it may
have been swapped since), and read to PROFILE_CAP bytes at most.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from hotloop.errors import HotloopError

PROFILE_CAP = 1 << 20               # bytes: the bundled profiles hold a few KB


class NotAProfile(HotloopError):
    """A file left out: not a regular file, or larger than PROFILE_CAP (one line saying so)."""


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _check(path: Path, st: os.stat_result, cap: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode)
        raise NotAProfile(f"{path}: {kind if kind.startswith('not') else 'is ' + kind}, "
                          f"not a regular file: skipped")
    if st.st_size > cap:
        raise NotAProfile(f"{path}: {st.st_size} bytes, more than the {cap >> 20} MB a "
                          f"profile may hold: skipped")


def read_text(path: Path, cap: int = PROFILE_CAP) -> str:
    """The file's text; NotAProfile when it is no regular file or holds more than `cap`
    bytes, HotloopError when it cannot be read or is not UTF-8."""
    try:
        _check(path, os.stat(path), cap)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise HotloopError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        _check(path, os.fstat(fd), cap)         # what was opened, not what was stat'ed
        chunks, got = [], 0
        while got <= cap and (chunk := os.read(fd, min(1 << 16, cap + 1 - got))):
            chunks.append(chunk)
            got += len(chunk)
    except OSError as e:
        raise HotloopError(f"{path}: cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if got > cap:                               # it grew while read
        raise NotAProfile(f"{path}: more than the {cap >> 20} MB a profile may hold: skipped")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as e:
        raise HotloopError(f"{path}: cannot read: not UTF-8 text ({e.reason} at byte "
                           f"{e.start})") from None


def text_or_empty(path: Path) -> str:
    """The file's text, or "" when it cannot be read as a profile (for finding a line)."""
    try:
        return read_text(path)
    except HotloopError:
        return ""
