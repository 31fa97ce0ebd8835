"""Errors that end a command with one line and an exit status, never a traceback."""


class HotloopError(Exception):
    """Bad usage, profile or input: exit 2 with this one-line message."""
    exit_code = 2


class RunFailed(HotloopError):
    """The workload failed while running: exit 1."""
    exit_code = 1


class SessionFailed(HotloopError):
    """A session that ended before its header, in the other side's words (a VM that did not
    boot, a first line that is no session's): nothing ran there, no file here.  Alone, exit 2
    with this line; in a series, one failed session (the others run)."""
