"""Every metric a result file recorded, as one MetricValues per metric: its name, unit and
direction, and its values over the session's runs.

The workload's primary metric first, then ns/op, cycles/op where the CPU counted cycles, the
worker's CPU time per op (cpu_ns/op: its CPU seconds a run over the run's ops), each
`extra` value (user_s, sys_s, latency percentiles) and perf counters, which are one number for
the whole session.  compare tests each of them, calibrate measures the noise of each.
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from hotloop.results import Result

# What kind of quantity a metric is, which decides how its verdict is worded (render.verdicts):
# a speed gets faster or slower, a resource (CPU seconds, a counter) better or worse, a value
# nobody declared a direction for higher or lower.
SPEED, RESOURCE, UNDIRECTED = "speed", "resource", "undirected"
# run.protocol.CPU_EXTRA: the extra the worker adds to each run, its CPU seconds over it
CPU_EXTRA = "worker_cpu_s"
CPU_PER_OP = "cpu_ns/op"                # the worker's CPU time per op, from CPU_EXTRA
_COUNTER_UP = {"ipc", "instructions-per-cycle"}     # counters where more is better


@dataclass(frozen=True)
class MetricValues:
    """One metric of one session: what it is and its values, one a run (a perf counter: one
    for the session).  (run.series_run.SeriesRun is a series of sessions; this is not.)"""
    name: str
    unit: str
    higher_is_better: bool | None
    kind: str                           # SPEED, RESOURCE or UNDIRECTED
    values: Sequence[float]             # an array of 8-byte floats (300,000 runs a side)
    per_session: bool = False           # a perf counter: one value for the whole session


def extra_kind(name: str) -> tuple[str, bool | None, str]:
    """(unit, higher_is_better, kind) of an `extra` value, from its name."""
    if name.startswith("lat") or name.endswith("_ns"):
        return ("ns" if name.endswith("_ns") else ""), False, SPEED
    if name.endswith("_s"):
        return "s", False, RESOURCE
    return "", None, UNDIRECTED


def counters(r: Result) -> dict[str, float]:
    """perf stat's counters of the session, those this CPU counted."""
    found = r.finished.counters if r.finished else {}
    return {k: float(v) for k, v in found.items() if v is not None and math.isfinite(v)}


def metric_values(r: Result) -> dict[str, MetricValues]:
    """Every metric the result recorded, per run, the primary metric first."""
    w = r.workload
    primary = w.metric
    out: dict[str, MetricValues] = {primary: MetricValues(primary, w.unit, w.higher_is_better, SPEED,
                                              r.runs.values)}
    # from the runs' columns: no object a run (300,000 runs a side)
    ops, ns, cycles = (r.runs.column(k) for k in ("ops", "ns", "cycles"))
    if "ns/op" not in out:
        vals = array("d", (n / o for o, n in zip(ops, ns) if o > 0 and n > 0))
        if vals:
            out["ns/op"] = MetricValues("ns/op", "ns/op", False, SPEED, vals)
    if "cycles/op" not in out:
        vals = array("d", (c / o for o, c in zip(ops, cycles) if o > 0 and c > 0))
        if vals:
            out["cycles/op"] = MetricValues("cycles/op", "cycles/op", False, SPEED, vals)
    cpu = r.runs.column(CPU_EXTRA)      # the worker's CPU seconds a run: its CPU time per op
    if cpu and len(cpu) == len(ops) and CPU_PER_OP not in out:
        vals = array("d", (c * 1e9 / o for o, c in zip(ops, cpu) if o > 0))
        if vals:
            out[CPU_PER_OP] = MetricValues(CPU_PER_OP, "ns/op", False, RESOURCE, vals)
    for name in r.runs.extra_names:
        if name in out or name == CPU_EXTRA and CPU_PER_OP in out:    # one row for it
            continue
        extra = r.runs.column(name)
        if extra:
            unit, hib, kind = extra_kind(name)
            out[name] = MetricValues(name, unit, hib, kind, extra)
    for name, v in counters(r).items():
        key = f"perf:{name}"
        out[key] = MetricValues(key, "", name in _COUNTER_UP, RESOURCE, [v], per_session=True)
    return out
