"""A session's kept perf data bounded while it grows: each window compressed as the next one
fills, the whole held within perf_keep_mb as the session runs (the windows perf report has not
read yet among it, when the reports fall behind), and left so by Ctrl-C, and by a
SIGKILL once the next hotloop command has run; real perf, real `hotloop run` processes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, hotloop, profile_dir
from faulty import wait_for_runs
from test_perf import needs_perf
from test_perf_start import perf_first_on_path

from hotloop import results

pytestmark = needs_perf

BUDGET = 2_000_000
# 1999 Hz: some 60-130 kB a window of half a second (15-30 kB gzipped), a few hundred kB on a
# busy machine, whose runs are longer.  Every window on disk counts, those waiting to be read
# or compressed and the one perf writes too, so a 2 MB budget is reached after a dozen or two
# windows when the reports fall behind.  (At 4999 Hz a busy machine's windows reached a MB:
# the two in flight and the one written then filled the budget, and every kept window went.)
PLAN = """
    [plan.long]
    workload = "zero_null"
    runs = 1000
    warmup = 0
    perf_freq = 1999
    perf_keep_mb = 2
    params = { count = 300000 }
    """


def start(tmp_path: Path, out: Path, runs: int) -> subprocess.Popen[str]:
    d = profile_dir(tmp_path, PLAN)
    return subprocess.Popen([sys.executable, "-m", "hotloop", "run", "long", "--profiles",
                             str(d), "--runs", str(runs), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))


def files(d: Path) -> dict[str, int]:
    found = {}
    for f in list(d.glob("perf.data*")):
        try:
            found[f.name] = f.stat().st_size
        except FileNotFoundError:       # thinned as we looked
            pass
    return found


def wait_for_budget(out: Path) -> None:
    """Until the session says its perf data reached its budget (a few dozen windows)."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if out.exists() and "reached its budget" in out.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{out}: the perf data's budget not reached in 300 s")


def slow_reading_perf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delay: float) -> None:
    """A perf first on PATH that waits `delay` seconds before each window's `perf script`,
    then is perf: the reports of a machine too busy to read them at the pace perf writes,
    however quiet this one is."""
    perf_first_on_path(tmp_path, monkeypatch, "slow-bin", f'[ "$1" = script ] && sleep {delay}')


def test_a_long_session_keeps_its_perf_data_within_its_budget_unread_windows_too(
        tmp_path, monkeypatch, leftovers):
    """Each window's report held back 2 s, about four windows' time: the reports fall
    behind and the windows waiting for them are dropped unread, evenly, to keep within the
    budget; each is in the result file in its place, as such, and it is said once.  Without
    it the plain windows piled up past 15 MB here with a 2 MB budget.  The windows read are
    compressed as it goes, and all of it is at the end."""
    slow_reading_perf(tmp_path, monkeypatch, 2.0)
    out = tmp_path / "b.jsonl"
    d = tmp_path / "b.perf"
    seen: list[dict[str, int]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.05):
            seen.append(files(d))
    watcher = threading.Thread(target=watch)
    proc = start(tmp_path, out, 80)
    watcher.start()
    try:
        _, err = proc.communicate(timeout=600)
    finally:
        done.set()
        watcher.join()
    assert proc.returncode == 0, err
    # never past the budget by more than a window (the largest seen: what perf was writing,
    # or a window being compressed, as the directory was looked at)
    largest = max(size for s in seen for size in s.values())
    assert max(sum(s.values()) for s in seen) <= BUDGET + largest
    assert any(name.endswith(".gz") for s in seen for name in s)    # compressed as it went
    res = results.read(out)
    windows = [w for w in res.windows if w.scope == "window"]
    assert [w.window for w in windows] == list(range(len(windows)))     # no gap
    dropped = [w for w in windows if w.dropped]
    assert dropped, "no window dropped unread: perf report kept up"
    assert all(not w.symbols and w.samples == 0 and w.dropped.startswith("dropped unread")
               for w in dropped)
    assert any(w.symbols for w in windows)
    fell = [w for w in res.warnings if "report fell behind: " in w]
    assert len(fell) == 1 and "dropped unread to keep within perf_keep_mb (2 MB)" in fell[0]
    assert err.count("report fell behind: ") == 1, err
    assert err.count("reached its budget of 2 MB") <= 1, err       # its thinning: once
    after = files(d)
    assert after and all(name.endswith(".gz") for name in after), sorted(after)
    assert sum(after.values()) <= BUDGET and len(after) < len(windows)
    assert leftovers() == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP], ids=["ctrl-c", "hangup"])
