"""The `hotloop` command: the console with no arguments, headless subcommands otherwise.

One `cmd_*` function per subcommand.  Every error a user can cause ends in
one line on stderr and exit 2; a failed workload exits 1; Ctrl-C exits 130
after the worker is gone.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, \
    TimeElapsedColumn, TimeRemainingColumn

from tui import __version__, build, catalog, report, results, system
from tui import events as ev
from tui.catalog import Catalog, Plan
from tui.errors import HotloopError, RunFailed
from tui.session import Session
from tui.stats import si

EXIT_INTERRUPTED = 130


def _profiles_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profiles", metavar="DIR", type=Path, action="append", default=[],
                   help="another directory of TOML profiles (repeatable)")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:      # one line, exit 2
        raise HotloopError(f"{self.prog}: {message}")


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="hotloop", description="Benchmark Linux kernel and system hot paths.")
    top.add_argument("--version", action="version", version=f"hotloop {__version__}")
    _profiles_option(top)
    sub = top.add_subparsers(dest="command", parser_class=_Parser)

    run = sub.add_parser("run", help="run a plan or a workload headless")
    run.add_argument("name", help="plan or workload name")
    run.add_argument("--cpu", help="CPU profile")
    run.add_argument("--kernel", help="kernel profile")
    run.add_argument("--runs", type=int, help="recorded repetitions")
    run.add_argument("--warmup", type=int, help="unrecorded repetitions first")
    run.add_argument("--timeout", type=float, help="seconds one repetition may take")
    run.add_argument("--param", action="append", default=[], metavar="K=V",
                     help="override a workload parameter (repeatable)")
    run.add_argument("--perf", action=argparse.BooleanOptionalAction, default=None,
                     help="sample with perf (default: the plan's, on where perf works)")
    run.add_argument("--out", type=Path, help="result file (default results/<time>-<plan>.jsonl)")
    run.add_argument("--format", choices=("text", "json"), default="text")
    run.add_argument("--apply-system", action="store_true",
                     help="allow the profiles' sysctl/governor changes (restored after)")
    _profiles_option(run)

    show = sub.add_parser("show", help="summary, histogram and hot symbols of a result file")
    show.add_argument("file", type=Path)
    show.add_argument("--format", choices=("text", "json"), default="text")
    _profiles_option(show)

    lst = sub.add_parser("list", help="list workloads, CPU and kernel profiles, plans")
    lst.add_argument("what", nargs="?", choices=("workloads", "cpu", "kernel", "plans"))
    _profiles_option(lst)

    doctor = sub.add_parser("doctor", help="what this machine allows")
    _profiles_option(doctor)

    save = sub.add_parser("save", help="save a plan to your profile directory")
    save.add_argument("name", help="the plan's name")
    save.add_argument("--workload", required=True)
    save.add_argument("--cpu", default="default")
    save.add_argument("--kernel", default="default")
    save.add_argument("--runs", type=int, default=10)
    save.add_argument("--warmup", type=int, default=1)
    save.add_argument("--param", action="append", default=[], metavar="K=V")
    save.add_argument("--perf", action=argparse.BooleanOptionalAction, default=True)
    save.add_argument("--summary", default="")
    save.add_argument("--force", action="store_true", help="replace a plan saved before")
    _profiles_option(save)

    restore = sub.add_parser("restore", help="put back system settings a killed run left")
    _profiles_option(restore)
    return top


def _profiles(args: argparse.Namespace) -> list[Path]:
    return list(getattr(args, "profiles", []) or [])


def parse_params(cat: Catalog, workload: str, items: list[str],
                 base: dict[str, int | str] | None = None) -> dict[str, int | str]:
    """`--param K=V` items checked against the workload's declared types and bounds."""
    w = cat.workloads.get(workload)
    if w is None:
        raise HotloopError(f"unknown workload {workload!r} (known: "
                           f"{', '.join(sorted(cat.workloads))})")
    params = dict(base or {})
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise HotloopError(f"--param {item}: expected KEY=VALUE")
        if key not in w.params:
            raise HotloopError(f"--param {item}: workload {workload} has no param "
                               f"{key!r} (known: {', '.join(w.params) or 'none'})")
        try:
            params[key] = w.params[key].parse(value)
        except ValueError as e:
            raise HotloopError(f"--param {item}: {e}") from None
    return params


def resolve_run_plan(cat: Catalog, args: argparse.Namespace) -> catalog.ResolvedPlan:
    """The plan named on the command line with the command line's overrides."""
    plan = cat.plan_for(args.name)
    params = parse_params(cat, plan.workload, args.param, plan.params)
    for flag in ("runs", "warmup"):
        value = getattr(args, flag)
        if value is not None and value < (1 if flag == "runs" else 0):
            raise HotloopError(f"--{flag} {value}: must be at least {1 if flag == 'runs' else 0}")
    if args.timeout is not None and args.timeout <= 0:
        raise HotloopError(f"--timeout {args.timeout:g}: must be above 0 seconds")
    plan = catalog.with_overrides(plan, cpu=args.cpu, kernel=args.kernel, runs=args.runs,
                                  warmup=args.warmup, timeout=args.timeout, perf=args.perf,
                                  params=params)
    return cat.resolve(plan)


