"""Merging windows' hot symbols, and parsing `perf stat` CSV into counters (a window's own
symbols come from `perf script`: perf/script.py).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

from hotloop.events import HotSymbol

# Defaults from benchmarks/perf_overhead.py on a 2-core KVM guest: workload CPU time per
# repetition +1.2..1.8% at 999 Hz, +4..6% at 1999 Hz, +12..15% at 3999 Hz (perf's default).


def aggregate(windows: Iterable[Sequence[HotSymbol]]) -> list[HotSymbol]:
    """Merge several summaries: sum samples per (symbol, dso), recompute percent.

    Summaries without sample counts (samples == 0 everywhere) are averaged by percent.
    """
    samples: dict[tuple[str, str], int] = {}
    pct: dict[tuple[str, str], float] = {}
    kernel: dict[tuple[str, str], bool] = {}
    n = 0
    for syms in windows:
        n += 1
        for s in syms:
            key = (s.symbol, s.dso)
            samples[key] = samples.get(key, 0) + s.samples
            pct[key] = pct.get(key, 0.0) + s.percent
            kernel[key] = kernel.get(key, False) or s.kernel
    total = sum(samples.values())
    out = [HotSymbol(symbol=k[0], dso=k[1], kernel=kernel[k], samples=samples[k],
                     percent=round(100.0 * samples[k] / total, 4) if total else round(pct[k] / max(n, 1), 4))
           for k in samples]
    out.sort(key=lambda s: (-s.percent, -s.samples, s.symbol))
    return out


# --------------------------------------------------------------------------- perf stat

def parse_stat_csv(text: str) -> dict[str, float | None]:
    """Parse `perf stat -x,` output: {event: value}; unsupported/uncounted -> None, never 0.

    Adds "ipc" (instructions / cycles) when both counted. Other lines are ignored.
    """
    out: dict[str, float | None] = {}
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 3 or line.startswith("#"):
            continue
        value, event = parts[0].strip(), parts[2].strip()
        if not event or " " in event and not event.startswith("<"):
            continue
        event = event.split(":")[0] if event.endswith((":u", ":k", ":uk")) else event
        if value.startswith("<"):          # <not supported>, <not counted>
            out[event] = None
            continue
        try:
            v = float(value)
        except ValueError:
            continue
        out[event] = int(v) if v.is_integer() and "." not in value else v
    cyc, ins = out.get("cycles"), out.get("instructions")
    if cyc and ins is not None:
        out["ipc"] = round(ins / cyc, 4)
    elif "cycles" in out or "instructions" in out:
        out["ipc"] = None
    return out
