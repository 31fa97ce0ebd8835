"""A comparison as an Org table."""
from __future__ import annotations

from hotloop.analysis.compare import TOP_SYMBOLS
from hotloop.analysis.comparison import Comparison, Pair
from hotloop.render import verdicts
from hotloop.render.compare_formats import symbols as sym
from hotloop.render.compare_formats.shared import better_way, noise_line, notes, result_cell, shown_p
from hotloop.render.units import plain
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
              *sym.cells(d, cost)] for d in p.symbols[:TOP_SYMBOLS]]
    out = ["", f"#+CAPTION: {visible(sym.title(p, TOP_SYMBOLS))}"] + _org_table(rows, [1])
    if cost:
        out.append(f"# change explained: {visible(sym.explained_line(p))}")
        out += [f"# note: {visible(n)}" for n in sym.notes(p)]
    return out


def render_org(comp: Comparison) -> str:
    lines = [f"#+CAPTION: {visible(comp.workload)} {visible(comp.metric)} "
             f"({better_way(comp.higher_is_better)}), "
             f"baseline {visible(comp.baseline.name)} ({visible(comp.baseline.file)})"]
    if comp.single:
        s = comp.baseline.summary
        rows = [["result", "unit", "n", "median", "mean", "stdev", "CV %", "min", "max"]]
        if s:
            rows.append([result_cell(comp.baseline), comp.unit, str(s.n), plain(s.median),
                         plain(s.mean), plain(s.stdev), f"{100 * s.cv:.2f}", plain(s.min),
                         plain(s.max)])
        lines += _org_table(rows, [1])
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
        lines += _org_table(rows, groups)
        if noise_line(comp):
            lines.append(f"# {noise_line(comp)}")
        for p in comp.pairs:
            lines += _symbols(p)
    lines += [f"# note: {visible(n)}" for n in notes(comp)]
    lines += [f"# warning: {visible(w)}" for w in comp.warnings]
    return "\n".join(lines) + "\n"
