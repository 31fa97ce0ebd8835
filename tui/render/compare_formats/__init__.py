"""A comparison in five formats: text, md, org, csv and json.
"""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hotloop.analysis import compare
from hotloop.analysis.compare import TOP_SYMBOLS
from hotloop.analysis.comparison import (
    METHODS,
    Comparison,
    MetricDelta,
    Pair,
    Side,
    Test,
    meta_text,
    meta_warning,
)
from hotloop.analysis.significance import ALPHA, CONFIDENCE, MIN_ROUNDS, NOISE_CHECK_ALPHA
from hotloop.errors import HotloopError
from hotloop.render import verdicts
from hotloop.render.units import bucket_labels, figure, number, p_value, pct, plain, si
from hotloop.stats import ASSUMED_SESSION_NOISE, MIN_RUNS, TOO_NOISY_PCT
from hotloop.visible import visible

FORMATS = ("text", "md", "org", "csv", "json")


# --------------------------------------------------------------------------- rendering helpers

def _md(text: str) -> str:
    """Text from a file in a md table or line: one line, a bar its own (not a new cell)."""
    return visible(text).replace("|", "\\|")


def _org(text: str) -> str:
    """The same for org, whose cells cannot escape a bar but take the entity \\vert{}."""
    return visible(text).replace("|", "\\vert{}")







def _ci(t: Test) -> str:
    if t.ci_low is None or t.ci_high is None:
        return "-"
    return f"[{pct(t.ci_low)}, {pct(t.ci_high)}]"




def gate_text(m: MetricDelta) -> str:
    """A gated row in a few words: its change and interval (compare --fail-on)."""
    return f"{pct(m.test.change_pct)} {_ci(m.test)}"


def _direction(hib: bool | None) -> str:
    return "higher is better" if hib else ("lower is better" if hib is not None else "")


def _runs_text(s: Side) -> str:
    runs = f"{s.runs} run{'s' * (s.runs != 1)}"
    return runs if s.sessions == 1 else f"{s.sessions} sessions, {runs}"


def _side_line(s: Side, baseline: bool) -> str:
    tag = "baseline" if baseline else f"[{s.index}]"
    line = (f"  {tag:<8}  {s.name}  label {s.label or '-'}  kernel {s.kernel}  "
            f"{_runs_text(s)}  {visible(s.file)}")
    return line + ("  PARTIAL" if s.partial else "")


def noise_line(comp: Comparison) -> str:
    """Which session noise the verdicts used: a calibration, or why none."""
    p = comp.noise
    used = {t.test.noise_source for pair in comp.pairs for t in pair.metrics}
    if p is not None and any(u and "calibrated" in u for u in used):
        return f"session noise: calibrated, {p.describe()}, {p.path}"
    first = next((t.test for pair in comp.pairs for t in pair.metrics
                  if t.test.noise_source == "assumed"), None)
    if first is not None:
        noise = f" {figure(first.noise_pct)}%" if first.noise_pct else ""
        return f"session noise: not calibrated, assumed{noise} (hotloop calibrate measures it)"
    if "unmeasured" in used:
        unused = " (the noise profile measured no reboot)" if p is not None else ""
        return (f"session noise: not measured: one boot a side, a reboot between, and no "
                f"calibration across reboots{unused}")
    if any(pair.method == "sessions" for pair in comp.pairs):
        return "session noise: measured from the sides' own sessions (no calibration)"
    if any(pair.method == "pairs" for pair in comp.pairs):
        return ("session noise: from the series' pairs of sessions (session i of each side "
                "ran side by side; no calibration)")
    return ""


PAIRED_NOTE = ("diff, change, CI and p come from the rounds, paired within each worker "
               "process; baseline and new are the medians of all runs")


def _stat_notes(comp: Comparison) -> list[str]:
    """Which rows carry the verdict and which are exploratory, and the correction for the
    number of sides: every format says it."""
    out = []
    other = list(dict.fromkeys(m.metric for p in comp.pairs for m in p.metrics
                               if not m.primary))
    if other:
        out.append(f"exploratory: {', '.join(other)} (not corrected for multiplicity: each "
                   f"row alone is called in up to 5% of A/A comparisons; the verdict is "
                   f"{comp.metric}'s)")
    held = [(p.new.name, m.test) for p in comp.pairs for m in p.metrics
            if m.primary and m.test.correction == "holm"]
    if held:
        out.append(f"{comp.metric} corrected for {held[0][1].family} sides (Holm), p adjusted: "
                   + ", ".join(f"{name} {p_value(t.p_adjusted)}" for name, t in held))
    return out


