"""`hotloop run`: one plan, a batch of variants in turn, or interleaved variants; each session's
progress, its report, and the batch's comparison."""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hotloop import catalog, results
from hotloop import events as ev
from hotloop.catalog import Catalog, ParamSetting, Plan
from hotloop.catalog.schema import NAME
from hotloop.cli.common import cancel, cancel_closed_output, warn_skipped
from hotloop.cli.signals import STOPPED, interrupt, interrupted_status
from hotloop.cli.variant import Variant
from hotloop.errors import HotloopError, RunFailed
from hotloop.results.writer import encode_line
from hotloop.run import launch, start
from hotloop.run import variants as expander
from hotloop.run.sessionlike import SessionLike
from hotloop.visible import visible


def parse_params(cat: Catalog, workload: str, items: list[str],
                 base: dict[str, ParamSetting] | None = None) -> dict[str, ParamSetting]:
    """`--param K=V` items checked against the workload's declared types and bounds (a plan
    saved: its one value each, a comma a string's own), with run.variants' messages."""
    cat.require("workload", workload, "--workload")
    w = cat.workloads[workload]
    params = dict(base or {})
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise HotloopError(f"--param {item}: {expander.SYNTAX}")
        if key not in w.params:
            raise HotloopError(expander.no_param(f"--param {item}", w, key, keys=()))
        try:
            params[key] = w.params[key].parse(value)
        except ValueError as e:
            raise HotloopError(f"--param {item}: {e}") from None
    return params


T = TypeVar("T")
INTERLEAVE_PROCESSES = 5                # worker processes a variant, interleaved


def check_run_flags(args: argparse.Namespace) -> None:
    """The plan's keys on the command line within the bounds TOML plans have."""
    for flag in ("runs", "warmup", "processes", "perf_freq", "perf_keep_mb"):
        value = getattr(args, flag, None)
        lo, hi = catalog.RUN_LIMITS[flag]
        if value is not None and not lo <= value <= hi:
            raise HotloopError(f"--{flag.replace('_', '-')} {value}: must be at "
                               + (f"least {lo}" if value < lo else f"most {hi}"))
    timeout = getattr(args, "timeout", None)
    problem = None if timeout is None else catalog.timeout_problem(timeout)
    if problem:
        raise HotloopError(f"--timeout {timeout:g}: {problem}")
    target = getattr(args, "until_ci", None)
    problem = None if target is None else catalog.until_ci_problem(target)
    if problem:
        raise HotloopError(f"--until-ci {target:g}: {problem}")


def plan_to_run(cat: Catalog, args: argparse.Namespace, plan: Plan, cpu: str | None,
                param_items: list[str], kernel: str | None = None) -> Plan:
    """A plan named on the command line with the command line's overrides (`kernel`: one
    of `run`'s --kernel profiles, or calibrate's one)."""
    # A profile named on the command line is the command line's error, not the plan
    # file's (the plan keeps its origin through the overrides).
    plan = expander.single(cat, plan, spec(args, param_items, [cpu] if cpu else [],
                                           [kernel] if kernel else []))
    check_run_flags(args)
    name = getattr(args, "plan_name", None)
    if name is not None and not NAME.fullmatch(name):     # it names the result file
        raise HotloopError(f"--plan-name {name!r}: not a plan name (letters, digits, _ . + -)")
    processes = args.processes
    if (getattr(args, "interleave", False) or getattr(args, "gated", False)) \
            and processes is None:
        # Interleaved variants are compared process block by process block (a process has
        # an offset of its own): a few processes each unless asked otherwise.
        processes = max(plan.processes, min(INTERLEAVE_PROCESSES, args.runs or plan.runs))
    return catalog.with_overrides(plan, name=name, runs=args.runs,
                                  warmup=args.warmup, timeout=args.timeout, perf=args.perf,
                                  perf_freq=args.perf_freq, call_graph=args.call_graph,
                                  perf_keep_mb=args.perf_keep_mb, processes=processes,
                                  until_ci=args.until_ci)


def spec(args: argparse.Namespace, items: list[str] | None = None,
         cpus: list[str] | None = None, kernels: list[str] | None = None,
         plans: list[str] | None = None) -> expander.VariantSpec:
    """What the command line asks for, for run.variants: --param's items (`items`), --cpu,
    --kernel, the plans named, --aa."""
    return expander.VariantSpec.parse(
        args.param if items is None else items, "--param",
        cpus=(args.cpu or []) if cpus is None else cpus,
        kernels=(args.kernel or []) if kernels is None else kernels,
        plans=plans or [], aa=getattr(args, "aa", False))


