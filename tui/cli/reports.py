"""What a run prints at its end, on stdout: each variant's report, then the batch's
comparison, in the format asked (the events were the output as they came)."""
from __future__ import annotations

import json
import sys
from collections.abc import Sized
from typing import Any

from hotloop import results
from hotloop.errors import HotloopError
from hotloop.render import report
from hotloop.render.layout import terminal_width
from hotloop.visible import visible, visible_lines


def print_reports(todo: Sized, done: list[results.Result], fmt: str,
                   metric: str | None = None) -> None:
    """Each variant's report, then the batch's comparison (on stdout).  The warnings were
    shown as they came (on stderr, once a batch): the text reports leave them out.  Events
    were the output, as they came."""
    if fmt == "events":
        return
    if fmt == "mail":
        _print_mail(todo, done, metric)
        return
    comparison = _batch_comparison(done, metric) if len(todo) > 1 else None
    if fmt == "json":
        docs = [report.document(r) for r in done]
        doc: dict[str, Any] = docs[0] if len(todo) == 1 else {
            "results": docs, "comparison": comparison[1] if comparison else None}
        print(json.dumps(doc, indent=2))
    else:
        print("\n\n".join(report.text(r, warnings=False, columns=terminal_width())
                           for r in done))
        if comparison:
            print("\n" + visible_lines(comparison[0]))


def _print_mail(todo: Sized, done: list[results.Result], metric: str | None) -> None:
    """--format mail: one run's report, or the batch's comparison, in 72 columns."""
    from hotloop.render import mail
    sys.stdout.write(mail.run_mail(done, batch=len(todo) > 1, primary=metric))


def _batch_comparison(done: list[results.Result],
                      metric: str | None = None) -> tuple[str, dict[str, Any]] | None:
    """The batch's comparison as (text, json's document), or None when it cannot be compared; `metric`
    its primary one (--metric; default the workload's)."""
    if len(done) < 2:
        return None
    from hotloop.analysis import compare, matched  # scipy: only when comparing (0.8 s)
    from hotloop.render import compare_formats
    from hotloop.render.compare_formats import variants
    try:
        # a plan's variants on two kernels: each variant before and after, a row each
        pairs = matched.split_by_kernel(done, metric)
        if pairs is not None:
            return (variants.render_text(pairs, terminal_width()),
                    variants.document(pairs))
        comp = compare.compare_sides([[r] for r in done], batch=True, primary=metric)
    except HotloopError as e:
        print(f"hotloop: no comparison: {visible(str(e))}", file=sys.stderr)
        return None
    return (compare_formats.render(comp, "text", width=terminal_width()),
            compare_formats.document(comp))