def _notes(comp: Comparison) -> list[str]:
    """What a table alone would not say: how paired rows were computed, and what the variants
    of a batch differ in (by design: not a warning)."""
    out = [PAIRED_NOTE] if any(p.method == "paired" for p in comp.pairs) else []
    out += _stat_notes(comp)
    if comp.batch:
        out += [f"{p.new.name} differs in: " + "; ".join(meta_text(d) for d in p.metadata)
                for p in comp.pairs if p.metadata]
    return out


def _differs(p: Pair) -> str:
    return "; ".join(meta_text(d) for d in p.metadata)


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


HEAD = ["metric", "baseline", "new", "diff", "change", "95% CI", "p", "verdict"]


def _text_rows(p: Pair) -> list[list[str]]:
    rows = [HEAD]
    for m in p.metrics:
        t = m.test
        rows.append([m.metric, number(t.baseline, m.unit), number(t.new, m.unit),
                     number(t.diff, m.unit, signed=True), pct(t.change_pct), _ci(t), p_value(t.p_value),
                     verdicts.word(m)])
    return rows


def _summary_lines(comp: Comparison) -> list[str]:
    s = comp.baseline.summary
    if s is None:
        return ["  no runs"]
    u = comp.unit
    return [f"  n {s.n}   median {si(s.median, u)}   mean {si(s.mean, u)}   "
            f"stdev {si(s.stdev, u)}   CV {100 * s.cv:.2f}%   "
            f"min {si(s.min, u)}   max {si(s.max, u)}"]


# --------------------------------------------------------------------------- formats

