"""The headless report: a result as text for people or as one JSON document."""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import Any

from hotloop import events as ev
from hotloop import record
from hotloop.analysis.symcost import side_cost
from hotloop.record import Stop
from hotloop.render.histograms import bar
from hotloop.render.layout import UNBOUNDED, bound, safe, table, wrap
from hotloop.render.symbol_costs import cost_json, cost_lines
from hotloop.render.symbol_names import symbol_name
from hotloop.render.units import bucket_labels, si
from hotloop.results import Result
from hotloop.results.liveness import partial_reason
from hotloop.stats import Summary, histogram, summarize
from hotloop.visible import csv_text, visible

BAR = 40                                # the longest bar, where the terminal has room


def summary_lines(s: Summary | None, unit: str) -> list[str]:
    if s is None:
        return ["no runs recorded"]
    return [
        f"  n       {s.n}",
        f"  median  {si(s.median, unit)}",
        f"  mean    {si(s.mean, unit)}",
        f"  stdev   {si(s.stdev, unit)}",
        f"  CV      {100 * s.cv:.2f}%",
        f"  min     {si(s.min, unit)}",
        f"  max     {si(s.max, unit)}",
    ]


def histogram_lines(values: Sequence[float], unit: str, columns: int | None = None) -> list[str]:
    """The AF_UNIX seqpacket stream test's table ("by millions"): buckets of a nice width, count,
    percentage, and a bar (BAR long at most, shorter where `columns` leave less room)."""
    buckets = histogram(values)
    if not buckets:
        return []
    top = max(b.count for b in buckets)
    ranges = bucket_labels(buckets, unit)
    width = max(map(len, ranges))
    room = BAR if columns is None else max(3, min(BAR, columns - (width + 20)))
    return [(f"  {r:<{width}}  {b.count:>5}  {b.percent:5.1f}%  " + bar(b.count, top, room))
            .rstrip() for r, b in zip(ranges, buckets)]


def symbol_lines(symbols: Sequence[ev.HotSymbol], top: int = 15,
                 columns: int | None = None) -> list[str]:
    """`perf report` shape: overhead, [k]/[.], symbol, DSO; narrower than the symbols and
    their DSOs, the DSO is cut first, then the symbol."""
    rows = sorted(symbols, key=lambda s: -s.percent)[:top]
    if not rows:
        return []
    cells = [[f"{s.percent:6.2f}%", f"[{'k' if s.kernel else '.'}] {safe(symbol_name(s))}",
              safe(s.dso)] for s in rows]
    return table(cells, right={0}, width=columns, squeeze=(2, 1), least=12)


def extra_si(name: str, value: float) -> str:
    """Extra metrics carry their unit in their name: user_s, lat_p99_ns."""
    if name.endswith("_ns"):
        return si(value, "ns")          # in seconds, as compare and the console show it
    return si(value, "s") if name.endswith("_s") else f"{value:.6g}"


def counter_lines(counters: dict[str, float | None]) -> list[str]:
    """perf stat counts; an unsupported counter says so, never 0."""
    units = {"task-clock": " ms CPU"}        # perf stat counts task-clock in msec
    return [f"  {safe(name):<17} " + ("not supported here" if value is None else
                                f"{value:,.6g}{units.get(name, '')}")
            for name, value in counters.items()]


