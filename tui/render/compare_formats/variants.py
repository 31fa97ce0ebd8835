"""Before and after of several variants (analysis.matched) as one table, a row a variant: in
each unit (the primary metric, then cycles/op and ns/op where recorded) before, after and
diff, then the primary metric's % change, its interval and the verdict, as the page_pool
bench's org table has them.  Every format: text, mail, org, md, csv, json.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from hotloop.analysis.compare_warnings import CompareWarning, VariantUnmatched
from hotloop.analysis.comparison import MetricDelta
from hotloop.analysis.matched import Matched
from hotloop.render import verdicts
from hotloop.render.compare_formats.shared import ci, json_num
from hotloop.render.layout import UNBOUNDED, bound, safe, table, wrap
from hotloop.render.units import pct, plain
from hotloop.render.warning_words import about_the_sides, words
from hotloop.render.warning_words import document as warning_document
from hotloop.visible import csv_text

MAIL_WIDTH = 72
UNITS = ("cycles/op", "ns/op")          # after the primary metric, where recorded


def _rows(m: Matched, most: int = len(UNITS) + 1
          ) -> tuple[list[str], list[list[MetricDelta | None]]]:
    """The units (metrics) shown, `most` of them, and each variant's rows of them (the
    primary first)."""
    first = m.comparisons[0]
    names = [first.metric] + [u for u in UNITS if u != first.metric]
    per = []
    for c in m.comparisons:
        rows = {d.metric: d for d in c.pairs[0].metrics}
        per.append([rows.get(n) for n in names])
    shown = [i for i, n in enumerate(names) if any(r[i] is not None for r in per)][:most]
    return [names[i] for i in shown], [[r[i] for i in shown] for r in per]


def _cells(d: MetricDelta | None) -> list[str]:
    if d is None:
        return ["", "", ""]
    t = d.test
    return [plain(t.baseline), plain(t.new), plain(t.diff, signed=True)]


def _change(d: MetricDelta | None) -> str:
    return "" if d is None or d.test.change_pct is None else pct(d.test.change_pct)


def _names(variants: list[str]) -> tuple[str, list[str]]:
    """("mode", ["fast_path", "slow"]) where every variant sets one key, as the page_pool
    table names its tests; else ("variant", the names)."""
    parts = [v.partition("=") for v in variants]
    keys = {k for k, eq, _ in parts if eq}
    if len(keys) == 1 and all(eq and " " not in val for _, eq, val in parts):
        return safe(keys.pop()), [safe(val) for _, _, val in parts]
    return "variant", [safe(v) for v in variants]


def _grid(m: Matched, most: int = len(UNITS) + 1
          ) -> tuple[list[str], list[str], list[list[str]], list[MetricDelta | None]]:
    """(group header, column header, rows, each row's primary), in `most` units."""
    units, per = _rows(m, most)
    key, names = _names(m.variants)
    top = [key] + [w for u in units for w in (safe(u), "", "")] + ["%", "", ""]
    head = ["", *(["before", "after", "diff"] * len(units)), "change", "95% CI", "verdict"]
    rows = []
    for v, ds in zip(names, per):
        prim = ds[0]
        rows.append([v, *(c for d in ds for c in _cells(d)), _change(prim),
                     ci(prim.test) if prim else "", verdicts.word(prim, short=True)
                     if prim else ""])
    return top, head, rows, [ds[0] for ds in per]


def _title(m: Matched) -> str:
    c = m.comparisons[0]
    return (f"{safe(c.workload)}: before {safe(m.before)}, after {safe(m.after)}, "
            f"{len(m.variants)} variants matched by name")


def _warnings(m: Matched) -> list[tuple[str | None, CompareWarning]]:
    """The matching's warnings, then every variant's comparison's with its variant (a
    warning of the pair compared alone is one of its row here)."""
    return [(None, w) for w in m.warnings] + [(v, w) for v, c in zip(m.variants, m.comparisons)
                                              for w in c.warnings]


def _said(variant: str | None, w: CompareWarning) -> str:
    """A warning's sentence, named by its variant where it is one variant's."""
    return words(w) if variant is None else f"{variant}: {words(w)}"


def _notes(m: Matched, brief: bool = False) -> list[str]:
    """What is said under the table; `brief` (mail): what a reviewer must know, that the
    sides differ in more than the change, as compare's mail keeps."""
    return [safe(_said(v, w)) for v, w in _warnings(m)
            if not brief or isinstance(w, VariantUnmatched) or about_the_sides(w)]


def render_text(m: Matched, width: int | None = None) -> str:
    width = UNBOUNDED if width is None else width
    lines = wrap(_title(m), width, "  ", "")
    # narrower than the terminal: the interval goes first, then the diffs, then the units
    # after the primary (ns/op, cycles/op), the verdict last
    for most in range(len(UNITS) + 1, 0, -1):
        top, head, rows, _ = _grid(m, most)
        n = len(top)
        diffs = list(range(3, n - 3, 3))
        # the verdict is cut only where one unit is left and it still does not fit
        body = table([top, head, *rows], right=set(range(1, n - 2)), width=width,
                     drop=(n - 2, *diffs), squeeze=(0,) if most > 1 else (0, n - 1),
                     least=10)
        if max(map(len, body)) <= width:
            break
    lines += body
    for note in _notes(m):
        lines += wrap(note, width, "  ", "note: ")
    return "\n".join(bound(lines, width))


def render_mail(m: Matched, reproduce: list[str], measured: list[str]) -> str:
    """72 columns: a row a variant in two units (the primary, then cycles/op or ns/op), its
    interval and verdict under it."""
    top, head, rows, prims = _grid(m, most=2)
    body = table([r[:-2] for r in (top, head, *rows)], right=set(range(1, len(top) - 2)),
                 width=MAIL_WIDTH, drop=list(range(len(top) - 4, 0, -3)), squeeze=(0,),
                 least=10)
    out = wrap(f"hotloop compare: {_title(m)}", MAIL_WIDTH, "  ", "")
    out += [""] + measured + ["", *body[:2], "  " + "-" * (MAIL_WIDTH - 2)]
    for line, r, d in zip(body[2:], rows, prims):
        out.append(line)
        if d is not None:
            out += wrap(f"95% CI {r[-2]}: {verdicts.word(d)}", MAIL_WIDTH, " " * 8, " " * 6)
    for note in _notes(m, brief=True):
        out += [""] + wrap(note, MAIL_WIDTH, "  ", "note: ")
    out += ["", "reproduce (each side):"] + [f"  {ln}" for ln in reproduce]
    return "\n".join(bound(out, MAIL_WIDTH)) + "\n"


def _org(text: str) -> str:
    return text.replace("|", "\\vert{}")


def render_org(m: Matched) -> str:
    top, head, rows, _ = _grid(m)
    cells = [[_org(c) for c in r] for r in (top, head, *rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(top))]
    rule = "|" + "+".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.rjust(w) if k and i > 1 else c.ljust(w)
                              for i, (c, w) in enumerate(zip(r, widths))) + " |"
            for k, r in enumerate(cells)]
    out = [f"#+CAPTION: {_org(_title(m))}"] + body[:2] + [rule] + body[2:]
    for note in _notes(m):
        out += wrap(note, len(rule), "#   ", "# note: ")
    return "\n".join(out) + "\n"