def test_ctrl_c_leaves_the_perf_data_compressed_and_within_its_budget(tmp_path, leftovers, sig):
    out = tmp_path / "c.jsonl"
    d = tmp_path / "c.perf"
    proc = start(tmp_path, out, 1000)
    wait_for_budget(out)                # past it: what is left must be thinned to it
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert err.count("reached its budget of 2 MB") == 1, err       # thinned, said once
    after = files(d)
    assert after and all(name.endswith(".gz") for name in after), sorted(after)
    assert sum(after.values()) <= BUDGET
    assert not list((tmp_path / "state" / "hotloop" / "perf-open").glob("*"))
    assert leftovers() == []


def test_what_a_killed_session_left_is_finished_by_the_next_command_once(tmp_path):
    out = tmp_path / "k.jsonl"
    d = tmp_path / "k.perf"
    proc = start(tmp_path, out, 1000)
    wait_for_runs(out, 10, timeout=300)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    # what perf was writing at least is left plain (the window with no header yet); the
    # windows before it may all be compressed already, when the reports kept up
    assert "perf.data" in files(d)
    # two commands at once: one finishes it (under the entry's lock), the other leaves it
    # alone, neither fails
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    both = [subprocess.Popen([sys.executable, "-m", "hotloop", "list", "cpu"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for _ in range(2)]
    said = []
    for p in both:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        said += [ln for ln in err.splitlines() if "did not end finished" in ln]
    assert len(said) == 1 and str(d) in said[0], said
    assert "the window perf was writing removed" in said[0], said
    after = files(d)
    assert after and all(name.endswith(".gz") for name in after), sorted(after)
    assert sum(after.values()) <= BUDGET
    assert not list((tmp_path / "state" / "hotloop" / "perf-open").glob("*"))
    # and nothing is left for a later one to do
    p = hotloop("list", "cpu")
    assert p.returncode == 0 and "did not end" not in p.stderr


def test_the_consoles_quit_finds_the_windows_compressed_and_leaves_nothing_to_do(
        isolated: Path, leftovers) -> None:
    import asyncio

    from test_app import set_choice, small_run, wait_for

    from hotloop.console.app import HotloopApp

    out = isolated / "results"

    def perf_files() -> dict[str, int]:
        return {n: s for d in out.glob("*.perf") for n, s in files(d).items()}

    async def go() -> None:
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.form.base is not None, 10)
            await small_run(pilot, app, "200000", "1000")
            await set_choice(pilot, app, "perf", "on")
            await pilot.press("r")
            # the windows are gzipped while the session runs: nothing piles up for the quit
            await wait_for(pilot, lambda: sum(n.endswith(".gz") for n in perf_files()) >= 3,
                           240, "three windows compressed")
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, 60, "app exited")
    asyncio.run(go())
    # what the quit left: every window compressed by the time its entry is let go (by the
    # quit itself, or on a loaded machine by the detached finisher it handed a backlog of
    # windows perf report had not reached), and then no process of ours
    entries = isolated / "state" / "hotloop" / "perf-open"
    deadline = time.monotonic() + 120
    while list(entries.glob("*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    after = perf_files()
    assert after and all(n.endswith(".gz") for n in after), sorted(after)
    assert leftovers() == []
    assert not list(entries.glob("*"))
    result = results.read(next(out.glob("*.jsonl")))
    assert result.runs and result.windows
