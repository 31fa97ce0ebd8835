"""`hotloop annotate`: a hot symbol's instructions from a result's kept perf data, or the
same symbol of two results side by side."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hotloop import results
from hotloop.catalog.loader import did_you_mean
from hotloop.errors import HotloopError
from hotloop.perf.annotate import Annotation, KernelCodeMissing, no_kernel_code
from hotloop.render import annotation
from hotloop.results import Result
from hotloop.results.annotating import annotate_symbol as _annotate
from hotloop.results.annotating import perf_files
from hotloop.visible import visible


def hottest(res: Result) -> list[str]:
    return [s.symbol for s in res.session_symbols.symbols] if res.session_symbols else []


def check_symbol(res: Result, symbol: str) -> None:
    """A symbol the run sampled, or one line with the nearest names."""
    known = hottest(res)
    if symbol not in known:
        near = did_you_mean(symbol, known).removeprefix("; ").rstrip("?")
        raise HotloopError(f"{res.path}: no samples of {symbol!r} among the run's "
                           f"{len(known)} hottest symbols"
                           + (f"; {near}?" if near else "")
                           + (f" (hottest: {', '.join(known[:5])})" if known else ""))


def _one(res: Result, symbol: str, vmlinux: str | None) -> Annotation:
    files = perf_files(res)
    check_symbol(res, symbol)
    return _annotate(res, files, symbol, vmlinux)


def cmd_annotate(args: argparse.Namespace) -> int:
    names = list(args.what)
    files = [Path(n) for n in names if n.endswith(".jsonl") or Path(n).is_file()]
    symbols = [n for n in names if Path(n) not in files]
    if not files or len(files) > 2 or len(symbols) > 1:
        raise HotloopError("annotate: give one or two result files and a symbol "
                           "(or --top N)")
    if symbols and args.top:
        raise HotloopError("annotate: a symbol or --top N, not both")
    if not symbols and not args.top:
        raise HotloopError("annotate: which symbol? name one, or --top N for the hottest")
    runs = [results.read(f) for f in files]
    vmlinux = str(args.vmlinux) if args.vmlinux else None
    if len(runs) == 2:
        if not symbols:
            raise HotloopError("annotate: two results are compared on one symbol: name it")
        a, b = (_one(r, symbols[0], vmlinux) for r in runs)
        print(annotation.dumps(annotation.pair_document(a, b)) if args.format == "json" else
              annotation.side_by_side(a, b, (str(files[0]), str(files[1]))))
        return 0
    res = runs[0]
    if symbols:
        a = _one(res, symbols[0], vmlinux)
        print(annotation.dumps(annotation.document(a)) if args.format == "json" else
              annotation.text(a, by_share=args.sort != "address"))
        return 0
    kept = perf_files(res)
    done: list[Annotation] = []
    missing: list[str] = []
    skipped: list[str] = []
    for symbol in hottest(res)[:args.top]:
        try:
            done.append(_annotate(res, kept, symbol, vmlinux))
        except KernelCodeMissing:
            missing.append(symbol)
        except HotloopError as e:       # an address perf cannot name, a rebuilt binary:
            print(f"hotloop: {visible(str(e))}", file=sys.stderr)   # the others go on
            skipped.append(symbol)
    if missing:
        print(f"hotloop: kernel symbols not annotated ({visible(', '.join(missing))}): "
              f"{no_kernel_code()}", file=sys.stderr)
    missing += skipped
    if not done:
        raise HotloopError(f"none of the {args.top} hottest symbols could be annotated "
                           f"({', '.join(missing)})")
    if args.format == "json":
        print(annotation.dumps([annotation.document(a) for a in done]))
    else:
        print("\n\n".join(annotation.text(a, by_share=args.sort != "address") for a in done))
    return 0
