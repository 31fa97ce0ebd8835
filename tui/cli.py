"""The `hotloop` command: the console with no arguments, headless subcommands otherwise.

One `cmd_*` function per subcommand.  Every error a user can cause ends in
one line on stderr and exit 2; a failed workload exits 1; Ctrl-C exits 130
after the worker is gone.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import shtab
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

from hotloop import __version__, catalog, paths, results
from hotloop import events as ev
from hotloop.catalog import Catalog, Plan
from hotloop.catalog.loader import did_you_mean
from hotloop.errors import HotloopError, RunFailed
from hotloop.host import doctor, journal
from hotloop.perf import probe
from hotloop.render import report, svg
from hotloop.render.units import duration, si
from hotloop.results.header import Header
from hotloop.run import build
from hotloop.run.interleave import interleave
from hotloop.run.session import Session
from hotloop.visible import visible, visible_lines

# Shell completion (shtab): names come from `hotloop completion --names KIND`, which reads
# the catalogue (with the --profiles directories already on the line) and says nothing
# when it cannot.
NAME_KINDS = ("plan", "workload", "cpu", "kernel")
_COMPLETION_PREAMBLE = {
    "bash": r"""
# hotloop's names: $1 plan|workload|cpu|kernel, $2 the word so far
_hotloop_names() {
  local i profiles=()
  for ((i = 2; i < ${#COMP_WORDS[@]}; i++)); do
    [[ ${COMP_WORDS[i-1]} == --profiles ]] && profiles+=(--profiles "${COMP_WORDS[i]}")
  done
  compgen -W "$(hotloop completion --names "$1" "${profiles[@]}" 2>/dev/null)" -- "$2"
}
_hotloop_names_plan() { _hotloop_names plan "$1"; }
_hotloop_names_workload() { _hotloop_names workload "$1"; }
_hotloop_names_cpu() { _hotloop_names cpu "$1"; }
_hotloop_names_kernel() { _hotloop_names kernel "$1"; }
""",
    "zsh": r"""
# hotloop's names: $1 plan|workload|cpu|kernel
_hotloop_names() {
  local i
  local -a profiles names
  for ((i = 2; i < CURRENT; i++)); do
    [[ ${words[i-1]} == --profiles ]] && profiles+=(--profiles "${words[i]}")
  done
  names=(${(f)"$(hotloop completion --names "$1" "${profiles[@]}" 2>/dev/null)"})
  compadd -a names
}
""",
}


def _names(kind: str) -> dict[str, str]:
    return {"bash": f"_hotloop_names_{kind}", "zsh": f"_hotloop_names {kind}"}


def _complete(action: argparse.Action, what: dict[str, Any]) -> None:
    action.complete = what      # type: ignore[attr-defined]   # read by shtab


def _profiles_option(p: argparse.ArgumentParser, dest: str = "profiles") -> None:
    _complete(p.add_argument("--profiles", metavar="DIR", type=Path, action="append",
                             default=[], dest=dest,
                             help="another directory of TOML profiles (repeatable)"),
              shtab.DIRECTORY)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:      # one line, exit 2
        raise HotloopError(f"{self.prog.removeprefix('hotloop').strip() or 'usage'}: "
                           f"{message}")


def _plan_options(p: argparse.ArgumentParser, several: bool = False) -> None:
    """What `run` and `calibrate` take to adjust the plan they run."""
    _complete(p.add_argument("--cpu", action="append" if several else "store",
                             help="CPU profile" + ("; repeat to compare profiles" if several
                                                   else "")), _names("cpu"))
    _complete(p.add_argument("--kernel", help="kernel profile"), _names("kernel"))
    p.add_argument("--runs", type=int, help="recorded repetitions")
    p.add_argument("--warmup", type=int, help="unrecorded repetitions first")
    p.add_argument("--timeout", type=float, help="seconds one repetition may take")
    p.add_argument("--until-ci", type=float, metavar="PCT",
                   help="stop once the median's 95%% confidence interval is within +-PCT%% "
                        "(at most --runs runs)")
    p.add_argument("--processes", type=int,
                   help="spread the runs over N worker processes, in turn (default: the "
                        "plan's, 1): averages out what one process's memory layout does")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="override a workload parameter (repeatable)"
                        + ("; K=V1,V2 compares values" if several else ""))
    p.add_argument("--perf", action=argparse.BooleanOptionalAction, default=None,
                   help="sample with perf (default: the plan's, on where perf works)")
    p.add_argument("--apply-system", action="store_true",
                   help="allow the profiles' sysctl/governor changes (restored after)")
    _profiles_option(p)


EXAMPLES = """\
examples:
  hotloop                                   the console
  hotloop run quick                         the default plan, headless
  hotloop run seqpacket --runs 20           a workload with its defaults
  hotloop run seqpacket --cpu same-core --cpu split --interleave   A/B, round by round
  hotloop show results/FILE.jsonl --runs    summary, histogram, every run
  hotloop compare stock.jsonl patched.jsonl --svg cmp.svg
  hotloop list plans                        the plans and what a run of each takes
  hotloop doctor                            what this machine allows
  source <(hotloop completion bash)         tab completion (bash; zsh likewise)

`hotloop COMMAND --help` tells more about each command."""


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="hotloop", formatter_class=argparse.RawDescriptionHelpFormatter,
                  description="Benchmark Linux kernel and system hot paths.\n\n"
                              "With no arguments, hotloop opens the console (a terminal UI) on "
                              "the quick plan:\npress r to run it, q to quit.",
                  epilog=EXAMPLES)
    top.add_argument("--version", action="version", version=f"hotloop {__version__}")
    _profiles_option(top, dest="top_profiles")     # before the subcommand, or after it
    sub = top.add_subparsers(dest="command", parser_class=_Parser)

    run = sub.add_parser("run", help="run plans or workloads headless")
    _complete(run.add_argument("names", nargs="+", metavar="NAME",
                               help="plan or workload name; several run as a batch and are "
                                    "compared"), _names("plan"))
    run.add_argument("--interleave", action="store_true",
                     help="run the variants alternately, one repetition each (ABAB...)")
    run.add_argument("--keep-perf", action="store_true",
                     help="keep perf.data files beside the result file (RESULT.perf/)")
    _complete(run.add_argument("--out", type=Path,
                               help="result file (default results/<time>-<plan>.jsonl)"),
              shtab.FILE)
    run.add_argument("--force", action="store_true",
                     help="replace an existing --out file (kept as it was unless the run "
                          "measures something)")
    run.add_argument("--format", choices=("text", "json"), default="text")
    _plan_options(run, several=True)

    show = sub.add_parser("show", help="summary, histogram and hot symbols of a result file")
    _complete(show.add_argument("file", type=Path), shtab.FILE)
    show.add_argument("--format", choices=("text", "json", "csv"), default="text",
                      help="text (default), json, or csv: the runs, one row each")
    show.add_argument("--runs", action="store_true",
                      help="list every run: value, ops, ns and the workload's extras")
    _complete(show.add_argument("--svg", type=Path, metavar="OUT",
                                help="also draw the report (histogram and tables) as an SVG "
                                     "picture"), shtab.FILE)
    _profiles_option(show)

    cmp = sub.add_parser("compare", help="compare results; the first side is the baseline")
    _complete(cmp.add_argument("files", nargs="+", metavar="SIDE",
                               help="a result file, a directory of them, or files joined by "
                                    "commas: each one side, its files that side's sessions"),
              shtab.FILE)
    cmp.add_argument("--format", choices=("text", "md", "org", "csv", "json"), default="text")
    _complete(cmp.add_argument("--noise", type=Path, metavar="FILE",
                               help="the noise profile to use (default: the stored one that "
                                    "matches)"), shtab.FILE)
    _complete(cmp.add_argument("--svg", type=Path, metavar="OUT",
                               help="also draw the table and the histograms as an SVG picture"),
              shtab.FILE)
    _profiles_option(cmp)

    cal = sub.add_parser("calibrate", help="measure the session-to-session noise of a plan")
    _complete(cal.add_argument("names", nargs="*", metavar="PLAN|PATH",
                               help="a plan or workload to run K sessions of, or A/A result "
                                    "files or directories to read"), _names("plan"))
    cal.add_argument("--sessions", type=int, default=8, help="sessions to run (default 8)")
    cal.add_argument("--gap", type=float, default=0.0, metavar="S",
                     help="seconds between sessions")
    cal.add_argument("--list", action="store_true", help="list the stored noise profiles")
    _plan_options(cal)

    lst = sub.add_parser("list", help="list workloads, CPU and kernel profiles, plans")
    lst.add_argument("what", nargs="?", choices=("workloads", "cpu", "kernel", "plans"))
    _profiles_option(lst)

    doctor = sub.add_parser("doctor", help="what this machine allows")
    _profiles_option(doctor)

    save = sub.add_parser("save", help="save a plan to your profile directory")
    save.add_argument("name", help="the plan's name")
    _complete(save.add_argument("--workload", required=True, help="the workload it runs"),
              _names("workload"))
    _complete(save.add_argument("--cpu", default="default", help="CPU profile"), _names("cpu"))
    _complete(save.add_argument("--kernel", default="default", help="kernel profile"),
              _names("kernel"))
    save.add_argument("--runs", type=int, default=10, help="recorded repetitions")
    save.add_argument("--warmup", type=int, default=1, help="unrecorded repetitions first")
    save.add_argument("--processes", type=int, default=1,
                      help="worker processes the runs are spread over")
    save.add_argument("--param", action="append", default=[], metavar="K=V",
                      help="a workload parameter (repeatable)")
    save.add_argument("--perf", action=argparse.BooleanOptionalAction, default=True,
                      help="sample with perf")
    save.add_argument("--summary", default="", help="one line for `hotloop list plans`")
    save.add_argument("--force", action="store_true", help="replace a plan saved before")
    _profiles_option(save)

    restore = sub.add_parser("restore", help="put back system settings a killed run left")
    _profiles_option(restore)

    comp = sub.add_parser("completion", help="print a shell completion script: "
                                             "source <(hotloop completion bash)")
    comp.add_argument("shell", nargs="?", choices=("bash", "zsh"))
    comp.add_argument("--names", choices=NAME_KINDS, help=argparse.SUPPRESS)
    _profiles_option(comp)
    return top


def _profiles(args: argparse.Namespace) -> list[Path]:
    return [*args.top_profiles, *getattr(args, "profiles", [])]


def _catalog(args: argparse.Namespace, warn: bool = True) -> Catalog:
    """The catalogue, as the console loads it: a bad file (or a plan it breaks) is left
    out with one line on stderr naming file, line and key, and is an error (exit 2) only
    when the command needs what it defines (`Catalog.check_skipped`).  Without `warn`
    the command says it (`_warn_skipped`) once it has what it needs: an error stays the
    one line."""
    cat = catalog.load(_profiles(args), skip_bad=True)
    if warn:
        _warn_skipped(cat)
    return cat


def _warn_skipped(cat: Catalog) -> None:
    for s in cat.skipped:
        print(f"hotloop: warning: {visible(s.warning)}", file=sys.stderr)


def parse_params(cat: Catalog, workload: str, items: list[str],
                 base: dict[str, int | str] | None = None) -> dict[str, int | str]:
    """`--param K=V` items checked against the workload's declared types and bounds."""
    cat.require("workload", workload, "--workload")
    w = cat.workloads[workload]
    params = dict(base or {})
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise HotloopError(f"--param {item}: expected KEY=VALUE")
        if key not in w.params:
            raise HotloopError(f"--param {item}: workload {workload} has no param "
                               f"{key!r}{did_you_mean(key, w.params)} "
                               f"(known: {', '.join(w.params) or 'none'})")
        try:
            params[key] = w.params[key].parse(value)
        except ValueError as e:
            raise HotloopError(f"--param {item}: {e}") from None
    return params


INTERLEAVE_PROCESSES = 5                # worker processes a variant, interleaved


def check_run_flags(args: argparse.Namespace) -> None:
    """--runs, --warmup, --processes and --timeout within the bounds TOML plans have."""
    for flag in ("runs", "warmup", "processes"):
        value = getattr(args, flag, None)
        lo, hi = catalog.RUN_LIMITS[flag]
        if value is not None and not lo <= value <= hi:
            raise HotloopError(f"--{flag} {value}: must be at "
                               + (f"least {lo}" if value < lo else f"most {hi}"))
    timeout = getattr(args, "timeout", None)
    problem = None if timeout is None else catalog.timeout_problem(timeout)
    if problem:
        raise HotloopError(f"--timeout {timeout:g}: {problem}")
    target = getattr(args, "until_ci", None)
    problem = None if target is None else catalog.until_ci_problem(target)
    if problem:
        raise HotloopError(f"--until-ci {target:g}: {problem}")


def resolve_run_plan(cat: Catalog, args: argparse.Namespace, plan: Plan, cpu: str | None,
                     param_items: list[str]) -> catalog.ResolvedPlan:
    """A plan named on the command line with the command line's overrides."""
    # A profile named on the command line is the command line's error, not the plan
    # file's (the plan keeps its origin through the overrides).
    if cpu is not None:
        cat.require("cpu", cpu, "--cpu")
    if args.kernel is not None:
        cat.require("kernel", args.kernel, "--kernel")
    params = parse_params(cat, plan.workload, param_items, plan.params)
    check_run_flags(args)
    processes = args.processes
    if getattr(args, "interleave", False) and processes is None:
        # Interleaved variants are compared process block by process block (a process has
        # an offset of its own): a few processes each unless asked otherwise.
        processes = max(plan.processes, min(INTERLEAVE_PROCESSES, args.runs or plan.runs))
    plan = catalog.with_overrides(plan, cpu=cpu, kernel=args.kernel, runs=args.runs,
                                  warmup=args.warmup, timeout=args.timeout, perf=args.perf,
                                  processes=processes, until_ci=args.until_ci,
                                  params=params)
    return cat.resolve(plan)


@dataclass(frozen=True)
class Variant:
    label: str
    rp: catalog.ResolvedPlan
    out: Path


def variants(cat: Catalog, args: argparse.Namespace) -> list[Variant]:
    """Every combination of the plans, --cpu profiles and K=V1,V2 params asked for."""
    fixed: list[str] = []
    multi: list[list[str]] = []
    for item in args.param:
        key, sep, value = item.partition("=")
        if sep and "," in value:
            multi.append([f"{key}={v}" for v in value.split(",")])
        else:
            fixed.append(item)
    cpus = args.cpu or [None]
    plans = [(name, label, plan) for name in args.names
             for label, plan in cat.variants(cat.plan_for(name))]
    out: list[Variant] = []
    for (name, plan_label, plan), cpu, combo in itertools.product(plans, cpus,
                                                                   itertools.product(*multi)):
        rp = resolve_run_plan(cat, args, plan, cpu, fixed + list(combo))
        parts = ([name] if len(args.names) > 1 else []) + ([plan_label] if plan_label else []) \
            + ([f"cpu={cpu}"] if len(cpus) > 1 else []) + list(combo)
        label = " ".join(parts)
        slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", label)
        stem = slug if slug.startswith(rp.plan.name) else f"{rp.plan.name}-{slug}"
        path = results.default_path(stem if slug else rp.plan.name)
        out.append(Variant(label, rp, path))
    labels = [v.label for v in out]
    twice = sorted({ln for ln in labels if labels.count(ln) > 1})
    if twice:
        raise HotloopError(f"the batch names the same variant twice: {', '.join(twice)}")
    if len(out) > 1 and args.out:
        raise HotloopError("--out names one file, and this batch writes one per variant")
    if args.force and not args.out:
        raise HotloopError("--force replaces an --out file; without --out every run gets "
                           "a new one")
    if args.out and args.out.is_dir():
        raise HotloopError(f"--out {args.out}: is a directory, not a result file")
    if args.out and args.out.is_file() and not args.force:    # before building: at once
        raise HotloopError(f"--out {args.out}: exists (pass --force to replace it)")
    if len(out) == 1 and args.out:
        out[0] = Variant(out[0].label, out[0].rp, args.out)
    if args.interleave and len(out) < 2:
        raise HotloopError("--interleave needs two or more variants (plans, --cpu, or K=V1,V2)")
    if args.interleave and any(v.rp.kernel.sysctl for v in out):
        raise HotloopError("--interleave cannot switch sysctls between runs; run the variants "
                           "in turn (without --interleave)")
    return out


async def _run_sessions(sessions: list[Session], fmt: str, interleaved: bool,
                        gap: float = 0.0, observe: Callable[[str, ev.Event | None], None]
                        | None = None, got: dict[str, results.Result] | None = None
                        ) -> dict[str, ev.Event | None]:
    """Drive the sessions with a progress bar on stderr; each one's Finished or Failed.
    In turn: `gap` seconds between two sessions; `observe` sees each event (None when a
    session begins); `got` collects each one's result (by variant) as its events come,
    so a report needs no file to read back (--out /dev/null)."""
    # SIGTERM/SIGHUP (a kill, a dropped SSH session) cancel the run like Ctrl-C does:
    # the worker is stopped, the system restored, the result file ends "interrupted".
    loop, main = asyncio.get_running_loop(), asyncio.current_task()
    assert main is not None
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, _cancel, sig, main, sessions)
    console = Console(stderr=True, soft_wrap=True)    # a warning stays one line
    last: dict[str, ev.Event | None] = {s.variant: None for s in sessions}
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[value]}"), TimeElapsedColumn(),
                  TextColumn("eta"), TimeRemainingColumn(), console=console,
                  transient=True, disable=fmt != "text" or not console.is_terminal) as bar:
        tasks = {s.variant: bar.add_task(escape(visible(s.variant or s.rp.plan.name)),
                                         total=s.rp.plan.runs,
                                         value="") for s in sessions}
        units = {s.variant: s.rp.workload.unit for s in sessions}
        warned: set[str] = set()

        async def consume(stream: AsyncIterator[ev.Event]) -> None:
            async for event in stream:
                if observe is not None:
                    observe(event.header.get("variant", "") if isinstance(event, ev.Started)
                            else event.variant, event)
                if got is not None and isinstance(event, ev.Started):
                    got[event.header.get("variant", "")] = results.Result(
                        Path(event.result_file), Header.of(event.header))
                elif got is not None and event.variant in got:
                    got[event.variant].add(event)
                if isinstance(event, (ev.Finished, ev.Failed)):
                    last[event.variant] = event
                elif isinstance(event, ev.RunSample) and not event.warmup:
                    bar.update(tasks[event.variant], advance=1,
                               value=si(event.value, units[event.variant]))
                elif isinstance(event, ev.Warning) and event.message not in warned:
                    # Once a batch: the same warning from every variant (perf's, a
                    # machine's) is one line; the report after the run repeats none.
                    warned.add(event.message)
                    prefix = f"{event.variant}: " if len(sessions) > 1 else ""
                    # "[cpu.c]" is no markup, an ESC from a workload no terminal command
                    console.print("[yellow]warning:[/] "
                                  + escape(visible(f"{prefix}{event.message}")))

        if interleaved:
            await consume(interleave(sessions))
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


