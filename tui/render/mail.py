"""Results as a kernel developer's mail: plain text, every line at most 72 columns, no escape
code, to paste under a patch's `---` or into a reply, read in mutt.

In the order a reviewer reads: what was measured (the workload and its parameters, runs x
sessions, the CPU and kernel profiles, the kernels, the machine, the hotloop version); the
primary metric per side and its change in the kernel test robot's columns (base %stddev
%change new %stddev), its interval and verdict under it, then the secondary metrics that
were called; where the time went (the symbols that moved: called rows first, then the
largest changes in ns/op) and the change explained; for one result its histogram; last the
`hotloop run` command that reproduces it, wrapped with `\\`.  Names too long for a column
are cut with an ellipsis (json keeps them whole); every string from a file goes through the
one escaping rule (render.layout.safe).
"""
from __future__ import annotations

import math
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from hotloop import __version__
from hotloop.analysis.comparison import Comparison, MetricDelta, Pair, Side
from hotloop.analysis.symbols import Explained, SymbolDelta
from hotloop.analysis.symcost import SideCost, side_cost
from hotloop.errors import HotloopError
from hotloop.record import Header, aa_twins
from hotloop.render import verdicts
from hotloop.render.compare_formats import symbols as sym
from hotloop.render.compare_formats.shared import ci
from hotloop.render.histograms import ASCII_MARKS, bar, side_rows
from hotloop.render.layout import bound, safe, table, wrap
from hotloop.render.report import extra_si, extra_summaries
from hotloop.render.symbol_names import dso_name, symbol_name
from hotloop.render.units import bucket_labels, number, pct, plain, si
from hotloop.render.warning_words import about_the_sides, words
from hotloop.results import Result
from hotloop.stats import histogram
from hotloop.visible import cut

WIDTH = 72
SYMBOLS = 6                             # the symbols that moved, a pair
HOT = 10                                # one result's hottest symbols
KEY = 11                                # the measured block's key column


def _field(key: str, value: str, more: Sequence[str] = ()) -> list[str]:
    """"workload   zero_null ..." and its further lines under the value, all cut or
    wrapped to the mail's width."""
    out = wrap(value, WIDTH, " " * KEY, f"{key:<{KEY}}")
    for line in more:
        out += wrap(line, WIDTH, " " * (KEY + 2), " " * KEY)
    return out


def _joined(values: Sequence[Any]) -> str:
    return ",".join(dict.fromkeys(safe(v) for v in values))


def _params(headers: Sequence[Header]) -> str:
    keys = list(dict.fromkeys(k for h in headers for k in h.params))
    return " ".join(f"{safe(k)}={_joined([h.params.get(k, '-') for h in headers])}"
                    for k in keys) or "(none)"


def _cpus(h: Header) -> str:
    return ",".join(map(str, h.cpu.cpus)) if h.cpu.cpus else "any"


