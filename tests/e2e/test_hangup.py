"""The console losing its terminal mid-run, for real: hotloop in a tmux pane, the
session killed as a dropped SSH connection would (SIGHUP, and the terminal hung up).

The pane runs a small stand-in for a login shell that writes down hotloop's pid and,
once hotloop ends, its exit status: nothing else can tell after the terminal is gone.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT
from faulty import FAULTY_C, FAULTY_TOML, lines

from hotloop import results
from hotloop.host.journal import journal_path
from hotloop.host.settings import read_sysctl, sysctl_path

SYSCTL = "net.core.busy_poll"

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

# Ignores the hangup itself (so it can say how hotloop ended); hotloop gets the
# default disposition back, as from a shell, or SIGHUP blocked ("nosignal"): then
# only the terminal's hangup tells it.
SHELL = r"""
import signal, subprocess, sys
from pathlib import Path
signal.signal(signal.SIGHUP, signal.SIG_IGN)

def child():
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    if sys.argv[2] == "nosignal":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
proc = subprocess.Popen(sys.argv[3:], preexec_fn=child)
Path(sys.argv[1] + ".pid").write_text(str(proc.pid))
code = proc.wait()
Path(sys.argv[1] + ".tmp").write_text(str(code if code >= 0 else 128 - code))
Path(sys.argv[1] + ".tmp").rename(sys.argv[1])
"""

PROFILE = """
[kernel.hangup-poll]
label = "stock + busy_poll 11"
sysctl = { "net.core.busy_poll" = 11 }

[plan.hangup]
workload = "faulty"
kernel = "hangup-poll"
runs = 100000
warmup = 0
"""


def until(predicate: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def busy_poll():
    """The harmless sysctl the profile changes; put back whatever happens."""
    path = sysctl_path(SYSCTL)
    if not (path.exists() and os.access(path, os.W_OK)):
        pytest.skip(f"{SYSCTL} is not writable here")
    original = read_sysctl(SYSCTL)
    assert original != "11", "a previous run left busy_poll changed"
    yield original
    path.write_text(original)


class Pane:
    """A tmux server of the test's own, one session, one pane."""

    def __init__(self) -> None:
        self.socket = f"hotloop-test-{uuid.uuid4().hex[:12]}"
        self.env = dict(os.environ, PYTHONPATH=str(ROOT))

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              env=self.env, capture_output=True, text=True, timeout=30,
                              check=True).stdout

    def screen(self) -> str:
        try:
            return self.tmux("capture-pane", "-p", "-t", "hl")
        except subprocess.CalledProcessError:
            return ""

    def wait_for(self, text: str, timeout: float = 30) -> None:
        try:
            until(lambda: text in self.screen(), timeout, f"{text!r} on the screen")
        except AssertionError as e:
            raise AssertionError(f"{e}; it shows:\n{self.screen()}") from None

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "hl", *(["-l"] if literal else []), *keys)

    def close(self) -> None:
        try:
            self.tmux("kill-server")
        except subprocess.CalledProcessError:
            pass                                # gone with its last session


def start_run(tmp_path: Path, pane: Pane, status: Path,
              sighup: str = "sighup") -> tuple[Path, int]:
    """The console in the pane, the plan that sets busy_poll run with consent, three
    runs measured: the result file and hotloop's pid."""
    prof = tmp_path / "prof"
    prof.mkdir()
    (prof / "faulty.c").write_text(FAULTY_C)
    (prof / "w.toml").write_text(FAULTY_TOML + PROFILE)
    (tmp_path / "shell.py").write_text(SHELL)
    # 80x24, as an SSH terminal: the console shows one view at a time.
    pane.tmux("new-session", "-d", "-s", "hl", "-x", "80", "-y", "24", "-c", str(tmp_path),
              sys.executable, str(tmp_path / "shell.py"), str(status), sighup,
              sys.executable, "-m", "hotloop", "--profiles", str(prof))
    pane.wait_for("quick ·")
    pane.keys("C-p")
    pane.wait_for("Search for commands")
    pane.keys("open plan hangup", literal=True)
    pane.wait_for("Open plan hangup")
    pane.keys("Enter")
    pane.wait_for("hangup ·")
    pane.keys("r")
    pane.wait_for("busy_poll 0 -> 11")
    pane.keys("y")
    until(lambda: list(tmp_path.glob("results/*.jsonl")), 60, "the result file")
    out = next(tmp_path.glob("results/*.jsonl"))
    until(lambda: out.read_text().count('"warmup":false') >= 3, 60, "three runs")
    assert read_sysctl(SYSCTL) == "11"
    return out, int(status.with_suffix(".pid").read_text())


def end(pane: Pane, status: Path, pid: int) -> None:
    """Whatever the test found: no hotloop, no tmux left."""
    if pid and not status.exists():            # a hotloop that hung: end it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        until(status.exists, 10, "the stuck hotloop to be gone")
    pane.close()


