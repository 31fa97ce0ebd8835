"""The subcommands other than run and show: compare, calibrate, list, doctor, save, restore,
completion, and the console."""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import time
from pathlib import Path

from hotloop import catalog, paths, results
from hotloop import events as ev
from hotloop.catalog import Plan
from hotloop.cli.common import _catalog, _profiles, _warn_skipped, interrupted_status
from hotloop.cli.hosts import calibration_sessions, hosts_named, run_on_hosts
from hotloop.cli.parser import completion_script
from hotloop.cli.run import _run_sessions, parse_params, plan_to_run, run_here
from hotloop.errors import HotloopError, RunFailed
from hotloop.host import journal, recovery
from hotloop.render.layout import terminal_width
from hotloop.render.units import duration, si
from hotloop.results import index
from hotloop.run import build, start
from hotloop.stats import MIN_RUNS
from hotloop.visible import visible

GATE_FAILED = 3                         # compare --fail-on: the gate found the change
GATE_BLIND = 4                          # compare --fail-on: a side it cannot judge (fails
                                        # closed unless --pass-unjudged)


def cmd_compare(args: argparse.Namespace) -> int:
    from hotloop.analysis.judge import gate
    from hotloop.analysis.sides import load_sides
    from hotloop.render import (  # scipy: only when comparing (0.8 s to import)
        compare_formats,
        compare_output,
        svg,
    )
    from hotloop.render.compare_formats.shared import gate_text
    for flag, given in (("--strict", args.strict), ("--pass-unjudged", args.pass_unjudged)):
        if given and args.fail_on is None:
            raise HotloopError(f"compare: {flag} needs --fail-on (worse, better or change)")
    if args.strict and args.pass_unjudged:
        raise HotloopError("compare: --strict and --pass-unjudged say opposite things")
    if args.strict:                     # its meaning is the default now
        print("hotloop: --strict is deprecated: --fail-on now exits 4 on a side it cannot "
              "judge unless --pass-unjudged; drop --strict", file=sys.stderr)
    if args.threshold is not None:      # before reading anything: a typo is not a pass
        if args.fail_on is None:
            raise HotloopError("compare: --threshold needs --fail-on (worse, better or change)")
        if not math.isfinite(args.threshold) or args.threshold < 0:
            raise HotloopError(f"compare: --threshold {args.threshold:g}: a change in %, 0 "
                               f"or more")
    if args.svg is not None:
        svg.check_target(args.svg)
    if args.format not in (*compare_formats.FORMATS, "mail"):
        raise HotloopError(f"compare: unknown format {args.format!r}")
    comps, out = compare_output.output(load_sides(args.files), [str(f) for f in args.files],
                                       args.format, args.noise, not args.unpaired,
                                       terminal_width(), args.svg, primary=args.metric)
    # every format escapes what it took from a file where it took it (render.layout.safe);
    # csv and json are data (json escapes control characters itself)
    print(out.rstrip("\n") if args.format == "mail" else out)
    if args.svg is not None:
        print(f"hotloop: the comparison as a picture: {visible(str(args.svg))}",
              file=sys.stderr)
    if args.fail_on is None:
        return 0
    from hotloop.analysis.judge import unjudged
    from hotloop.render import verdicts
    names = {id(m): " ".join(w for w in (v, p.new.name) if w)
             for v, comp in comps for p in comp.pairs for m in p.metrics}
    blind = [m for _, comp in comps for m in unjudged(comp)]
    if blind:                           # what the gate could not see: said either way
        how = "passed as asked (--pass-unjudged)" if args.pass_unjudged else "exit 4"
        print("hotloop: --fail-on: no verdict for " + "; ".join(
            f"{visible(names[id(m)])} ({verdicts.word(m)})" for m in blind) + f": {how}",
              file=sys.stderr)
    failed = [m for _, comp in comps for m in gate(comp, args.fail_on, args.threshold or 0.0)]
    if not failed:
        # A side the gate could not see is no pass (a found change still wins: it is what
        # the gate is for, and 3 says more than 4), unless the user asked to pass it.
        return GATE_BLIND if blind and not args.pass_unjudged else 0
    what = "; ".join(f"{names[id(m)]} {verdicts.word(m)}: {m.metric} "
                     f"{gate_text(m)}" for m in failed)
    limit = f", beyond {args.threshold:g}%" if args.threshold else ""
    print(f"hotloop: --fail-on {args.fail_on}{limit}: {visible(what)}", file=sys.stderr)
    return GATE_FAILED