def cmd_run(args: argparse.Namespace) -> int:
    cat = _catalog(args, warn=False)
    todo = variants(cat, args)
    _warn_skipped(cat)
    # A default name that is taken becomes another; an --out file is never
    # overwritten but with --force (results.Writer).
    on_exists = ("replace" if args.force else "refuse") if args.out else "rename"
    sessions = [Session(v.rp, v.out, variant=v.label, apply_system=args.apply_system,
                        keep_perf=args.keep_perf, on_exists=on_exists) for v in todo]
    got: dict[str, results.Result] = {}
    try:
        asyncio.run(_run_sessions(sessions, args.format, args.interleave, got=got))
    except (KeyboardInterrupt, asyncio.CancelledError):
        files = visible(", ".join(str(r.path) for r in got.values()))
        print("hotloop: interrupted; " + (f"the runs measured so far are in {files}" if files
                                           else "nothing was measured yet"), file=sys.stderr)
        for res in got.values():
            if res.finished is None and res.failed is None:
                # the session wrote its "interrupted" line as it was cancelled
                res.add(ev.Failed("interrupted", run=len(res.runs), interrupted=True))
        if any(res.runs for res in got.values()):
            _print_reports(todo, [r for r in got.values() if r.runs], args.format)
        return interrupted_status()
    done: list[results.Result] = []
    failures: list[str] = []
    interrupted = False
    for v in todo:
        res = got.get(v.label)
        if res is None:
            continue
        end = res.finished or res.failed
        if isinstance(end, ev.Failed) and end.bad_input and not res.runs:
            raise HotloopError(end.message)  # nothing ran, and the session kept nothing
        if isinstance(end, ev.Failed):
            interrupted |= end.interrupted
            if not end.interrupted:
                failures.append(f"{v.label or v.rp.plan.name}: {end.message}")
        done.append(res)
    _print_reports(todo, done, args.format)
    if interrupted:
        return interrupted_status()
    if failures:
        raise RunFailed("; ".join(failures))
    return 0


