"""`hotloop bisect GOOD..BAD PLAN`: the revision that changed a plan's speed, found with the
path's chance of a wrong answer bounded (analysis.bisection decides; run.bisect_run drives
each step as a series; run.bisect keeps the state).  Here: the command line's options checked
and made a BisectRun's, its events as progress lines on stderr, its report on stdout.  A
Ctrl-C keeps every finished round: `hotloop bisect --resume`.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hotloop import events as ev
from hotloop.catalog import Catalog, Plan
from hotloop.cli.run import check_run_flags, guarded, plan_to_run
from hotloop.cli.series import session_outcome
from hotloop.cli.signals import interrupted_status
from hotloop.errors import HotloopError
from hotloop.render.units import number
from hotloop.run import series
from hotloop.run.bisect_run import (
    BisectEvent,
    BisectOptions,
    BisectRun,
    Confirming,
    Judged,
    Note,
    Over,
    Preparing,
    Rounded,
    Skipped,
    Stepping,
)
from hotloop.visible import visible

if TYPE_CHECKING:
    from hotloop.run.bisect import BisectDir, BisectState

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
            say(f"resuming {_range(kept)} ({again.plan}): {kept.rounds} rounds kept")
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
            if st.rounds == 0:        # refused before any round (a plan, a metric, a
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


def options(args: argparse.Namespace) -> BisectOptions:
    """What the command line asks of each revision (checked by _check)."""
    def plan_of(cat: Catalog) -> Plan:
        return plan_to_run(cat, args, cat.plan_for(args.plan), args.cpu, args.param,
                           args.kernel)
    return BisectOptions(plan_of, tuple(args.profiles), args.build, args.build_timeout,
                         args.kernel_image, args.metric, args.max_rounds, args.confirm,
                         args.apply_system, tuple(_without_format(_own_words(args.argv))),
                         notice=say)


def _bisect(args: argparse.Namespace, where: BisectDir, st: BisectState) -> int:
    """The bisect run from its kept state, its progress on stderr, its report on stdout."""
    from hotloop.render import bisect_report
    run = BisectRun(options(args), where, st)
    lines = Lines(args.metric)
    found: list[Over] = []

    async def body() -> None:
        async for e in run.events():
            if isinstance(e, Over):
                found.append(e)
            else:
                lines.show(e)

    async def main() -> None:
        await guarded(run.sessions, body())
    try:
        asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        run.save()
        confirming = run.decision.next() is None
        say("interrupted while confirming; hotloop bisect --resume confirms again" if confirming
            else f"interrupted: {st.rounds} rounds kept in {where.path}; hotloop bisect "
                 f"--resume goes on")
        return interrupted_status()
    if not found:                       # stopped (stop()): the command line does not ask it
        return interrupted_status()
    finding = found[0].finding
    sys.stdout.write(bisect_report.render(finding, args.format))
    try:
        run.end()
    except HotloopError as e:           # the answer stands: said, not its exit status
        print(f"hotloop: warning: {visible(str(e))}", file=sys.stderr)
    status = finding.outcome.status
    return 0 if status == "found" else NO_CHANGE if status == "no change" else GAVE_UP


class Lines:
    """A bisect's events as stderr's progress lines: a revision checked out, a session's
    number, the step after each round, warnings once."""

    def __init__(self, metric: str | None) -> None:
        self.metric = metric
        self.unit = ""
        self.warned: set[str] = set()
        self.confirm = False            # the confirming series' sessions, not a step's

    def show(self, e: BisectEvent) -> None:
        from hotloop.render.bisect_report import progress_line
        if isinstance(e, Preparing):
            say(f"{e.rev.short} {e.rev.subject[:50]}: checking out"
                + (" and building" if e.building else ""))
        elif isinstance(e, Skipped):
            say(f"{e.rev[:12]} skipped: {e.why}")
        elif isinstance(e, Note):
            say(e.text)
        elif isinstance(e, Confirming):
            say(f"confirming: {e.last_good.short} against {e.first_bad.short}, {e.sessions} "
                f"sessions a side")
        elif isinstance(e, series.Begins) and sys.stderr.isatty():     # a boot takes a while
            print(f"{visible(e.slot.variant)} s{e.slot.session:02d} ({e.slot.position + 1} of "
                  f"{e.of}) …", file=sys.stderr)
        elif isinstance(e, series.Ends) and self.confirm:
            say(f"confirm {e.slot.variant} s{e.slot.session:02d}: "
                f"{session_outcome(e.end, self.unit)}")
        elif isinstance(e, Judged):
            from hotloop.analysis.sides import METRIC_ALIASES
            said = session_outcome(e.end, self.unit)
            if self.metric and e.value is not None:     # the number judged, not the wall's
                name = METRIC_ALIASES.get(self.metric, self.metric)
                said = f"{number(e.value)} {name} median, {said.rsplit(', ', 1)[-1]}"
            say(f"step {e.ask.step} {e.slot.variant} s{e.slot.session:02d}: {said}")
        elif isinstance(e, Rounded):
            say(progress_line(e.ask, e.step, e.progress, e.seconds))
        elif isinstance(e, Stepping):
            self.confirm = e.ask is None
        elif isinstance(e, ev.Started):
            self.unit = e.header.workload.unit
        elif isinstance(e, ev.Warning) and e.message not in self.warned:
            self.warned.add(e.message)  # the same warning from every session: once
            print(f"hotloop: warning: {visible(e.message)}", file=sys.stderr)


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
