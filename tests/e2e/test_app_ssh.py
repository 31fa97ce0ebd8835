"""Over SSH the console says, once, that a dropped connection stops the run: long series
belong in tmux or screen on the machine.  Inside either, or not over SSH, it says nothing."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_app import SIZE, log_text, wait_for

from hotloop.console.app import HotloopApp

ADVICE = "for long series start hotloop inside tmux or screen on this machine"


@pytest.mark.parametrize("env, said", [
    ({"SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22"}, True),
    ({"SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22", "TMUX": "/tmp/tmux-0/default,1,0"}, False),
    ({"SSH_CONNECTION": "10.0.0.2 50000 10.0.0.1 22", "STY": "1234.pts-0.lab"}, False),
    ({}, False),
], ids=["ssh", "ssh-in-tmux", "ssh-in-screen", "local"])
def test_the_console_says_over_ssh_where_long_series_belong(isolated: Path, monkeypatch,
                                                            env: dict[str, str],
                                                            said: bool) -> None:
    for name in ("SSH_CONNECTION", "TMUX", "STY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    async def go() -> None:
        app = HotloopApp(results_dir=isolated / "results")
        async with app.run_test(size=SIZE) as pilot:
            # said on mount, right after the catalogue loads: wait for that, not for the clock
            await wait_for(pilot, app.main_screen.loaded.is_set, 20, "the catalogue")
            if said:
                await wait_for(pilot, lambda: ADVICE in log_text(app), 10, "the advice")
            else:
                await pilot.pause()
                assert ADVICE not in log_text(app), log_text(app)
    asyncio.run(go())