def _print_reports(todo: list[Variant], done: list[results.Result], fmt: str) -> None:
    """Each variant's report, then the batch's comparison (on stdout).  The warnings were
    shown as they came (on stderr, once a batch): the text reports leave them out."""
    comparison = _batch_comparison(done) if len(todo) > 1 else None
    if fmt == "json":
        docs = [report.document(r) for r in done]
        doc: dict[str, Any] = docs[0] if len(todo) == 1 else {
            "results": docs, "comparison": json.loads(comparison[1]) if comparison else None}
        print(json.dumps(doc, indent=2))
    else:
        print("\n\n".join(report.text(r, warnings=False) for r in done))
        if comparison:
            print("\n" + visible_lines(comparison[0]))


def _batch_comparison(done: list[results.Result]) -> tuple[str, str] | None:
    """The batch's comparison as (text, json), or None when it cannot be compared."""
    if len(done) < 2:
        return None
    from hotloop.analysis import compare  # scipy: only when comparing (0.8 s to import)
    from hotloop.render import compare_formats
    try:
        comp = compare.compare(done, batch=True)
    except HotloopError as e:
        print(f"hotloop: no comparison: {visible(str(e))}", file=sys.stderr)
        return None
    return compare_formats.render(comp, "text"), compare_formats.render(comp, "json")