def plan_variants(cat: Catalog, name: str, items: list[str]) -> list[tuple[str, Plan]]:
    """A plan's batch (its params that hold lists) but for the keys --param `items` set:
    `run page-pool --param mode=slow` runs mode=slow once, not once a listed mode."""
    return expander.batch(cat, cat.plan_for(name), {i.partition("=")[0] for i in items})


def variants(cat: Catalog, args: argparse.Namespace, here: bool = True) -> list[Variant]:
    """Every combination of the plans, --cpu and --kernel profiles and K=V1,V2 params asked
    for (run.variants, its rules and messages), resolved for this machine (`here`) or for
    another, whose hotloop fits them to it; with --aa the one variant twice, a1 and a2."""
    if getattr(args, "aa", False) and not here:
        raise HotloopError("--aa runs one variant twice on this machine; --host compares "
                           "machines: one variant on each")
    out: list[Variant] = []
    for v in expander.expand(cat, spec(args, plans=args.names)):
        rp = cat.resolve(plan_to_run(cat, args, v.plan, None, []), here=here)
        slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", v.name)
        stem = slug if slug.startswith(rp.plan.name) else f"{rp.plan.name}-{slug}"
        path = launch.result_path(stem if slug else rp.plan.name)
        if v.side:                      # an A/A: the one variant's file, a side each
            path = path.with_name(f"{path.stem}-{v.side}{path.suffix}")
        out.append(Variant(v.label, rp, path))
    if len(out) == 1 and args.out:
        out[0] = Variant(out[0].label, out[0].rp, args.out)
    return out


async def run_sessions(sessions: Sequence[SessionLike], fmt: str, interleaved: bool,
                        gap: float = 0.0, observe: Callable[[str, ev.Event | None], None]
                        | None = None, got: dict[str, results.Result] | None = None,
                        parallel: bool = False, control: str | None = None
                        ) -> dict[str, ev.Event | None]:
    """Drive the sessions with a progress bar on stderr; each one's Finished or Failed.
    In turn (or all at once: `parallel`, on separate hosts): `gap` seconds between two
    sessions; `observe` sees each event (None when a session begins); `got` collects each
    one's result (by variant) as its events come, so a report needs no file to read back
    (--out /dev/null).  `control` "stdin": standard input closing cancels the run as a
    hangup does, and each line of it is a turn for a gated session (remote interleaving)."""
    return await guarded(sessions, _drive(sessions, fmt, interleaved, gap, observe, got,
                                          parallel), control)


async def guarded(sessions: Sequence[SessionLike], body: Awaitable[T],
                  control: str | None = None) -> T:
    """Await `body` (the driving of `sessions`: a list a series adds to as it goes) with
    the signals and a closed output cancelling it."""
    # Ctrl-C, SIGTERM and SIGHUP (a kill, a dropped SSH session) cancel the run: the worker
    # is stopped, the system restored, the result file ends "interrupted", naming the signal.
    loop, main = asyncio.get_running_loop(), asyncio.current_task()
    assert main is not None
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    for sig in signals:
        loop.add_signal_handler(sig, cancel, sig, main, sessions)
    if control == "stdin":
        # a remote session: its stdout closed is the connection gone, a hangup
        STOPPED.on_output_closed = lambda: loop.call_soon(
            cancel, signal.SIGHUP, main, sessions)
    else:
        STOPPED.on_output_closed = lambda: loop.call_soon(
            cancel_closed_output, main, sessions)
    if control == "stdin":
        _follow_stdin(loop, main, sessions)
    try:
        return await body
    finally:
        # asyncio leaves SIGTERM and SIGHUP at their default (death, no message): back to
        # the Ctrl-C path for the report and comparison printed after the run
        for sig in signals:
            loop.remove_signal_handler(sig)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, interrupt)
        if control == "stdin":
            loop.remove_reader(sys.stdin.fileno())
        STOPPED.on_output_closed = None


def _follow_stdin(loop: asyncio.AbstractEventLoop, main: asyncio.Task[Any],
                  sessions: Sequence[SessionLike]) -> None:
    """--control stdin: its end is a hangup (the connection of a remote session closed, or
    the local side stopped it); each line a gated session's next turn."""
    fd = sys.stdin.fileno()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)        # readable: this does not block
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            cancel(signal.SIGHUP, main, sessions)
            return
        for s in sessions:
            if s.gate is not None:
                for _ in range(data.count(b"\n")):
                    s.gate.put_nowait(None)
    loop.add_reader(fd, readable)



def say(message: str) -> None:
    """What a session says as it goes (a VM's boot), on stderr whatever the format."""
    print(f"hotloop: {visible(message)}", file=sys.stderr, flush=True)


def emit(event: ev.Event) -> None:
    """--format events: each line of the result file on stdout too, as it is written (the
    lines a cancel leaves included: a remote session's restore, its "interrupted")."""
    emit_text(encode_line(event))


