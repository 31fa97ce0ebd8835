"""The `hotloop` command: the console with no arguments, headless subcommands otherwise.

`parser` builds the command line; each subcommand has a module of its own (COMMANDS), and
`run` runs plans here (one session, a batch, interleaved variants); `common` is what they
share (the catalogue with --profiles, a run's cancel), `signals` what stopped the command.
Every error a user can cause ends in one line on stderr and exit 2; a failed workload exits
1, and so does standard output that cannot be written (a full disk: one line, never a
traceback); Ctrl-C exits 130 after the worker is gone.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys
from collections.abc import Callable, Sequence

from hotloop.cli.parser import parser
from hotloop.cli.signals import interrupt, interrupted_status
from hotloop.cli.stdout import StdoutFailed, stdout_gone, watch_stdout
from hotloop.errors import HotloopError
from hotloop.visible import visible

# Each subcommand's module, imported once it is chosen: `run --format events` (what a VM
# guest and a remote host run, where every module costs) loads no picture, annotate or compare.
COMMANDS = {"run": "run_entry", "show": "show", "compare": "compare",
            "calibrate": "calibrate", "list": "listing", "doctor": "doctor",
            "save": "save", "restore": "restore", "completion": "completion",
            "host": "hosts", "annotate": "annotate", "bisect": "bisect", None: "console"}


def command(name: str | None) -> Callable[[argparse.Namespace], int]:
    """The function of subcommand `name` (None: the console)."""
    module = importlib.import_module(f"hotloop.cli.{COMMANDS[name]}")
    run: Callable[[argparse.Namespace], int] = getattr(module, f"cmd_{name or 'tui'}")
    return run


def main(argv: Sequence[str] | None = None) -> int:
    # A dropped SSH session (SIGHUP) or a kill (SIGTERM) takes the Ctrl-C path:
    # the worker is stopped, the system restored, the result file closed.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    try:
        args = parser().parse_args(argv)
        # the words as typed: a bisect keeps them, to resume with the same options
        args.argv = list(sys.argv[1:] if argv is None else argv)
        if args.command is not None:    # the console draws on its terminal, not through this
            watch_stdout()
        if args.command not in ("restore", "completion"):
            from hotloop.host import recovery  # once parsed: -V and --help need none
            # A run killed with settings applied left a journal: put them back first.
            for message in recovery.recover():
                print(f"hotloop: {visible(message)}", file=sys.stderr)
            # and the perf data it left raw: compressed and within its budget
            for message in finish_left_perf():
                print(f"hotloop: {visible(message)}", file=sys.stderr)
        status = command(args.command)(args)
        sys.stdout.flush()              # a full disk says so now, not in the exit's flush
        return status
    except StdoutFailed as e:
        stdout_gone()
        if e.errno == errno.EPIPE:      # `hotloop list | head`: the reader has gone
            return 0
        print(f"hotloop: cannot write standard output: {e.strerror or e}", file=sys.stderr)
        return 1
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


def finish_left_perf() -> list[str]:
    """The perf data of sessions killed before their end, finished (perf/opened.py); the
    result modules loaded only when there is some."""
    from hotloop.perf import opened
    if not opened.any_left():
        return []
    from hotloop.results.perf_data import finish_left
    return finish_left()


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