def cmd_show(args: argparse.Namespace) -> int:
    if args.svg is not None:
        svg.check_target(args.svg)           # before reading anything
    result = results.read(args.file)
    if args.format == "json":
        print(json.dumps(report.document(result), indent=2))
    elif args.format == "csv":
        sys.stdout.write(report.runs_csv(result))
    else:
        print(report.text(result, runs=args.runs))
    if args.svg is not None:
        svg.save(args.svg, svg.coloured(report.text(result, runs=args.runs)),
                 f"hotloop show {args.file.name}")
        print(f"hotloop: the report as a picture: {visible(str(args.svg))}", file=sys.stderr)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from hotloop.render import (
        compare_formats,  # scipy: only when comparing (0.8 s to import)
    )
    if args.svg is None:
        out = compare_formats.main_compare(args.files, args.format, args.noise)
    else:
        from hotloop.analysis import compare
        svg.check_target(args.svg)
        comp = compare.load_and_compare(args.files, args.noise)
        out = compare_formats.render(comp, args.format)
        h = comp.histogram
        picture = svg.coloured(visible_lines(compare_formats.render(comp, "text")))
        if h is not None and h.buckets:
            picture += [svg.Text("")] + svg.side_bars(h.metric, h.unit,
                                                      [s.name for s in comp.sides], h.buckets)
        svg.save(args.svg, picture, "hotloop compare " + " ".join(
            Path(f).name for f in args.files))
    # csv and json are data (json escapes control characters itself); the tables are
    # for a terminal
    print(visible_lines(out) if args.format in ("text", "md", "org") else out)
    if args.svg is not None:
        print(f"hotloop: the comparison as a picture: {visible(str(args.svg))}",
              file=sys.stderr)
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from hotloop.analysis import noise  # scipy, as compare
    from hotloop.render import calibration
    from hotloop.run import calibrate
    if args.list:
        print(calibration.listing())
        return 0
    if not args.names:
        raise HotloopError("calibrate: name a plan to run, or A/A result files or directories "
                           "to read (or --list)")
    if args.sessions < noise.MIN_SESSIONS:
        raise HotloopError(f"--sessions {args.sessions}: a calibration needs at least "
                           f"{noise.MIN_SESSIONS} sessions (8 or more give a usable estimate)")
    if not math.isfinite(args.gap) or args.gap < 0:
        raise HotloopError(f"--gap {args.gap:g}: must be 0 or more seconds")
    from hotloop.analysis import compare
    looks_like_path = [n for n in args.names if Path(n.split(",")[0]).exists() or "/" in n
                       or n.endswith(".jsonl")]
    if looks_like_path:
        if len(looks_like_path) != len(args.names):
            raise HotloopError("calibrate: give one plan to run, or result files and "
                               "directories to read, not both")
        sessions = [r for side in compare.load_sides(args.names) for r in side]
        profile = noise.estimate(sessions)
        print(calibration.report(profile, noise.save(profile)))
        return 0
    if len(args.names) > 1:
        raise HotloopError("calibrate: one plan at a time")
    cat = _catalog(args, warn=False)
    plan = cat.plan_for(args.names[0])
    rp = resolve_run_plan(cat, args, plan, args.cpu, args.param)
    _warn_skipped(cat)
    where = calibrate.new_directory(rp.plan.name)
    sessions_run = [Session(rp, where / f"session-{i:02d}.jsonl", variant=f"session {i}",
                            apply_system=args.apply_system)
                    for i in range(1, args.sessions + 1)]
    watch = calibrate.Stopwatch()

    def observe(variant: str, event: ev.Event | None) -> None:
        watch.see(variant, event)
        if isinstance(event, ev.Finished) and event.summary:
            s = event.summary
            print(f"{variant}/{args.sessions}: {s.get('n')} runs, median "
                  f"{si(s.get('median', 0), rp.workload.unit)}, CV {100 * s.get('cv', 0):.2f}%",
                  file=sys.stderr)
    try:
        last = asyncio.run(_run_sessions(sessions_run, "text", False, args.gap, observe))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print(f"hotloop: interrupted; the sessions so far are in {where}", file=sys.stderr)
        return interrupted_status()
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


