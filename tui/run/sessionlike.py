"""What every session is to its callers, wherever it runs: here (session.Session), streamed from
a host over SSH (remote.RemoteSession) or from a VM booting a kernel (vm.VmSession).

The command line, the console, interleave, together and a series drive any of them through
this face alone, so none dispatches on a session's class: what differs (where its perf data
is, what a stop waits for, which CPUs here its workload holds) is asked of the session.
mypy checks that each class is one (`_each`, below: a member missing fails the check).
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hotloop import events as ev
from hotloop.record import Batch


class SessionLike(Protocol):
    """A session to drive: `events()` runs it, `stop()` ends it, `abandon()` ends it from
    another thread when the event loop may never run again."""
    gate: asyncio.Queue[None] | None    # interleaved: a token a repetition (interleave.py)
    batch: Batch | None                 # its batch, or its place in a series
    variant: str
    result_file: Path                   # the file here (the name it got, once started)
    interrupted_by: str                 # the signal that cancelled it, for its last line
    stopped_because: str                # what did, when no signal (its output closed)

    @property
    def title(self) -> str: ...        # its name where several run: variant, else plan

    @property
    def machine(self) -> str: ...      # "" here, else the host's name or the VM's

    @property
    def until_ci(self) -> float | None: ...

    @property
    def pids(self) -> list[int]: ...   # its processes here, once started: [] before

    @property
    def stop_elsewhere(self) -> float:
        """Seconds its stop may wait on another machine ending its run and restoring its
        system (a host's stop_wait); 0 when the stop is this machine's to do (here, a VM
        killed at once), so that nothing needs saying."""
        ...

    @property
    def perf_elsewhere(self) -> str:
        """The host that keeps its perf data ("" when annotate can read it here)."""
        ...

    @property
    def cpus_here(self) -> tuple[int, ...]:
        """The CPUs of this machine its workload runs on (a VM's vCPUs pinned there): what
        the console and perf annotate keep off while it runs; () when none here."""
        ...

    def events(self) -> AsyncIterator[ev.Event]: ...

    def stop(self, quick: bool = False) -> None:
        """End the run; `quick` (quitting): what can be left unsummarised is (perf's last
        windows, here), so that the stop does not wait on a loaded machine."""
        ...

    def abandon(self, message: str, signame: str = "") -> None: ...


if TYPE_CHECKING:
    from hotloop.run.remote import RemoteSession
    from hotloop.run.session import Session
    from hotloop.run.stream import StreamSession
    from hotloop.run.vm import VmSession

    def _each(here: Session, streamed: StreamSession, remote: RemoteSession,
              vm: VmSession) -> list[SessionLike]:
        return [here, streamed, remote, vm]
