"""`hotloop calibrate`: a plan's A/A sessions run (here, as a series, or on a host), or
A/A result files read, for the noise profile compare uses."""
from __future__ import annotations

import argparse
import asyncio
import math
import sys
from pathlib import Path

from hotloop import catalog, results
from hotloop import events as ev
from hotloop.catalog import Plan
from hotloop.cli.common import load_catalog, warn_skipped
from hotloop.cli.hosts import calibration_sessions, hosts_named
from hotloop.cli.run import plan_to_run, run_sessions
from hotloop.cli.signals import interrupted_status
from hotloop.errors import HotloopError, RunFailed
from hotloop.render.units import si
from hotloop.run import start
from hotloop.stats import MIN_RUNS
from hotloop.visible import visible


def cmd_calibrate(args: argparse.Namespace) -> int:
    from hotloop.analysis import noise  # scipy, as compare
    from hotloop.render import calibration
    if args.list:
        print(calibration.listing())
        return 0
    if not args.names:
        raise HotloopError("calibrate: name a plan to run, or A/A result files or directories "
                           "to read (or --list)")
    if args.sessions < noise.MIN_SESSIONS:
        raise HotloopError(f"--sessions {args.sessions}: a calibration needs at least "
                           f"{noise.MIN_SESSIONS} sessions (fewer give a session variance too "
                           f"uncertain to trust)")
    from hotloop.run import series
    series.check_sessions(args.sessions, 1)     # run's bound and words: here or on a host
    if args.runs is not None and args.runs < MIN_RUNS:
        raise HotloopError(f"--runs {args.runs}: a calibration session needs at least "
                           f"{MIN_RUNS} runs")
    if not math.isfinite(args.gap) or args.gap < 0:
        raise HotloopError(f"--gap {args.gap:g}: must be 0 or more seconds")
    from hotloop.analysis.sides import distinct, load_sides
    looks_like_path = [n for n in args.names if Path(n.split(",")[0]).exists() or "/" in n
                       or n.endswith(".jsonl")]
    if looks_like_path:
        if len(looks_like_path) != len(args.names):
            raise HotloopError("calibrate: give one plan to run, or result files and "
                               "directories to read, not both")
        if args.host:
            raise HotloopError(f"calibrate --host {args.host} runs a plan there; result "
                               f"files are read here, without --host")
        sessions = [r for side in load_sides(args.names) for r in side]
        # a copy is the same session: 50 copies of two files are 2 sessions, not 100
        sessions, note = distinct(sessions, " ".join(args.names))
        if note:
            from hotloop.render.warning_words import words
            print(f"hotloop: warning: {visible(words(note))}", file=sys.stderr)
        profile = noise.estimate(sessions)
        print(calibration.report(profile, noise.save(profile)))
        return 0
    if len(args.names) > 1:
        raise HotloopError("calibrate: one plan at a time")
    cat = load_catalog(args, warn=False)
    if args.host:                       # an unknown name: one line, before anything is made
        hosts_named(cat, [args.host])
    plan = plan_to_run(cat, args, cat.plan_for(args.names[0]), args.cpu, args.param,
                       args.kernel)
    # the sessions are for their numbers: no perf data kept; each in a new directory
    chosen = start.Choices(apply_system=args.apply_system, keep_perf=False, on_exists="refuse")
    if args.host:                       # that machine's hotloop fits the plan to it
        cat.resolve(plan, here=False)
        return _calibrate_there(cat, args, plan, chosen)
    return _calibrate_here(cat, args, plan, chosen)


