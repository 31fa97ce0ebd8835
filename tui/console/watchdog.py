"""The console's way out when its terminal goes away (a dropped SSH session, a killed
tmux), whatever Textual is doing.

Textual writes to the terminal from a thread, through a queue of 30 writes.  Once
the terminal is gone that thread dies on EIO (or Textual replaces it on the SIGCONT
that comes with the hangup), the queue fills, and the next screen update blocks the
event loop for good: nothing that runs on the loop can be counted on then, neither
the session's cleanup nor a signal handler that asyncio dispatches.  This thread does
not need the loop.  It notices the hangup itself (poll() on the terminal) and
SIGHUP/SIGTERM (their handler only writes a byte to a pipe), ends the run from here
(the session's abandon(): the worker's group killed, the system restored, the last
line written), asks the loop to quit as `q` does, and if the process is still there
a few seconds later, exits it with 128 + the signal.
"""
from __future__ import annotations

import asyncio
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

EXIT_GRACE_S = 3.0          # once the run has ended, how long the console has to close
HANGUP = select.POLLHUP | select.POLLERR


def _is_tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


class Watchdog(threading.Thread):
    """Watches the terminal and SIGHUP/SIGTERM for a console; `status` is what the
    process exits with once either came (None before)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, terminal: Iterable[int],
                 quit: Callable[[int], None], abandon: Callable[[str, str], None],
                 stop_grace: float) -> None:
        super().__init__(name="hotloop-watchdog", daemon=True)
        self._loop = loop
        self._ttys = [fd for fd in dict.fromkeys(terminal) if _is_tty(fd)]
        self._quit = quit               # on the loop: stop the run, then exit
        self._abandon = abandon         # from this thread: end the run without the loop
        self._signal_grace = stop_grace + EXIT_GRACE_S
        self._r, self._w = os.pipe()
        os.set_blocking(self._w, False)
        self.status: int | None = None
        self._signalled = False
        self._hung_up = False

    def install(self, signals: Iterable[int] = (signal.SIGTERM, signal.SIGHUP)) -> None:
        """Take the signals over and start watching; from the main thread."""
        for sig in signals:
            signal.signal(sig, self._on_signal)
        self.start()

    def _on_signal(self, signum: int, frame: Any) -> None:
        # Runs in the main thread between two bytecodes, maybe halfway through the
        # loop's own work (or while it is stuck in a write): a byte to the pipe, no more.
        try:
            os.write(self._w, bytes([signum]))
        except OSError:
            pass                        # the pipe is full of earlier signals: enough

    def run(self) -> None:
        poller = select.poll()
        poller.register(self._r, select.POLLIN)
        for fd in self._ttys:
            poller.register(fd, 0)      # no input events: POLLHUP/POLLERR come anyway
        deadline: float | None = None
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic()) * 1e3
            for fd, mask in poller.poll(wait):
                if fd == self._r:
                    for signum in os.read(self._r, 64):
                        deadline = self._on_signalled(signum, deadline)
                elif fd in self._ttys:
                    for t in self._ttys:    # a hung-up terminal polls ready forever
                        poller.unregister(t)
                    self._ttys = []
                    if mask & HANGUP:
                        deadline = self._on_hangup(deadline)
            if deadline is not None and time.monotonic() >= deadline:
                assert self.status is not None
                self._end_run(f"interrupted by {_name(self.status - 128)}; the console "
                              f"did not close", _name(self.status - 128))
                os._exit(self.status)   # whatever the event loop or Textual are doing

    def _on_signalled(self, signum: int, deadline: float | None) -> float | None:
        now = time.monotonic()
        if self._hung_up:               # the SIGHUP that comes with a hangup: handled
            return deadline
        if not self._signalled:
            self._signalled = True
            self.status = 128 + signum
            self._to_loop(signum)       # as `q` does: the run stopped first, then exit
            return now + self._signal_grace
        # Another signal: the console did not end on the first one, or the user insists.
        self._end_run(f"interrupted by {_name(signum)}", _name(signum))
        return now

    def _on_hangup(self, deadline: float | None) -> float:
        now = time.monotonic()
        self._hung_up = True
        if self.status is None:
            self.status = 128 + signal.SIGHUP
            self._to_loop(signal.SIGHUP)
        # Now, not after the grace: the screen may never be drawn again, and the run
        # must not go on, nor the system stay changed, for whatever the UI waits on.
        self._end_run("the terminal went away", "SIGHUP")
        return min(deadline if deadline is not None else now + EXIT_GRACE_S,
                   now + EXIT_GRACE_S)

    def _to_loop(self, signum: int) -> None:
        try:
            self._loop.call_soon_threadsafe(self._quit, signum)
        except RuntimeError:
            pass                        # the loop has closed: the process is on its way out

    def _end_run(self, message: str, signame: str) -> None:
        try:
            self._abandon(message, signame)
        except Exception:  # noqa: BLE001 - nobody to tell (no terminal); the exit must come
            pass


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
