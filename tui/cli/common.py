"""What the subcommands share: the catalogue with --profiles, and signals as exit statuses."""
from __future__ import annotations

import argparse
import asyncio
import io
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hotloop import catalog
from hotloop.catalog import Catalog
from hotloop.run import build
from hotloop.run.remote import RemoteSession
from hotloop.run.sessionlike import SessionLike
from hotloop.visible import visible


def _profiles(args: argparse.Namespace) -> list[Path]:
    return [*args.top_profiles, *getattr(args, "profiles", [])]


def _catalog(args: argparse.Namespace, warn: bool = True) -> Catalog:
    """The catalogue, as the console loads it: a bad file (or a plan it breaks) is left
    out with one line on stderr naming file, line and key, and is an error (exit 2) only
    when the command needs what it defines (`Catalog.check_skipped`).  Without `warn`
    the command says it (`_warn_skipped`) once it has what it needs: an error stays the
    one line."""
    cat = catalog.load(_profiles(args), skip_bad=True)
    if warn:
        _warn_skipped(cat)
    return cat


def _warn_skipped(cat: Catalog) -> None:
    for s in cat.skipped:
        print(f"hotloop: warning: {visible(s.warning)}", file=sys.stderr)


_signal_received = signal.SIGINT
_stopping_said = False                  # the remote sessions' stop was said once


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM/SIGHUP outside a run (building, listing): like Ctrl-C."""
    global _signal_received
    _signal_received = signal.Signals(signum)
    raise KeyboardInterrupt


def _cancel(signum: int, task: asyncio.Task[Any], sessions: Sequence[SessionLike] = ()) -> None:
    """Ctrl-C, SIGTERM or SIGHUP during a run: cancel it; each session's last line names the
    signal."""
    global _signal_received, _stopping_said
    _signal_received = signal.Signals(signum)
    for s in sessions:
        s.interrupted_by = _signal_received.name
    remotes = [s for s in sessions if isinstance(s, RemoteSession)]
    if remotes and not _stopping_said:
        _stopping_said = True
        hosts, wait = [s.title for s in remotes], max(s.host.stop_wait for s in remotes)
        print(f"hotloop: stopping: {visible(', '.join(hosts))} end their runs and restore their "
              f"systems (up to {wait:g} s; {_signal_received.name} again leaves at "
              f"once)", file=sys.stderr)
    build.CANCEL.set()                  # a build waiting on a lock or a compiler gives up
    task.cancel()


CLOSED_OUTPUT = "its standard output was closed (EPIPE)"
_output_closed = False


def _cancel_closed_output(task: asyncio.Task[Any], sessions: Sequence[SessionLike] = ()) -> None:
    """The reader of standard output gone (`| head`, a remote session's connection): the
    run stops as on a hangup, and says so; no signal came, so none is recorded."""
    global _output_closed
    _output_closed = True
    for s in sessions:
        s.interrupted_by = ""
        if hasattr(s, "stopped_because"):
            s.stopped_because = CLOSED_OUTPUT
    build.CANCEL.set()
    task.cancel()


def interrupted_status() -> int:
    """128 + the signal, as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM; 1 when
    standard output was closed (the output could not be written)."""
    return 1 if _output_closed else 128 + int(_signal_received)


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
