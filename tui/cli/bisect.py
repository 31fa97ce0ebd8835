"""`hotloop bisect GOOD..BAD PLAN`: the revision that changed a plan's speed, found with the
path's chance of a wrong answer bounded (analysis.bisection decides; run.revisions checks each
revision out in a worktree of hotloop's and builds it; run.bisect keeps the state).

Each test is a series (run.series_run.SeriesRun) of GOOD against one revision, A B B A ...,
stopped as soon as the decision has what it needs; then a series of the last good against the
first bad (--confirm N a side) gives the change, its interval and the symbols that moved, as
`hotloop compare` does.  A Ctrl-C keeps every finished round: `hotloop bisect --resume`.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hotloop import events as ev
from hotloop.catalog import Catalog, Plan
from hotloop.cli.run import check_run_flags, plan_to_run
from hotloop.cli.signals import interrupted_status
from hotloop.errors import HotloopError, RunFailed
from hotloop.render.bisect_report import duration
from hotloop.render.units import number
from hotloop.run.start import Choices
from hotloop.visible import visible

if TYPE_CHECKING:
    from hotloop.analysis.bisection import Ask, Bisection
    from hotloop.analysis.comparison import Comparison
    from hotloop.results import Result
    from hotloop.run.bisect import BisectDir, BisectState, Ready

NO_CHANGE = 3               # exit status: the endpoints do not differ: nothing to bisect
GAVE_UP = 4                 # its tests spent before the first bad was told


def say(text: str) -> None:
    print(visible(f"hotloop: bisect: {text}"), file=sys.stderr)


def _own_words(argv: list[str]) -> list[str]:
    """The command line as typed, from `bisect` on, without --resume and --fresh: what a
    resume parses again."""
    words = argv[argv.index("bisect") + 1:] if "bisect" in argv else list(argv)
    return [w for w in words if w not in ("--resume", "--fresh")]


def cmd_bisect(args: argparse.Namespace) -> int:
    from hotloop.run import bisect as b
    from hotloop.run import revisions
    repo = revisions.repository(Path.cwd())
    where = b.BisectDir(repo)
    if where.path.resolve().is_relative_to(repo.resolve()):
        # its state, worktrees and sessions would be the user's untracked files
        raise HotloopError(f"{where.path}: hotloop's state directory is inside the repository "
                           f"{repo}: set XDG_STATE_HOME to a directory outside it")
    where.hold()
    try:
        try:
            kept = where.load()
        except HotloopError:
            if not args.fresh:          # one it cannot read is discarded by --fresh alone
                raise
            kept = None
        if args.resume:
            if _own_words(args.argv) or args.fresh:
                raise HotloopError("bisect --resume goes on as it was started, with its "
                                   "options: nothing else with it (--fresh starts another)")
            if kept is None or kept.over:
                raise HotloopError(f"no interrupted bisect of {repo} to resume")
            again = _parsed(kept, where)
            say(f"resuming {_range(kept)} ({again.plan}): {_rounds(kept)} rounds kept")
            return _bisect(again, where, kept)
        if not args.range or not args.plan:
            raise HotloopError("bisect: give GOOD..BAD and the plan to measure (or --resume)")
        if kept is not None and not kept.over and not args.fresh:
            raise HotloopError(f"an interrupted bisect of {repo} is kept ({_range(kept)}): "
                               f"hotloop bisect --resume goes on with it, --fresh discards it")
        _check(args)
        revs = revisions.revision_range(repo, args.range)
        from hotloop.analysis.bisection import Bisection, Design
        try:
            design = Design(alpha=args.alpha, max_rounds=args.max_rounds,
                            with_bad=args.with_bad)
            decision = Bisection([r.sha for r in revs], design)
        except ValueError as e:
            raise HotloopError(f"bisect: {e}") from None
        if kept is not None:
            where.worktrees().remove_all()      # the one discarded: its worktrees too
        # a --profiles before `bisect` kept as the absolute one it is (read as it is)
        words = [*_own_words(args.argv),
                 *(f"--profiles={p.resolve()}" for p in args.top_profiles)]
        st = b.BisectState(str(repo), words, revs, decision.to_dict())
        where.save(st)
        try:
            return _bisect(args, where, st)
        except HotloopError:
            if _rounds(st) == 0:        # refused before any round (a plan, a metric, a
                where.discard()         # parameter): nothing to resume, nothing kept
            raise
    finally:
        where.release()


def _parsed(kept: BisectState, where: BisectDir) -> argparse.Namespace:
    """The options a kept bisect was started with, checked again (the file is one a user
    can edit)."""
    from hotloop.cli.parser import parser
    try:
        again = parser().parse_args(["bisect", *kept.argv])
    except HotloopError as e:
        raise HotloopError(f"{where.state_file}: its options: {e}") from None
    if not again.range or not again.plan or again.resume or again.fresh:
        raise HotloopError(f"{where.state_file}: its options are not a bisect's (a range and "
                           f"a plan, no --resume): --fresh starts afresh")
    again.argv = ["bisect", *kept.argv]
    again.top_profiles = []
    _check(again)
    return again


def _check(args: argparse.Namespace) -> None:
    """What can be refused before anything is checked out."""
    if not (math.isfinite(args.alpha) and 0 < args.alpha < 0.5):
        raise HotloopError(f"--alpha {args.alpha:g}: a chance between 0 and 0.5")
    if args.confirm < 0 or args.confirm == 1 or args.confirm > 99:
        raise HotloopError(f"--confirm {args.confirm}: 0 (none), or 2 to 99 sessions a side")
    if not 2 <= args.max_rounds <= 99:
        raise HotloopError(f"--max-rounds {args.max_rounds}: from 2 to 99 (a step's first "
                           f"round has no spread of its own)")
    if args.build_timeout is not None and not (math.isfinite(args.build_timeout)
                                               and args.build_timeout > 0):
        raise HotloopError(f"--build-timeout {args.build_timeout:g}: a number of seconds "
                           f"above 0")
    check_run_flags(args)
    if args.kernel_image is not None and (Path(args.kernel_image).is_absolute()
                                          or ".." in Path(args.kernel_image).parts):
        raise HotloopError(f"--kernel-image {args.kernel_image}: a path inside the "
                           f"repository (each revision's is read from its own worktree)")
    for p in args.profiles:
        if not p.is_absolute() and ".." in p.parts:
            raise HotloopError(f"--profiles {p}: a directory inside the repository (read from "
                               f"each revision's worktree), or an absolute path (read as it is)")
    args.profiles = [*(p.resolve() for p in getattr(args, "top_profiles", [])), *args.profiles]


def _range(st: BisectState) -> str:
    return f"{st.revisions[0].sha[:12]}..{st.revisions[-1].sha[:12]}"


def _rounds(st: BisectState) -> int:
    steps = st.decision.get("steps", [])
    return sum(len(s.get("rounds", [])) for s in steps if isinstance(s, dict)) \
        if isinstance(steps, list) else 0


class Driver:
    """One bisect, from its kept state to its report."""

    def __init__(self, args: argparse.Namespace, where: BisectDir, st: BisectState) -> None:
        from hotloop.analysis.bisection import Bisection
        self.args, self.where, self.st = args, where, st
        try:
            self.decision: Bisection = Bisection.from_dict(st.decision)
        except ValueError as e:
            raise HotloopError(f"{where.state_file}: not a bisect state hotloop wrote ({e}); "
                               f"--fresh starts afresh") from None
        self.revs = {r.sha: r for r in st.revisions}
        self.trees = where.worktrees()
        self.ready: dict[str, Ready | str] = {}
        self.began = time.monotonic()
        self.said = ""                  # a round's progress, said after its session's line
        self.ours: frozenset[str] = frozenset()     # what GOOD's worktree defines

    def plan_of(self, cat: Catalog) -> Plan:
        a = self.args
        return plan_to_run(cat, a, cat.plan_for(a.plan), a.cpu, a.param, a.kernel)

    def get(self, sha: str) -> Ready | str:
        """A revision made ready (once), or why it cannot be measured; GOOD first, whose
        worktree says what every revision's must define (run.bisect.own)."""
        from hotloop.run.bisect import own, prepare
        good = self.st.revisions[0].sha
        if sha != good and good not in self.ready:
            self.get(good)
        if sha not in self.ready:
            rev = self.revs[sha]
            say(f"{rev.short} {rev.subject[:50]}: checking out"
                + (" and building" if self.args.build else ""))
            got = self.ready[sha] = prepare(
                rev, self.trees, self.where.logs, self.plan_of, tuple(self.args.profiles),
                self.args.build, self.args.kernel_image, self.args.build_timeout, self.ours)
            if sha == good and not isinstance(got, str):
                self.ours = own(got.rp, got.worktree)
        return self.ready[sha]

    def prune(self) -> None:
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

    def save(self) -> None:
        self.st.decision = self.decision.to_dict()
        self.st.seconds += time.monotonic() - self.began
        self.began = time.monotonic()
        self.where.save(self.st)

    def choices(self) -> Choices:
        return Choices(apply_system=self.args.apply_system, keep_perf=False,
                       on_exists="refuse")

    # --- a step: GOOD against one revision, round by round ----------------------------------
    def step(self, ask: Ask) -> bool:
        """Run `ask`'s step until the decision moves on; False when interrupted."""
        from hotloop.analysis.sides import METRIC_ALIASES
        from hotloop.cli.series import drive
        from hotloop.run import series
        from hotloop.run.bisect import value
        from hotloop.run.series_run import SeriesRequest, SeriesRun, SeriesSide
        good, other = self.get(ask.against), self.get(ask.rev)
        bad = self.get(ask.also) if ask.also else None
        if isinstance(bad, str):
            raise HotloopError(f"the bad revision {ask.also[:12] if ask.also else ''} cannot "
                               f"be measured: {bad}")
        if isinstance(good, str):
            raise HotloopError(f"the good revision {ask.against[:12]} cannot be measured: {good}")
        if isinstance(other, str):
            if ask.kind == "endpoints":
                raise HotloopError(f"the bad revision {ask.rev[:12]} cannot be measured: "
                                   f"{other}")
            self.decision.skip(other)
            say(f"{ask.rev[:12]} skipped: {other}")
            self.save()
            return True
        sides = [good, other] + ([bad] if bad is not None else [])
        names = [x.rev.short for x in sides]
        left = self.args.max_rounds - ask.round + 1
        req = SeriesRequest(good.rp.plan, (good.rp.plan.kernel,), max(2, left),
                            variants=tuple(SeriesSide(x.rev.short, x.rp.plan, x.rp)
                                           for x in sides),
                            choices=self.choices(), results=self.where.sessions,
                            stem=f"step{ask.step:02d}-{names[1]}", notice=say,
                            rounds=_rounds_of(ask, [x.rev.sha for x in sides]))
        run = SeriesRun(req)
        run.resolve(Catalog())          # each side's plan resolved already, in its worktree
        directory = run.start().directory
        self.st.series.setdefault(str(ask.step), []).append(str(directory))
        got: dict[int, dict[str, float]] = {}
        judged: dict[series.Slot, float | None] = {}    # each session's number, once
        failed: list[str] = []

        def observe(e: series.SeriesEvent) -> None:
            self.flush()                # the last round's line, after its session's
            if not isinstance(e, series.Ends):
                return
            end, slot = e.end, e.slot
            result = run.result(slot) if isinstance(end, ev.Finished) else None
            v = judged[slot] = value(result, self.args.metric) if result is not None else None
            if v is None:
                why = end.message if isinstance(end, ev.Failed) else \
                    f"no {self.args.metric or 'median'} a ratio can take"
                if isinstance(end, ev.Failed) and end.interrupted:
                    return
                failed.append(f"{slot.variant} s{slot.session:02d}: {why}")
                if slot.variant == names[1] and ask.kind == "step":
                    self.decision.skip(f"its session failed: {why}")
                    say(f"{names[1]} skipped: its session failed: {why}")
                    self.save()
                run.stop()
                return
            got.setdefault(slot.session, {})[slot.variant] = v
            have = got[slot.session]
            if len(have) < len(names):
                return
            self.decision.add(have[names[0]], have[names[1]],
                              have[names[2]] if len(names) > 2 else None)
            self.save()
            self.said = self.progress(ask)
            nxt = self.decision.next()
            if nxt is None or (nxt.step, nxt.rev) != (ask.step, ask.rev):
                run.stop()

        def line(slot: series.Slot, end: ev.Finished | ev.Failed | None, unit: str) -> str:
            from hotloop.cli.series import session_outcome
            said = session_outcome(end, unit)
            v = judged.get(slot) if self.args.metric else None
            if v is not None:           # the number judged, not the wall clock's
                name = METRIC_ALIASES.get(self.args.metric, self.args.metric)
                said = f"{number(v)} {name} median, {said.rsplit(', ', 1)[-1]}"
            return f"hotloop: bisect: step {ask.step} {slot.variant} s{slot.session:02d}: {said}"
        try:
            drive(run, "text", line, observe)
        except (KeyboardInterrupt, asyncio.CancelledError):
            run.finish(interrupted=True)
            self.save()
            return False
        except HotloopError:
            run.finish()
            self.save()
            raise
        finally:
            self.flush()
        run.finish()
        self.save()
        if failed and (ask.kind == "endpoints" or any(f.startswith(n + " ") for f in failed
                                                        for n in names if n != names[1])):
            again = "; hotloop bisect --resume tries again" if _rounds(self.st) else ""
            raise RunFailed(f"bisect: {failed[0]} (the sessions are in {directory}){again}")
        return True

    def flush(self) -> None:
        if self.said:
            say(self.said)
            self.said = ""

    def progress(self, ask: Ask) -> str:
        """Where the step stands after a round, and the bisect."""
        s = self.decision.steps[ask.step]
        where = self.decision.progress()
        so_far = "" if s.change_pct is None else f": {s.change_pct:+.3g}%" + (
            "" if s.ci_low is None or s.ci_high is None
            else f" [{s.ci_low:+.3g}%, {s.ci_high:+.3g}%]")
        what = "endpoints" if ask.kind == "endpoints" else f"step {ask.step}"
        verdict = f", {s.verdict}" if s.verdict else ""
        return (f"{what}, {ask.rev[:12]} round {len(s.rounds)}{so_far}{verdict} "
                f"({'' if s.verdict == 'no change' else f'{where.left} candidates left; '}"
                f"{where.sessions} sessions, "
                f"{duration(self.st.seconds + time.monotonic() - self.began)})")

    # --- the end: the last good against the first bad ---------------------------------------
    def confirm(self, last_good: str, first_bad: str
                ) -> tuple[bool, Comparison | None, list[Result]]:
        """The confirming series: whether it ran to its end (not interrupted), its
        comparison (None: none asked, or it has none) and the results it was made of."""
        if self.args.confirm == 0:
            return True, None, []
        from hotloop.cli.series import comparison, drive, session_outcome
        from hotloop.run import series
        from hotloop.run.series_run import SeriesRequest, SeriesRun, SeriesSide
        a, b = self.get(last_good), self.get(first_bad)
        if isinstance(a, str) or isinstance(b, str):
            say(f"no confirming series: {a if isinstance(a, str) else b}")
            return True, None, []
        req = SeriesRequest(a.rp.plan, (a.rp.plan.kernel,), self.args.confirm,
                            variants=(SeriesSide(a.rev.short, a.rp.plan, a.rp),
                                      SeriesSide(b.rev.short, b.rp.plan, b.rp)),
                            choices=self.choices(), results=self.where.sessions,
                            stem=f"confirm-{a.rev.short}-{b.rev.short}", notice=say)
        run = SeriesRun(req)
        run.resolve(Catalog())
        self.st.series.setdefault("confirm", []).append(str(run.start().directory))
        self.save()
        say(f"confirming: {a.rev.short} against {b.rev.short}, {self.args.confirm} sessions "
            f"a side")

        def line(slot: series.Slot, end: ev.Finished | ev.Failed | None, unit: str) -> str:
            return (f"hotloop: bisect: confirm {slot.variant} s{slot.session:02d}: "
                    f"{session_outcome(end, unit)}")
        try:
            drive(run, "text", line)
        except (KeyboardInterrupt, asyncio.CancelledError):
            run.finish(interrupted=True)
            self.save()
            return False, None, []
        over = run.finish()
        self.save()
        return True, comparison(over, self.args.metric), list(over.results.values())


