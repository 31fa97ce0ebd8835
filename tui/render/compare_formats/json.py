"""A comparison as the `--format json` document."""
from __future__ import annotations

import json
from typing import Any

from hotloop.analysis.comparison import METHODS, Comparison, Side
from hotloop.analysis.significance import ALPHA, CONFIDENCE, MIN_ROUNDS, NOISE_CHECK_ALPHA
from hotloop.render.compare_formats.shared import rows
from hotloop.render.compare_formats.symbols import diff_json
from hotloop.render.units import bucket_labels
from hotloop.render.warning_words import document as warning_document
from hotloop.stats import ASSUMED_SESSION_NOISE, MIN_RUNS, SESSION_OFFSET_BOUND, TOO_NOISY_PCT


def _side_json(s: Side) -> dict[str, Any]:
    # the names as the files hold them (s.text): json.dumps escapes what would drive a
    # terminal itself, and a reader of JSON gets the real string back
    return {"file": s.file, "files": list(s.files), "sessions": s.sessions,
            "name": s.text.name, "label": s.text.label, "kernel": s.text.kernel,
            "variant": s.text.variant, "runs": s.runs, "partial": s.partial,
            "partial_reason": s.partial_reason or None,
            "summary": s.summary.to_json() if s.summary else None}


def document(comp: Comparison) -> dict[str, Any]:
    """The `--format json` document, as a dict (what `run --sessions`, a batch's report and
    the series' end line hold as their `comparison`): JSON's types, ready to dump."""
    h = comp.histogram
    return {
        "workload": comp.workload, "metric": comp.metric, "unit": comp.unit,
        "higher_is_better": comp.higher_is_better,
        "baseline": _side_json(comp.baseline),
        "results": [_side_json(s) for s in comp.sides[1:]],
        "summary": _side_json(comp.baseline)["summary"] if comp.single else None,
        "comparisons": rows(comp),
        "metadata_differences": [
            {"file": p.new.file, "name": p.new.text.name, "field": d.field,
             "baseline": d.baseline, "new": d.new} for p in comp.pairs for d in p.metadata],
        "histogram": None if h is None else {
            "metric": h.metric, "unit": h.unit, "start": h.start, "width": h.width,
            "files": [s.file for s in comp.sides],
            "buckets": [{"low": b.low, "high": b.high, "label": label,
                         "counts": list(b.counts), "percents": [round(x, 3) for x in b.percents]}
                        for b, label in zip(h.buckets, bucket_labels(h.buckets, h.unit))]},
        "symbol_diffs": [diff_json(p) for p in comp.pairs if p.symbols],
        "warnings": [warning_document(w) for w in comp.warnings],
        "method": {"alpha": ALPHA, "confidence": CONFIDENCE, "min_runs": MIN_RUNS,
                   "min_rounds": MIN_ROUNDS, "methods": METHODS,
                   "assumed_session_noise_pct": 100 * ASSUMED_SESSION_NOISE,
                   "session_offset_bound_pct": 100 * SESSION_OFFSET_BOUND,
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
    return json.dumps(document(comp), indent=2, allow_nan=False)
