"""No subcommand: the console (Textual), on a terminal."""
from __future__ import annotations

import argparse
import os
import sys

from hotloop import paths
from hotloop.cli.common import profile_dirs
from hotloop.errors import HotloopError


def _on_a_terminal() -> bool:
    """Whether stdin, stdout and stderr are all a terminal.  Textual reads keys from stdin
    and draws on stderr: from /dev/null it never ends (drawing into a file for ever), closed
    it fails with a traceback; stdout elsewhere is a script's, which wants `run`."""
    for f in (sys.__stdin__, sys.__stdout__, sys.__stderr__):
        try:
            if f is None or not os.isatty(f.fileno()):
                return False
        except (OSError, ValueError):       # closed, or its descriptor taken by another file
            return False
    return True


def cmd_tui(args: argparse.Namespace) -> int:
    # a broken installation first: it is what every command would say, terminal or not
    problem = paths.bundled_problem()   # one line, not an empty console
    if problem:
        raise HotloopError(problem)
    if not _on_a_terminal():
        raise HotloopError("the console needs a terminal (stdin, stdout and stderr); for "
                           "scripts use `hotloop run ...`")
    from hotloop.console.app import HotloopApp  # only the console needs Textual loaded
    app = HotloopApp(profiles=profile_dirs(args))
    app.run()
    return app.exit_status