def _rounds_of(ask: Ask, sides: list[str]) -> tuple[tuple[int, ...], ...]:
    """The series' rounds in the order the decision asks (Ask.order: this round's, the next
    the other way round): with BAD the revision between GOOD and BAD, so that a drift linear
    over a round cancels in its test (analysis.bisection); resumed, the round it stopped at."""
    first = tuple(sides.index(sha) for sha in ask.order) if ask.order else \
        tuple(range(len(sides)))
    return first, first[::-1]


def _bisect(args: argparse.Namespace, where: BisectDir, st: BisectState) -> int:
    from hotloop.render import bisect_report
    from hotloop.run.build_facts import build_differences, kernel_image_facts
    d = Driver(args, where, st)
    while (ask := d.decision.next()) is not None:
        try:
            d.prune()
            going = d.step(ask)
        except KeyboardInterrupt:       # in a checkout or a build (a session's is step's)
            d.save()
            going = False
        if not going:
            say(f"interrupted: {_rounds(d.st)} rounds kept in {where.path}; hotloop bisect "
                f"--resume goes on")
            return interrupted_status()
    out = d.decision.outcome()
    comp: Comparison | None = None
    confirmed: list[Result] = []
    differs: list[str] = []
    if out.status == "found" and out.first_bad and out.last_good:
        try:
            ended, comp, confirmed = d.confirm(out.last_good, out.first_bad)
        except KeyboardInterrupt:       # in a checkout or a build
            d.save()
            ended = False
        if not ended:
            say("interrupted while confirming; hotloop bisect --resume confirms again")
            return interrupted_status()
        a, b = d.ready.get(out.last_good), d.ready.get(out.first_bad)
        if not isinstance(a, str) and not isinstance(b, str) and a and b:
            differs = build_differences(a.worktree, b.worktree)
            if args.kernel_image:
                differs += _image_facts(kernel_image_facts(Path(a.rp.kernel.image)),
                                        kernel_image_facts(Path(b.rp.kernel.image)))
    subjects: dict[str, tuple[str, str]] = {r.sha: (r.short, r.subject) for r in st.revisions}
    report = bisect_report.Report(out, st.revisions[0].sha, st.revisions[-1].sha, subjects,
                                  comp, differs, st.seconds, where.path,
                                  [Path(p) for ps in st.series.values() for p in ps],
                                  bisect_report.sides_of(comp, confirmed) if comp else [],
                                  out.sessions + len(confirmed),
                                  _without_format(_own_words(args.argv)))
    text = bisect_report.render(report, args.format)
    sys.stdout.write(text)
    st.over = True
    where.save(st)
    try:
        d.trees.remove_all()            # the sessions stay (the evidence); the checkouts go
    except HotloopError as e:           # the answer stands: said, not its exit status
        print(f"hotloop: warning: {visible(str(e))}", file=sys.stderr)
    return 0 if out.status == "found" else NO_CHANGE if out.status == "no change" else GAVE_UP


def _without_format(words: list[str]) -> list[str]:
    """The command's words but its --format (the mail says the command, in any format)."""
    out, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w == "--format":
            skip = True
        elif not w.startswith("--format="):
            out.append(w)
    return out


def _image_facts(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The kernel images' own words where they differ (release, compiler, build)."""
    return [f"kernel {k}: {a.get(k, '?')} -> {b.get(k, '?')}"
            for k in ("release", "compiler", "build", "build_id") if a.get(k) != b.get(k)]
