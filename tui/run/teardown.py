"""The end of a session: the system changes it applied put back and its result file's last
line written, once, whichever comes first: the event loop, or abandon() from another thread
when the loop itself is stuck (the console's terminal went away).  Every line of the file
goes through here, so that nothing is written once the session is over.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from hotloop import events as ev
from hotloop.errors import HotloopError
from hotloop.host.changes import Applied, Change, apply
from hotloop.host.sysfs import SystemSettingError
from hotloop.results import Writer
from hotloop.run import preflight

ABANDON_WAIT_S = 5.0                    # abandon(): how long the loop may hold the end lock


class Teardown:
    """A session's result file and the system changes it made, from their start to their one
    end."""

    def __init__(self, mirror: Callable[[ev.Event], None] | None = None):
        self.mirror = mirror             # sees each line the result file gets, as it does
        # The loop and abandon() both hold _end for a line or a restore, and nothing is
        # written once `over`.
        self._end = threading.Lock()
        self.over = False
        self.writer: Writer | None = None
        self._applied: Applied | None = None
        self.started = False             # the header line is in the file
        self.final: ev.Event | None = None      # the last line, once known

    def begin(self, writer: Writer, changes: list[Change]) -> Applied | None:
        """Apply the system changes and hold them with the file, so that abandon() sees the
        changes with their restore.  None when the session was abandoned already (the file
        discarded); HotloopError when a change cannot be made."""
        with self._end:
            if self.over:                   # abandoned while the workload compiled
                writer.discard()
                return None
            try:
                applied = apply(changes)
            except SystemSettingError as e:
                writer.discard()            # nothing ran: nothing kept, an old file intact
                raise HotloopError(str(e)) from None
            self.writer, self._applied = writer, applied
            return applied

    def write(self, event: ev.Event, last: bool = False, quiet: bool = False) -> ev.Event:
        """Append to the result file unless the session has ended (abandon()).  WriteFailed
        the first time a line cannot be written, unless `quiet` (on the way out, when a
        cancel or a failure is already being reported).  The event as written: the header
        names the file it went to (another, if the chosen name was taken meanwhile)."""
        with self._end:
            if self.over or self.writer is None:
                return event
            if quiet:
                self.writer.try_write(event)
            else:
                event = self.writer.write(event)
            if self.mirror is not None:
                self.mirror(event)
            self.started = self.started or isinstance(event, ev.Started)
            self.over = last                # the last line: nothing after it
            return event

    def put_back(self) -> list[str]:
        """Restore the system, once, whichever of the loop and abandon() comes first."""
        with self._end:
            applied, self._applied = self._applied, None
            return preflight.restore(applied) if applied is not None else []

    def close(self, discard: bool) -> None:
        """The file's end, on the loop: kept, or discarded when nothing ran (`discard`, or
        no header written): nothing kept, an old file intact."""
        with self._end:
            self.over = True
            if self.writer is None:
                return
            if discard or not self.started:
                self.writer.discard()
            else:
                self.writer.close()

    def abandon(self, message: str, signame: str, runs: list[float], variant: str) -> None:
        """The end from another thread: restore the system and write the last line (the
        session's own if it was known, else Failed(message, interrupted)), once; nothing the
        loop does after is written."""
        # The loop holds _end for a line or a restore, never longer unless it is stuck
        # there (a signal handler of Textual's blocked on the dead terminal, between two
        # bytecodes, so no line is half written): then go on without it.
        locked = self._end.acquire(timeout=ABANDON_WAIT_S)
        try:
            if self.over:
                return
            self.over = True
            applied, self._applied = self._applied, None
            messages = preflight.restore(applied) if applied is not None else []
            writer = self.writer
            if writer is None:
                return
            if self.started:
                for m in messages:
                    writer.try_write(ev.Warning(m, variant=variant))
                writer.try_write(self.final or ev.Failed(
                    message, run=len(runs), signal=signame, interrupted=True,
                    variant=variant))
            writer.close()
        finally:
            if locked:
                self._end.release()
