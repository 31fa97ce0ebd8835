"""A bisect driven from its kept state to what it found: `hotloop bisect` and the console
both iterate a BisectRun's events and only render them.

Each test is a series (run.series_run.SeriesRun) of GOOD against one revision (and BAD), A B
B A ..., stopped as soon as the decision (analysis.bisection) has what it needs; then a
series of the last good against the first bad (`confirm` sessions a side) gives the change,
its interval and the symbols that moved, as `hotloop compare` does.  The state is saved
(run.bisect.BisectDir) after every round, so a stop, a signal or a kill keeps every finished
round for `hotloop bisect --resume`.

The events, in order: Preparing (a revision checked out and built, in a thread: the loop
goes on), Skipped, Stepping (a step's series made, before its sessions), the series' own
(series.Begins, the session's events, series.Ends), Judged (the session's number for the
decision), Rounded (where the step and the bisect stand), Confirming, then Over (the
Finding) or Stopped (stop() was called).  A signal's cancel ends it with CancelledError, the
state saved; a failed run with RunFailed, a bad input with HotloopError.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from hotloop import events as ev
from hotloop.analysis.bisect_finding import Finding, sides_of
from hotloop.analysis.bisection import Ask, Bisection
from hotloop.analysis.bisection_model import Progress, Step
from hotloop.analysis.comparison import Comparison
from hotloop.catalog import Catalog, Plan
from hotloop.errors import HotloopError, RunFailed
from hotloop.results import Result
from hotloop.run import build, series
from hotloop.run.bisect import BisectDir, BisectState, Ready, own, prepare, value
from hotloop.run.revisions import Revision
from hotloop.run.series_run import Made, SeriesRequest, SeriesRun, SeriesSide
from hotloop.run.sessionlike import SessionLike
from hotloop.run.start import Choices

T = TypeVar("T")


@dataclass(frozen=True)
class BisectOptions:
    """How each revision is made ready and measured: what `hotloop bisect`'s options say."""
    plan_of: Callable[[Catalog], Plan]  # the plan with the user's overrides, in a catalogue
    profiles: tuple[Path, ...] = ()     # relative: each revision's worktree's
    build: str | None = None            # --build, run in each worktree
    build_timeout: float | None = None
    kernel_image: str | None = None     # a path in each worktree
    metric: str | None = None           # the number judged: the workload's, or --metric
    max_rounds: int = 8
    confirm: int = 3                    # the confirming series' sessions a side (0: none)
    apply_system: bool = False
    command: tuple[str, ...] = ()       # the bisect's words (the mail's reproduce line)
    notice: Callable[[str], None] | None = None     # a VM's boot as it goes


@dataclass(frozen=True)
class Preparing:
    rev: Revision
    building: bool


@dataclass(frozen=True)
class Skipped:
    rev: str
    why: str


@dataclass(frozen=True)
class Stepping:
    """A step's (or the confirmation's: ask None) series, made and about to run."""
    ask: Ask | None
    series: SeriesRun


@dataclass(frozen=True)
class Judged:
    """A session of a step ended: its number for the decision (None: it has none)."""
    ask: Ask
    slot: series.Slot
    end: ev.Finished | ev.Failed | None
    value: float | None


@dataclass(frozen=True)
class Rounded:
    """A round taken by the decision: its step as it stands, and the bisect."""
    ask: Ask
    step: Step
    progress: Progress
    seconds: float


@dataclass(frozen=True)
class Confirming:
    last_good: Revision
    first_bad: Revision
    sessions: int


@dataclass(frozen=True)
class Note:
    """Something to say that is no step's (the confirmation has no comparison)."""
    text: str


@dataclass(frozen=True)
class Stopped:
    """Stopped (stop()): every finished round kept, `confirming` or in its steps."""
    rounds: int
    confirming: bool


@dataclass(frozen=True)
class Over:
    finding: Finding


BisectEvent = (Preparing | Skipped | Stepping | Judged | Rounded | Confirming | Note | Stopped
               | Over | series.SeriesEvent)


class _StopAsked(Exception):
    """stop() came while a revision was made ready: what it made is not a verdict."""


class _Sessions(Sequence[SessionLike]):
    """The sessions of the series running (a signal names itself in each one's last line)."""

    def __init__(self, run: BisectRun) -> None:
        self._run = run

    def _now(self) -> list[SessionLike]:
        s = self._run.series
        return s.sessions if s is not None and s.loop is not None else []

    def __len__(self) -> int:
        return len(self._now())

    def __getitem__(self, i: Any) -> Any:
        return self._now()[i]

    def __iter__(self) -> Iterator[SessionLike]:
        return iter(list(self._now()))


