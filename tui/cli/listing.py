"""`hotloop list`: the catalogue's workloads, CPU and kernel profiles, plans (with what one
takes) and hosts."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from hotloop import paths, results
from hotloop.catalog import Plan
from hotloop.cli.common import load_catalog
from hotloop.errors import HotloopError
from hotloop.render.units import duration, si
from hotloop.results import index
from hotloop.visible import visible


def cmd_list(args: argparse.Namespace) -> int:
    cat = load_catalog(args)
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
