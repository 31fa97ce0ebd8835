"""Asks before a run changes the system (sysctls, governor, boost).

Lists exactly what would change, each as `Change.describe()` says it
("net.core.busy_poll 0 -> 50"); dismisses with True only for an explicit yes.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConsentScreen(ModalScreen[bool]):
    """y / the Yes button: True; n, escape, the No button: False."""

    blocks_console = True

    BINDINGS = [
        Binding("y", "answer(True)", "Yes, change", id="consent.yes"),
        Binding("n", "answer(False)", "No", id="consent.no"),
        Binding("escape", "answer(False)", "No", id="consent.cancel", show=False),
    ]
    DEFAULT_CSS = """
    ConsentScreen { align: center middle; }
    ConsentScreen > Vertical {
        width: 72; max-width: 100%; height: auto; max-height: 100%; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    ConsentScreen #consent-title { text-style: bold; margin-bottom: 1; }
    ConsentScreen #consent-changes { color: $warning; text-style: bold; margin-bottom: 1;
                                     height: auto; }
    ConsentScreen #consent-help { color: $text-muted; height: auto; }
    ConsentScreen Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    ConsentScreen Button { margin-left: 2; min-width: 12; }
    """

    def __init__(self, plan: str, kernel: str, changes: list[str]) -> None:
        super().__init__()
        self.plan, self.kernel = plan, kernel
        self.changes = list(changes)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Run {self.plan} with kernel profile {self.kernel}? "
                         f"It changes the system:", id="consent-title", markup=False)
            yield Static("\n".join(f"  {c}" for c in self.changes), id="consent-changes",
                         markup=False)
            yield Static("The original values are journaled first and restored after the "
                         "run, on error and on Ctrl-C (hotloop restore if it is killed).\n"
                         "y yes · n or esc no",
                         id="consent-help", markup=False)
            with Horizontal():
                yield Button("No", id="consent-no", variant="default")
                yield Button("Yes, change", id="consent-yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#consent-no", Button).focus()       # the safe answer by default

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "consent-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
