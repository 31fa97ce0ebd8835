"""Messages the console's widgets and its run controller send the screen.

Dataclasses, one module (UI side only: the core never imports this).  The
high-rate ones say `can_replace`, so a newer one takes the place of a stale
one still waiting in the queue.
"""
from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from hotloop import events as ev
from hotloop.console.live import LiveRun


@dataclass
class CatalogPicked(Message):
    """The user chose an entry in the catalogue tree."""
    kind: str                     # "workload" | "cpu" | "kernel" | "plan"
    name: str


@dataclass
class FormChanged(Message):
    """A setting in the parameters panel changed (valid or not)."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FormChanged)


@dataclass
class SymbolsArrived(Message):
    """A perf summary: the latest window, or the whole run at the end."""
    symbols: ev.HotSymbols

    def can_replace(self, message: Message) -> bool:
        # a newer window makes an older one stale; the session aggregate never is, nor a
        # window read by one dropped unread (which has no symbols to show instead)
        return (isinstance(message, SymbolsArrived) and message.symbols.scope == "window"
                and self.symbols.scope == "window"
                and not (self.symbols.dropped and not message.symbols.dropped))


@dataclass
class LogLine(Message):
    """A line for the log panel; level is "info", "warning" or "error"."""
    text: str
    level: str = "info"


@dataclass
class LiveStarted(Message):
    """A session is about to start (alone or in a series): its live model, for which the
    panels are cleared."""
    live: LiveRun


@dataclass
class LiveEnded(Message):
    """A session of a series has ended: its panels are drawn whole now, before the next."""


@dataclass
class SessionEnded(Message):
    """The worker is done: `outcome` is "finished", "stopped" or "failed"."""
    outcome: str
    result_file: str
    runs: int


@dataclass
class SeriesEnded(Message):
    """A series' worker is done: its directory, the sessions finished of each kernel, those
    that failed, and whether it was stopped."""
    directory: str
    done: dict[str, int]
    failed: list[str]
    stopped: bool


@dataclass
class BisectEnded(Message):
    """A bisect's worker is done: its report (text, mail) when it found its answer, "" when
    it was stopped or failed; its state directory (where the mail is saved: the repository
    is the user's checkout)."""
    text: str
    mail: str
    state: str