def extra_summaries(runs: Sequence[ev.RunSample]) -> dict[str, Summary]:
    # natural order: lat_p99_ns before lat_p999_ns
    names = sorted({k for r in runs for k in r.extra},
                   key=lambda k: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", k)])
    out = {}
    for name in names:
        s = summarize([r.extra[name] for r in runs if name in r.extra])
        if s is not None:
            out[name] = s
    return out


def _extra_names(runs: Sequence[ev.RunSample]) -> list[str]:
    return list(extra_summaries(runs)) or sorted({k for r in runs for k in r.extra})


def run_lines(runs: Sequence[ev.RunSample], unit: str) -> list[str]:
    """Every recorded run: its number (from 1, as errors name runs), the value with its
    unit, ops, ns and the workload's extras."""
    names = _extra_names(runs)
    rows = [[str(r.index + 1), si(r.value, unit), f"{r.ops:,}", f"{r.ns:,}",
             *(extra_si(n, r.extra[n]) if n in r.extra else "-" for n in names)]
            for r in runs]
    head = ["run", "value", "ops", "ns", *map(safe, names)]
    widths = [max(len(c) for c in col) for col in zip(head, *rows)]
    return ["  " + "  ".join(c.rjust(wd) for c, wd in zip(row, widths)).rstrip()
            for row in [head, *rows]]


def runs_csv(result: Result) -> str:
    """The runs as CSV: a header row, then one row per run; numbers as recorded."""
    names = _extra_names(result.runs)
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    # names and the unit come from the file: inert, as in every other format, and never a
    # spreadsheet's formula; the values are numbers (repr), a negative one's minus kept
    out.writerow(["run", "value", "unit", "ops", "bytes", "ns", "cycles",
                  *(csv_text(n) for n in names)])
    unit = csv_text(result.workload.unit)
    for r in result.runs:
        out.writerow([r.index + 1, repr(r.value), unit, r.ops, r.bytes, r.ns,
                      r.cycles, *(repr(r.extra[n]) if n in r.extra else "" for n in names)])
    return buf.getvalue()


def stopped(result: Result) -> Stop | None:
    """Why a session with an until_ci target stopped where it did, from its last line."""
    return result.finished.summary.stop if result.finished else None


def stop_line(result: Result) -> str:
    stop = stopped(result)
    if stop is None:
        return ""
    known = "not yet known" if stop.ci_pct is None else f"±{stop.ci_pct:.2g}%"
    if stop.reason == "until_ci":
        return (f"stopped at {stop.runs} runs: the median is known to {known} "
                f"(95% CI; target ±{stop.target_pct:g}%)")
    return (f"the target ±{stop.target_pct:g}% was not reached within {stop.runs} runs: "
            f"the median is known to {known}")


def text(result: Result, warnings: bool = True, runs: bool = False,
         columns: int | None = None) -> str:
    """The report in lines of at most `columns` (None: unbounded; the command line gives
    the terminal's width); `warnings`
    False leaves out the result's warnings (`run` showed them as they came), `runs` lists
    every run after the summary."""
    h, w = result.header, result.workload
    unit = w.unit
    width = UNBOUNDED if columns is None else columns
    # every string of the file made visible as it enters a line (render.layout): a
    # newline in a label or a symbol is `\n`, never a row of its own
    params = " ".join(f"{safe(k)}={safe(v)}" for k, v in h.params.items())
    where = f"cpu {safe(h.cpu.name) or '?'}"
    if h.cpu.cpus:
        where += f" (cpus {','.join(map(str, h.cpu.cpus))})"
    lines = wrap(f"{safe(w.name)}  {params}", width, "  ", "")
    lines += wrap(f"{where}, kernel {safe(h.kernel_release)} [{safe(h.label)}], "
                  f"{safe(h.host) or '?'}"
                  + (f" (host {safe(h.remote.host)}, over SSH)" if h.remote else ""),
                  width, "  ", "")
    lines += wrap(f"{safe(w.metric)} ({'higher' if w.higher_is_better else 'lower'}"
                  f" is better), {len(result.runs)} run{'' if len(result.runs) == 1 else 's'}",
                  width, "  ", "")
    if result.partial:
        lines += wrap(safe(partial_reason(result)), width, "  ", "PARTIAL: ")
    stop = stop_line(result)
    if stop:
        lines += wrap(stop, width, "  ", "")
    if result.perf_not_started is not None:     # the header says perf on: it did not run
        lines += wrap(f"warning: perf was asked for but did not start "
                      f"({safe(result.perf_not_started)}): no hot symbols, no counters",
                      width, "  ", "")
    lines += ["", "summary"] + summary_lines(result.summary, unit)
    for name, s in extra_summaries(result.runs).items():
        lines += wrap(f"{safe(name):<7} median {extra_si(name, s.median)}  (min "
                      f"{extra_si(name, s.min)}, max {extra_si(name, s.max)})", width,
                      "    ", "  ")
    if result.runs:
        lines += ["", "histogram"] + histogram_lines(result.values, unit, width)
    if runs and result.runs:
        lines += ["", "runs"] + run_lines(result.runs, unit)
    if result.session_symbols and result.session_symbols.symbols:
        lines += ["", f"hot symbols ({result.session_symbols.samples} samples)"]
        lines += symbol_lines(result.session_symbols.symbols, columns=width)
        lines += cost_lines(side_cost([result]), columns=width)
    counters = result.finished.counters if result.finished else None
    if counters:
        lines += ["", "counters (perf stat, whole session)"] + counter_lines(counters)
    for warning in result.warnings if warnings else ():
        lines += wrap(safe(warning), width, "  ", "warning: ")
    lines += [""] + wrap(safe(result.path), width, "  ", "result file: ")
    # a workload's error text, a warning, a file name: never a terminal command
    return "\n".join(bound([visible(line) for line in lines], width))


def _costs_json(result: Result) -> dict[str, Any] | None:
    if not (result.session_symbols and result.session_symbols.symbols):
        return None
    return cost_json(side_cost([result]))


def document(result: Result) -> dict[str, Any]:
    """The `--format json` document."""
    w = result.workload
    s = result.summary
    symbols = result.session_symbols.symbols if result.session_symbols else ()
    extras = extra_summaries(result.runs)
    summary: dict[str, Any] = {**(s.to_json() if s else {"n": 0}),
                               **{name: x.to_json() for name, x in extras.items()}}
    latency = {name.removeprefix("lat_").removesuffix("_ns"): x.median
               for name, x in extras.items() if name.startswith("lat_")}
    if latency:
        summary["latency"] = latency        # medians over the runs, in ns
    if result.finished and result.finished.counters:
        summary["counters"] = result.finished.counters
    stop = stopped(result)
    if stop is not None:
        summary["stop"] = record.to_json(stop)  # reason: until_ci (target met) or runs
    return {
        "workload": w.name,
        "metric": w.metric,
        "unit": w.unit,
        "higher_is_better": w.higher_is_better,
        "params": result.header.params,
        "label": result.header.label,
        "runs": [{"value": r.value, "ops": r.ops, "bytes": r.bytes, "ns": r.ns,
                  "cycles": r.cycles, **({"extra": r.extra} if r.extra else {})}
                 for r in result.runs],
        "summary": summary,
        "hot_symbols": [{"symbol": h.symbol, "dso": h.dso, "percent": h.percent,
                         "kernel": h.kernel, "samples": h.samples}
                        for h in sorted(symbols, key=lambda h: -h.percent)[:30]],
        # a symbol's CPU time per op (analysis.symcost): null where the data give none
        "symbol_costs": _costs_json(result),
        "partial": result.partial,
        "error": result.failed.message if result.failed else None,
        "warnings": result.warnings,
        # whether perf ran: asked for (the header), started (null: the file does not say,
        # before format 4), and why not
        "perf": {"asked": result.header.perf,
                 "started": all(p.started for p in result.perf_starts)
                 if result.perf_starts else None,
                 "not_started": result.perf_not_started},
        "result_file": str(result.path),
        # ran over SSH: the host, its address, and the remote's own result and perf data
        "remote": record.to_json(result.header.remote),
    }
