"""The bisect's two screens: the dialog asking for a range of the repository the console was
started in (and a build command, a metric), and the report once the bisect is over; and
`ask_bisect`, from `b` to the bisect started (the dialog, the check, the consent)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Static

from hotloop import paths
from hotloop.catalog import Catalog, Plan
from hotloop.console.bisecting import Bisecting, profiles_in
from hotloop.console.controller import RunController
from hotloop.console.widgets.params import ParamsForm
from hotloop.errors import HotloopError


@dataclass(frozen=True)
class BisectAsk:
    """What the dialog asks: GOOD..BAD, and `hotloop bisect`'s --build and --metric."""
    range: str
    build: str = ""
    metric: str = ""


class BisectScreen(ModalScreen[BisectAsk | None]):
    """Dismisses with what to bisect, or None if cancelled; `check(ask)` says what is wrong
    with it (shown inline, the dialog stays open) or None."""

    blocks_console = True
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="bisect.cancel")]
    DEFAULT_CSS = """
    BisectScreen { align: center middle; }
    BisectScreen > Vertical {
        width: 76; max-width: 100%; height: auto; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    BisectScreen .title { text-style: bold; margin-bottom: 1; }
    BisectScreen #bisect-error { color: $error; height: auto; }
    BisectScreen .help { color: $text-muted; }
    """

    def __init__(self, plan: str, repo: Path, profiles: str) -> None:
        super().__init__()
        self.plan, self.repo, self.profiles = plan, repo, profiles

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Bisect the form's {self.plan} in {self.repo}", classes="title",
                         markup=False)
            yield Input(placeholder="GOOD..BAD (two revisions)", id="bisect-range")
            yield Input(placeholder="build command, run in each revision (optional)",
                        id="bisect-build")
            yield Input(placeholder="metric judged: the workload's, or cpu (optional)",
                        id="bisect-metric")
            yield Static(f"profiles: {self.profiles}", classes="help", markup=False)
            yield Static("", id="bisect-error", markup=False)
            yield Static("enter start · tab next field · esc cancel", classes="help")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = self.query_one("#bisect-range", Input).value.strip()
        if ".." not in text:
            self.query_one("#bisect-error", Static).update("give the range as GOOD..BAD")
            self.query_one("#bisect-range", Input).focus()
            return
        self.dismiss(BisectAsk(text, self.query_one("#bisect-build", Input).value.strip(),
                               self.query_one("#bisect-metric", Input).value.strip()))

    def action_cancel(self) -> None:
        self.dismiss(None)


class BisectReportScreen(Screen[None]):
    """The bisect's report as `hotloop bisect` prints it: the first bad, its change and
    interval, the steps' table, what differs in the build, the symbols that moved."""

    blocks_console = True
    BINDINGS = [Binding("escape", "app.pop_screen", "Back", id="bisect.back"),
                Binding("m", "mail", "Save mail", id="bisect.mail")]
    DEFAULT_CSS = """
    BisectReportScreen #bisect-report { padding: 0 1; }
    """

    def __init__(self, text: str, mail: str, reports: Path) -> None:
        super().__init__()
        self.text, self.mail, self.reports = text, mail, reports
        self.mailed: Path | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.text, id="bisect-report", markup=False)
        yield Footer()

    def action_mail(self) -> None:
        """The report in the mail format (72 columns): saved in the bisect's state directory
        (not in the repository: the user's checkout) and copied to the terminal's clipboard
        (OSC 52), as the compare screen's `m` does."""
        stem = self.reports / time.strftime("bisect-%Y%m%d-%H%M%S")
        try:
            self.reports.mkdir(mode=0o700, exist_ok=True)
            self.mailed = paths.new_file(stem, ".mail.txt", self.mail)
        except OSError as e:
            self.notify(f"mail text copied; not saved: {stem}.mail.txt: {e.strerror}",
                        severity="error", markup=False)
        else:
            self.notify(f"mail text (72 columns) copied to the clipboard and saved: "
                        f"{self.mailed}", title="Bisect", markup=False)
        self.app.copy_to_clipboard(self.mail)


class Console(Protocol):
    """What the bisect's dialogs need of the console's screen (screens.main)."""
    app: App[Any]
    cat: Catalog | None
    profiles: list[Path]
    controller: RunController
    form: ParamsForm

    def log_line(self, text: str, level: str = "info") -> None: ...

    def cannot_run(self, e: Exception) -> None: ...

    def started(self, started: bool) -> None: ...


def ask_bisect(console: Console) -> None:
    """The dialog, then the bisect checked, the consent its plan's profiles need, and its
    start in the run controller's worker."""
    try:
        plan = console.form.build()
    except ValueError as e:
        console.cannot_run(e)
        return
    base = console.form.base
    if base is None:
        return
    console.app.push_screen(BisectScreen(plan.name, Path.cwd(), _profiles_said(console)),
                            lambda asked: _asked(console, plan, base, asked))


def _profiles_said(console: Console) -> str:
    """The console's --profiles as a bisect reads them: each revision's, or as they are."""
    from hotloop.run.revisions import repository
    try:
        top = repository(Path.cwd())
    except HotloopError:
        return "none: not in a git repository"
    said = []
    for p in profiles_in(top, console.profiles):
        said.append(f"{p} (as it is)" if p.is_absolute() else f"{p} (each revision's)")
    return ", ".join(said) or "none (hotloop's own)"


def _asked(console: Console, plan: Plan, base: Plan, asked: BisectAsk | None) -> None:
    if asked is None or console.cat is None:
        return
    bisecting = Bisecting(console.controller)
    try:
        ready = bisecting.check(console.cat, plan, base, asked.range, asked.build,
                                asked.metric, console.profiles)
    except (ValueError, HotloopError) as e:
        console.cannot_run(e)
        return
    if not ready.changes:
        console.started(bisecting.start(ready))
        return

    def answered(yes: bool | None) -> None:
        if yes:
            console.log_line(f"consent given: {', '.join(ready.changes)} (restored after "
                             f"each session)", "warning")
            console.started(bisecting.start(ready, apply_system=True))
        else:
            bisecting.drop(ready)
            console.log_line(f"not bisected: the plan's profiles would change "
                             f"{', '.join(ready.changes)}; nothing was changed", "warning")

    from hotloop.console.screens.consent import ConsentScreen
    console.app.push_screen(ConsentScreen(plan.name, plan.kernel, ready.changes), answered)
