"""Command palette entries for the console: its actions and the catalogue's plans."""
from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any, Protocol, cast

from rich.markup import escape
from textual.app import App
from textual.command import DiscoveryHit, Hit, Hits, Provider

from hotloop import paths
from hotloop.catalog import Catalog
from hotloop.visible import visible

ACTIONS = (
    ("run", "Run", "run the current settings (r)"),
    ("stop", "Stop", "stop the run; the runs measured so far are kept (x)"),
    ("save", "Save plan", "save the current settings as a plan (w)"),
    ("compare", "Compare results", "pick result files: verdicts, histograms, symbol diff (c)"),
    ("bisect", "Bisect", "find the revision of the repository here that changed the form's "
                         "plan (b)"),
    ("toggle_view", "Switch view", "setup or live panels on a small terminal (v)"),
    ("quit", "Quit", "stop any run and quit (q)"),
)


SCREENSHOTS = paths.RESULTS            # beside the result files the console writes


def save_screenshot(app: App[Any], directory: Path = SCREENSHOTS) -> Path | None:
    """The screen as an SVG in `directory` (created; Textual's own screenshot command wants
    ~/Downloads to exist), and a notice saying where; None when it could not be written."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = directory / f"{stamp}-screenshot.svg"
    n = 1
    try:
        directory.mkdir(parents=True, exist_ok=True)
        while path.exists():
            n += 1
            path = directory / f"{stamp}-screenshot-{n}.svg"
        path.write_text(app.export_screenshot(), encoding="utf-8")
    except OSError as e:
        app.notify(escape(visible(f"screenshot not saved: {path}: {e.strerror or e}")),
                   title="Screenshot", severity="error")
        return None
    app.notify(escape(visible(f"saved to {path.resolve()}")), title="Screenshot")
    return path


class Console(Protocol):
    """What the palette offers from: the console's own screen (hotloop.console.screens.main),
    named by what it has, so that this module imports neither it nor the app."""
    cat: Catalog | None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None: ...

    async def run_action(self, action: str) -> None: ...

    async def pick(self, kind: str, name: str) -> None: ...


class ConsoleApp(Protocol):
    """The app this palette is for (hotloop.console.app)."""
    main_screen: Console


class HotloopCommands(Provider):
    """The console's own actions (those its screen has on now), then 'Open plan NAME' for
    every plan."""

    def _commands(self) -> list[tuple[str, object, str]]:
        app = self.app
        console = cast(ConsoleApp, app).main_screen
        out: list[tuple[str, object, str]] = []
        for action, title, help in ACTIONS:
            if action == "quit":            # the app's, on every screen
                out.append((title, partial(app.run_action, action), help))
            elif console.check_action(action, ()) is not False:
                out.append((title, partial(console.run_action, action), help))
        # after the palette has closed, as Textual's own "Screenshot" does
        out.append(("Save screenshot", partial(app.set_timer, 0.1, partial(save_screenshot, app)),
                    f"an SVG of the screen in {SCREENSHOTS}/, beside the result files"))
        cat = console.cat
        if cat is not None:
            for name, plan in cat.plans.items():
                out.append((f"Open plan {name}", partial(console.pick, "plan", name),
                            plan.summary or f"{plan.workload}, {plan.runs} runs"))
            for name, w in cat.workloads.items():
                out.append((f"Open workload {name}", partial(console.pick, "workload", name),
                            w.summary))
        return out

    async def discover(self) -> Hits:
        for title, command, help in self._commands():
            yield DiscoveryHit(title, command, help=help)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, command, help in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), command,  # type: ignore[arg-type]
                          text=title, help=help)
