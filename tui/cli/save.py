"""`hotloop save`: a plan from the command line's keys, written to the user's profiles."""
from __future__ import annotations

import argparse

from hotloop import catalog
from hotloop.catalog import Plan
from hotloop.cli.common import load_catalog, warn_skipped
from hotloop.cli.run import parse_params


def cmd_save(args: argparse.Namespace) -> int:
    cat = load_catalog(args, warn=False)
    cat.check_skipped("plan", args.name)    # saved beside a broken one: defined twice
    cat.require("cpu", args.cpu, "--cpu")
    cat.require("kernel", args.kernel, "--kernel")
    plan = Plan(name=args.name, workload=args.workload, cpu=args.cpu, kernel=args.kernel,
                runs=args.runs, warmup=args.warmup, perf=args.perf, summary=args.summary,
                processes=args.processes, params=parse_params(cat, args.workload, args.param))
    warn_skipped(cat)
    path = catalog.save_plan(plan, overwrite=args.force, cat=cat)
    print(f"saved plan {plan.name} to {path}")
    return 0