def cmd_list(args: argparse.Namespace) -> int:
    cat = _catalog(args)
    what = args.what
    for table in cat.replaced:
        print(f"{visible(table)}: yours replaces the bundled one")
    if what in (None, "workloads"):
        print("workloads")
        for w in cat.workloads.values():
            print(f"  {w.name:<16} {w.metric:<10} {visible(w.summary)}")
            for p in w.params.values():
                print(f"      {p.name}={p.default}  ({p.describe()}) {visible(p.help)}")
    if what in (None, "cpu"):
        print("cpu profiles")
        for c in cat.cpus.values():
            cpus = ",".join(map(str, c.cpus)) or "any"
            print(f"  {c.name:<16} cpus {cpus:<8} sched {c.sched:<6} {visible(c.summary)}")
    if what in (None, "kernel"):
        print("kernel profiles")
        for k in cat.kernels.values():
            print(f"  {k.name:<16} label {k.label!r:<20} {visible(k.summary)}")
    if what in (None, "plans"):
        print("plans")
        for p in cat.plans.values():
            print(f"  {p.name:<18} {p.workload:<12} {visible(p.summary)}".rstrip())
            print(f"  {'':<18} {plan_duration(p, len(cat.variants(p)))}")
    return 0


def plan_duration(plan: Plan, variants: int = 1) -> str:
    """How long a plan takes, as far as the catalogue knows: its repetitions (runs, plus a
    warmup in each worker process, per variant) times a cost no file records, so "~?",
    and the bound its timeout sets.  A summary may say more ("about 10 s")."""
    reps = plan.runs + plan.warmup * plan.processes
    runs = f"{'up to ' if plan.until_ci else ''}{plan.runs} run{'' if plan.runs == 1 else 's'}"
    if plan.until_ci:
        runs += f" (until the median is known to ±{plan.until_ci:g}%)"
    warm = f" + {plan.warmup} warmup{'' if plan.warmup == 1 else 's'}" if plan.warmup else ""
    if plan.warmup and plan.processes > 1:
        warm += " in each"
    procs = f", {plan.processes} processes" if plan.processes > 1 else ""
    total = reps * variants
    times = f"{variants} variants x {reps} = {total}" if variants > 1 else f"{total}"
    return (f"{runs}{warm}{procs}: {times} repetitions x ~? each (at most "
            f"{duration(total * plan.timeout)} at the {plan.timeout:g} s timeout)")