def cmd_run(args: argparse.Namespace) -> int:
    cat = _catalog(args, warn=False)
    if args.sessions is not None:      # a series: here only (run.series_run)
        from hotloop.cli.series import run_series
        return run_series(cat, args)
    return run_on_hosts(cat, args) if args.host else run_here(cat, args)


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
            print(f"hotloop: warning: {visible(note)}", file=sys.stderr)
        profile = noise.estimate(sessions)
        print(calibration.report(profile, noise.save(profile)))
        return 0
    if len(args.names) > 1:
        raise HotloopError("calibrate: one plan at a time")
    cat = _catalog(args, warn=False)
    if args.host:                       # an unknown name: one line, before anything is made
        hosts_named(cat, [args.host])
    plan = plan_to_run(cat, args, cat.plan_for(args.names[0]), args.cpu, args.param,
                       args.kernel)
    # the sessions are for their numbers: no perf data kept; each in a new directory
    chosen = start.Choices(apply_system=args.apply_system, keep_perf=False, on_exists="refuse")
    if args.host:                       # that machine's hotloop fits the plan to it
        cat.resolve(plan, here=False)
        return _calibrate_there(cat, args, plan, chosen)
    # here: a series of one kernel (run --sessions N), in a directory made the same way
    from hotloop.cli import series as series_cli
    return series_cli.calibrate_here(cat, args, plan, chosen)


def _calibrate_there(cat: catalog.Catalog, args: argparse.Namespace, plan: Plan,
                     chosen: start.Choices) -> int:
    """`calibrate PLAN --host NAME`: its sessions one after another there."""
    from hotloop.analysis import noise
    from hotloop.render import calibration
    from hotloop.run import calibrate
    where = calibrate.new_directory(f"{plan.name}-{args.host}")
    sessions_run = calibration_sessions(cat, args, plan, where, chosen)
    _warn_skipped(cat)
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
        last = asyncio.run(_run_sessions(sessions_run, "text", False, args.gap, observe))
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
            vm = f"  (boots {k.image} in a VM)" if k.image else ""
            print(f"  {k.name:<16} label {k.label!r:<20} {visible(k.summary)}{visible(vm)}"
                  .rstrip())
            if k.sysctl:                # what it sets, whatever its label says, and whose
                sets = ", ".join(f"{key} = {value}" for key, value in k.sysctl.items())
                print(f"      sets {visible(sets)} (from {visible(k.origin)})")
    if what in (None, "plans"):
        measured = last_measured(set(cat.plans))
        print("plans")
        for plan in cat.plans.values():
            print(f"  {plan.name:<18} {plan.workload:<12} {visible(plan.summary)}".rstrip())
            print(f"  {'':<18} {plan_duration(plan, len(cat.variants(plan)), measured.get(plan.name))}")
    if what == "hosts" or what is None and cat.hosts:
        print("hosts")
        for h in cat.hosts.values():
            who = f"{h.user}@" if h.user else ""
            print(f"  {h.name:<16} {visible(who + h.address):<24} "
                  f"{visible(h.label or h.summary)}".rstrip())
    return 0


RECENT = 200                            # result files `list plans` looks through, newest first


def last_measured(plans: set[str], directory: Path = paths.RESULTS) -> dict[str, str]:
    """{plan: "~T each (last measured DATE, FILE)"}: the median time of a repetition's
    measured section in the newest result of each plan under `directory` (results/ here,
    where runs write them), for those that ran here."""
    out: dict[str, str] = {}
    for f, mtime in index.files(directory)[:RECENT]:
        if out.keys() >= plans:
            break
        name = index.plan_of(f)
        if name is None or name not in plans or name in out:
            continue
        try:
            runs = sorted(r.ns for r in results.read(f).runs)
        except HotloopError:
            continue
        if runs:
            when = time.strftime("%Y-%m-%d", time.localtime(mtime))
            out[name] = (f"~{si(runs[len(runs) // 2] / 1e9, 's')} each (last measured "
                         f"{when}, {visible(str(f))})")
    return out