def _calibrate_here(cat: catalog.Catalog, args: argparse.Namespace, plan: Plan,
                    chosen: start.Choices) -> int:
    """`calibrate PLAN` on this machine: a series of one kernel (run --sessions N), in a
    directory made the same way, its sessions' results measured into a noise profile."""
    from hotloop.analysis import noise  # scipy, as compare
    from hotloop.cli.series import drive, session_outcome  # a series' modules: here only
    from hotloop.render import calibration
    from hotloop.run import calibrate, series
    from hotloop.run.series_run import SeriesRequest, SeriesRun
    run = SeriesRun(SeriesRequest(plan, (plan.kernel,), args.sessions, choices=chosen,
                                  stem=calibrate.stem(plan.name), gap=args.gap,
                                  session_name=lambda slot: f"session {slot.session}"))
    run.resolve(cat)
    warn_skipped(cat)
    where = run.start().folder(plan.kernel)
    watch = calibrate.Stopwatch()

    def observe(e: series.SeriesEvent) -> None:
        if isinstance(e, series.Begins):
            watch.see(f"session {e.slot.session}", None)
        elif not isinstance(e, series.Ends):
            watch.see(e.variant, e)

    def line(slot: series.Slot, end: ev.Finished | ev.Failed | None, unit: str) -> str:
        said = f"session {slot.session}/{args.sessions}: "
        if isinstance(end, ev.Finished) and end.summary.n:
            m = end.summary
            return (f"{said}{m.n} runs, median {si(m.median or 0, unit)}, "
                    f"CV {100 * (m.cv or 0):.2f}%")
        return said + session_outcome(end, unit)
    try:
        drive(run, "text", line, observe)
    except (KeyboardInterrupt, asyncio.CancelledError):
        over = run.finish(interrupted=True)
        print("hotloop: interrupted; " + (f"the sessions so far are in {where}"
                                          if not over.removed else "no session was kept"),
              file=sys.stderr)
        return interrupted_status()
    except HotloopError:
        # the series cannot go on (a full disk): the session it broke set aside, as
        # run --sessions does, so no later calibrate or compare reads it as a session
        run.finish()
        raise
    over = run.finish()
    if over.refused is not None:
        raise HotloopError(over.refused)
    if over.failed:
        first = over.ends[over.failed[0]]
        why = first.message if isinstance(first, ev.Failed) else "no result"
        raise RunFailed(f"calibrate: session {over.failed[0].session}: {why} "
                        f"({len(over.failed)} of {args.sessions} sessions failed; the "
                        f"sessions are in {where})")
    costs = watch.costs()
    profile = noise.estimate(list(over.results.values()), *(costs or (None, None)))
    print(calibration.report(profile, noise.save(profile)))
    print(f"the sessions: {where} (hotloop calibrate {where} reads them again)")
    return 0


def _calibrate_there(cat: catalog.Catalog, args: argparse.Namespace, plan: Plan,
                     chosen: start.Choices) -> int:
    """`calibrate PLAN --host NAME`: its sessions one after another there."""
    from hotloop.analysis import noise
    from hotloop.render import calibration
    from hotloop.run import calibrate
    where = calibrate.new_directory(f"{plan.name}-{args.host}")
    sessions_run = calibration_sessions(cat, args, plan, where, chosen)
    warn_skipped(cat)
    watch = calibrate.Stopwatch()
    unit = ""                           # the workload's, from the first header (a remote
                                        # plan is known once it starts)

    def observe(variant: str, event: ev.Event | None) -> None:
        nonlocal unit
        watch.see(variant, event)
        if isinstance(event, ev.Started):
            unit = event.header.workload.unit
        if isinstance(event, ev.Finished) and event.summary.n:
            s = event.summary
            print(f"{variant}/{args.sessions}: {s.n} runs, median "
                  f"{si(s.median or 0, unit)}, CV {100 * (s.cv or 0):.2f}%",
                  file=sys.stderr)
    try:
        last = asyncio.run(run_sessions(sessions_run, "text", False, args.gap, observe))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print(f"hotloop: interrupted; the sessions so far are in {where}", file=sys.stderr)
        return interrupted_status()
    except HotloopError as e:
        try:
            where.rmdir()               # nothing ran (a host out of reach): nothing kept
        except OSError:                 # some sessions did: say where they are
            e.args = (f"{e} (the sessions so far are in {where})",)
        raise
    failed = [e for e in last.values() if isinstance(e, ev.Failed)]
    if failed:
        if failed[0].interrupted:
            return interrupted_status()
        raise RunFailed(f"calibrate: {failed[0].variant}: {failed[0].message} (sessions so far "
                        f"in {where})")
    done = [results.read(s.result_file) for s in sessions_run]
    costs = watch.costs()
    profile = noise.estimate(done, *(costs or (None, None)))
    print(calibration.report(profile, noise.save(profile)))
    print(f"the sessions: {where} (hotloop calibrate {where} reads them again)")
    return 0