def render_md(m: Matched) -> str:
    top, head, rows, _ = _grid(m)
    names = [" ".join(w for w in (t, h) if w) for t, h in
             zip([t or prev for t, prev in zip(top, _carry(top))], head)]
    esc = [[c.replace("|", "\\|") for c in r] for r in ([names] + rows)]
    out = [f"**{_title(m).replace('|', chr(92) + '|')}**", "",
           "| " + " | ".join(esc[0]) + " |",
           "|---|" + "---:|" * (len(top) - 3) + "---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in esc[1:]]
    notes = _notes(m)
    if notes:
        out += [""] + [f"> note: {n.replace('|', chr(92) + '|')}" for n in notes]
    return "\n".join(out) + "\n"


def _carry(top: list[str]) -> list[str]:
    """Each group header carried over its columns (for md's one header row)."""
    out, last = [], ""
    for t in top:
        last = t or last
        out.append(last)
    return out


def document(m: Matched) -> dict[str, Any]:
    units, per = _rows(m)
    return {"before": m.before, "after": m.after, "units": units,
            "variants": [{"variant": v, "rows": [None if d is None else {
                "metric": d.metric, "unit": d.unit, "before": json_num(d.test.baseline),
                "after": json_num(d.test.new), "diff": json_num(d.test.diff),
                "change_pct": json_num(d.test.change_pct),
                "ci_low": json_num(d.test.ci_low), "ci_high": json_num(d.test.ci_high),
                "verdict": verdicts.word(d), "primary": d.primary} for d in ds]}
                for v, ds in zip(m.variants, per)],
            "warnings": [warning_document(w, text=_said(v, w), variant=v)
                         for v, w in _warnings(m)]}


def render_json(m: Matched) -> str:
    return json.dumps(document(m), indent=2, allow_nan=False)


def render_csv(m: Matched) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["variant", "metric", "unit", "before", "after", "diff", "change_pct",
                "ci_low", "ci_high", "verdict"])
    units, per = _rows(m)
    for v, ds in zip(m.variants, per):
        for d in ds:
            if d is not None:
                t = d.test
                w.writerow([csv_text(v), csv_text(d.metric), csv_text(d.unit), t.baseline,
                            t.new, t.diff, "" if t.change_pct is None else t.change_pct,
                            "" if t.ci_low is None else t.ci_low,
                            "" if t.ci_high is None else t.ci_high, verdicts.word(d)])
    return buf.getvalue()


def render(m: Matched, fmt: str, width: int | None = None) -> str:
    if fmt == "text":
        return render_text(m, width)
    return {"org": render_org, "md": render_md, "csv": render_csv,
            "json": render_json}[fmt](m)

