"""How the command was stopped: the signal that came (or standard output closed), and the exit
status it makes.  Light on purpose: every start imports it, `-V` included."""
from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class StopState:
    """What stopped the command, once something did, and how a run in progress is stopped
    when standard output's reader goes."""
    received: signal.Signals = signal.SIGINT    # the last signal (Ctrl-C's until one comes)
    stopping_said: bool = False                 # the remote sessions' stop was said once
    output_closed: bool = False                 # standard output's reader gone (EPIPE)
    # while a run goes on: its stop when a write to standard output finds the reader gone
    on_output_closed: Callable[[], Any] | None = None


STOPPED = StopState()


def interrupt(signum: int, frame: Any) -> None:
    """SIGTERM/SIGHUP outside a run (building, listing): like Ctrl-C."""
    STOPPED.received = signal.Signals(signum)
    raise KeyboardInterrupt


def interrupted_status() -> int:
    """128 + the signal, as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM; 1 when
    standard output was closed (the output could not be written)."""
    return 1 if STOPPED.output_closed else 128 + int(STOPPED.received)
