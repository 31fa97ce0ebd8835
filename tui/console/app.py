"""The Textual console: pick a plan, run it, watch it live.

One more consumer of the session's event stream (like the headless reporter).  The app is
the shell: styles, the command palette, signals, the watchdog and the exit status.  What
the console shows and does is its screen's (hotloop.console.screens.main), and the runs
are that screen's run controller's (hotloop.console.controller).  Stop and quit stop the
run and wait for its worker, so no process outlives the console.

On a real terminal a watchdog thread (hotloop.console.watchdog) takes SIGHUP and SIGTERM and
watches the terminal itself: when it goes away, the run is ended from that thread,
since Textual's writes can then block the event loop for good.
"""
from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from hotloop import paths
from hotloop.console.commands import HotloopCommands
from hotloop.console.controller import STOP_GRACE_S
from hotloop.console.screens.main import WIDE_FROM, MainScreen
from hotloop.console.watchdog import Watchdog

ROOMY_FROM = 120                # columns: the hot symbols' panel wide enough to name DSOs


class HotloopApp(App[None]):
    TITLE = "hotloop"
    CSS_PATH = Path(__file__).parent / "app.tcss"
    # on the app, so every screen of ours has them (the compare screen's tables too)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_FROM, "-wide"), (ROOMY_FROM, "-roomy")]
    COMMANDS = App.COMMANDS | {HotloopCommands}
    # the console's own keys are its screen's; quitting is the app's, on every screen
    BINDINGS = [Binding("q", "quit", "Quit", id="quit")]

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        # Textual's own "Screenshot" writes to ~/Downloads and fails where that does not exist;
        # the palette's "Save screenshot" (commands.py) writes beside the results and says where.
        yield from (c for c in super().get_system_commands(screen) if c.title != "Screenshot")

    def __init__(self, profiles: list[Path] | None = None,
                 results_dir: Path = paths.RESULTS) -> None:
        super().__init__()
        self.main_screen = MainScreen(list(profiles or []), Path(results_dir))
        self.watchdog: Watchdog | None = None

    def get_default_screen(self) -> MainScreen:
        return self.main_screen

    async def on_mount(self) -> None:
        loop = asyncio.get_running_loop()
        if self.is_headless:        # run_test: no terminal to lose, the process not ours
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.add_signal_handler(sig, self._on_signal, sig)
        else:
            self.watchdog = Watchdog(loop, _terminal_fds(), quit=self._on_signal,
                                     abandon=self.main_screen.controller.abandon,
                                     stop_grace=STOP_GRACE_S)
            self.watchdog.install()
        await self.main_screen.loaded.wait()    # up (for a test: ready) once it has a plan
        advice = ssh_advice(os.environ)
        if advice is not None:
            self.main_screen.log_line(advice)
        self.call_after_refresh(self._settle_heap)

    def _settle_heap(self) -> None:
        """What is alive once the console is up (the app, its widgets, the catalogue: 100k
        objects) leaves the garbage collector's view.  A full collection walks every tracked
        object: 140 ms with those here, a stall whenever one comes (the longest after `r`
        in a benchmark, 600 ms, was one); frozen, it walks only what came since.  Collected
        first, so no garbage is kept frozen.  Once: a run adds few long-lived objects, and a
        dialog alive at a later freeze would never be collected once closed."""
        gc.collect()
        gc.freeze()

    def on_unmount(self) -> None:
        gc.unfreeze()       # the process may go on without us (tests, an embedding)

    async def action_quit(self) -> None:
        await self.main_screen.controller.stop(wait=True)
        self.exit()

    @property
    def exit_status(self) -> int:
        """128 + the signal once one came or the terminal went, else the app's code."""
        if self.watchdog is not None and self.watchdog.status is not None:
            return self.watchdog.status
        return self.return_code or 0

    def _on_signal(self, signum: int) -> None:
        """SIGTERM/SIGHUP (a dropped SSH session): quit as `q` does, run stopped first."""
        async def quit_cleanly() -> None:
            await self.main_screen.controller.stop(wait=True)
            self.exit(return_code=128 + signum)
        self.run_worker(quit_cleanly(), group="signal", exclusive=True)


def ssh_advice(env: Mapping[str, str]) -> str | None:
    """Over SSH and in no tmux or screen, a dropped connection ends the console, and the run
    with it (stopped, its runs kept): a long series is better started where it outlives the
    connection.  None where that is not so."""
    if env.get("SSH_CONNECTION") and not (env.get("TMUX") or env.get("STY")):
        return ("over SSH: a dropped connection stops the run (its runs are kept); for long "
                "series start hotloop inside tmux or screen on this machine")
    return None


def _terminal_fds() -> list[int]:
    """The descriptors Textual reads keys from and draws on."""
    fds = []
    for f in (sys.__stdin__, sys.__stdout__, sys.__stderr__):
        try:
            if f is not None:
                fds.append(f.fileno())
        except (OSError, ValueError):
            pass
    return fds
