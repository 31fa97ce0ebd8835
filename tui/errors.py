"""Errors that end a command with one line and an exit status, never a traceback."""


class HotloopError(Exception):
    """Bad usage, profile or input: exit 2 with this one-line message."""
    exit_code = 2


class RunFailed(HotloopError):
    """The workload failed while running: exit 1."""
    exit_code = 1