def measured(sides: Sequence[Sequence[Result]], names: Sequence[str],
             method: str = "", variants: int = 1,
             metric: tuple[str, bool | None] | None = None) -> list[str]:
    """What was measured: the block every mail opens with (`variants`: each side holds
    that many, matched by name, each its sessions; `metric`: the one judged, (name, higher
    is better), where --metric chose another than the workload's)."""
    heads = [r.header for rs in sides for r in rs]
    h = heads[0]
    runs = _joined([x.runs if x.runs is not None else "?" for x in heads])
    sessions = _joined([len(rs) // variants for rs in sides])
    per = (" a variant" if variants > 1 else "") + (" a side" if len(sides) > 1 else "")
    how = f"{runs} runs x {sessions} session{'s' * (sessions != '1')}{per}"
    extra = []
    procs = _joined([x.processes for x in heads])
    if procs != "1":
        extra.append(f"{procs} worker processes")
    if method:
        extra.append(method)
    out = _field("workload", f"{safe(h.workload.name)}  {_params(heads)}")
    name, higher = metric or (h.workload.metric, h.workload.higher_is_better)
    out += _field("metric", f"{safe(name)} (" + ("higher" if higher else "lower")
                  + " is better)")
    out += _field("runs", how + (f" ({', '.join(extra)})" if extra else ""))
    cpu = ", ".join(dict.fromkeys(f"{safe(x.cpu.name)} (cpus {_cpus(x)})" for x in heads))
    out += _field("cpu", cpu)
    out += _field("kernel", "profile " + _joined([x.kernel.name for x in heads]))
    tags = ["base", *(f"new{'' if len(sides) == 2 else i}" for i in range(1, len(sides)))]
    rows = []
    for tag, name, rs in zip(tags, names, sides):
        k = rs[0].header
        label = (k.label if variants > 1 else k.variant or k.label) or "-"
        rows.append(f"{tag}: {_joined([r.header.kernel_release for r in rs])} "
                    f"[{safe(label)}]" + (f" = {name}" if name != safe(label) else ""))
    if len(sides) == 1:
        rows = [rows[0].removeprefix("base: ")]
    out += _field("kernels", rows[0], rows[1:])
    machine = f"{safe(h.cpu_model) or '?'}, {h.cpus or '?'} cpus, host {safe(h.host) or '?'}"
    if h.remote:
        machine += f" (over SSH: {safe(h.remote.host)})"
    if h.vm:
        machine += f" (in a VM, {safe(h.vm.accel)})"
    out += _field("machine", machine)
    out += _field("hotloop", _joined([x.hotloop for x in heads])
                  + ("" if h.hotloop == __version__ else f" (this report: {__version__})"))
    return out


# --------------------------------------------------------------------------- reproducing

def reproduce_args(sides: Sequence[Sequence[Result]],
                   metric: str | None = None) -> list[list[str]]:
    """The `hotloop run` command that measures this again, as its words grouped an option
    (and its value) a group: the plan of the headers (workload, params, runs, sessions,
    CPU and kernel profiles), several values where the sides differ in them."""
    heads = [r.header for rs in sides for r in rs]
    h = heads[0]
    q = [shlex.quote(safe(h.workload.name or h.plan.workload))]
    groups = [["hotloop", "run", *q]]
    if h.runs is not None:
        groups.append(["--runs", str(h.runs)])
    for key in dict.fromkeys(k for x in heads for k in x.params):
        value = _joined([x.params.get(key, "") for x in heads])
        groups.append(["--param", shlex.quote(f"{safe(key)}={value}")])
    if aa_twins(list(dict.fromkeys(x.variant for x in heads))):
        groups.append(["--aa"])         # one variant against itself: its sides a1 and a2
    sessions = max(len(rs) for rs in sides)
    if sessions > 1:
        groups.append(["--sessions", str(sessions)])
    for what, names in (("--cpu", [x.cpu.name for x in heads]),
                        ("--kernel", [x.kernel.name for x in heads])):
        distinct = list(dict.fromkeys(names))
        if distinct != ["default"]:
            groups += [[what, shlex.quote(safe(n))] for n in distinct if n]
    if h.plan.warmup != 1:
        groups.append(["--warmup", str(h.plan.warmup)])
    if h.processes > 1:
        groups.append(["--processes", str(h.processes)])
    if h.plan.until_ci:
        groups.append(["--until-ci", f"{h.plan.until_ci:g}"])
    if not h.plan.perf:
        groups.append(["--no-perf"])
    if metric is not None and metric != h.workload.metric:
        groups.append(["--metric", shlex.quote(safe(metric))])
    return groups


def reproduce(sides: Sequence[Sequence[Result]], width: int = WIDTH,
              metric: str | None = None) -> list[str]:
    """The command on lines of at most `width` columns, each but the last ending in `\\`."""
    return command_lines(reproduce_args(sides, metric), width)


def command_lines(args: Sequence[Sequence[str]], width: int = WIDTH) -> list[str]:
    """A command's words (an option with its value a group, kept on one line) on lines of at
    most `width` columns, each but the last ending in `\\`."""
    lines: list[str] = []
    line = ""
    groups: list[Sequence[str]] = []
    for g in args:                              # an option too long with its value: on two lines
        groups += [[w] for w in g] if len(" ".join(g)) > width - 6 else [g]
    for g in groups:
        words = " ".join(g)
        lead = "    " if lines or line else ""
        if line and len(line) + 1 + len(words) + 2 > width:
            lines.append(line + " \\")
            line = ""
        if not line:
            line = cut((lead if lines else "") + words, width - 2)
        else:
            line += " " + words
    return [*lines, line]


# --------------------------------------------------------------------------- the change

def _robot(base: str, sd_b: str, change: str, new: str, sd_n: str, name: str) -> str:
    row = f"{base:>12} {sd_b:>7}  {change:>9}  {new:>12} {sd_n:>7}  "
    return row + cut(name, WIDTH - len(row))


HEAD = _robot("base", "%stddev", "%change", "new", "%stddev", "").rstrip()


def _sd(s: Side) -> str:
    return "" if s.summary is None or not s.summary.mean else f"±{100 * s.summary.cv:.1f}%"


def _change_rows(m: MetricDelta, name: str, base: Side | None, new: Side | None) -> list[str]:
    t = m.test
    # a side's row in the metric's unit; another metric's in digits, its name its unit
    shown = (lambda v: number(v, m.unit)) if base is not None else plain
    row = _robot(shown(t.baseline), _sd(base) if base else "",
                 pct(t.change_pct), shown(t.new), _sd(new) if new else "", name)
    under = f"95% CI {ci(t)}: {verdicts.word(m)}"
    return [row] + wrap(under, WIDTH, " " * 24, " " * 22)


def change_lines(comp: Comparison, names: Sequence[str] | None = None) -> list[str]:
    """The primary metric a pair, then the secondary metrics that were called."""
    names = names or [p.new.name for p in comp.pairs]
    out = [HEAD, "  " + "-" * (WIDTH - 2)]
    called = []
    for p, name in zip(comp.pairs, names):
        for m in p.metrics:
            if m.primary:
                out += _change_rows(m, name, p.baseline, p.new)
            elif m.test.verdict.called:
                called.append((p, m, name))
    if called:
        out += ["", "called in other metrics (exploratory):"]
        for _p, m, name in called:
            out += _change_rows(m, safe(m.metric) + (f" ({name})" if len(comp.pairs) > 1
                                                     else ""), None, None)
    return out


def _moved(p: Pair) -> list[SymbolDelta]:
    """Called rows first, then the largest |ns/op| (or share) changes."""
    rows = list(p.symbols or ())
    key = (lambda d: -abs(d.change_ns or 0.0)) if sym.costed(p) else (lambda d: -abs(d.delta))
    return (sorted([d for d in rows if d.significant], key=key)
            + sorted([d for d in rows if not d.significant], key=key))[:SYMBOLS]


def _symbol_name(d: SymbolDelta) -> str:
    held = f" (+{len(d.names) - 1} clones)" if d.merged else ""
    return f"  [{'k' if d.kernel else '.'}] {safe(d.symbol)}{held}"


def symbol_lines(p: Pair, names: tuple[str, str]) -> list[str]:
    """Where the time went in one pair: a symbol's name on its line, its numbers under it."""
    if not p.symbols:
        return []
    cost = sym.costed(p)
    what = "worker CPU ns/op a symbol" if cost else "% of the samples"
    out = wrap(f"perf-profile, {names[1]} vs {names[0]}: {what}", WIDTH, "  ")
    if cost:
        rows = [["base", "new", "vs rest", "95% CI", "verdict"]]
        for d in _moved(p):
            rows.append([sym.ns(d.baseline_ns_per_op), sym.ns(d.new_ns_per_op),
                         pct(d.change_pct), sym.ci_pct(d), safe(d.word)])
        body = table(rows, right={0, 1, 2}, width=WIDTH, squeeze=(4, 3), indent="    ")
    else:
        rows = [["base", "new", "delta"]]
        rows += [[f"{d.baseline_pct:.2f}%", f"{d.new_pct:.2f}%", f"{d.delta:+.2f}"]
                 for d in _moved(p)]
        body = table(rows, right={0, 1, 2}, width=WIDTH, indent="    ")
    out.append(body[0])
    for d, line in zip(_moved(p), body[1:]):
        out += [cut(_symbol_name(d), WIDTH), line]
    if cost and p.explained is not None:
        out += wrap(_explained(p.explained), WIDTH, "    ", "  change explained: ")
    elif p.symbol_note:
        out += wrap(safe(p.symbol_note), WIDTH, "    ", "  ")
    return out


def _explained(e: Explained) -> str:
    """The change in one or two lines: the worker's ns/op, the two largest parts, the rest
    (their intervals are in the rows above; compare's text names five)."""
    total, parts, _ = sym.explained_parts(e)
    named = parts[:2]
    rest = round(total - math.fsum(x for _, x in named), 1)
    return (f"{sym.ns(total, True)} ns/op ({sym.ns(e.baseline_ns_per_op)} -> "
            f"{sym.ns(e.new_ns_per_op)}): "
            + ", ".join([f"{cut(safe(d.symbol), 28)} {sym.ns(x, True)}" for d, x in named]
                        + [f"the rest {sym.ns(rest, True)}"]))


def _footer(sides: Sequence[Sequence[Result]], metric: str | None = None) -> list[str]:
    return ["", "reproduce:"] + [f"  {ln}" for ln in reproduce(sides, WIDTH - 2, metric)]


def compare_mail(comp: Comparison, sides: Sequence[Sequence[Result]], footer: bool = True) -> str:
    """`compare --format mail`: `sides` the results the comparison was made of; `footer`:
    the `hotloop run` that reproduces it (a bisect's says its own command instead)."""
    names = [cut(s.name, 40) for s in comp.sides]
    method = {"pairs": "sessions paired by round", "paired": "interleaved, paired rounds",
              "sessions": "sessions as replicates"}.get(comp.pairs[0].method, "") \
        if comp.pairs else ""
    out = wrap(f"hotloop compare: {safe(comp.workload)}, {len(comp.sides)} side"
               f"{'s' * (len(comp.sides) != 1)}, base = {names[0]}", WIDTH, "  ", "")
    out += [""] + measured(sides, names, method, metric=(comp.metric, comp.higher_is_better))
    if comp.single:
        out += [""] + summary_lines(comp.baseline, comp.unit)
    else:
        out += ["", f"{safe(comp.metric)}:"] + change_lines(comp)
    for p in comp.pairs:
        if p.symbols:
            out += [""] + symbol_lines(p, (cut(p.baseline.name, 24), cut(p.new.name, 24)))
    h = comp.histogram
    if h is not None and h.buckets and len(comp.sides) > 1:
        out += ["", f"distribution of {safe(h.metric)} (shared buckets):"]
        out += side_rows(h, names, WIDTH, ASCII_MARKS)
    warn = [w for w in comp.warnings if about_the_sides(w)]
    for w in warn[:3]:                  # what a reviewer must know; the rest is compare's
        out += [""] + wrap(safe(words(w)), WIDTH, "  ", "note: ")
    return "\n".join(bound(out + (_footer(sides, comp.metric) if footer else []), WIDTH)) + "\n"


def summary_lines(s: Side, unit: str) -> list[str]:
    m = s.summary
    if m is None:
        return ["no runs recorded"]
    return (wrap(f"median {si(m.median, unit)}  mean {si(m.mean, unit)}  stdev "
                 f"{si(m.stdev, unit)}  CV {100 * m.cv:.2f}%", WIDTH, "    ", "  ")
            + wrap(f"min {si(m.min, unit)}  max {si(m.max, unit)}  n {m.n}", WIDTH, "    ",
                   "  "))


def histogram_lines(values: Sequence[float], unit: str) -> list[str]:
    """Nice bucket edges, count and %, a bar that fits."""
    buckets = histogram(values)
    if not buckets:
        return []
    labels = bucket_labels(buckets, unit)
    top = max(b.count for b in buckets)
    room = WIDTH - (2 + max(map(len, labels)) + 2 + 5 + 2 + 6 + 2)
    return [(f"  {lab:<{max(map(len, labels))}}  {b.count:>5}  {b.percent:5.1f}%  "
             + bar(b.count, top, room, ASCII_MARKS[0])).rstrip()
            for lab, b in zip(labels, buckets)]


def show_mail(result: Result) -> str:
    """`show FILE --format mail`: one result."""
    from hotloop.analysis.sides import side_of
    h, w = result.header, result.workload
    side = side_of(0, h.variant or h.label, [result], str(result.path))
    out = wrap(f"hotloop show: {safe(w.name)}, {cut(safe(result.path.name), 40)}", WIDTH,
               "  ", "")
    out += [""] + measured([[result]], [side.name])
    if result.partial:
        out += wrap(safe(side.partial_reason), WIDTH, "  ", "PARTIAL: ")
    out += ["", f"{safe(w.metric)} over {len(result.runs)} runs:"]
    out += summary_lines(side, w.unit)
    for name, s in extra_summaries(result.runs).items():
        out += wrap(f"{safe(name)} median {extra_si(name, s.median)} (min "
                    f"{extra_si(name, s.min)}, max {extra_si(name, s.max)})", WIDTH, "    ",
                    "  ")
    if result.runs:
        out += ["", f"histogram of {safe(w.metric)}:"] + histogram_lines(result.values, w.unit)
    if result.session_symbols and result.session_symbols.symbols:
        out += [""] + hot_lines(result)
    return "\n".join(bound(out + _footer([[result]]), WIDTH)) + "\n"


def hot_lines(result: Result) -> list[str]:
    """perf report's shape, cut to the mail: overhead, ns/op where known, [k]/[.], symbol."""
    ss = result.session_symbols
    assert ss is not None
    cost = side_cost([result])
    ns = {s.symbol: s.mean_ns for s in cost.symbols} if cost.costed else {}
    rows = sorted(ss.symbols, key=lambda s: -s.percent)[:HOT]
    out = [f"hot symbols ({ss.samples} samples"
           + (f"; worker {sum(cost.worker_ns) / len(cost.worker_ns):.1f} ns/op)"
              if cost.costed else ")") + ":"]
    for s in rows:
        cell = f"{ns[s.symbol]:8.1f} ns" if ns.get(s.symbol) is not None else ""
        lead = f"  {s.percent:6.2f}%  {cell:>11}  [{'k' if s.kernel else '.'}] "
        dso = "" if s.kernel else f"  {safe(dso_name(s.dso))}"
        out.append(cut(lead + safe(symbol_name(s)) + dso, WIDTH))
    return out


def side_mail(sessions: Sequence[Result], side: SideCost, where: str,
              warnings: Sequence[str] = ()) -> str:
    """`show DIR --format mail`: a side's sessions and their symbols' costs, and what a
    reader must know of them (its sessions ran two builds) before the reproduce line."""
    from hotloop.render.symbol_costs import cost_lines, no_symbols
    first = sessions[0].header
    out = wrap(f"hotloop show: {safe(first.workload.name)}, {len(sessions)} session"
               f"{'s' * (len(sessions) != 1)} in {safe(where)}", WIDTH, "  ", "")
    out += [""] + measured([sessions], [safe(first.variant or first.label)])
    out += cost_lines(side, columns=WIDTH) or no_symbols(side, WIDTH)
    for w in warnings:
        out += [""] + wrap(safe(w), WIDTH, "  ", "note: ")
    return "\n".join(bound(out + _footer([sessions]), WIDTH)) + "\n"


def run_mail(done: Sequence[Result], batch: bool, primary: str | None = None) -> str:
    """`run --format mail`: one run's report, or a batch's comparison (each run's report
    when they cannot be compared, and why on stderr)."""
    if not batch or len(done) < 2:
        return "".join(map(show_mail, done))
    from hotloop.analysis import compare, matched
    from hotloop.render.compare_formats import variants
    try:
        pairs = matched.split_by_kernel(done, primary)    # a plan's variants on two kernels
        if pairs is not None:
            return variants.render_mail(pairs, reproduce([[r] for r in done], WIDTH - 2),
                                        measured(pairs.sides, [pairs.before, pairs.after],
                                                 variants=len(pairs.variants)))
        comp = compare.compare_sides([[r] for r in done], batch=True, primary=primary)
    except HotloopError as e:
        print(f"hotloop: no comparison: {safe(e)}", file=sys.stderr)
        return "".join(map(show_mail, done))
    return compare_mail(comp, [[r] for r in done])