def emit_text(line: str) -> None:
    """A line on stdout for --format events (a series' own lines between its sessions')."""
    try:
        sys.stdout.write(line)
        sys.stdout.flush()
    except OSError:
        # The reader is gone (`| head`, the connection of a remote session): the run stops
        # as on a hangup, and its last line says why (EPIPE, not a signal); what comes
        # after goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if STOPPED.on_output_closed is not None:
            STOPPED.on_output_closed()


class _NoBar:
    """The progress bar of --format events: none."""

    def add_task(self, description: str, **fields: Any) -> int:
        return 0

    def update(self, task: int, **fields: Any) -> None:
        pass


@contextlib.contextmanager
def _progress(fmt: str) -> Iterator[tuple[Any, Any, Callable[[str], str],
                                           Callable[[float, str], str]]]:
    """(bar, console, markup escape, a value in its unit) on stderr for a person.  --format
    events is a program's output (a VM guest's, a remote host's: every module costs there) and
    loads no rich, nor render."""
    if fmt == "events":
        yield _NoBar(), None, str, lambda value, unit: ""
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from hotloop.render.units import si
    console = Console(stderr=True, soft_wrap=True)    # a warning stays one line
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[value]}"), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=console,
                  transient=True, disable=fmt not in ("text", "mail")
                  or not console.is_terminal) as bar:
        yield bar, console, escape, si


async def _drive(sessions: Sequence[SessionLike], fmt: str, interleaved: bool, gap: float,
                 observe: Callable[[str, ev.Event | None], None] | None,
                 got: dict[str, results.Result] | None, parallel: bool
                 ) -> dict[str, ev.Event | None]:
    last: dict[str, ev.Event | None] = {s.variant: None for s in sessions}
    with _progress(fmt) as (bar, console, escape, si):
        # the total and the unit are the header's: a remote plan is known once it starts
        tasks = {s.variant: bar.add_task(escape(visible(s.title)), total=None, value="")
                 for s in sessions}
        units = {s.variant: "" for s in sessions}
        warned: set[tuple[str, str]] = set()
        machine = {s.variant: s.machine for s in sessions}

        async def consume(stream: AsyncIterator[ev.Event]) -> None:
            async for event in stream:
                if observe is not None:
                    observe(event.variant, event)
                if isinstance(event, ev.Started):
                    header = event.header
                    if header.variant in tasks:
                        units[header.variant] = header.workload.unit
                        bar.update(tasks[header.variant], total=header.runs)
                if got is None:
                    pass
                elif isinstance(event, ev.Started):
                    got[event.variant] = results.Result(
                        Path(event.result_file), event.header)
                elif event.variant in got:
                    got[event.variant].add(event)
                if isinstance(event, (ev.Finished, ev.Failed)):
                    last[event.variant] = event
                elif isinstance(event, ev.RunSample) and not event.warmup:
                    bar.update(tasks[event.variant], advance=1,
                               value=si(event.value, units[event.variant]))
                elif isinstance(event, ev.Warning) and fmt == "events":
                    pass                # on stdout already, with the rest
                elif isinstance(event, ev.Warning) and \
                        (machine.get(event.variant, ""), event.message) not in warned:
                    # Once a batch and machine: the same warning from every variant here
                    # (perf's, this machine's) is one line, from each host one line under
                    # its name; the report after the run repeats none.
                    warned.add((machine.get(event.variant, ""), event.message))
                    prefix = f"{event.variant}: " if len(sessions) > 1 else ""
                    # "[cpu.c]" is no markup, an ESC from a workload no terminal command
                    console.print("[yellow]warning:[/] "
                                  + escape(visible(f"{prefix}{event.message}")))

        if interleaved:
            from hotloop.run.interleave import interleave
            await consume(interleave(sessions))
        elif parallel:
            from hotloop.run.interleave import together
            await consume(together(sessions))
        else:
            for i, s in enumerate(sessions):
                if i and gap > 0:
                    await asyncio.sleep(gap)
                if observe is not None:
                    observe(s.variant, None)
                await consume(s.events())
                if isinstance(last[s.variant], ev.Failed):
                    break               # a failed session ends the ones after it
    return last


