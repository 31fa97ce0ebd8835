"""Room kept for a result file's last line: blocks allocated beyond its end (fallocate with
FALLOC_FL_KEEP_SIZE: its size unchanged, so readers see nothing of it) that the lines written
next fill, topped up as they do.  When the disk is full the top-up fails while the room is
still there, and the file's last line says so in it, rather than the disk cutting a line in
half with nothing saying why (a full disk is not a crash).  A file system without fallocate
(some network and FUSE ones) keeps no room: a line the disk cuts is then taken back.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import os

ROOM = 64 << 10                 # allocated beyond the end at a time: some 200 run lines
LAST_ROOM = 4 << 10             # what the last line may need: kept whatever else is written
_KEEP_SIZE, _PUNCH_HOLE = 0x01, 0x02
_FULL = (errno.ENOSPC, errno.EDQUOT)


def _fallocate() -> object | None:
    try:
        # the process's own symbols hold libc's: find_library("c") would start ldconfig (and
        # gcc where that fails) at every start of hotloop
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.fallocate
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    fn.restype = ctypes.c_int
    return fn


_FALLOCATE = _fallocate()


def _call(fd: int, mode: int, offset: int, length: int) -> int:
    """fallocate(2): 0, or the errno it failed with."""
    if _FALLOCATE is None:
        return errno.EOPNOTSUPP
    if _FALLOCATE(fd, mode, offset, length) == 0:  # type: ignore[operator]
        return 0
    return ctypes.get_errno()


class Room:
    """The blocks held beyond the end of the file `fd` (regular, written at `end` on)."""

    def __init__(self, fd: int, end: int) -> None:
        self.fd = fd
        self.end = end                  # where the next line goes
        self.held = end                 # allocated up to here
        self.asked = end                # and perhaps to here (a top-up the disk cut short)
        self.supported = True

    def wrote(self, n: int) -> None:
        self.end += n

    def make(self, line: int) -> bool:
        """Room for a line of `line` bytes with LAST_ROOM left after it; False when the disk
        is full (what room is left is for the last line)."""
        if not self.supported or self.held - self.end >= line + LAST_ROOM:
            return True
        for want in (max(ROOM, line + LAST_ROOM), line + LAST_ROOM):   # then what it takes
            self.asked = max(self.asked, self.end + want)
            err = _call(self.fd, _KEEP_SIZE, self.end, want)
            if err == 0:
                self.held = self.end + want
                return True
            if err not in _FULL:
                self.supported = False  # EOPNOTSUPP, ENOSYS, EINVAL...: no room kept
                return True
        return False

    def last(self, line: bytes) -> bool:
        """`line` written where the next was to go (over what the disk cut, if it did) and the
        file ended after it; False (the file ended where it was) when even that failed."""
        try:
            done = os.pwrite(self.fd, line, self.end) == len(line)
        except OSError:
            done = False
        if done:
            self.end += len(line)
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, self.end)     # a cut line gone
        self.release()
        return done

    def release(self) -> None:
        """The blocks beyond the end given back (the file's last line is written)."""
        if self.supported and self.asked > self.end:
            _call(self.fd, _PUNCH_HOLE | _KEEP_SIZE, self.end, self.asked - self.end)
        self.held = self.asked = self.end
