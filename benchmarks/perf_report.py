"""`perf report` of one perf window, as hotloop summarised windows before `perf script` did
(perf/script.py): the reference the annotate benchmark checks perf script's hot symbols
against, sample for sample.  Not used by hotloop itself.
"""
from __future__ import annotations

import re

from hotloop.events import HotSymbol

SEP = "\x1f"                    # field separator no symbol or DSO name contains

def _is_kernel(marker: str, dso: str) -> bool:
    if marker:
        return marker in ("k", "g")      # [k] host kernel, [g] guest kernel
    return dso.startswith("[kernel") or dso.endswith(".ko") or dso.startswith("[bpf")


def _pct(s: str) -> float | None:
    """A share of the samples: 0-100, else the row is not one of perf's."""
    try:
        v = float(s.strip().rstrip("%"))
    except ValueError:
        return None
    return v if 0.0 <= v <= 100.0 else None


def _int(s: str) -> int:
    try:
        return int(s.strip())
    except ValueError:
        return 0


_MARK_RE = re.compile(r"^\[(.)\]\s?(.*)$", re.S)
# Whitespace-aligned fallback: "  12.34%   567  dso name  [k] symbol with spaces<a, b>"
_ROW_RE = re.compile(r"^\s*(?P<pct>\d+(?:\.\d+)?)%\s+(?:(?P<n>\d+)\s+)?"
                     r"(?:(?P<dso>\S.*?)\s+)?\[(?P<mark>.)\]\s(?P<sym>.*)$")


def _symbol_cell(cell: str) -> tuple[str, str]:
    """'[k] read_zero' -> ('k', 'read_zero'); a bare symbol has no marker."""
    cell = cell.strip()
    m = _MARK_RE.match(cell)
    if m:
        return m.group(1), m.group(2).strip()
    return "", cell


def parse_report(text: str) -> list[HotSymbol]:
    """Parse `perf report --stdio` output into HotSymbols, best first.  A line that is not a
    row of perf's (junk, a cut line) is skipped, never an error.

    Best input is what `report_argv()` asks for (`-F overhead,sample,dso,sym` with a
    \\x1f field separator), where the header names the columns. Plain whitespace-aligned
    output (`--sort dso,sym [-n]`, or `--sort sym`) is parsed too, using the `# ....` rule
    under the header for column spans, so symbols with spaces, commas and <> survive.
    """
    out: list[HotSymbol] = []
    cols: list[str] | None = None      # column names (separator mode)
    spans: list[tuple[int, int]] | None = None
    names: list[str] | None = None     # column names (aligned mode)
    for raw in text.splitlines():
        line = raw.rstrip("\n")
        if not line.strip():
            continue
        if line.startswith("#"):
            body = line[1:]
            if "Overhead" in body:
                if SEP in body:
                    cols = [c.strip().lower() for c in body.split(SEP)]
                else:
                    names = [c.strip().lower() for c in re.split(r"\s{2,}", body.strip())]
            elif names is not None and spans is None and re.fullmatch(r"[\s.]+", body) and "." in body:
                spans = [(m.start() + 1, m.end() + 1) for m in re.finditer(r"\.+", body)]
            continue
        sym = None
        if SEP in line:
            sym = _parse_sep_row(line, cols)
        elif names is not None and spans is not None and len(names) == len(spans):
            sym = _parse_aligned_row(line, names, spans)
        if sym is None:
            sym = _parse_regex_row(line)
        if sym is not None:
            out.append(sym)
    out.sort(key=lambda s: (-s.percent, -s.samples))   # stable: ties keep perf's order
    return out


def _from_cells(cells: dict[str, str]) -> HotSymbol | None:
    pct = _pct(cells.get("overhead", ""))
    if pct is None:
        return None
    dso = cells.get("shared object", cells.get("dso", "")).strip()
    marker, name = _symbol_cell(cells.get("symbol", ""))
    if not name and not dso:
        return None
    return HotSymbol(symbol=name or "[unknown]", dso=dso or "[unknown]", percent=pct,
                     kernel=_is_kernel(marker, dso), samples=_int(cells.get("samples", "")))


def _parse_sep_row(line: str, cols: list[str] | None) -> HotSymbol | None:
    parts = line.split(SEP)
    if cols is None or len(cols) != len(parts):
        cols = ["overhead", "samples", "shared object", "symbol"][:len(parts)]
        if len(parts) == 3:
            cols = ["overhead", "shared object", "symbol"]
    return _from_cells(dict(zip(cols, parts)))


def _parse_aligned_row(line: str, names: list[str], spans: list[tuple[int, int]]) -> HotSymbol | None:
    cells: dict[str, str] = {}
    for i, (name, (start, end)) in enumerate(zip(names, spans)):
        last = i == len(spans) - 1
        cells[name] = line[start:] if last else line[start:end]
    # A DSO wider than its rule would shift the symbol; trust the regex then.
    if not cells.get("symbol", "").lstrip().startswith("[") and "symbol" in cells:
        return None
    return _from_cells(cells)


def _parse_regex_row(line: str) -> HotSymbol | None:
    m = _ROW_RE.match(line)
    pct = _pct(m.group("pct")) if m else None
    if m is None or pct is None:
        return None
    dso = (m.group("dso") or "").strip()
    return HotSymbol(symbol=m.group("sym").strip() or "[unknown]", dso=dso or "[unknown]",
                     percent=pct, kernel=_is_kernel(m.group("mark"), dso),
                     samples=int(m.group("n") or 0))


def report_argv(perf: str, path: str, comm: str | None = None) -> list[str]:
    """The `perf report` command `parse_report` is built for; `comm` keeps only the
    samples of processes with that name (system-wide recordings), in % of those."""
    only = ["--comm", comm, "--percentage", "relative"] if comm else []
    # with --comm, comm is a sort key too: otherwise perf files every process's samples of
    # a symbol under the first process sampled in it, and keeps or drops them all by that
    # one's comm (another run of the same workload on the CPUs: its counts, or none).  perf
    # leaves the column out when one comm is kept.
    keys = "comm,dso,sym" if comm else "dso,sym"
    return [perf, "report", "-i", path, "--stdio", "--no-children", "-g", "none",
            "--sort", keys, "-F", "overhead,sample," + keys,
            f"--field-separator={SEP}", "--percent-limit", "0", *only]