def cmd_doctor(args: argparse.Namespace) -> int:
    rows: list[tuple[str, bool, str]] = []
    try:
        rows.append(("compiler", True, build.compiler_version()))
    except HotloopError as e:
        rows.append(("compiler", False, str(e)))
    rows += [(c.name, c.available, c.detail) for c in doctor.capabilities()]
    rows += [(c.name, c.available, c.detail) for c in probe.capabilities()]
    cat = _catalog(args)
    bad = sum(s.warning.endswith("(file skipped)") for s in cat.skipped)
    rows.append(("profiles", not cat.skipped,
                 f"{len(cat.files)} files: {len(cat.workloads)} workloads, "
                 f"{len(cat.cpus)} cpu, {len(cat.kernels)} kernel, {len(cat.plans)} plans"
                 + (f"; {bad} bad file{'' if bad == 1 else 's'} and "
                    f"{len(cat.skipped) - bad} plan{'' if len(cat.skipped) - bad == 1 else 's'}"
                    " skipped (see above)" if cat.skipped else "")))
    for name, ok, detail in rows:
        print(f"  {'yes' if ok else 'no '}  {name:<20} {detail}")
    return 0


def cmd_save(args: argparse.Namespace) -> int:
    cat = _catalog(args, warn=False)
    cat.check_skipped("plan", args.name)    # saved beside a broken one: defined twice
    cat.require("cpu", args.cpu, "--cpu")
    cat.require("kernel", args.kernel, "--kernel")
    plan = Plan(name=args.name, workload=args.workload, cpu=args.cpu, kernel=args.kernel,
                runs=args.runs, warmup=args.warmup, perf=args.perf, summary=args.summary,
                processes=args.processes, params=parse_params(cat, args.workload, args.param))
    _warn_skipped(cat)
    path = catalog.save_plan(plan, overwrite=args.force, cat=cat)
    print(f"saved plan {plan.name} to {path}")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    messages = journal.recover(force=True)
    print("\n".join(messages) if messages else "nothing to restore")
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    if args.names:
        return complete_names(args.names, _profiles(args))
    if args.shell is None:
        raise HotloopError("completion: name the shell: bash or zsh "
                           "(source <(hotloop completion bash))")
    print(shtab.complete(parser(), args.shell, preamble=_COMPLETION_PREAMBLE[args.shell]))
    return 0


