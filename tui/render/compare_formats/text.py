"""A comparison as text: the terminal's tables (compare's default format), every line within
the terminal's width (render.layout: wide tables give up their least important columns
first, notes wrap), every string from a file escaped where it enters a line."""
from __future__ import annotations

from hotloop.analysis.compare import TOP_SYMBOLS
from hotloop.analysis.compare_warnings import DiffersBeyondKernel
from hotloop.analysis.comparison import Comparison, Pair, Side, meta_text
from hotloop.render import verdicts
from hotloop.render.compare_formats import symbols as sym
from hotloop.render.compare_formats.shared import PAIRED_NOTE, better_way, noise_line, stat_notes, text_rows
from hotloop.render.histograms import side_rows
from hotloop.render.layout import UNBOUNDED, bound, safe, table, wrap
from hotloop.render.units import si
from hotloop.render.warning_words import words

# Wider than the terminal, a table gives these up first (columns by number), then cuts these.
METRIC_DROP = (6, 3, 5)                 # p, diff, the interval: the verdict stays
METRIC_SQUEEZE = (0, 7)                 # the metric's name, then the verdict's words
SYMBOL_DROP = (1, 7, 6, 5)              # dso, q, p, the interval: the verdict stays
SYMBOL_SQUEEZE = (0, 8)                 # the symbol's name, the verdict
SHARE_DROP = (1,)


def _runs_text(s: Side) -> str:
    runs = f"{s.runs} run{'s' * (s.runs != 1)}"
    return runs if s.sessions == 1 else f"{s.sessions} sessions, {runs}"


def _side_line(s: Side, baseline: bool) -> str:
    tag = "baseline" if baseline else f"[{s.index}]"
    line = (f"{tag:<8}  {s.name}  label {s.label or '-'}  kernel {s.kernel}  "
            f"{_runs_text(s)}  {safe(s.file)}")
    return line + ("  PARTIAL" if s.partial else "")


def _method_text(p: Pair) -> str:
    first = next((m.test for m in p.metrics if m.primary), None)
    if p.method == "sessions" and first is not None and first.boots not in ("", "one boot"):
        return f"boots as replicates ({first.boots_baseline} vs {first.boots_new})"
    return {"paired": "paired rounds (interleaved)", "exact": "identical",
            "sessions": "sessions as replicates", "none": "no test",
            "pairs": "paired sessions of one series"}.get(p.method, p.method)


def _summary_lines(comp: Comparison, width: int) -> list[str]:
    s = comp.baseline.summary
    if s is None:
        return ["  no runs"]
    u = comp.unit
    return wrap(f"n {s.n}   median {si(s.median, u)}   mean {si(s.mean, u)}   "
                f"stdev {si(s.stdev, u)}   CV {100 * s.cv:.2f}%   "
                f"min {si(s.min, u)}   max {si(s.max, u)}", width, "  ")


def _metric_table(p: Pair, width: int) -> list[str]:
    """The pair's metric rows; the verdicts' long words where they fit, else the short."""
    rows = [[safe(c) for c in r] for r in text_rows(p)]
    out = table(rows, right={1, 2, 3, 4, 6})
    if max(map(len, out)) <= width:
        return out
    short = [rows[0]] + [r[:-1] + [verdicts.word(m, short=True)]
                         for r, m in zip(rows[1:], p.metrics)]
    return table(short, right={1, 2, 3, 4, 6}, width=width, drop=METRIC_DROP,
                 squeeze=METRIC_SQUEEZE)


def _symbol_table(p: Pair, width: int) -> list[str]:
    """A pair's symbol rows, each merged row's names under it, then the change explained."""
    cost = sym.costed(p)
    rows = [sym.COST_HEAD if cost else sym.SHARE_HEAD]
    for d in (p.symbols or [])[:TOP_SYMBOLS]:      # the json holds every row
        held = f" ({len(d.names)} names)" if d.merged else ""
        rows.append([f"[{'k' if d.kernel else '.'}] {safe(d.symbol)}{held}", safe(d.dso),
                     *(safe(c) for c in sym.cells(d, cost))])
        # a function's clones, added up in the row above: a line a name, under it
        rows += [[f"      {safe(name)}"] + [""] * (len(rows[0]) - 1)
                 for name in d.names if d.merged]
    out = table(rows, right={2, 3, 4, 6, 7} if cost else {2, 3, 4}, width=width,
                drop=SYMBOL_DROP if cost else SHARE_DROP,
                squeeze=SYMBOL_SQUEEZE if cost else (0,), least=16)
    if cost:
        out += wrap(safe(sym.explained_line(p)), width, "    ", "  change explained: ")
        for n in sym.notes(p):
            out += wrap(safe(n), width, "    ", "  note: ")
    return out


def render_text(comp: Comparison, width: int | None = None) -> str:
    """The comparison in lines of at most `width` columns (None: as long as they come; the
    command line gives the terminal's width, layout.terminal_width)."""
    width = UNBOUNDED if width is None else width
    lines = wrap(f"compare {safe(comp.workload)}: {safe(comp.metric)} "
                 f"({better_way(comp.higher_is_better)}), baseline = the first side", width,
                 "  ", "")
    for s in comp.sides:
        lines += wrap(_side_line(s, s.index == 0), width, "            ", "  ")
    if comp.single:
        lines += ["", "one file only: its summary"] + _summary_lines(comp, width)
    if comp.pairs and noise_line(comp):
        lines += wrap(safe(noise_line(comp)), width, "  ", "")
    for p in comp.pairs:
        lines += [""] + wrap(f"{p.new.name} vs {p.baseline.name} (baseline), {_method_text(p)}"
                             + (f"  [partial: {p.new.runs} runs]" if p.new.partial else ""),
                             width, "  ", "")
        if p.method == "paired":
            lines += wrap(PAIRED_NOTE, width, "    ", "  ")
        lines += _metric_table(p, width)
        if p.metadata:
            lines += wrap("; ".join(safe(meta_text(d)) for d in p.metadata), width, "    ",
                          "  the variants differ in: " if comp.batch else
                          "  warning: differs in more than the kernel: ")
    if stat_notes(comp):
        lines.append("")
        for n in stat_notes(comp):
            lines += wrap(safe(n), width, "  ", "note: ")
    h = comp.histogram
    if h and h.buckets:
        lines += ["", f"distribution of {safe(h.metric)}"
                  + (" (shared buckets)" if len(comp.sides) > 1 else "")]
        lines += side_rows(h, [s.name for s in comp.sides], width)
    for p in comp.pairs:
        if p.symbols:
            lines += [""] + wrap(safe(sym.title(p, TOP_SYMBOLS)), width, "  ", "")
            lines += _symbol_table(p, width)
    # a side that differs in more than the kernel: said under its pair
    rest = [w for w in comp.warnings if not isinstance(w, DiffersBeyondKernel)]
    if rest:
        lines.append("")
        for w in rest:
            lines += wrap(safe(words(w)), width, "  ", "warning: ")
    return "\n".join(bound(lines, width))
