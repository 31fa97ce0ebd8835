"""`hotloop run`'s entry: the plan run here (cli.run), on hosts (cli.hosts) or as a series
(cli.series)."""
from __future__ import annotations

import argparse

from hotloop.cli.common import load_catalog
from hotloop.cli.hosts import run_on_hosts
from hotloop.cli.run import run_here


def cmd_run(args: argparse.Namespace) -> int:
    cat = load_catalog(args, warn=False)
    if args.sessions is not None:      # a series: here only (run.launch)
        from hotloop.cli.series import run_series
        return run_series(cat, args)
    return run_on_hosts(cat, args) if args.host else run_here(cat, args)
