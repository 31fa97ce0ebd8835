"""A comparison as csv: a row per metric and later side (or the one side's summary)."""
from __future__ import annotations

import csv
import io
from typing import Any

from hotloop.analysis.comparison import Comparison
from hotloop.render.compare_formats.shared import rows
from hotloop.render.compare_formats.symbols import csv_rows
from hotloop.visible import csv_text

CSV_COLUMNS = ["file", "label", "name", "partial", "metric", "unit", "higher_is_better",
               "n_baseline", "n_new", "baseline", "new", "diff", "change_pct", "ci_low",
               "ci_high", "p_value", "significant", "verdict", "baseline_file", "method",
               "sessions_baseline", "sessions_new", "session_noise_pct", "noise_pct",
               "noise_source", "noise_profile", "differs", "p_adjusted", "correction",
               "exploratory", "noise_check", "boots", "boots_baseline", "boots_new",
               "calibration", "q_value", "dso", "names", "ci_low_alone", "ci_high_alone"]


CSV_SUMMARY_COLUMNS = ["file", "label", "name", "partial", "metric", "unit", "n", "median",
                       "mean", "stdev", "cv", "min", "max"]


def _summary_row(comp: Comparison) -> dict[str, Any]:
    b = comp.baseline
    s = b.summary.to_json() if b.summary else {"n": 0}
    return {"file": b.file, "label": b.label, "name": b.name, "partial": b.partial,
            "metric": comp.metric, "unit": comp.unit, **s}


def _cell(v: Any) -> Any:
    """A csv cell: words for yes/no, as the other formats say them; text from the files
    inert (an escape sequence in a forged unit is shown, not sent to the terminal; a label
    "=HYPERLINK(...)" is text, not a spreadsheet's formula); numbers stay numbers."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return csv_text(v) if isinstance(v, str) else v


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
        for p in comp.pairs:        # the differential profile: a row a symbol, exploratory
            for r in csv_rows(p):
                w.writerow({k: _cell(v) for k, v in r.items()})
    return buf.getvalue()