class BisectRun:
    """One bisect, from its kept state (saved by the caller before) to its Finding."""

    def __init__(self, opts: BisectOptions, where: BisectDir, st: BisectState, *,
                 ready: Callable[[Revision], Ready | str] | None = None,
                 make: Made | None = None) -> None:
        """`ready` makes a revision ready (default: run.bisect.prepare, its checkout and
        build); `make` each session (default: run.start.here); tests give stand-ins."""
        self.opts, self.where, self.st = opts, where, st
        self._ready, self._make = ready, make
        try:
            self.decision = Bisection.from_dict(st.decision)
        except ValueError as e:
            raise HotloopError(f"{where.state_file}: not a bisect state hotloop wrote ({e}); "
                               f"--fresh starts afresh") from None
        self.revs = {r.sha: r for r in st.revisions}
        self.trees = where.worktrees()
        self.ready: dict[str, Ready | str] = {}
        self.series: SeriesRun | None = None        # the one running
        self.sessions: Sequence[SessionLike] = _Sessions(self)
        self.began = time.monotonic()
        self._ours: frozenset[str] = frozenset()    # what GOOD's worktree defines
        self._stopping = False
        self._set_cancel = False

    # --- asked from outside ---------------------------------------------------------------
    def stop(self) -> None:
        """No session after the one running, no build after the one building (stopped):
        events() ends with Stopped, every finished round kept."""
        self._stopping = True
        if self.series is not None:
            self.series.stop()
        else:
            self._set_cancel = True
            build.CANCEL.set()          # a checkout or build in its thread gives up

    @property
    def seconds(self) -> float:
        return self.st.seconds + time.monotonic() - self.began

    def save(self) -> None:
        self.st.decision = self.decision.to_dict()
        self.st.seconds = self.seconds
        self.began = time.monotonic()
        self.where.save(self.st)

    # --- the run ----------------------------------------------------------------------------
    async def events(self) -> AsyncIterator[BisectEvent]:
        try:
            while (ask := self.decision.next()) is not None:
                await self._thread(self._prune)
                async for e in self._step(ask):
                    yield e
                if self._stopping:
                    yield Stopped(self.st.rounds, False)
                    return
            out = self.decision.outcome()
            comp: Comparison | None = None
            confirmed: list[Result] = []
            differs: list[str] = []
            if out.status == "found" and out.first_bad and out.last_good:
                async for c in self._confirm(out.last_good, out.first_bad):
                    if isinstance(c, tuple):
                        comp, confirmed = c
                    else:
                        yield c
                if self._stopping:
                    yield Stopped(self.st.rounds, True)
                    return
                # not _thread: a stop now keeps the confirmation, which is over
                differs = await asyncio.to_thread(self._differs, out.last_good, out.first_bad)
            st = self.st
            yield Over(Finding(
                out, st.revisions[0].sha, st.revisions[-1].sha,
                {r.sha: (r.short, r.subject) for r in st.revisions}, comp, differs,
                st.seconds, self.where.path, [Path(p) for ps in st.series.values() for p in ps],
                sides_of(comp, confirmed) if comp else [], out.sessions + len(confirmed),
                list(self.opts.command)))
        except _StopAsked:
            self.save()                 # in a step's build, or the confirmation's
            yield Stopped(self.st.rounds, self.decision.next() is None)
        finally:
            if self._set_cancel:
                build.CANCEL.clear()    # the console goes on: its next build is not stopped

    def end(self) -> None:
        """Once it is over (Over): the state says so, the checkouts go (the sessions stay:
        the evidence).  HotloopError when a worktree cannot be removed (the answer stands)."""
        self.st.over = True
        self.where.save(self.st)
        self.trees.remove_all()

    async def _thread(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn` in a thread (a checkout, a build, a worktree removed: the loop goes on); on
        a cancel the build is stopped and waited for, the state saved, the cancel goes on;
        after stop(), what it made or failed to make is set aside (_StopAsked): a build
        stopped is no skip."""
        task = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        try:
            got = await asyncio.shield(task)
        except HotloopError:
            if self._stopping:
                raise _StopAsked from None
            raise
        except asyncio.CancelledError:
            build.CANCEL.set()
            self._set_cancel = True
            while not task.done():      # a second cancel waits too: the thread still builds
                try:
                    await asyncio.shield(task)
                except BaseException:  # noqa: BLE001 - stopped, as asked
                    pass
            self.save()
            raise
        if self._stopping:
            raise _StopAsked
        return got

    # --- a revision made ready ----------------------------------------------------------------
    async def _get(self, sha: str) -> AsyncIterator[Preparing]:
        """`sha` made ready (once), GOOD first, whose worktree says what every revision's must
        define (run.bisect.own); a Preparing before it is checked out."""
        good = self.st.revisions[0].sha
        for x in ([good] if sha != good else []) + [sha]:
            if x in self.ready:
                continue
            rev = self.revs[x]
            yield Preparing(rev, bool(self.opts.build))
            got = self.ready[x] = await self._thread(self._prepare, rev)
            if x == good and not isinstance(got, str):
                self._ours = own(got.rp, got.worktree)

    def _prepare(self, rev: Revision) -> Ready | str:
        if self._ready is not None:
            return self._ready(rev)
        o = self.opts
        return prepare(rev, self.trees, self.where.logs, o.plan_of, o.profiles, o.build,
                       o.kernel_image, o.build_timeout, self._ours)

    def _prune(self) -> None:
        """The worktrees no later step needs gone (a kernel tree's is a GB or two): all but
        GOOD's, BAD's and those of the last good and first bad so far (the confirmation's
        and build_differences' sides)."""
        keep = {self.st.revisions[0].sha, self.st.revisions[-1].sha}
        order = [r.sha for r in self.st.revisions]
        good, bad = 0, len(order) - 1
        for s in self.decision.steps:
            if s.kind == "step" and s.verdict == "good":
                good = max(good, order.index(s.rev))
            elif s.kind == "step" and s.verdict == "bad":
                bad = min(bad, order.index(s.rev))
        keep |= {order[good], order[bad]}
        for sha in [x for x in self.ready if x not in keep]:
            self.trees.remove(self.revs[sha])
            del self.ready[sha]

    def _differs(self, last_good: str, first_bad: str) -> list[str]:
        from hotloop.run.build_facts import build_differences, kernel_image_facts
        a, b = self.ready.get(last_good), self.ready.get(first_bad)
        if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
            return []
        out = build_differences(a.worktree, b.worktree)
        if self.opts.kernel_image:
            out += _image_facts(kernel_image_facts(Path(a.rp.kernel.image)),
                                kernel_image_facts(Path(b.rp.kernel.image)))
        return out

    def _choices(self) -> Choices:
        return Choices(apply_system=self.opts.apply_system, keep_perf=False,
                       on_exists="refuse")

    def _series(self, sides: list[Ready], sessions: int, stem: str,
                rounds: tuple[tuple[int, ...], ...] = ()) -> SeriesRun:
        req = SeriesRequest(sides[0].rp.plan, (sides[0].rp.plan.kernel,), sessions,
                            variants=tuple(SeriesSide(x.rev.short, x.rp.plan, x.rp)
                                           for x in sides),
                            choices=self._choices(), results=self.where.sessions,
                            stem=stem, notice=self.opts.notice, rounds=rounds)
        run = SeriesRun(req, self._make)
        run.resolve(Catalog())          # each side's plan resolved already, in its worktree
        return run

    # --- a step: GOOD against one revision, round by round ----------------------------------
    async def _step(self, ask: Ask) -> AsyncIterator[BisectEvent]:
        # GOOD first, and the end as soon as it (or BAD) cannot be measured: a kernel's
        # build is not spent on BAD when GOOD's failed
        for sha in (ask.against, *((ask.also,) if ask.also else ()), ask.rev):
            async for e in self._get(sha):
                yield e
            why = self.ready[sha]
            if isinstance(why, str) and (sha != ask.rev or ask.kind == "endpoints"):
                which = "good" if sha == ask.against else "bad"
                raise HotloopError(f"the {which} revision {sha[:12]} cannot be measured: {why}")
        good, other = self.ready[ask.against], self.ready[ask.rev]
        bad = self.ready[ask.also] if ask.also else None
        assert not isinstance(good, str) and not isinstance(bad, str)
        if isinstance(other, str):
            if ask.kind == "endpoints":
                raise HotloopError(f"the bad revision {ask.rev[:12]} cannot be measured: "
                                   f"{other}")
            self.decision.skip(other)
            self.save()
            yield Skipped(ask.rev, other)
            return
        sides = [good, other] + ([bad] if bad is not None else [])
        names = [x.rev.short for x in sides]
        left = self.opts.max_rounds - ask.round + 1
        run = self.series = self._series(sides, max(2, left), f"step{ask.step:02d}-{names[1]}",
                                         _rounds_of(ask, [x.rev.sha for x in sides]))
        directory = run.start().directory
        self.st.series.setdefault(str(ask.step), []).append(str(directory))
        got: dict[int, dict[str, float]] = {}
        failed: list[str] = []
        yield Stepping(ask, run)
        try:
            async for se in run.events():
                yield se
                if isinstance(se, series.Ends):
                    for x in self._judged(ask, run, se, names, got, failed):
                        yield x
        except asyncio.CancelledError:
            run.finish(interrupted=True)
            self.save()
            raise
        except HotloopError:
            run.finish()
            self.save()
            raise
        finally:
            self.series = None
        run.finish(interrupted=self._stopping)
        self.save()
        if failed and (ask.kind == "endpoints" or any(f.startswith(n + " ") for f in failed
                                                        for n in names if n != names[1])):
            again = "; hotloop bisect --resume tries again" if self.st.rounds else ""
            raise RunFailed(f"bisect: {failed[0]} (the sessions are in {directory}){again}")

    def _judged(self, ask: Ask, run: SeriesRun, e: series.Ends, names: list[str],
                got: dict[int, dict[str, float]], failed: list[str]) -> Iterator[BisectEvent]:
        """A session's end: its number, and the round given to the decision once its
        sessions are all in; the series stopped when the decision moves on."""
        end, slot = e.end, e.slot
        result = run.result(slot) if isinstance(end, ev.Finished) else None
        v = value(result, self.opts.metric) if result is not None else None
        yield Judged(ask, slot, end, v)
        if v is None:
            if isinstance(end, ev.Failed) and end.interrupted:
                return
            why = end.message if isinstance(end, ev.Failed) else \
                f"no {self.opts.metric or 'median'} a ratio can take"
            failed.append(f"{slot.variant} s{slot.session:02d}: {why}")
            if slot.variant == names[1] and ask.kind == "step":
                self.decision.skip(f"its session failed: {why}")
                self.save()
                yield Skipped(ask.rev, f"its session failed: {why}")
            run.stop()
            return
        have = got.setdefault(slot.session, {})
        have[slot.variant] = v
        if len(have) < len(names):
            return
        self.decision.add(have[names[0]], have[names[1]],
                          have[names[2]] if len(names) > 2 else None)
        self.save()
        yield Rounded(ask, self.decision.steps[ask.step], self.decision.progress(),
                      self.seconds)
        nxt = self.decision.next()
        if nxt is None or (nxt.step, nxt.rev) != (ask.step, ask.rev):
            run.stop()

    # --- the end: the last good against the first bad ---------------------------------------
    async def _confirm(self, last_good: str, first_bad: str
                       ) -> AsyncIterator[BisectEvent | tuple[Comparison | None, list[Result]]]:
        """The confirming series' events, then (its comparison, the results it was made of);
        none asked, or a side that cannot be measured: (None, [])."""
        if self.opts.confirm == 0:
            yield None, []
            return
        for sha in (last_good, first_bad):
            async for p in self._get(sha):
                yield p
        a, b = self.ready[last_good], self.ready[first_bad]
        if isinstance(a, str) or isinstance(b, str):
            yield Note(f"no confirming series: {a if isinstance(a, str) else b}")
            yield None, []
            return
        run = self.series = self._series([a, b], self.opts.confirm,
                                         f"confirm-{a.rev.short}-{b.rev.short}")
        self.st.series.setdefault("confirm", []).append(str(run.start().directory))
        self.save()
        yield Confirming(a.rev, b.rev, self.opts.confirm)
        yield Stepping(None, run)
        try:
            async for e in run.events():
                yield e
        except asyncio.CancelledError:
            run.finish(interrupted=True)
            self.save()
            raise
        finally:
            self.series = None
        over = run.finish(interrupted=self._stopping)
        self.save()
        if self._stopping:
            return
        comp, notes = over.comparison(self.opts.metric)
        for n in notes:
            yield Note(n)
        yield comp, list(over.results.values())


def _rounds_of(ask: Ask, sides: list[str]) -> tuple[tuple[int, ...], ...]:
    """The series' rounds in the order the decision asks (Ask.order: this round's, the next
    the other way round): with BAD the revision between GOOD and BAD, so that a drift linear
    over a round cancels in its test (analysis.bisection); resumed, the round it stopped at."""
    first = tuple(sides.index(sha) for sha in ask.order) if ask.order else \
        tuple(range(len(sides)))
    return first, first[::-1]


def _image_facts(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The kernel images' own words where they differ (release, compiler, build)."""
    return [f"kernel {k}: {a.get(k, '?')} -> {b.get(k, '?')}"
            for k in ("release", "compiler", "build", "build_id") if a.get(k) != b.get(k)]
