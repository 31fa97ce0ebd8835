"""run.bisect_run.BisectRun, the bisect's life, with stand-ins for what is slow: each
revision made ready by the test (no checkout, no build) and each session a forged one (its
file written as a session writes it, its runs a known number a revision), in a real git
repository of empty commits (git is why this is no unit test).  What the command line and the console render is its events: their order,
a skip, a stop in a build that is no skip, a cancel that keeps every round, a resume."""
from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import forge
import pytest
from forged_session import Forged

from hotloop import catalog
from hotloop import events as ev
from hotloop.analysis.bisection import Bisection
from hotloop.catalog import ResolvedPlan
from hotloop.errors import HotloopError
from hotloop.record import to_json
from hotloop.results.reader import decode_line
from hotloop.run import build, revisions, series
from hotloop.run.bisect import BisectDir, BisectState, Ready
from hotloop.run.bisect_run import (
    BisectOptions,
    BisectRun,
    Judged,
    Over,
    Preparing,
    Rounded,
    Skipped,
    Stepping,
    Stopped,
)

N = 8                       # revisions after GOOD
SLOWER = 5                  # its ns/op a quarter up from here on
BROKEN = 4                  # made ready: "its build failed" (the first step's candidate)
NS = 2_000_000
OFFSETS = (1.000, 1.006, 0.995, 1.003, 0.997, 1.008, 0.993, 1.002)  # sessions' scatter


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[revisions.Revision]]:
    r = tmp_path / "repo"
    r.mkdir()
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(r), *args], check=True, env=env, text=True,
                              capture_output=True).stdout.strip()
    git("init", "-q", "-b", "main")
    for i in range(N + 1):
        git("commit", "-q", "--allow-empty", "-m", f"Revision {i}")
    return r, revisions.revision_range(r, "HEAD~8..HEAD")


class Revised(Forged):
    """A forged session whose runs take the revision's time (its variant is its short hash),
    each session a little apart (OFFSETS), so that a step has a spread."""

    def __init__(self, slot: series.Slot, rp: ResolvedPlan, ns: dict[str, int],
                 hold: threading.Event | None = None) -> None:
        super().__init__(slot, rp)
        self.ns, self.hold = ns, hold

    async def events(self):
        if self.hold is not None:           # a session the test holds running
            while not self.hold.is_set():
                await asyncio.sleep(0.01)
        head = forge.header(params={"block_size": 512, "count": 20000, "spin": 0},
                            variant=self.variant, batch=to_json(self.batch))
        ns = round(self.ns[self.slot.variant]
                   * OFFSETS[(self.slot.session + len(self.slot.variant)) % len(OFFSETS)])
        forge.zero_null(self.slot.path, ns, head=head)
        for line in self.slot.path.read_bytes().splitlines():
            yield decode_line(line)
            await asyncio.sleep(0)


built: list[float] = []                 # when a held build's thread ended


