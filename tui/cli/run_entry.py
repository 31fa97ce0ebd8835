"""`hotloop run`'s entry: the plan run here (cli.run), on hosts (cli.hosts) or as a series
(cli.series)."""
from __future__ import annotations

import argparse

from hotloop.cli.common import load_catalog
from hotloop.cli.run import run_here


def cmd_run(args: argparse.Namespace) -> int:
    cat = load_catalog(args, warn=False)
    if args.sessions is not None:      # a series: here only (run.series_run)
        from hotloop.cli.series import run_series
        return run_series(cat, args)
    if args.host:                       # ssh, a wheel to send: not a local run's (a guest's)
        from hotloop.cli.hosts import run_on_hosts
        return run_on_hosts(cat, args)
    return run_here(cat, args)