async def _run_session(session: Session, fmt: str) -> ev.Event | None:
    """Drive a session with a progress bar on stderr; its Finished or Failed event."""
    rp = session.rp
    unit = rp.workload.unit
    console = Console(stderr=True)
    last: ev.Event | None = None
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[value]}"), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=console,
                  transient=True, disable=fmt != "text" or not console.is_terminal) as bar:
        task = bar.add_task(rp.plan.name, total=rp.plan.runs, value="")
        async for event in session.events():
            if isinstance(event, (ev.Finished, ev.Failed)):
                last = event
            if isinstance(event, ev.RunSample) and not event.warmup:
                bar.update(task, advance=1, value=si(event.value, unit))
            elif isinstance(event, ev.Warning):
                console.print(f"[yellow]warning:[/] {event.message}")
    return last


def cmd_run(args: argparse.Namespace) -> int:
    cat = catalog.load(_profiles(args))
    rp = resolve_run_plan(cat, args)
    out = args.out or results.default_path(rp.plan.name)
    session = Session(rp, out, apply_system=args.apply_system)
    try:
        last = asyncio.run(_run_session(session, args.format))
    except KeyboardInterrupt:
        print(f"hotloop: interrupted; the runs measured so far are in {out}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if isinstance(last, ev.Failed) and last.bad_input and not _has_runs(out):
        out.unlink(missing_ok=True)     # nothing ran: leave nothing behind
        raise HotloopError(last.message)
    result = results.read(out)
    if args.format == "json":
        print(json.dumps(report.document(result), indent=2))
    else:
        print(report.text(result))
    if isinstance(last, ev.Failed):
        if last.interrupted:
            return EXIT_INTERRUPTED
        raise RunFailed(f"{rp.plan.name}: {last.message}")
    return 0


def _has_runs(path: Path) -> bool:
    try:
        return bool(results.read(path).runs)
    except HotloopError:
        return False


def cmd_show(args: argparse.Namespace) -> int:
    result = results.read(args.file)
    if args.format == "json":
        print(json.dumps(report.document(result), indent=2))
    else:
        print(report.text(result))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    cat = catalog.load(_profiles(args))
    what = args.what
    if what in (None, "workloads"):
        print("workloads")
        for w in cat.workloads.values():
            print(f"  {w.name:<16} {w.metric:<10} {w.summary}")
            for p in w.params.values():
                print(f"      {p.name}={p.default}  ({p.describe()}) {p.help}")
    if what in (None, "cpu"):
        print("cpu profiles")
        for c in cat.cpus.values():
            cpus = ",".join(map(str, c.cpus)) or "any"
            print(f"  {c.name:<16} cpus {cpus:<8} sched {c.sched:<6} {c.summary}")
    if what in (None, "kernel"):
        print("kernel profiles")
        for k in cat.kernels.values():
            print(f"  {k.name:<16} label {k.label!r:<20} {k.summary}")
    if what in (None, "plans"):
        print("plans")
        for p in cat.plans.values():
            print(f"  {p.name:<18} {p.workload:<12} runs {p.runs:<5} {p.summary}")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    rows: list[tuple[str, bool, str]] = []
    try:
        rows.append(("compiler", True, build.compiler_version()))
    except HotloopError as e:
        rows.append(("compiler", False, str(e)))
    rows += [(c.name, c.available, c.detail) for c in system.capabilities()]
    cat = catalog.load(_profiles(args))
    rows.append(("profiles", True, f"{len(cat.files)} files: {len(cat.workloads)} workloads, "
                 f"{len(cat.cpus)} cpu, {len(cat.kernels)} kernel, {len(cat.plans)} plans"))
    for name, ok, detail in rows:
        print(f"  {'yes' if ok else 'no '}  {name:<20} {detail}")
    return 0


def cmd_save(args: argparse.Namespace) -> int:
    cat = catalog.load(_profiles(args))
    plan = Plan(name=args.name, workload=args.workload, cpu=args.cpu, kernel=args.kernel,
                runs=args.runs, warmup=args.warmup, perf=args.perf, summary=args.summary,
                params=parse_params(cat, args.workload, args.param))
    path = catalog.save_plan(plan, overwrite=args.force, cat=cat)
    print(f"saved plan {plan.name} to {path}")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    messages = system.recover(force=True)
    print("\n".join(messages) if messages else "nothing to restore")
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    from tui.app import HotloopApp       # only the console needs Textual loaded
    HotloopApp(profiles=_profiles(args)).run()
    return 0


COMMANDS = {"run": cmd_run, "show": cmd_show, "list": cmd_list, "doctor": cmd_doctor,
            "save": cmd_save, "restore": cmd_restore}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
        if args.command != "restore":
            # A run killed with settings applied left a journal: put them back first.
            for message in system.recover():
                print(f"hotloop: {message}", file=sys.stderr)
        return COMMANDS.get(args.command, cmd_tui)(args)
    except HotloopError as e:
        print(f"hotloop: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