def ended_cleanly(out: Path, original: str) -> None:
    """The system as it was, the result file whole with one last line saying so."""
    assert read_sysctl(SYSCTL) == original
    assert not journal_path().exists()
    rows = lines(out)                          # every line whole: valid JSON Lines
    assert rows[-1]["type"] == "failed" and rows[-1]["interrupted"]
    assert sum(r["type"] in ("failed", "finished") for r in rows) == 1
    assert len(results.read(out).runs) >= 3


@pytest.mark.parametrize("sighup", ["sighup", "nosignal"])
def test_a_dropped_terminal_stops_the_run_restores_and_exits_129(tmp_path, busy_poll,
                                                                   leftovers, sighup):
    # With the SIGHUP a shell or tmux sends, and without one (blocked): the hung-up
    # terminal alone must do.
    status, pane, pid = tmp_path / "status", Pane(), 0
    try:
        out, pid = start_run(tmp_path, pane, status, sighup)
        pane.tmux("kill-session", "-t", "hl")     # the terminal goes, with a SIGHUP
        until(status.exists, 60, "hotloop to exit")  # its 100,000 runs would take 33 min
        assert status.read_text() == "129"
        ended_cleanly(out, busy_poll)
        assert lines(out)[-1]["message"] == "the terminal went away"
        assert leftovers(grace=5) == []            # worker, perf, the shell, tmux
    finally:
        end(pane, status, pid)


def test_sigterm_ends_a_console_whose_terminal_stopped_reading(tmp_path, busy_poll,
                                                               leftovers):
    # The terminal is there but reads nothing (its tmux stopped, as a frozen SSH
    # client): Textual's writes fill up and block the event loop. SIGTERM still stops
    # the run, restores, and exits 143.
    status, pane, pid = tmp_path / "status", Pane(), 0
    server = 0
    try:
        out, pid = start_run(tmp_path, pane, status)
        server = int(pane.tmux("display-message", "-p", "#{pid}").strip())
        os.kill(server, signal.SIGSTOP)
        sizes: list[tuple[float, int]] = []

        def stalled() -> bool:
            """No run written for two seconds: the console's loop is stuck drawing."""
            sizes.append((time.monotonic(), out.stat().st_size))
            old = [size for t, size in sizes if t <= sizes[-1][0] - 2]
            return bool(old) and old[-1] == sizes[-1][1]
        until(stalled, 30, "the console to block on its terminal")
        os.kill(pid, signal.SIGTERM)
        until(status.exists, 60, "hotloop to exit")
        assert status.read_text() == "143"
        ended_cleanly(out, busy_poll)
        os.kill(server, signal.SIGCONT)
        pane.close()
        assert leftovers(grace=5) == []
    finally:
        if server:
            try:
                os.kill(server, signal.SIGCONT)
            except ProcessLookupError:
                pass
        end(pane, status, pid)


def test_abandon_ends_the_run_once_without_the_event_loop(tmp_path, busy_poll, leftovers):
    # What the watchdog does, called from a thread while the loop is held up (joined on):
    # the run is over, the system back, one last line; the loop's own end then writes
    # nothing more, and abandoning an ended session changes nothing.
    import asyncio
    import threading

    from hotloop import catalog
    from hotloop import events as ev
    from hotloop.run.session import Session

    prof = tmp_path / "prof"
    prof.mkdir()
    (prof / "faulty.c").write_text(FAULTY_C)
    (prof / "w.toml").write_text(FAULTY_TOML + PROFILE)
    cat = catalog.load([prof])
    plan = catalog.with_overrides(cat.plans["hangup"], perf=False)
    out = tmp_path / "a.jsonl"
    session = Session(cat.resolve(plan), out, apply_system=True)

    async def drive() -> list[ev.Event]:
        seen: list[ev.Event] = []
        async for event in session.events():
            seen.append(event)
            if isinstance(event, ev.RunSample) and event.index == 2:
                assert read_sysctl(SYSCTL) == "11"
                t = threading.Thread(target=session.abandon,
                                     args=("the terminal went away", "SIGHUP"))
                t.start()
                t.join()                    # the loop waits: abandon must not need it
                assert read_sysctl(SYSCTL) == busy_poll
                assert lines(out)[-1]["message"] == "the terminal went away"
        return seen

    seen = asyncio.run(drive())
    assert not any(isinstance(e, ev.RunSample) and e.index > 2 for e in seen)
    ended_cleanly(out, busy_poll)
    assert lines(out)[-1] == {"type": "failed", "message": "the terminal went away",
                              "run": 3, "signal": "SIGHUP", "interrupted": True,
                              "bad_input": False, "variant": ""}
    text = out.read_text()
    session.abandon("again", "SIGTERM")
    assert out.read_text() == text and read_sysctl(SYSCTL) == busy_poll
    assert leftovers() == []
