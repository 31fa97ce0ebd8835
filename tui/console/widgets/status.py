"""The console's status row: what the form would run (on which host), how the run goes, the
view key, in one row that fits the terminal."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from hotloop.catalog import Plan
from hotloop.console.live import LiveRun
from hotloop.visible import cut

if TYPE_CHECKING:
    from hotloop.run.series import Slot

SEPARATORS = ("  │  ", " │ ")
PROGRESS = {"building": "building", "booting": "booting", "running": "running {n}/{runs}",
            "finished": "done {n}/{runs}", "stopped": "stopped {n}/{runs}", "failed": "failed"}


class StatusRow(Static):
    """Docked on top, one row: its updates lay out nothing but itself."""

    def show(self, form_plan: tuple[Plan, bool] | None, host: str | None,
             series_at: tuple[Slot, int] | None, live: LiveRun | None,
             narrow: bool, view: str) -> None:
        """The row for the form's plan (and whether it was edited), the series' session, the
        live run and, on a narrow screen, the key to the other view.  Short of room, the CPU
        profile goes first, then the workload, then the separators narrow, then the number
        of runs, then a host's long name is cut, and the plan's last; never a series'
        session, the run's progress nor the view key."""
        plans: list[tuple[str, str]] = []       # the plan's part, most to least said
        if form_plan is not None:
            plan, edited = form_plan
            name, on = f"{plan.name}{'*' if edited else ''}", f" · on {host}" if host else ""
            runs = f"{plan.runs} runs"
            plans = [(f"{name} · {plan.workload} · ", f"cpu {plan.cpu} · {runs}{on}"),
                     (f"{name} · {plan.workload} · ", f"{runs}{on}"),
                     (f"{name} · ", f"{runs}{on}"), (name, on)]
            if narrow:
                plans = plans[1:]
        tail: list[str] = []
        if series_at is not None:
            slot, n = series_at
            tail.append(f"{slot.variant} · session {slot.session} of {n}")
        if live is not None:
            tail.append(PROGRESS[live.state].format(n=live.n, runs=live.runs))
        if narrow:
            tail.append(f"v {'live' if view == 'setup' else 'setup'}")
        text = status_row(plans, tail, self.app.size.width - 2, dim_last=narrow)
        if self.content != text:
            self.update(text, layout=False)


def status_row(plans: list[tuple[str, str]], tail: list[str], room: int,
               dim_last: bool = False) -> Text:
    """The status row in `room` columns: "hotloop", the first of `plans` (each a head and an
    end, most to least said) that fits, and `tail` (the run's progress, the view key), the
    separators narrowed if need be.  When none fits, the last one's end (a host's long
    name) is cut, down to 12 columns, then its head, and with no room left for it the plan
    goes: the tail is never cut."""
    def width(sep: str, plan: tuple[str, str] | None) -> int:
        return len("hotloop") + sum(len(sep) + len(t) for t in tail) + \
            (len(sep) + len(plan[0]) + len(plan[1]) if plan else 0)
    choice = next(((sep, plan) for sep in SEPARATORS for plan in plans
                   if width(sep, plan) <= room), None)
    if choice is None and plans:
        sep, (head, end) = SEPARATORS[-1], plans[-1]
        spare = room - width(sep, ("", ""))
        end = cut(end, max(min(len(end), 12), spare - len(head)))     # the host's name first
        choice = sep, (cut(head, max(0, spare - len(end))), end)
        if width(*choice) > room or not "".join(choice[1]):
            choice = None       # no room for the plan at all: none, not an empty " │  │ "
    sep, plan = choice if choice is not None else (
        next((s for s in SEPARATORS if width(s, None) <= room), SEPARATORS[-1]), None)
    text = Text("hotloop", style="bold")
    if plan is not None:
        text.append(sep + plan[0] + plan[1])
    for i, t in enumerate(tail):
        text.append(sep)
        text.append(t, style="dim" if dim_last and i == len(tail) - 1 else "")
    return text
