"""`hotloop show`: a result file's report (or its runs), or a directory's sessions' symbol
costs, in a format, and as an SVG picture when asked."""
from __future__ import annotations

import argparse
import json
import sys

from hotloop import results
from hotloop.errors import HotloopError
from hotloop.render import report
from hotloop.render.layout import terminal_width
from hotloop.visible import visible


def cmd_show(args: argparse.Namespace) -> int:
    from hotloop.render import svg  # rich: loaded by the commands that can draw, not by run
    if args.svg is not None:
        svg.check_target(args.svg)           # before reading anything
    if args.file.is_dir():                   # a side: its sessions' symbol costs
        return _show_side(args)
    result = results.read(args.file)
    _finish_unended([result])
    if args.format == "json":
        print(json.dumps(report.document(result), indent=2))
    elif args.format == "csv":
        sys.stdout.write(report.runs_csv(result))
    elif args.format == "mail":
        from hotloop.render import mail
        if args.runs:
            raise HotloopError("show: --runs lists every run in text; a mail holds the "
                               "summary and the histogram")
        sys.stdout.write(mail.show_mail(result))
    else:
        print(report.text(result, runs=args.runs, columns=terminal_width()))
    if args.svg is not None:
        svg.save(args.svg, svg.coloured(report.text(result, runs=args.runs,
                                                    columns=svg.WIDE)),
                 f"hotloop show {args.file.name}")
        print(f"hotloop: the report as a picture: {visible(str(args.svg))}", file=sys.stderr)
    return 0


def _finish_unended(read: list[results.Result]) -> None:
    """The perf data a killed session left plain, finished (compressed, within its budget),
    whatever state directory its entry is in: one line each on stderr."""
    from hotloop.results.perf_data import finish_unended
    for r in read:
        if r.partial and (line := finish_unended(r)):
            print(f"hotloop: {visible(line)}", file=sys.stderr)


def _show_side(args: argparse.Namespace) -> int:
    """`show DIR`: the per-symbol cost per op of a directory's sessions, with their spread."""
    from hotloop.analysis.sides import expand, mixed_builds
    from hotloop.analysis.symcost import side_cost
    from hotloop.render import svg, symbol_costs
    if args.format == "csv" or args.runs:
        raise HotloopError(f"show {args.file}: a directory shows its sessions' symbol costs; "
                           f"--format csv and --runs are for one result file")
    sessions = [results.read(p) for p in expand(str(args.file))]
    _finish_unended(sessions)
    side = side_cost(sessions)
    from hotloop.render import warning_words
    found = mixed_builds(sessions, str(args.file))      # its sessions ran other code: said
    builds = warning_words.words(found) if found else None
    if args.format == "json":
        print(json.dumps({**symbol_costs.cost_json(side), "warnings": [
            warning_words.document(found)] if found else []}, indent=2))
    if args.format == "mail":
        from hotloop.render import mail
        sys.stdout.write(mail.side_mail(sessions, side, str(args.file),
                                        [builds] if builds else []))

    def text(width: int) -> str:
        from hotloop.render.layout import safe, wrap
        said = ["", *wrap("warning: " + safe(builds), width, "  ", "")] if builds else []
        return "\n".join([symbol_costs.side_text(side, str(args.file), columns=width),
                          *said])
    if args.format == "text":
        print(text(terminal_width()))
    if args.svg is not None:
        svg.save(args.svg, svg.coloured(text(svg.WIDE)), f"hotloop show {args.file.name}")
        print(f"hotloop: the report as a picture: {visible(str(args.svg))}", file=sys.stderr)
    return 0
