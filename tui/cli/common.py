"""What the subcommands share: the catalogue with --profiles, and a run cancelled by a signal
or by its standard output closed."""
from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hotloop import catalog
from hotloop.catalog import Catalog
from hotloop.cli.signals import STOPPED
from hotloop.run import build
from hotloop.run.sessionlike import SessionLike
from hotloop.visible import visible


def profile_dirs(args: argparse.Namespace) -> list[Path]:
    """The --profiles directories given, those before the subcommand first."""
    return [*args.top_profiles, *getattr(args, "profiles", [])]


def load_catalog(args: argparse.Namespace, warn: bool = True) -> Catalog:
    """The catalogue, as the console loads it: a bad file (or a plan it breaks) is left
    out with one line on stderr naming file, line and key, and is an error (exit 2) only
    when the command needs what it defines (`Catalog.check_skipped`).  Without `warn`
    the command says it (`warn_skipped`) once it has what it needs: an error stays the
    one line."""
    cat = catalog.load(profile_dirs(args), skip_bad=True)
    if warn:
        warn_skipped(cat)
    return cat


def warn_skipped(cat: Catalog) -> None:
    for s in cat.skipped:
        print(f"hotloop: warning: {visible(s.warning)}", file=sys.stderr)


def cancel(signum: int, task: asyncio.Task[Any], sessions: Sequence[SessionLike] = ()) -> None:
    """Ctrl-C, SIGTERM or SIGHUP during a run: cancel it; each session's last line names the
    signal."""
    STOPPED.received = signal.Signals(signum)
    for s in sessions:
        s.interrupted_by = STOPPED.received.name
    remotes = [s for s in sessions if s.stop_elsewhere]     # a stop that waits on a host
    if remotes and not STOPPED.stopping_said:
        STOPPED.stopping_said = True
        hosts, wait = [s.title for s in remotes], max(s.stop_elsewhere for s in remotes)
        print(f"hotloop: stopping: {visible(', '.join(hosts))} end their runs and restore their "
              f"systems (up to {wait:g} s; {STOPPED.received.name} again leaves at "
              f"once)", file=sys.stderr)
    build.CANCEL.set()                  # a build waiting on a lock or a compiler gives up
    task.cancel()


CLOSED_OUTPUT = "its standard output was closed (EPIPE)"


def cancel_closed_output(task: asyncio.Task[Any], sessions: Sequence[SessionLike] = ()) -> None:
    """The reader of standard output gone (`| head`, a remote session's connection): the
    run stops as on a hangup, and says so; no signal came, so none is recorded."""
    STOPPED.output_closed = True
    for s in sessions:
        s.interrupted_by = ""
        s.stopped_because = CLOSED_OUTPUT
    build.CANCEL.set()
    task.cancel()