def plan_duration(plan: Plan, variants: int = 1, measured: str | None = None) -> str:
    """How long a plan takes, as far as the catalogue knows: its repetitions (runs, plus a
    warmup in each worker process, per variant) times what one took the last time the plan
    ran here (`measured`, from its newest result), else "~?" rather than a guess, and the
    bound its timeout sets.  A summary may say more ("about 10 s")."""
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
    return (f"{runs}{warm}{procs}: {times} repetitions x {measured or '~? each'} (at most "
            f"{duration(total * plan.timeout)} at the {plan.timeout:g} s timeout)")


def cmd_doctor(args: argparse.Namespace) -> int:
    from hotloop.host import doctor
    from hotloop.perf import annotate, probe
    rows: list[tuple[str, bool, str]] = []
    try:
        rows.append(("compiler", True, build.compiler_version()))
    except HotloopError as e:
        rows.append(("compiler", False, str(e)))
    rows += [(c.name, c.available, c.detail) for c in doctor.capabilities()]
    rows += [(c.name, c.available, c.detail) for c in probe.capabilities()]
    kernel_code = annotate.kernel_code()
    rows.append((kernel_code.name, kernel_code.available, kernel_code.detail))
    cat = _catalog(args)
    bad = sum(s.warning.endswith("(file skipped)") for s in cat.skipped)
    rows.append(("profiles", not cat.skipped,
                 f"{len(cat.files)} files: {len(cat.workloads)} workloads, "
                 f"{len(cat.cpus)} cpu, {len(cat.kernels)} kernel, {len(cat.plans)} plans"
                 + (f"; {bad} bad file{'' if bad == 1 else 's'} and "
                    f"{len(cat.skipped) - bad} plan{'' if len(cat.skipped) - bad == 1 else 's'}"
                    " skipped (see above)" if cat.skipped else "")))
    # the VM rows: qemu, virtme-ng, KVM, each image's 9p
    rows += doctor.vm_rows({k.name: k.image for k in cat.kernels.values() if k.image})
    for name, ok, detail in rows:
        print(f"  {'yes' if ok else 'no '}  {name:<20} {visible(detail)}")
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
    """0 when everything is back (or nothing was changed); 1 when a value is still changed
    or its journal had to be set aside: the messages say which, for a look by hand."""
    before = recovery.left_behind()
    messages = recovery.recover()        # a live run's journal is its own: left in place, exit 1
    print("\n".join(visible(m) for m in messages) if messages else "nothing to restore")
    after = recovery.left_behind()
    return 1 if journal.journal_path() in after or after - before else 0


def cmd_completion(args: argparse.Namespace) -> int:
    if args.names:
        return complete_names(args.names, _profiles(args))
    if args.shell is None:
        raise HotloopError("completion: name the shell: bash or zsh "
                           "(source <(hotloop completion bash))")
    print(completion_script(args.shell))
    return 0


def _on_a_terminal() -> bool:
    """Whether stdin, stdout and stderr are all a terminal.  Textual reads keys from stdin
    and draws on stderr: from /dev/null it never ends (drawing into a file for ever), closed
    it fails with a traceback; stdout elsewhere is a script's, which wants `run`."""
    for f in (sys.__stdin__, sys.__stdout__, sys.__stderr__):
        try:
            if f is None or not os.isatty(f.fileno()):
                return False
        except (OSError, ValueError):       # closed, or its descriptor taken by another file
            return False
    return True


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
    # a broken installation first: it is what every command would say, terminal or not
    problem = paths.bundled_problem()   # one line, not an empty console
    if problem:
        raise HotloopError(problem)
    if not _on_a_terminal():
        raise HotloopError("the console needs a terminal (stdin, stdout and stderr); for "
                           "scripts use `hotloop run ...`")
    from hotloop.console.app import HotloopApp  # only the console needs Textual loaded
    app = HotloopApp(profiles=_profiles(args))
    app.run()
    return app.exit_status
