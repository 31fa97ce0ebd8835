"""What every format of a comparison says alike: the notes under its table, the session
noise its verdicts used, a row's interval, and the rows as flat dicts (csv and json).
"""
from __future__ import annotations

import math
from typing import Any

from hotloop.analysis.comparison import Comparison, MetricDelta, Pair, Side, Test, meta_text
from hotloop.render import verdicts
from hotloop.render.units import figure, number, p_value, pct


def ci(t: Test) -> str:
    if t.ci_low is None or t.ci_high is None:
        return "-"
    return f"[{pct(t.ci_low)}, {pct(t.ci_high)}]"


def gate_text(m: MetricDelta) -> str:
    """A gated row in a few words: its change and interval (compare --fail-on)."""
    return f"{pct(m.test.change_pct)} {ci(m.test)}"


def better_way(hib: bool | None) -> str:
    return "higher is better" if hib else ("lower is better" if hib is not None else "")


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
        return (f"session noise: not measured: only a change beyond the largest plausible "
                f"offset{noise} a session is called (hotloop calibrate measures it)")
    if "unmeasured" in used:
        unused = " (the noise profile measured no reboot)" if p is not None else ""
        return (f"session noise: not measured: one boot a side, a reboot between, and no "
                f"calibration across reboots{unused}: only a change beyond the largest "
                f"plausible offset of a boot is called")
    if any(pair.method == "sessions" for pair in comp.pairs):
        return "session noise: measured from the sides' own sessions (no calibration)"
    if any(pair.method == "pairs" for pair in comp.pairs):
        return ("session noise: from the series' pairs of sessions (session i of each side "
                "ran side by side; no calibration)")
    return ""


PAIRED_NOTE = ("diff, change, CI and p come from the rounds, paired within each worker "
               "process; baseline and new are the medians of all runs")


def stat_notes(comp: Comparison) -> list[str]:
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
        out.append(f"{comp.metric} corrected for {held[0][1].family} sides (Holm): its "
                   f"95% CI is Holm-adjusted (clear of 0 exactly when called; the side's own "
                   f"is ci_low_alone, ci_high_alone in csv and JSON), p adjusted: "
                   + ", ".join(f"{name} {p_value(t.p_adjusted)}" for name, t in held))
    return out


def notes(comp: Comparison) -> list[str]:
    """What a table alone would not say: how paired rows were computed, and what the variants
    of a batch differ in (by design: not a warning)."""
    out = [PAIRED_NOTE] if any(p.method == "paired" for p in comp.pairs) else []
    out += stat_notes(comp)
    if comp.batch:
        out += [f"{p.new.name} differs in: " + "; ".join(meta_text(d) for d in p.metadata)
                for p in comp.pairs if p.metadata]
    return out


def differs(p: Pair) -> str:
    return "; ".join(meta_text(d) for d in p.metadata)


HEAD = ["metric", "baseline", "new", "diff", "change", "95% CI", "p", "verdict"]


def shown_p(m: MetricDelta) -> str:
    """The p a table shows: the one the verdict was judged on, so the word, the interval and
    p agree; corrected for several sides that is the adjusted p, labelled so."""
    t = m.test
    if m.primary and t.correction == "holm" and t.p_adjusted is not None:
        return f"{p_value(t.p_adjusted)} adj"
    return p_value(t.p_value)


def text_rows(p: Pair) -> list[list[str]]:
    rows = [HEAD]
    for m in p.metrics:
        t = m.test
        rows.append([m.metric, number(t.baseline, m.unit), number(t.new, m.unit),
                     number(t.diff, m.unit, signed=True), pct(t.change_pct), ci(t), shown_p(m),
                     verdicts.word(m)])
    return rows


def result_cell(s: Side) -> str:
    return s.name + (" (partial)" if s.partial else "")


def json_num(v: float | None) -> float | None:
    return None if v is None or not math.isfinite(v) else v


def rows(comp: Comparison) -> list[dict[str, Any]]:
    """The comparison table as flat dicts (the csv rows and the json `comparisons`)."""
    out = []
    for p in comp.pairs:
        for m in p.metrics:
            t = m.test
            # as the files hold them: csv makes every cell visible, JSON escapes itself
            out.append({"file": p.new.file, "label": p.new.text.label, "name": p.new.text.name,
                        "partial": p.new.partial, "metric": m.metric, "unit": m.unit,
                        "higher_is_better": m.higher_is_better, "n_baseline": t.n_baseline,
                        "n_new": t.n_new, "baseline": json_num(t.baseline),
                        "new": json_num(t.new), "diff": json_num(t.diff),
                        "change_pct": json_num(t.change_pct), "ci_low": json_num(t.ci_low),
                        "ci_high": json_num(t.ci_high), "p_value": json_num(t.p_value),
                        "significant": t.significant, "verdict": verdicts.word(m),
                        "baseline_file": p.baseline.file, "method": t.method,
                        "sessions_baseline": t.sessions_baseline,
                        "sessions_new": t.sessions_new,
                        "session_noise_pct": json_num(t.session_noise_pct),
                        "noise_pct": json_num(t.noise_pct), "noise_source": t.noise_source,
                        "noise_profile": comp.noise.path if comp.noise is not None
                        and t.session_noise_pct is not None else None,
                        "differs": differs(p) or None,
                        "p_adjusted": json_num(t.p_adjusted) if m.primary else None,
                        "correction": t.correction if m.primary else "none",
                        "exploratory": not m.primary,
                        "noise_check": t.noise_check,
                        # analysis.boots: the replicates a side, and a profile not used
                        "boots": t.boots or None, "boots_baseline": t.boots_baseline,
                        "boots_new": t.boots_new, "calibration": t.calibration,
                        # corrected for several sides: ci_low, ci_high are Holm-adjusted
                        "ci_low_alone": json_num(t.ci_low_alone),
                        "ci_high_alone": json_num(t.ci_high_alone)})
    return out
