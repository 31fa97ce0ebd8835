"""`hotloop compare`: result files or directories compared, in a format, with --fail-on's
gate as the exit status."""
from __future__ import annotations

import argparse
import math
import sys

from hotloop.errors import HotloopError
from hotloop.render.layout import terminal_width
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
