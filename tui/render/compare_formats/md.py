"""A comparison as a Markdown table."""
from __future__ import annotations

from hotloop.analysis.compare import TOP_SYMBOLS
from hotloop.analysis.comparison import Comparison, Pair
from hotloop.render.compare_formats import symbols as sym
from hotloop.render.compare_formats.shared import HEAD, better_way, noise_line, notes, result_cell, text_rows
from hotloop.render.layout import wrap
from hotloop.render.units import si
from hotloop.render.warning_words import words
from hotloop.visible import visible


def _md(text: str) -> str:
    """Text from a file in a md table or line: one line, a bar its own (not a new cell)."""
    return visible(text).replace("|", "\\|")


def _symbols(p: Pair) -> list[str]:
    """The pair's differential profile: a row a symbol (its names in it), the change
    explained under the table."""
    if not p.symbols:
        return []
    cost = sym.costed(p)
    head = sym.COST_HEAD if cost else sym.SHARE_HEAD
    table = ["| " + " | ".join(head) + " |",
             "|---|---|" + "---:|" * (len(head) - 3) + "---|"]
    for d in p.symbols[:TOP_SYMBOLS]:          # the json holds every row
        name = f"`{_md(d.symbol)}`" + (f" ({_md(', '.join(d.names))})" if d.merged else "")
        cells = sym.cells(d, cost)
        if d.significant:
            cells[-1] = f"**{cells[-1]}**"
        table.append("| " + " | ".join([name, _md(d.dso), *map(_md, cells)]) + " |")
    width = max(map(len, table))
    # a paragraph (and a quote: its lines go on lazily) is one however its lines break:
    # wrapped to the table
    out = ["", *wrap(f"**{_md(sym.title(p, TOP_SYMBOLS))}**", width), "", *table]
    if cost:
        out += ["", *wrap(f"change explained: {_md(sym.explained_line(p))}", width)]
        for n in sym.notes(p):
            out += wrap(_md(n), width, "  ", "> note: ")
    return out


def render_md(comp: Comparison) -> str:
    """A table a block; the paragraphs and notes around them wrapped to the widest table."""
    title = (f"**{_md(comp.workload)}** {_md(comp.metric)} "
             f"({better_way(comp.higher_is_better)}); "
             f"baseline: `{_md(comp.baseline.name)}` ({_md(comp.baseline.file)})")
    lines = ["", ""]
    if comp.single:
        s = comp.baseline.summary
        lines += ["| result | n | median | mean | stdev | CV | min | max |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        if s:
            u = comp.unit
            lines.append(f"| {_md(result_cell(comp.baseline))} | {s.n} | {si(s.median, u)} | "
                         f"{si(s.mean, u)} | {si(s.stdev, u)} | {100 * s.cv:.2f}% | "
                         f"{si(s.min, u)} | {si(s.max, u)} |")
    else:
        lines += ["| result | sessions | " + " | ".join(HEAD) + " |",
                  "|---|---:|---|---:|---:|---:|---:|---|---:|---|"]
        for p in comp.pairs:
            k = f"{p.baseline.sessions} vs {p.new.sessions}"
            for m, row in zip(p.metrics, text_rows(p)[1:]):
                verdict = f"**{row[-1]}**" if m.test.verdict.called else row[-1]
                lines.append("| " + " | ".join(_md(c) for c in [result_cell(p.new), k]
                                               + row[:-1] + [verdict]) + " |")
        width = max(len(ln) for ln in lines if ln.startswith("|"))
        if noise_line(comp):
            lines += ["", *wrap(_md(noise_line(comp)), width)]
        for p in comp.pairs:
            lines += _symbols(p)
    width = max(len(ln) for ln in lines if ln.startswith("|"))
    lines[:1] = wrap(title, width)
    if comp.warnings or notes(comp):
        lines.append("")
        for n in notes(comp):
            lines += wrap(_md(n), width, "  ", "> note: ")
        for w in comp.warnings:
            lines += wrap(_md(words(w)), width, "  ", "> warning: ")
    return "\n".join(lines) + "\n"