def choices(args: argparse.Namespace, files: int, each: str = "variant") -> start.Choices:
    """The user's choices of `run` for a run that writes `files` result files (one per
    `each`): --apply-system, --keep-perf, and what --out and --force make of a taken name.
    Checked before anything is built or started."""
    if files > 1 and args.out:
        raise HotloopError(f"--out names one file, and this run writes one per {each}")
    if args.force and not args.out:
        raise HotloopError("--force replaces an --out file; without --out every run gets "
                           "a new one")
    if args.out and args.out.is_dir():
        raise HotloopError(f"--out {args.out}: is a directory, not a result file")
    if args.out and args.out.is_file() and not args.force:
        raise HotloopError(f"--out {args.out}: exists (pass --force to replace it)")
    # A default name that is taken becomes another; an --out file is never
    # overwritten but with --force (results.Writer).
    return start.Choices(apply_system=args.apply_system,
                         keep_perf=getattr(args, "keep_perf", True),
                         on_exists=("replace" if args.force else "refuse") if args.out
                         else "rename")


def run_here(cat: Catalog, args: argparse.Namespace) -> int:
    """`run` on this machine: one session, a batch in turn, or interleaved variants."""
    todo = variants(cat, args)
    chosen = choices(args, len(todo))
    if args.interleave and len(todo) < 2:
        raise HotloopError("--interleave needs two or more variants (plans, --cpu, or K=V1,V2)")
    if args.interleave and any(v.rp.kernel.image for v in todo):
        raise HotloopError("--interleave cannot run a kernel booted in a VM: each session "
                           "boots its own; run the kernels' sessions in turn")
    if args.interleave and any(v.rp.kernel.sysctl for v in todo):
        raise HotloopError("--interleave cannot switch sysctls between runs; run the variants "
                           "in turn (without --interleave)")
    if args.gated and (len(todo) != 1 or args.control != "stdin"):
        raise HotloopError("--gated runs one variant, its turns read from --control stdin")
    warn_skipped(cat)
    if len(args.kernel or []) > 1:
        print("hotloop: warning: one session a kernel, compared as a batch: one session a "
              "side cannot tell a kernel's change from a session's (or a boot's) own offset; "
              "--sessions N runs N of each, alternating, and compares them as replicates",
              file=sys.stderr)
    sessions = [launch.start_run(launch.RunRequest(
        v.rp, chosen, output=v.out, variant=v.label,
        mirror=emit if args.format == "events" else None, notice=say)) for v in todo]
    if args.gated:
        sessions[0].gate = asyncio.Queue()
    return drive_and_report(sessions, args, [v.label for v in todo])


def drive_and_report(sessions: Sequence[SessionLike], args: argparse.Namespace,
                     labels: list[str], parallel: bool = False) -> int:
    """Run the sessions (their variants named by `labels`, in order), then print each one's
    report and the batch's comparison; the exit status: 0, 1 for a failed run (RunFailed),
    128 + the signal when interrupted."""
    got: dict[str, results.Result] = {}
    names = dict(zip(labels, (s.title for s in sessions)))
    try:
        asyncio.run(run_sessions(sessions, args.format, args.interleave, got=got,
                                  control=args.control, parallel=parallel))
    except (KeyboardInterrupt, asyncio.CancelledError):
        files = visible(", ".join(str(r.path) for r in got.values()))
        print("hotloop: interrupted; " + (f"the runs measured so far are in {files}" if files
                                           else "nothing was measured yet"), file=sys.stderr)
        for unfinished in got.values():
            if unfinished.finished is None and unfinished.failed is None:
                # the session wrote its "interrupted" line as it was cancelled
                unfinished.add(ev.Failed("interrupted", run=len(unfinished.runs), interrupted=True))
        if any(res.runs for res in got.values()):
            reports(labels, [r for r in got.values() if r.runs], args)
        return interrupted_status()
    except HotloopError as e:
        # a host that could not start, once the others were done: their reports first
        # (not a run that failed: a result file that cannot be written stops it all)
        if parallel and not isinstance(e, RunFailed) and any(r.runs for r in got.values()):
            reports(labels, [r for r in got.values() if r.runs], args)
        raise
    done: list[results.Result] = []
    failures: list[str] = []
    interrupted = False
    for label in labels:
        res = got.get(label)
        if res is None:
            continue
        end = res.finished or res.failed
        if isinstance(end, ev.Failed) and end.bad_input and not res.runs:
            raise HotloopError(end.message)  # nothing ran, and the session kept nothing
        if isinstance(end, ev.Failed):
            interrupted |= end.interrupted
            if not end.interrupted:
                failures.append(f"{names[label]}: {end.message}")
        done.append(res)
    reports(labels, done, args)
    if interrupted:
        return interrupted_status()
    if failures:
        raise RunFailed("; ".join(failures))
    return 0


def reports(labels: list[str], done: list[results.Result], args: argparse.Namespace) -> None:
    """Each variant's report, then the batch's comparison, on stdout; none with --format
    events, whose start (a VM guest's, a remote host's) loads no render or analysis module."""
    if args.format == "events":
        return
    from hotloop.cli.reports import print_reports
    print_reports(labels, done, args.format, getattr(args, "metric", None))