def complete_names(kind: str, profiles: list[Path]) -> int:
    """The names a shell completes, one a line; nothing at all when they cannot be known
    (a --profiles directory that does not exist, a broken file): completion stays quiet."""
    try:
        cat = catalog.load([d for d in profiles if d.is_dir()], skip_bad=True)
        names = ([*cat.names("plan"), *cat.names("workload")] if kind == "plan"
                 else cat.names(kind))
        print("\n".join(dict.fromkeys(names)))
    except Exception:       # noqa: BLE001 - a completion never prints a traceback
        pass
    return 0


def cmd_tui(args: argparse.Namespace) -> int:
    problem = paths.bundled_problem()   # a broken installation: one line, not an empty console
    if problem:
        raise HotloopError(problem)
    from hotloop.console.app import HotloopApp  # only the console needs Textual loaded
    app = HotloopApp(profiles=_profiles(args))
    app.run()
    return app.exit_status


COMMANDS = {"run": cmd_run, "show": cmd_show, "compare": cmd_compare,
            "calibrate": cmd_calibrate, "list": cmd_list, "doctor": cmd_doctor,
            "save": cmd_save, "restore": cmd_restore, "completion": cmd_completion}


_signal_received = signal.SIGINT


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM/SIGHUP outside a run (building, listing): like Ctrl-C."""
    global _signal_received
    _signal_received = signal.Signals(signum)
    raise KeyboardInterrupt


def _cancel(signum: int, task: asyncio.Task[Any], sessions: Sequence[Session] = ()) -> None:
    """Ctrl-C, SIGTERM or SIGHUP during a run: cancel it; each session's last line names the
    signal."""
    global _signal_received
    _signal_received = signal.Signals(signum)
    for s in sessions:
        s.interrupted_by = _signal_received.name
    task.cancel()


def interrupted_status() -> int:
    """128 + the signal, as a shell reports it: 130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + int(_signal_received)


def main(argv: Sequence[str] | None = None) -> int:
    # A dropped SSH session (SIGHUP) or a kill (SIGTERM) takes the Ctrl-C path:
    # the worker is stopped, the system restored, the result file closed.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    try:
        args = parser().parse_args(argv)
        if args.command not in ("restore", "completion"):
            # A run killed with settings applied left a journal: put them back first.
            for message in journal.recover():
                print(f"hotloop: {visible(message)}", file=sys.stderr)
        return COMMANDS.get(args.command, cmd_tui)(args)
    except HotloopError as e:
        print(f"hotloop: {visible(str(e))}", file=sys.stderr)     # one line, inert
        return e.exit_code
    except KeyboardInterrupt:
        return interrupted_status()
    except BrokenPipeError:             # `hotloop list | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
