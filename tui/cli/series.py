"""`hotloop run PLAN --kernel A --kernel B --sessions N`: a series (run.series) driven from the
command line: a line as each session ends, then the comparison of the kernels with sessions as
replicates, the same report `hotloop compare DIR/A/ DIR/B/` gives.  The variants `run` makes
a batch of (plans, --cpu profiles, --param K=V1,V2) alternate the same way, one directory
each (`run PLAN --param K=V1,V2 --sessions N`).  calibrate drives its sessions through
`drive` too.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hotloop import events as ev
from hotloop import results
from hotloop.catalog import Catalog
from hotloop.cli.common import _warn_skipped, interrupted_status
from hotloop.cli.run import (
    choices,
    emit,
    emit_text,
    guarded,
    plan_to_run,
    plan_variants,
    say,
    variants,
)
from hotloop.errors import HotloopError, RunFailed
from hotloop.render.units import si
from hotloop.run import launch, series
from hotloop.visible import visible, visible_lines

MAX_STEM = 80               # the series' directory: results/<time>-<plans joined by +>


def session_line(slot: series.Slot, end: ev.Finished | ev.Failed | None, unit: str) -> str:
    """"stock s03: 1.234 µs/op median, 20 runs", or why it has none."""
    name = f"{slot.variant} s{slot.session:02d}"
    if isinstance(end, ev.Finished) and end.summary.n:
        s = end.summary
        return f"{name}: {si(s.median or 0, unit)} median, {s.n} runs"
    if isinstance(end, ev.Failed):
        return f"{name}: {'stopped' if end.interrupted else 'failed'}: {end.message}"
    return f"{name}: no result"


def drive(s: series.SeriesLoop, fmt: str,
          line: Callable[[series.Slot, ev.Finished | ev.Failed | None, str], str] = session_line,
          observe: Callable[[series.SeriesEvent], None] | None = None) -> None:
    """Run the series: warnings once each on stderr, a line as each session ends (stderr),
    and with --format events each session bracketed on stdout (a `series_session` line
    before its events, a `series_session_end` line after).  KeyboardInterrupt or
    CancelledError when a signal stopped it."""
    warned: set[str] = set()
    unit = ""

    async def body() -> None:
        nonlocal unit
        async for e in s.events():
            if observe is not None:
                observe(e)
            if isinstance(e, series.Begins):
                if fmt == "text" and sys.stderr.isatty():     # a boot can take a while
                    print(f"{visible(e.slot.variant)} s{e.slot.session:02d} "
                          f"({e.slot.position + 1} of {e.of}) …", file=sys.stderr)
                if fmt == "events":
                    emit_text(json.dumps(bracket(s.schedule, e.slot, "series_session",
                                                 of=e.of)) + "\n")
            elif isinstance(e, series.Ends):
                if fmt == "events":
                    end = e.end
                    emit_text(json.dumps(bracket(
                        s.schedule, e.slot, "series_session_end",
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
        await guarded(s.sessions, body())
    asyncio.run(main())


def bracket(p: series.Schedule, slot: series.Slot, kind: str, **more: Any) -> dict[str, Any]:
    """The line that tells an events reader which variant (kernel) and session the events
    after it (series_session) or before it (series_session_end) are."""
    return {"type": kind, "series": p.id, "variant": slot.variant, "kernel": slot.kernel,
            "session": slot.session,
            "sessions": p.sessions, "position": slot.position + 1,
            "result_file": str(slot.path), **more}


def comparison(s: series.SeriesLoop, metric: str | None = None) -> Any:
    """The variants (kernels) compared on their finished sessions (as `hotloop compare DIR/A/
    DIR/B/` would, once the unfinished ones are set aside), or None and why on stderr.  A
    finished session whose file no longer reads is a failed one (Series.lost); a variant left
    with no finished session is left out, while two remain."""
    if len(s.schedule.variants) < 2:
        return None
    read: dict[series.Slot, results.Result] = {}
    for slot in s.done:
        try:
            read[slot] = results.read(slot.path)
        except HotloopError as e:
            s.lost(slot, str(e))
    sides = {k: [r for slot, r in read.items() if slot.variant == k] for k in s.schedule.variants}
    short = [k for k, side in sides.items() if not side]
    kept = [k for k, side in sides.items() if side]
    if len(kept) < 2:
        print(visible(f"hotloop: no comparison: no finished session of {', '.join(short)}"),
              file=sys.stderr)
        return None
    if short:
        print(visible(f"hotloop: no finished session of {', '.join(short)}: compared without "
                      f"{'it' if len(short) == 1 else 'them'}"), file=sys.stderr)
    from hotloop.analysis import compare  # scipy: only when comparing
    # variants of one kernel differ by design (a param, a CPU profile): not a warning
    variants = len({x.kernel for x in s.schedule.slots}) < len(s.schedule.variants)
    try:
        comp = compare.compare_sides([sides[k] for k in kept],
                                     [str(s.schedule.folder(k)) + "/" for k in kept],
                                     batch=variants, primary=metric)
    except HotloopError as e:
        print(f"hotloop: no comparison: {visible(str(e))}", file=sys.stderr)
        return None
    return comp


def run_series(cat: Catalog, args: argparse.Namespace) -> int:
    """`run PLAN --sessions N [--kernel A --kernel B ...]`, or with the variants of a batch
    (several plans, --cpu profiles, --param K=V1,V2) in place of the kernels."""
    if args.interleave or args.gated or args.control:
        raise HotloopError("--sessions alternates whole sessions; --interleave alternates "
                           "runs within one: one or the other")
    kernels = tuple(args.kernel or [])
    many = getattr(args, "aa", False) or len(args.names) > 1 or len(args.cpu or []) > 1 \
        or any("," in item.partition("=")[2] for item in args.param) \
        or any(len(plan_variants(cat, name, args.param)) > 1 for name in args.names)
    if many and len(kernels) > 1:
        raise HotloopError(launch.KERNELS_AND_VARIANTS)
    host = args.host[0] if args.host else None
    mirror = emit if args.format == "events" else None
    if many:
        return _run(cat, args, _variants_request(cat, args, host, mirror))
    plan = cat.plan_for(args.names[0])
    req = launch.SeriesRequest(plan, kernels or (plan.kernel,), args.sessions,
                               host=host, mirror=mirror, notice=say)
    launch.check_series(req)            # refused before anything is made
    chosen = choices(args, 2, each="session")
    kernels = req.kernels
    plan = plan_to_run(cat, args, plan, (args.cpu or [None])[0], args.param, kernels[0])
    for k in kernels[1:]:
        cat.require("kernel", k, "--kernel")
    return _run(cat, args, replace(req, plan=plan, apply_system=chosen.apply_system,
                                   keep_perf=chosen.keep_perf))


def _variants_request(cat: Catalog, args: argparse.Namespace, host: str | None,
                      mirror: Callable[[ev.Event], None] | None) -> launch.SeriesRequest:
    """The series of the variants `run` would make a batch of, each named as there
    ("block_size=4096", "cpu=split", a plan's name)."""
    if host is not None:
        raise HotloopError(launch.SERIES_HERE)
    todo = variants(cat, args)
    first = todo[0].rp.plan
    stem = "+".join(args.names) if len(args.names) > 1 else first.name
    req = launch.SeriesRequest(first, (first.kernel,), args.sessions, mirror=mirror,
                               stem=stem[:MAX_STEM],
                               variants=tuple((v.label, v.rp.plan) for v in todo), notice=say)
    launch.check_series(req)
    chosen = choices(args, 2, each="session")
    return replace(req, apply_system=chosen.apply_system, keep_perf=chosen.keep_perf)


def _run(cat: Catalog, args: argparse.Namespace, req: launch.SeriesRequest) -> int:
    """Resolve, start, drive and report the series `req`; its exit status."""
    rps = launch.resolve_series(cat, req)
    _warn_skipped(cat)
    s = launch.start_series(req, rps)
    directory = s.schedule.directory
    interrupted = False
    try:
        drive(s, args.format)
    except (KeyboardInterrupt, asyncio.CancelledError):
        interrupted = True
    except HotloopError as e:
        # the series cannot go on (a result file that cannot be written: a full disk)
        launch.finish(s)
        if s.done:
            e.args = (f"{e} ({_sessions(len(s.done))} done {'is' if len(s.done) == 1 else 'are'}"
                      f" in {directory})",)
        raise
    deleted = not directory.is_dir()    # by someone else, during the series
    over = launch.finish(s, interrupted)
    if over.refused is not None:
        raise HotloopError(over.refused)
    fate = f"{directory} was deleted during the series" if deleted else \
        f"{directory} removed: nothing in it" if over.removed else ""
    if interrupted:
        print(visible(f"hotloop: interrupted; {_sessions(len(s.done))} done, " + (
            f"kept in {directory}" if not fate else f"none kept ({fate})")), file=sys.stderr)
    comp = comparison(s, getattr(args, "metric", None))   # a file unread: failed too
    report(s, comp, {**over.moved, **s.set_aside()}, interrupted, args.format, fate)
    if interrupted:
        return interrupted_status()
    if s.failed:
        raise RunFailed("the series' sessions that failed: " + ", ".join(
            f"{slot.variant} s{slot.session:02d}" for slot in s.failed))
    return 0


def file_of(slot: series.Slot, moved: dict[series.Slot, Path]) -> str | None:
    """Where a session's file is, None when it has none (it failed before its header, or
    its file was deleted)."""
    where = moved.get(slot, slot.path)
    return str(where) if where.exists() else None


def document(s: series.SeriesLoop, moved: dict[series.Slot, Path], interrupted: bool
             ) -> dict[str, Any]:
    """The series in --format json: its order, the sessions done and those that failed."""
    def one(slot: series.Slot) -> dict[str, Any]:
        end = s.ends.get(slot)
        out: dict[str, Any] = {"variant": slot.variant, "kernel": slot.kernel,
                               "session": slot.session,
                               "position": slot.position + 1, "file": file_of(slot, moved)}
        if isinstance(end, ev.Finished):
            out |= {"runs": end.summary.n, "median": end.summary.median}
        elif isinstance(end, ev.Failed):
            out |= {"message": end.message, "interrupted": end.interrupted}
        return out
    p = s.schedule
    return {"id": p.id, "directory": str(p.directory),
            "kernels": list(dict.fromkeys(x.kernel for x in p.slots)),
            "variants": list(p.variants), "folders": [p.folder(v).name for v in p.variants],
            "sessions": p.sessions, "order": [f"{x.variant} s{x.session:02d}" for x in p.slots],
            "done": [one(x) for x in s.done], "failed": [one(x) for x in s.failed],
            "stopped": [one(x) for x, e in s.ends.items()
                        if isinstance(e, ev.Failed) and e.interrupted],
            "interrupted": interrupted}


def _sessions(n: int) -> str:
    return f"{n} session{'s' * (n != 1)}"


def report(s: series.SeriesLoop, comp: Any, moved: dict[series.Slot, Path], interrupted: bool,
           fmt: str, fate: str = "") -> None:
    """On stdout: the series and the comparison (text or json); with events, the end line."""
    from hotloop.render import compare_formats
    doc = document(s, moved, interrupted)
    if fmt == "events":
        emit_text(json.dumps({"type": "series_end", **doc,
                              "comparison": json.loads(compare_formats.render(comp, "json"))
                              if comp else None}) + "\n")
        return
    if fmt == "json":
        print(json.dumps({"series": doc, "comparison": json.loads(
            compare_formats.render(comp, "json")) if comp else None}, indent=2))
        return
    p = s.schedule
    counts = ", ".join(f"{k} {sum(1 for x in s.done if x.variant == k)}" for k in p.variants)
    named = f"{p.directory} ({fate.removeprefix(f'{p.directory} ')})" if fate else p.directory
    aside = sys.stderr if fmt == "mail" else sys.stdout     # a mail's stdout is the mail
    print(visible(f"series {named}: sessions finished: {counts} (of {p.sessions} each)"),
          file=aside)
    for slot in s.failed:
        end = s.ends.get(slot)
        why = end.message if isinstance(end, ev.Failed) else "no result"
        where = file_of(slot, moved)
        print(visible(f"  failed: {slot.variant} s{slot.session:02d}: {why}"
                      + (f" ({where})" if where else "")), file=aside)
    if fmt == "mail":
        _mail(s, comp)
        return
    if comp is not None:
        print("\n" + visible_lines(compare_formats.render(comp, "text")))


def _mail(s: series.SeriesLoop, comp: Any) -> None:
    """--format mail: the comparison of the variants (kernels) in 72 columns; a series of
    one kernel, its sessions' summary.  The lines before it said how the sessions went."""
    from hotloop.analysis import compare
    from hotloop.render import mail
    if comp is None:
        done = []
        for slot in s.done:
            try:
                done.append(results.read(slot.path))
            except HotloopError:
                continue                # said by comparison() as a lost session
        if not done:
            return
        try:
            comp = compare.compare_sides([done], [str(s.schedule.directory)])
        except HotloopError as e:
            print(f"hotloop: no report: {visible(str(e))}", file=sys.stderr)
            return
    sides = [[results.read(Path(f)) for f in side.files] for side in comp.sides]
    sys.stdout.write(mail.compare_mail(comp, sides))
