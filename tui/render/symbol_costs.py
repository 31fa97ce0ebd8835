"""A side's symbols' CPU time per operation, as `show` prints it: each symbol's mean ns/op over
the sessions and their spread, its share and its samples a session (analysis.symcost says
what a cost per op is)."""
from __future__ import annotations

from typing import Any

from hotloop.analysis.symcost import SideCost
from hotloop.render.report import dso_name

TOP = 15


def _spread(costs: tuple[float, ...] | None, sd: float | None) -> str:
    if not costs or len(costs) < 2 or sd is None:
        return "-"
    return f"±{sd:.1f}  ({min(costs):.1f}..{max(costs):.1f})"


def cost_lines(side: SideCost, top: int = TOP) -> list[str]:
    """The side's worker CPU ns/op and its top symbols by cost; where the sessions give no
    cost, why (never a 0)."""
    k = len(side.sessions)
    what = f"{k} sessions" if k > 1 else "one session"
    if not side.costed:
        return ["", f"cost per op: none ({side.why})"] if side.sessions[0].samples else []
    worker = side.worker_ns
    mean = sum(worker) / len(worker)
    spread = f", sessions {min(worker):.1f}..{max(worker):.1f}" if k > 1 else ""
    out = ["", f"cost per op ({what}; a symbol's share of the worker's samples x the "
               f"worker's CPU time per op)",
           f"  worker CPU time  {mean:.1f} ns/op (perf stat task-clock / ops{spread})"]
    rows = [["symbol", "dso", "ns/op", "sd (min..max)", "share", "samples a session"]]
    for s in side.symbols[:top]:
        held = f" ({len(s.names)} names)" if len(s.names) > 1 else ""
        share = 100 * sum(s.shares) / k
        rows.append([f"[{'k' if s.kernel else '.'}] {s.symbol[:50]}{held}",
                     dso_name(s.dso)[:30], f"{s.mean_ns or 0.0:.1f}",
                     _spread(s.costs, s.sd_ns), f"{share:.2f}%",
                     f"{sum(s.samples) / k:.0f}"])
    if k == 1:                          # no spread to show
        rows = [r[:3] + r[4:] for r in rows]
        rows[0][-1] = "samples"
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {2, 3, 4} if k == 1 else {2, 4, 5}
    out += ["  " + "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                             for i, c in enumerate(r)).rstrip() for r in rows]
    return out


def side_text(side: SideCost, where: str) -> str:
    """`show DIR`: a side's sessions, their symbols' costs and spread."""
    lines = [f"{len(side.sessions)} session{'s' * (len(side.sessions) != 1)} in {where}:"]
    lines += [f"  {s.file}" for s in side.sessions]
    body = cost_lines(side)
    return "\n".join(lines + (body or ["", f"no hot symbols ({side.why or 'perf did not run'})"]))


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
