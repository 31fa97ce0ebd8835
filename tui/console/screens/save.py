"""A small modal asking for the name to save the current settings under."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from hotloop import catalog
from hotloop.catalog import Catalog, Plan


class SavePlanScreen(ModalScreen[str | None]):
    """Dismisses with the saved plan's name, or None if cancelled.

    `save(name)` does the saving and returns an error message (shown inline,
    the dialog stays open) or None on success."""

    blocks_console = True           # the console's run/stop/compare keys rest meanwhile
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="save.cancel")]
    DEFAULT_CSS = """
    SavePlanScreen { align: center middle; }
    SavePlanScreen > Vertical {
        width: 60; max-width: 100%; height: auto; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    SavePlanScreen #save-title { text-style: bold; margin-bottom: 1; }
    SavePlanScreen #save-error { color: $error; height: auto; }
    SavePlanScreen #save-help { color: $text-muted; }
    """

    def __init__(self, suggestion: str, save: Callable[[str], str | None]) -> None:
        super().__init__()
        self.suggestion, self.save = suggestion, save

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Save the current settings as a plan", id="save-title")
            yield Input(self.suggestion, placeholder="plan name", id="save-name")
            yield Static("", id="save-error", markup=False)
            yield Static("enter save · esc cancel", id="save-help")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        name = event.value.strip()
        problem = self.save(name) if name else "give the plan a name"
        if problem:
            self.query_one("#save-error", Static).update(problem)
            return
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)


def free_name(cat: Catalog, base: str) -> str:
    """The name the dialog suggests: `base`, or `base-2`... where a plan or workload has it
    (a workload's own name is no plan's)."""
    taken = {*cat.plans, *cat.workloads}
    suggestion, n = base, 1
    while suggestion in taken:
        n += 1
        suggestion = f"{base}-{n}"
    return suggestion


def save_as(cat: Catalog, plan: Plan, base: Plan | None, name: str) -> Path:
    """Save `plan` (the form built as plan `name`, loaded from `base`) in the catalogue: the
    path written.  Under its own name it keeps its summary, else it says where it came from."""
    summary = plan.summary if base is not None and base.name == name else \
        f"saved from {base.name if base else plan.workload} in the console"
    return catalog.save_plan(replace(plan, summary=summary, origin=""), cat=cat)
