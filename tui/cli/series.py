"""`hotloop run PLAN --kernel A --kernel B --sessions N`: a series (run.series_run.SeriesRun)
driven from the command line: a line as each session ends, then the comparison of the kernels
with sessions as replicates, the same report `hotloop compare DIR/A/ DIR/B/` gives.  The
variants `run` makes a batch of (plans, --cpu profiles, --param K=V1,V2) alternate the same
way, one directory each (`run PLAN --param K=V1,V2 --sessions N`); `calibrate PLAN` here drives
a series of one kernel with `drive` (cli.calibrate).  Only rendering is here: the series' life
is the SeriesRun's.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hotloop import events as ev
from hotloop.catalog import Catalog
from hotloop.cli.common import warn_skipped
from hotloop.cli.run import (
    choices,
    emit,
    emit_text,
    guarded,
    plan_to_run,
    say,
    spec,
    variants,
)
from hotloop.cli.signals import interrupted_status
from hotloop.errors import HotloopError, RunFailed
from hotloop.render.units import si
from hotloop.run import series
from hotloop.run import variants as expander
from hotloop.run.series_run import (
    KERNELS_AND_VARIANTS,
    SERIES_HERE,
    SeriesOutcome,
    SeriesRequest,
    SeriesRun,
    SeriesSide,
)
from hotloop.visible import visible, visible_lines

if TYPE_CHECKING:
    from hotloop.analysis.comparison import Comparison

MAX_STEM = 80               # the series' directory: results/<time>-<plans joined by +>


def session_outcome(end: ev.Finished | ev.Failed | None, unit: str) -> str:
    """"1.234 µs/op median, 20 runs", or why a session has none ("failed: ...")."""
    if isinstance(end, ev.Finished) and end.summary.n:
        s = end.summary
        return f"{si(s.median or 0, unit)} median, {s.n} runs"
    if isinstance(end, ev.Failed):
        return f"{'stopped' if end.interrupted else 'failed'}: {end.message}"
    return "no result"


def session_line(slot: series.Slot, end: ev.Finished | ev.Failed | None, unit: str) -> str:
    """"stock s03: 1.234 µs/op median, 20 runs", or why it has none."""
    return f"{slot.variant} s{slot.session:02d}: {session_outcome(end, unit)}"


def drive(run: SeriesRun, fmt: str,
          line: Callable[[series.Slot, ev.Finished | ev.Failed | None, str], str] = session_line,
          observe: Callable[[series.SeriesEvent], None] | None = None) -> None:
    """Run the series: warnings once each on stderr, a line as each session ends (stderr),
    and with --format events each session bracketed on stdout (a `series_session` line
    before its events, a `series_session_end` line after).  KeyboardInterrupt or
    CancelledError when a signal stopped it."""
    warned: set[str] = set()
    unit = ""
    sch = run.schedule

    async def body() -> None:
        nonlocal unit
        async for e in run.events():
            if observe is not None:
                observe(e)
            if isinstance(e, series.Begins):
                if fmt == "text" and sys.stderr.isatty():     # a boot can take a while
                    print(f"{visible(e.slot.variant)} s{e.slot.session:02d} "
                          f"({e.slot.position + 1} of {e.of}) …", file=sys.stderr)
                if fmt == "events":
                    emit_text(json.dumps(bracket(sch, e.slot, "series_session",
                                                 of=e.of)) + "\n")
            elif isinstance(e, series.Ends):
                if fmt == "events":
                    end = e.end
                    emit_text(json.dumps(bracket(
                        sch, e.slot, "series_session_end",
                        status="finished" if isinstance(end, ev.Finished) else
                        "stopped" if isinstance(end, ev.Failed) and end.interrupted
                        else "failed")) + "\n")
                print(visible(line(e.slot, e.end, unit)), file=sys.stderr)
            elif isinstance(e, ev.Started):
                unit = e.header.workload.unit
            elif isinstance(e, ev.Warning) and fmt != "events" and e.message not in warned:
                warned.add(e.message)       # the same warning from every session: once
                print(f"hotloop: warning: {visible(e.message)}", file=sys.stderr)

    async def main() -> None:
        await guarded(run.sessions, body())
    asyncio.run(main())


def bracket(p: series.Schedule, slot: series.Slot, kind: str, **more: Any) -> dict[str, Any]:
    """The line that tells an events reader which variant (kernel) and session the events
    after it (series_session) or before it (series_session_end) are."""
    return {"type": kind, "series": p.id, "variant": slot.variant, "kernel": slot.kernel,
            "session": slot.session,
            "sessions": p.sessions, "position": slot.position + 1,
            "result_file": str(slot.path), **more}


def comparison(over: SeriesOutcome, metric: str | None = None) -> Comparison | None:
    """The series' comparison (SeriesOutcome.comparison), what it says of it on stderr."""
    comp, notes = over.comparison(metric)
    for n in notes:
        print(visible(f"hotloop: {n}"), file=sys.stderr)
    return comp


