"""A comparison as text: the terminal's tables (compare's default format)."""
from __future__ import annotations

from hotloop.analysis.compare import TOP_SYMBOLS
from hotloop.analysis.comparison import Comparison, Pair, Side, meta_text, meta_warning
from hotloop.render.compare_formats import symbols as sym
from hotloop.render.compare_formats.shared import PAIRED_NOTE, better_way, noise_line, stat_notes, text_rows
from hotloop.render.units import bucket_labels, si
from hotloop.visible import visible


def _runs_text(s: Side) -> str:
    runs = f"{s.runs} run{'s' * (s.runs != 1)}"
    return runs if s.sessions == 1 else f"{s.sessions} sessions, {runs}"


def _side_line(s: Side, baseline: bool) -> str:
    tag = "baseline" if baseline else f"[{s.index}]"
    line = (f"  {tag:<8}  {s.name}  label {s.label or '-'}  kernel {s.kernel}  "
            f"{_runs_text(s)}  {visible(s.file)}")
    return line + ("  PARTIAL" if s.partial else "")


def _method_text(p: Pair) -> str:
    first = next((m.test for m in p.metrics if m.primary), None)
    if p.method == "sessions" and first is not None and first.boots not in ("", "one boot"):
        return f"boots as replicates ({first.boots_baseline} vs {first.boots_new})"
    return {"paired": "paired rounds (interleaved)", "exact": "identical",
            "sessions": "sessions as replicates", "none": "no test",
            "pairs": "paired sessions of one series"}.get(p.method, p.method)


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                             for i, c in enumerate(r)).rstrip() for r in rows]


def _summary_lines(comp: Comparison) -> list[str]:
    s = comp.baseline.summary
    if s is None:
        return ["  no runs"]
    u = comp.unit
    return [f"  n {s.n}   median {si(s.median, u)}   mean {si(s.mean, u)}   "
            f"stdev {si(s.stdev, u)}   CV {100 * s.cv:.2f}%   "
            f"min {si(s.min, u)}   max {si(s.max, u)}"]


def _symbol_table(p: Pair) -> list[str]:
    """A pair's symbol rows, each merged row's names under it, then the change explained."""
    cost = sym.costed(p)
    rows = [sym.COST_HEAD if cost else sym.SHARE_HEAD]
    for d in (p.symbols or [])[:TOP_SYMBOLS]:      # the json holds every row
        held = f" ({len(d.names)} names)" if d.merged else ""
        rows.append([f"[{'k' if d.kernel else '.'}] {d.symbol[:50]}{held}", d.dso[:30],
                     *sym.cells(d, cost)])
        # a function's clones, added up in the row above: a line a name, under it
        rows += [[f"      {name[:50]}"] + [""] * (len(rows[0]) - 1)
                 for name in d.names if d.merged]
    out = _table(rows, right={2, 3, 4, 6, 7} if cost else {2, 3, 4})
    if cost:
        out += [f"  change explained: {sym.explained_line(p)}"]
        out += [f"  note: {n}" for n in sym.notes(p)]
    return out


def render_text(comp: Comparison) -> str:
    lines = [f"compare {comp.workload}: {comp.metric} ({better_way(comp.higher_is_better)}), "
             f"baseline = the first side"]
    lines += [_side_line(s, s.index == 0) for s in comp.sides]
    if comp.single:
        lines += ["", "one file only: its summary"] + _summary_lines(comp)
    if comp.pairs and noise_line(comp):
        lines.append(noise_line(comp))
    for p in comp.pairs:
        lines += ["", f"{p.new.name} vs {p.baseline.name} (baseline), {_method_text(p)}"
                  + (f"  [partial: {p.new.runs} runs]" if p.new.partial else "")]
        if p.method == "paired":
            lines.append(f"  {PAIRED_NOTE}")
        lines += _table(text_rows(p), right={1, 2, 3, 4, 6})
        if p.metadata:
            lines.append(("  the variants differ in: " if comp.batch else
                          "  warning: differs in more than the kernel: ")
                         + "; ".join(meta_text(d) for d in p.metadata))
    if stat_notes(comp):
        lines += [""] + [f"note: {n}" for n in stat_notes(comp)]
    h = comp.histogram
    if h and h.buckets:
        lines += ["", f"distribution of {h.metric}"
                  + (" (shared buckets)" if len(comp.sides) > 1 else "")]
        rows = [[h.metric] + [s.name for s in comp.sides]]
        for b, label in zip(h.buckets, bucket_labels(h.buckets, h.unit)):
            rows.append([label] + [f"{c:>4}  ({pct:5.1f}%)" for c, pct in zip(b.counts, b.percents)])
        lines += _table(rows, right=set(range(1, len(comp.sides) + 1)))
    for p in comp.pairs:
        if p.symbols:
            lines += ["", sym.title(p, TOP_SYMBOLS)] + _symbol_table(p)
    shown = {meta_warning(p) for p in comp.pairs if p.metadata}     # each under its pair
    rest = [w for w in comp.warnings if w not in shown]
    if rest:
        lines.append("")
        lines += [f"warning: {w}" for w in rest]
    return "\n".join(lines)
