"""Standard output that cannot be written (a full disk, the reader gone) told apart from any
other file's error."""
from __future__ import annotations

import io
import os
import sys
from typing import Any


class StdoutFailed(OSError):
    """A write to standard output failed (a full disk under `> report.md`, /dev/full): told
    apart from any other file's error, so that it is one line and exit 1, never a traceback
    (EPIPE, the reader gone, stays a quiet 0)."""


class _Stdout(io.RawIOBase):
    """File descriptor 1, raising StdoutFailed where it cannot be written."""

    def __init__(self, fd: int):
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data: Any) -> int:
        try:
            return os.write(self.fd, data)
        except OSError as e:
            raise StdoutFailed(e.errno, e.strerror) from None


def watch_stdout() -> None:
    """sys.stdout through _Stdout, with the same encoding and buffering (only the process's
    own standard output: a test's captured one is left as it is)."""
    out = sys.__stdout__
    if out is None or sys.stdout is not out:
        return
    try:
        fd = out.fileno()
    except (OSError, ValueError):       # closed
        return
    out.flush()
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_Stdout(fd)), encoding=out.encoding,
                                  errors=out.errors, line_buffering=out.line_buffering)


def stdout_gone() -> None:
    """What is left to write goes nowhere: the interpreter's last flush cannot fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