def run_series(cat: Catalog, args: argparse.Namespace) -> int:
    """`run PLAN --sessions N [--kernel A --kernel B ...]`, or with the variants of a batch
    (several plans, --cpu profiles, --param K=V1,V2) in place of the kernels."""
    if args.interleave or args.gated or args.control:
        raise HotloopError("--sessions alternates whole sessions; --interleave alternates "
                           "runs within one: one or the other")
    kernels = tuple(args.kernel or [])
    # variants besides the kernels (plans, --cpu, K=V1,V2, a batch plan, --aa): the
    # expander's count, unresolved
    many = len(expander.expand(cat, spec(args, kernels=[], plans=args.names))) > 1
    if many and len(kernels) > 1:
        raise HotloopError(KERNELS_AND_VARIANTS)
    host = args.host[0] if args.host else None
    mirror = emit if args.format == "events" else None
    if many:
        return _run(cat, args, _variants_request(cat, args, host, mirror))
    plan = cat.plan_for(args.names[0])
    req = SeriesRequest(plan, kernels or (plan.kernel,), args.sessions, host=host,
                        mirror=mirror, notice=say)
    SeriesRun(req)                      # refused before anything is made
    chosen = choices(args, 2, each="session")
    kernels = req.kernels
    plan = plan_to_run(cat, args, plan, (args.cpu or [None])[0], args.param, kernels[0])
    for k in kernels[1:]:
        cat.require("kernel", k, "--kernel")
    return _run(cat, args, replace(req, plan=plan, choices=chosen))


def _variants_request(cat: Catalog, args: argparse.Namespace, host: str | None,
                      mirror: Callable[[ev.Event], None] | None) -> SeriesRequest:
    """The series of the variants `run` would make a batch of, each named as there
    ("block_size=4096", "cpu=split", a plan's name), each resolved once (there)."""
    if host is not None:
        raise HotloopError(SERIES_HERE)
    todo = variants(cat, args)
    first = todo[0].rp.plan
    stem = "+".join(args.names) if len(args.names) > 1 else first.name
    req = SeriesRequest(first, (first.kernel,), args.sessions, mirror=mirror,
                        stem=stem[:MAX_STEM],
                        variants=tuple(SeriesSide(v.label, v.rp.plan, v.rp) for v in todo),
                        notice=say)
    SeriesRun(req)
    return replace(req, choices=choices(args, 2, each="session"))


def _run(cat: Catalog, args: argparse.Namespace, req: SeriesRequest) -> int:
    """Resolve, start, drive and report the series `req`; its exit status."""
    run = SeriesRun(req)
    run.resolve(cat)
    warn_skipped(cat)
    directory = run.start().directory
    interrupted = False
    try:
        drive(run, args.format)
    except (KeyboardInterrupt, asyncio.CancelledError):
        interrupted = True
    except HotloopError as e:
        # the series cannot go on (a result file that cannot be written: a full disk)
        done = run.finish().done
        if done:
            e.args = (f"{e} ({_sessions(len(done))} done {'is' if len(done) == 1 else 'are'}"
                      f" in {directory})",)
        raise
    over = run.finish(interrupted)
    if over.refused is not None:
        raise HotloopError(over.refused)
    fate = f"{directory} was deleted during the series" if over.deleted else \
        f"{directory} removed: nothing in it" if over.removed else ""
    if interrupted:
        print(visible(f"hotloop: interrupted; {_sessions(len(over.done))} done, " + (
            f"kept in {directory}" if not fate else f"none kept ({fate})")), file=sys.stderr)
    comp = comparison(over, getattr(args, "metric", None))
    report(over, comp, interrupted, args.format, fate)
    if interrupted:
        return interrupted_status()
    if over.failed:
        raise RunFailed("the series' sessions that failed: " + ", ".join(
            f"{slot.variant} s{slot.session:02d}" for slot in over.failed))
    return 0