def render_text(comp: Comparison) -> str:
    lines = [f"compare {comp.workload}: {comp.metric} ({_direction(comp.higher_is_better)}), "
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
        lines += _table(_text_rows(p), right={1, 2, 3, 4, 6})
        if p.metadata:
            lines.append(("  the variants differ in: " if comp.batch else
                          "  warning: differs in more than the kernel: ")
                         + "; ".join(meta_text(d) for d in p.metadata))
    if _stat_notes(comp):
        lines += [""] + [f"note: {n}" for n in _stat_notes(comp)]
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
            lines += ["", f"hot symbols, {p.new.name} vs {p.baseline.name} "
                          f"(top {TOP_SYMBOLS} by |delta|, % of samples)"]
            rows = [["symbol", "dso", "baseline", "new", "delta"]]
            for d in p.symbols:
                rows.append([f"[{'k' if d.kernel else '.'}] {d.symbol[:50]}", d.dso[:30],
                             f"{d.baseline_pct:.2f}%", f"{d.new_pct:.2f}%", f"{d.delta:+.2f}"])
            lines += _table(rows, right={2, 3, 4})
    shown = {meta_warning(p) for p in comp.pairs if p.metadata}     # each under its pair
    rest = [w for w in comp.warnings if w not in shown]
    if rest:
        lines.append("")
        lines += [f"warning: {w}" for w in rest]
    return "\n".join(lines)


def _result_cell(s: Side) -> str:
    return s.name + (" (partial)" if s.partial else "")


def render_md(comp: Comparison) -> str:
    lines = [f"**{_md(comp.workload)}** {_md(comp.metric)} "
             f"({_direction(comp.higher_is_better)}); "
             f"baseline: `{_md(comp.baseline.name)}` ({_md(comp.baseline.file)})", ""]
    if comp.single:
        s = comp.baseline.summary
        lines += ["| result | n | median | mean | stdev | CV | min | max |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        if s:
            u = comp.unit
            lines.append(f"| {_md(_result_cell(comp.baseline))} | {s.n} | {si(s.median, u)} | "
                         f"{si(s.mean, u)} | {si(s.stdev, u)} | {100 * s.cv:.2f}% | "
                         f"{si(s.min, u)} | {si(s.max, u)} |")
    else:
        lines += ["| result | sessions | " + " | ".join(HEAD) + " |",
                  "|---|---:|---|---:|---:|---:|---:|---|---:|---|"]
        for p in comp.pairs:
            k = f"{p.baseline.sessions} vs {p.new.sessions}"
            for m, row in zip(p.metrics, _text_rows(p)[1:]):
                verdict = f"**{row[-1]}**" if m.test.verdict.called else row[-1]
                lines.append("| " + " | ".join(_md(c) for c in [_result_cell(p.new), k]
                                               + row[:-1] + [verdict]) + " |")
        if noise_line(comp):
            lines += ["", noise_line(comp)]
    if comp.warnings or _notes(comp):
        lines.append("")
        lines += [f"> note: {visible(n)}" for n in _notes(comp)]
        lines += [f"> warning: {visible(w)}" for w in comp.warnings]
    return "\n".join(lines) + "\n"


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


def render_org(comp: Comparison) -> str:
    lines = [f"#+CAPTION: {visible(comp.workload)} {visible(comp.metric)} "
             f"({_direction(comp.higher_is_better)}), "
             f"baseline {visible(comp.baseline.name)} ({visible(comp.baseline.file)})"]
    if comp.single:
        s = comp.baseline.summary
        rows = [["result", "unit", "n", "median", "mean", "stdev", "CV %", "min", "max"]]
        if s:
            rows.append([_result_cell(comp.baseline), comp.unit, str(s.n), plain(s.median),
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
                rows.append([_result_cell(p.new), f"{t.sessions_baseline}/{t.sessions_new}",
                             m.metric, m.unit, plain(t.baseline),
                             plain(t.new), plain(t.diff, signed=True),
                             "" if t.change_pct is None else f"{t.change_pct:.2f}",
                             "" if t.ci_low is None else f"{t.ci_low:.2f}",
                             "" if t.ci_high is None else f"{t.ci_high:.2f}",
                             p_value(t.p_value) if t.p_value is not None else "",
                             verdicts.word(m)])
        lines += _org_table(rows, groups)
        if noise_line(comp):
            lines.append(f"# {noise_line(comp)}")
    lines += [f"# note: {visible(n)}" for n in _notes(comp)]
    lines += [f"# warning: {visible(w)}" for w in comp.warnings]
    return "\n".join(lines) + "\n"


CSV_COLUMNS = ["file", "label", "name", "partial", "metric", "unit", "higher_is_better",
               "n_baseline", "n_new", "baseline", "new", "diff", "change_pct", "ci_low",
               "ci_high", "p_value", "significant", "verdict", "baseline_file", "method",
               "sessions_baseline", "sessions_new", "session_noise_pct", "noise_pct",
               "noise_source", "noise_profile", "differs", "p_adjusted", "correction",
               "exploratory", "noise_check", "boots", "boots_baseline", "boots_new",
               "calibration"]
CSV_SUMMARY_COLUMNS = ["file", "label", "name", "partial", "metric", "unit", "n", "median",
                       "mean", "stdev", "cv", "min", "max"]


def _json_num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def rows(comp: Comparison) -> list[dict[str, Any]]:
    """The comparison table as flat dicts (the csv rows and the json `comparisons`)."""
    out = []
    for p in comp.pairs:
        for m in p.metrics:
            t = m.test
            out.append({"file": p.new.file, "label": p.new.label, "name": p.new.name,
                        "partial": p.new.partial, "metric": m.metric, "unit": m.unit,
                        "higher_is_better": m.higher_is_better, "n_baseline": t.n_baseline,
                        "n_new": t.n_new, "baseline": _json_num(t.baseline),
                        "new": _json_num(t.new), "diff": _json_num(t.diff),
                        "change_pct": _json_num(t.change_pct), "ci_low": _json_num(t.ci_low),
                        "ci_high": _json_num(t.ci_high), "p_value": _json_num(t.p_value),
                        "significant": t.significant, "verdict": verdicts.word(m),
                        "baseline_file": p.baseline.file, "method": t.method,
                        "sessions_baseline": t.sessions_baseline,
                        "sessions_new": t.sessions_new,
                        "session_noise_pct": _json_num(t.session_noise_pct),
                        "noise_pct": _json_num(t.noise_pct), "noise_source": t.noise_source,
                        "noise_profile": comp.noise.path if comp.noise is not None
                        and t.session_noise_pct is not None else None,
                        "differs": _differs(p) or None,
                        "p_adjusted": _json_num(t.p_adjusted) if m.primary else None,
                        "correction": t.correction if m.primary else "none",
                        "exploratory": not m.primary,
                        "noise_check": t.noise_check,
                        # analysis.boots: the replicates a side, and a profile not used
                        "boots": t.boots or None, "boots_baseline": t.boots_baseline,
                        "boots_new": t.boots_new, "calibration": t.calibration})
    return out


def _summary_row(comp: Comparison) -> dict[str, Any]:
    b = comp.baseline
    s = b.summary.to_json() if b.summary else {"n": 0}
    return {"file": b.file, "label": b.label, "name": b.name, "partial": b.partial,
            "metric": comp.metric, "unit": comp.unit, **s}


def _cell(v: Any) -> Any:
    """A csv cell: words for yes/no, as the other formats say them; text from the files
    inert (an escape sequence in a forged unit is shown, not sent to the terminal)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return visible(v) if isinstance(v, str) else v


def render_csv(comp: Comparison) -> str:
    buf = io.StringIO()
    if comp.single:
        w = csv.DictWriter(buf, CSV_SUMMARY_COLUMNS, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerow({k: _cell(v) for k, v in _summary_row(comp).items()})
    else:
        w = csv.DictWriter(buf, CSV_COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows(comp):
            check = r["noise_check"]        # a cell: what was done with the calibration
            r["noise_check"] = check["action"] if check else None
            w.writerow({k: _cell(v) for k, v in r.items()})
    return buf.getvalue()


def _side_json(s: Side) -> dict[str, Any]:
    return {"file": s.file, "files": list(s.files), "sessions": s.sessions, "name": s.name,
            "label": s.label, "kernel": s.kernel,
            "variant": s.variant, "runs": s.runs, "partial": s.partial,
            "partial_reason": s.partial_reason or None,
            "summary": s.summary.to_json() if s.summary else None}


def document(comp: Comparison) -> dict[str, Any]:
    """The `--format json` document."""
    h = comp.histogram
    return {
        "workload": comp.workload, "metric": comp.metric, "unit": comp.unit,
        "higher_is_better": comp.higher_is_better,
        "baseline": _side_json(comp.baseline),
        "results": [_side_json(s) for s in comp.sides[1:]],
        "summary": _side_json(comp.baseline)["summary"] if comp.single else None,
        "comparisons": rows(comp),
        "metadata_differences": [
            {"file": p.new.file, "name": p.new.name, "field": d.field,
             "baseline": d.baseline, "new": d.new} for p in comp.pairs for d in p.metadata],
        "histogram": None if h is None else {
            "metric": h.metric, "unit": h.unit, "start": h.start, "width": h.width,
            "files": [s.file for s in comp.sides],
            "buckets": [{"low": b.low, "high": b.high, "label": label,
                         "counts": list(b.counts), "percents": [round(x, 3) for x in b.percents]}
                        for b, label in zip(h.buckets, bucket_labels(h.buckets, h.unit))]},
        "symbol_diffs": [
            {"file": p.new.file, "name": p.new.name,
             "symbols": [{"symbol": d.symbol, "dso": d.dso, "kernel": d.kernel,
                          "baseline_pct": d.baseline_pct, "new_pct": d.new_pct,
                          "delta": d.delta} for d in p.symbols]}
            for p in comp.pairs if p.symbols],
        "warnings": comp.warnings,
        "method": {"alpha": ALPHA, "confidence": CONFIDENCE, "min_runs": MIN_RUNS,
                   "min_rounds": MIN_ROUNDS, "methods": METHODS,
                   "assumed_session_noise_pct": 100 * ASSUMED_SESSION_NOISE,
                   "correction": "holm, the primary metric's rows across the sides; other "
                                 "rows exploratory",
                   "noise_check_alpha": NOISE_CHECK_ALPHA,
                   "too_noisy_pct": TOO_NOISY_PCT},
        "noise_profile": None if comp.noise is None else {
            "path": comp.noise.path, "key": comp.noise.key, "sessions": comp.noise.sessions,
            "created": comp.noise.created, "boots": comp.noise.boot_spread,
            "session_noise_pct": {k: 100 * m.sigma_between
                                  for k, m in comp.noise.metrics.items()}},
    }


def render_json(comp: Comparison) -> str:
    return json.dumps(document(comp), indent=2, default=str, allow_nan=False)


_RENDERERS = {"text": render_text, "md": render_md, "org": render_org, "csv": render_csv,
              "json": render_json}


def render(comp: Comparison, fmt: str = "text") -> str:
    renderer = _RENDERERS.get(fmt)
    if renderer is None:
        raise HotloopError(f"compare: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return renderer(comp)


def main_compare(paths: Sequence[str | Path], fmt: str = "text",
                 noise_file: Path | None = None) -> str:
    """What `hotloop compare A B C --format F [--noise FILE]` prints."""
    if fmt not in FORMATS:
        raise HotloopError(f"compare: unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    return render(compare.load_and_compare(paths, noise_file), fmt)
