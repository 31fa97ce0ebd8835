"""A side's symbols' CPU time per operation, as `show` prints it: each symbol's mean ns/op over
the sessions and their spread, its share and its samples a session (analysis.symcost says
what a cost per op is)."""
from __future__ import annotations

from typing import Any

from hotloop.analysis.symcost import SideCost
from hotloop.render.layout import UNBOUNDED, bound, safe, table, wrap
from hotloop.render.symbol_names import dso_name

TOP = 15


def _spread(costs: tuple[float, ...] | None, sd: float | None) -> str:
    if not costs or len(costs) < 2 or sd is None:
        return "-"
    return f"±{sd:.1f}  ({min(costs):.1f}..{max(costs):.1f})"


def cost_lines(side: SideCost, top: int = TOP, columns: int | None = None) -> list[str]:
    """The side's worker CPU ns/op and its top symbols by cost; where the sessions give no
    cost, why (never a 0).  Narrower than `columns`, the table gives up the DSO, the samples,
    then the spread, and cuts the symbols' names."""
    k = len(side.sessions)
    what = f"{k} sessions" if k > 1 else "one session"
    width = columns or UNBOUNDED
    if not side.costed:
        return [""] + wrap(f"cost per op: none ({safe(side.why)})", width, "  ", "") \
            if side.sessions[0].samples else []
    worker = side.worker_ns
    mean = sum(worker) / len(worker)
    spread = f", sessions {min(worker):.1f}..{max(worker):.1f}" if k > 1 else ""
    out = [""] + wrap(f"cost per op ({what}; a symbol's share of the worker's samples x the "
                      f"worker's CPU time per op)", width, "  ", "")
    out += wrap(f"worker CPU time  {mean:.1f} ns/op (perf stat task-clock / ops{spread})",
                width, "    ", "  ")
    rows = [["symbol", "dso", "ns/op", "sd (min..max)", "share", "samples a session"]]
    for s in side.symbols[:top]:
        held = f" ({len(s.names)} names)" if len(s.names) > 1 else ""
        share = 100 * sum(s.shares) / k
        # the names are the files': escaped as they enter the row (render.layout)
        rows.append([f"[{'k' if s.kernel else '.'}] {safe(s.symbol)}{held}",
                     safe(dso_name(s.dso)), f"{s.mean_ns or 0.0:.1f}",
                     _spread(s.costs, s.sd_ns), f"{share:.2f}%",
                     f"{sum(s.samples) / k:.0f}"])
    if k == 1:                          # no spread to show
        rows = [r[:3] + r[4:] for r in rows]
        rows[0][-1] = "samples"
    right = {2, 3, 4} if k == 1 else {2, 4, 5}
    drop = (1, 4) if k == 1 else (1, 5, 3)
    out += table(rows, right=right, width=columns, drop=drop, squeeze=(0,), least=16)
    return out


def side_text(side: SideCost, where: str, columns: int | None = None) -> str:
    """`show DIR`: a side's sessions, their symbols' costs and spread, in lines of at most
    `columns` (None: unbounded; the command line gives the terminal's width)."""
    width = UNBOUNDED if columns is None else columns
    lines = wrap(f"{len(side.sessions)} session{'s' * (len(side.sessions) != 1)} in "
                 f"{safe(where)}:", width, "  ", "")
    for s in side.sessions:
        lines += wrap(safe(s.file), width, "    ", "  ")
    body = cost_lines(side, columns=width)
    return "\n".join(bound(lines + (body or no_symbols(side, width)), width))


def no_symbols(side: SideCost, width: int) -> list[str]:
    """Why a side has no hot symbols, in lines of `width`."""
    return [""] + wrap(f"no hot symbols ({safe(side.why or 'perf did not run')})", width)


def cost_json(side: SideCost, top: int = 30) -> dict[str, Any]:
    """The same for `show --format json`: null costs where the sessions give none."""
    return {
        "sessions": [s.file for s in side.sessions],
        "worker_ns_per_op": list(side.worker_ns) if side.costed else None,
        "why": side.why or None,
        "symbols": [{"symbol": s.symbol, "dso": s.dso, "kernel": s.kernel,
                     "names": list(s.names), "samples": list(s.samples),
                     "shares": list(s.shares),
                     "ns_per_op": list(s.costs) if s.costs is not None else None,
                     "mean_ns_per_op": s.mean_ns, "sd_ns_per_op": s.sd_ns}
                    for s in side.symbols[:top]]}