def document(over: SeriesOutcome, interrupted: bool) -> dict[str, Any]:
    """The series in --format json: its order, the sessions done and those that failed."""
    def one(slot: series.Slot) -> dict[str, Any]:
        end = over.ends.get(slot)
        where = over.file_of(slot)
        out: dict[str, Any] = {"variant": slot.variant, "kernel": slot.kernel,
                               "session": slot.session, "position": slot.position + 1,
                               "file": str(where) if where is not None else None}
        if isinstance(end, ev.Finished):
            out |= {"runs": end.summary.n, "median": end.summary.median}
        elif isinstance(end, ev.Failed):
            out |= {"message": end.message, "interrupted": end.interrupted}
        return out
    p = over.schedule
    return {"id": p.id, "directory": str(p.directory),
            "kernels": list(dict.fromkeys(x.kernel for x in p.slots)),
            "variants": list(p.variants), "folders": [p.folder(v).name for v in p.variants],
            "differs": list(p.differs),
            "sessions": p.sessions, "order": [f"{x.variant} s{x.session:02d}" for x in p.slots],
            "done": [one(x) for x in over.done], "failed": [one(x) for x in over.failed],
            "stopped": [one(x) for x in over.stopped], "interrupted": interrupted}


def _sessions(n: int) -> str:
    return f"{n} session{'s' * (n != 1)}"


def report(over: SeriesOutcome, comp: Comparison | None, interrupted: bool, fmt: str,
           fate: str = "") -> None:
    """On stdout: the series and the comparison (text or json); with events, the end line."""
    from hotloop.render import compare_formats
    doc = document(over, interrupted)
    if fmt == "events":
        emit_text(json.dumps({"type": "series_end", **doc,
                              "comparison": compare_formats.document(comp) if comp else None},
                             allow_nan=False) + "\n")
        return
    if fmt == "json":
        print(json.dumps({"series": doc, "comparison": compare_formats.document(comp)
                          if comp else None}, indent=2, allow_nan=False))
        return
    p = over.schedule
    counts = ", ".join(f"{k} {n}" for k, n in over.counts().items())
    named = f"{p.directory} ({fate.removeprefix(f'{p.directory} ')})" if fate else p.directory
    aside = sys.stderr if fmt == "mail" else sys.stdout     # a mail's stdout is the mail
    print(visible(f"series {named}: sessions finished: {counts} (of {p.sessions} each)"),
          file=aside)
    for slot in over.failed:
        end = over.ends.get(slot)
        why = end.message if isinstance(end, ev.Failed) else "no result"
        where = over.file_of(slot)
        print(visible(f"  failed: {slot.variant} s{slot.session:02d}: {why}"
                      + (f" ({where})" if where else "")), file=aside)
    if fmt == "mail":
        _mail(over, comp)
        return
    if comp is not None:
        print("\n" + visible_lines(compare_formats.render(comp, "text")))


def _mail(over: SeriesOutcome, comp: Comparison | None) -> None:
    """--format mail: the comparison of the variants (kernels) in 72 columns; a series of
    one kernel, its sessions' summary.  The lines before it said how the sessions went."""
    from hotloop.analysis import compare
    from hotloop.render import mail
    done = list(over.results.values())
    if comp is None:
        if not done:
            return
        try:
            comp = compare.compare_sides([done], [str(over.schedule.directory)])
        except HotloopError as e:
            print(f"hotloop: no report: {visible(str(e))}", file=sys.stderr)
            return
    by_file = {str(r.path): r for r in done}
    sys.stdout.write(mail.compare_mail(comp, [[by_file[f] for f in side.files]
                                              for side in comp.sides]))
