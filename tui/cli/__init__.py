"""The `hotloop` command: the console with no arguments, headless subcommands otherwise.

`parser` builds the command line, `run` runs plans (one session, a batch, interleaved
variants), `commands` holds the other subcommands, `common` what they share (the catalogue
with --profiles, the signals).  Every error a user can cause ends in one line on stderr and
exit 2; a failed workload exits 1; Ctrl-C exits 130 after the worker is gone.
"""
from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence

from hotloop.cli.annotate import cmd_annotate
from hotloop.cli.commands import (
    cmd_calibrate,
    cmd_compare,
    cmd_completion,
    cmd_doctor,
    cmd_list,
    cmd_restore,
    cmd_run,
    cmd_save,
    cmd_show,
    cmd_tui,
)
from hotloop.cli.common import _interrupt, interrupted_status
from hotloop.cli.hosts import cmd_host
from hotloop.cli.parser import parser
from hotloop.errors import HotloopError
from hotloop.host import journal
from hotloop.visible import visible

COMMANDS = {"run": cmd_run, "show": cmd_show, "compare": cmd_compare,
            "calibrate": cmd_calibrate, "list": cmd_list, "doctor": cmd_doctor,
            "save": cmd_save, "restore": cmd_restore, "completion": cmd_completion,
            "host": cmd_host, "annotate": cmd_annotate}


def main(argv: Sequence[str] | None = None) -> int:
    # A dropped SSH session (SIGHUP) or a kill (SIGTERM) takes the Ctrl-C path:
    # the worker is stopped, the system restored, the result file closed.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    try:
        args = parser().parse_args(argv)
        if args.command not in ("restore", "completion"):
            # A run killed with settings applied left a journal: put them back first.
            for message in journal.recover():
                print(f"hotloop: {visible(message)}", file=sys.stderr)
        return COMMANDS.get(args.command, cmd_tui)(args)
    except HotloopError as e:
        print(f"hotloop: {visible(str(e))}", file=sys.stderr)     # one line, inert
        return e.exit_code
    except KeyboardInterrupt:
        return interrupted_status()
    except (MemoryError, ImportError) as e:     # `ulimit -v`: a library may not even load
        print(f"hotloop: {_short_of_memory(e)}", file=sys.stderr)
        return 1
    except BrokenPipeError:             # `hotloop list | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _short_of_memory(e: BaseException) -> str:
    """One short line for a module that could not load: the innermost cause's first line (numpy
    wraps the loader's error in a page of advice)."""
    while isinstance(e.__cause__ or e.__context__, (ImportError, MemoryError, OSError)):
        e = e.__cause__ or e.__context__            # type: ignore[assignment]
    first = (str(e).strip().splitlines() or [""])[0]
    if isinstance(e, MemoryError):
        return f"out of memory{f': {first}' if first else ''} (a ulimit -v too low?)"
    what = getattr(e, "name", None) or "a module"
    return (f"cannot load {what}: {visible(first[:200])} (out of memory, or a broken "
            f"installation)")