def bisect_of(tmp_path: Path, repo, held_build: threading.Event | None = None,
              held_session: threading.Event | None = None, resume: bool = False) -> BisectRun:
    """A bisect of `repo` with stand-ins; `resume`: of the state kept (as --resume), else a
    new one."""
    r, revs = repo
    cat = catalog.load([])
    rp = cat.resolve(cat.plan_for("zero_null"))
    ns = {x.short: NS * (125 if i >= SLOWER else 100) // 100 for i, x in enumerate(revs)}

    def ready(rev: revisions.Revision) -> Ready | str:
        if rev.sha == revs[BROKEN].sha:
            if held_build is not None:      # a build the test holds: CANCEL stops it, and
                while not build.CANCEL.wait(0.01):      # it ends once the test lets it
                    pass
                held_build.wait(10)
                built.append(time.monotonic())
                raise HotloopError("build interrupted")
            return "its build failed: build exited 2"
        return Ready(rev, tmp_path / "wt" / rev.short, replace(rp, plan=replace(rp.plan)))

    def make(slot: series.Slot, rp: ResolvedPlan) -> Revised:
        return Revised(slot, rp, ns, held_session)
    where = BisectDir(r, tmp_path / "state")
    where.hold()
    kept = where.load() if resume else None
    st = kept or BisectState(str(r), ["x..y", "zero_null"], revs,
                             Bisection([x.sha for x in revs]).to_dict())
    where.save(st)
    return BisectRun(BisectOptions(lambda c: c.plan_for("zero_null"), confirm=2,
                                   max_rounds=6), where, st, ready=ready, make=make)


async def events(run: BisectRun, until=None) -> list:
    out = []
    async for e in run.events():
        out.append(e)
        if until is not None:
            until(e)
    return out


def test_a_bisect_finds_the_slower_revision_its_events_in_order(tmp_path, repo):
    run = bisect_of(tmp_path, repo)
    got = asyncio.run(events(run))
    revs = repo[1]
    over = got[-1]
    assert isinstance(over, Over), got[-3:]
    f = over.finding
    # zero_null's metric is bytes/s: the slower revision's a fifth down
    assert f.outcome.status == "found" and f.outcome.first_bad == revs[SLOWER].sha
    assert f.comparison is not None and len(f.sides) == 2
    assert [s.verdict for s in f.outcome.steps if s.rev == revs[BROKEN].sha] == ["skipped"]
    assert Skipped(revs[BROKEN].sha, "its build failed: build exited 2") in got
    # a revision made ready before its step's series; each session judged, then its round
    kinds = [type(e) for e in got]
    assert kinds.index(Preparing) < kinds.index(Stepping)
    judged = [e for e in got if isinstance(e, Judged)]
    rounds = [e for e in got if isinstance(e, Rounded)]
    assert judged and all(j.value is not None and j.value > 0 for j in judged)
    assert sum(len(s.rounds) for s in f.outcome.steps) == len(rounds) == run.st.rounds
    assert kinds.index(Judged) < kinds.index(Rounded)
    # the state says what the decision says, and the steps' series are kept
    assert Bisection.from_dict(run.where.load().decision).outcome().first_bad == \
        revs[SLOWER].sha
    assert "confirm" in run.st.series and all(Path(d).is_dir() for ds in run.st.series.values()
                                               for d in ds)


def test_a_stop_in_a_build_stops_it_and_skips_nothing(tmp_path, repo):
    """stop() while a revision builds: the build is stopped (build.CANCEL), the revision
    not skipped (a stopped build is no failed one), the rounds kept, CANCEL cleared for the
    console's next build."""
    ends = threading.Event()
    ends.set()                          # the stopped build ends at once
    run = bisect_of(tmp_path, repo, held_build=ends)
    revs = repo[1]

    def stop_at_the_held_build(e) -> None:
        if isinstance(e, Preparing) and e.rev.sha == revs[BROKEN].sha:
            run.stop()
    try:
        got = asyncio.run(events(run, stop_at_the_held_build))
        cleared = not build.CANCEL.is_set()
    finally:
        build.CANCEL.clear()
    assert cleared
    assert isinstance(got[-1], Stopped) and not got[-1].confirming
    assert not [e for e in got if isinstance(e, Skipped)]
    kept = Bisection.from_dict(run.where.load().decision)
    assert all(s.verdict != "skipped" for s in kept.steps)
    assert run.st.rounds == len([e for e in got if isinstance(e, Rounded)]) > 0


def test_a_cancel_in_a_session_keeps_every_round_and_a_resume_goes_on(tmp_path, repo):
    """A signal's cancel while a step's session runs: CancelledError out, the state saved
    with every judged round; a BisectRun of that state goes on to the same answer."""
    hold = threading.Event()
    run = bisect_of(tmp_path, repo, held_session=hold)
    revs = repo[1]
    seen: list = []

    async def cancelled() -> None:
        task = asyncio.ensure_future(events(run, seen.append))
        while not any(isinstance(e, Rounded) for e in seen):
            hold.set()                      # the endpoints' first rounds run
            await asyncio.sleep(0.01)
        hold.clear()                        # the next session held: cancel it there
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(cancelled())
    rounds = [e for e in seen if isinstance(e, Rounded)]
    assert rounds and run.where.load().rounds == len(rounds)
    run.where.release()
    # resumed from the file, as --resume does
    hold.set()
    again = bisect_of(tmp_path, repo, held_session=hold, resume=True)
    assert again.st.rounds == len(rounds)       # what it goes on from
    got = asyncio.run(events(again))
    assert isinstance(got[-1], Over) and got[-1].finding.outcome.first_bad == revs[SLOWER].sha
    assert again.st.rounds > len(rounds)
    assert not any(isinstance(e, ev.Failed) and not e.interrupted for e in got)


def test_a_second_cancel_in_a_build_still_waits_for_its_thread(tmp_path, repo):
    """Two cancels (a second Ctrl-C; the console's stop, then its grace's cancel) while a
    build's thread is stopping: events() ends only once the thread has, so the repository's
    lock is never let go under a build still writing its worktree."""
    ends = threading.Event()
    run = bisect_of(tmp_path, repo, held_build=ends)
    revs = repo[1]
    built.clear()

    async def twice() -> float:
        at_build = asyncio.Event()

        def note(e) -> None:
            if isinstance(e, Preparing) and e.rev.sha == revs[BROKEN].sha:
                at_build.set()
        task = asyncio.ensure_future(events(run, note))
        await at_build.wait()
        await asyncio.sleep(0.1)
        task.cancel()
        await asyncio.sleep(0.1)
        task.cancel()
        asyncio.get_running_loop().call_later(0.5, ends.set)
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic()
    try:
        over = asyncio.run(twice())
    finally:
        build.CANCEL.clear()
    assert built and built[0] <= over
