"""A comparison as an Org table."""
from __future__ import annotations

from hotloop.analysis.compare import TOP_SYMBOLS
from hotloop.analysis.comparison import Comparison, Pair
from hotloop.render import verdicts
from hotloop.render.compare_formats import symbols as sym
from hotloop.render.compare_formats.shared import better_way, noise_line, notes, result_cell, shown_p
from hotloop.render.layout import wrap
from hotloop.render.units import plain
from hotloop.render.warning_words import words
from hotloop.visible import visible


def _org(text: str) -> str:
    """The same for org, whose cells cannot escape a bar but take the entity \\vert{}."""
    return visible(text).replace("|", "\\vert{}")


ORG_HEAD = ["result", "sessions", "metric", "unit", "baseline", "new", "diff", "% change",
            "CI low", "CI high", "p", "verdict"]


def _org_table(rows: list[list[str]], groups: list[int]) -> list[str]:
    """Aligned org table; a `|-+-|` rule after the header and before each group start."""
    rows = [[_org(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    rule = "|" + "+".join("-" * (w + 2) for w in widths) + "|"
    out = []
    for k, r in enumerate(rows):
        if k in groups:
            out.append(rule)
        out.append("| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(r)) + " |")
    return out


def _symbols(p: Pair) -> list[str]:
    """The pair's differential profile as a table of its own, the change explained under it."""
    if not p.symbols:
        return []
    cost = sym.costed(p)
    rows = [sym.COST_HEAD if cost else sym.SHARE_HEAD]
    rows += [[d.symbol + (f" ({', '.join(d.names)})" if d.merged else ""), d.dso,
              *sym.cells(d, cost)] for d in p.symbols[:TOP_SYMBOLS]]    # json: every row
    table = _org_table(rows, [1])
    width = len(table[0])
    title = visible(sym.title(p, TOP_SYMBOLS))
    head, _, rest = title.partition(": ")
    out = ["", *wrap(head, width, "#   ", "#+CAPTION: ")]
    if rest:
        out += wrap(rest, width, "#   ", "# ")
    out += table
    if cost:
        out += wrap(visible(sym.explained_line(p)), width, "#   ", "# change explained: ")
        for n in sym.notes(p):
            out += wrap(visible(n), width, "#   ", "# note: ")
    return out


def render_org(comp: Comparison) -> str:
    """One table a block, every comment and caption wrapped to its table's width: the
    caption names the workload and metric, a comment under it the baseline."""
    lines = [f"#+CAPTION: {visible(comp.workload)} {visible(comp.metric)} "
             f"({better_way(comp.higher_is_better)})"]
    baseline = f"baseline {visible(comp.baseline.name)} ({visible(comp.baseline.file)})"
    if comp.single:
        s = comp.baseline.summary
        rows = [["result", "unit", "n", "median", "mean", "stdev", "CV %", "min", "max"]]
        if s:
            rows.append([result_cell(comp.baseline), comp.unit, str(s.n), plain(s.median),
                         plain(s.mean), plain(s.stdev), f"{100 * s.cv:.2f}", plain(s.min),
                         plain(s.max)])
        table = _org_table(rows, [1])
        lines += wrap(baseline, len(table[0]), "#   ", "# ") + table
    else:
        rows = [ORG_HEAD]
        groups = []
        for p in comp.pairs:
            groups.append(len(rows))
            for m in p.metrics:
                t = m.test
                rows.append([result_cell(p.new), f"{t.sessions_baseline}/{t.sessions_new}",
                             m.metric, m.unit, plain(t.baseline),
                             plain(t.new), plain(t.diff, signed=True),
                             "" if t.change_pct is None else f"{t.change_pct:.2f}",
                             "" if t.ci_low is None else f"{t.ci_low:.2f}",
                             "" if t.ci_high is None else f"{t.ci_high:.2f}",
                             shown_p(m) if t.p_value is not None else "",
                             verdicts.word(m)])
        table = _org_table(rows, groups)
        lines += wrap(baseline, len(table[0]), "#   ", "# ") + table
        if noise_line(comp):
            lines += wrap(visible(noise_line(comp)), len(table[0]), "#   ", "# ")
        for p in comp.pairs:
            lines += _symbols(p)
    width = max(len(ln) for ln in lines if ln.startswith("|"))
    for n in notes(comp):
        lines += wrap(visible(n), width, "#   ", "# note: ")
    for w in comp.warnings:
        lines += wrap(visible(words(w)), width, "#   ", "# warning: ")
    return "\n".join(lines) + "\n"
