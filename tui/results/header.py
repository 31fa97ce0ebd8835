"""The result header, typed: the first line of every result file, as its readers use it.

`fields` keeps the whole header as written (kernel facts, sysctls, the plan...), shown as it is
and diffed field by field by compare; the attributes are the parts that show, compare, noise
and the console read, with what they are when a file predates them.  `results.store.HEADER`
validated their types before a Header is made.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class WorkloadInfo:
    name: str = "?"
    metric: str = "value"
    unit: str = ""
    higher_is_better: bool = True


@dataclass(frozen=True)
class Batch:
    """The variants of one batch; interleaved ones share an id that pairs their rounds."""
    id: str | None = None
    interleaved: bool = False
    variants: int = 0                     # how many


@dataclass(frozen=True)
class Header:
    fields: dict[str, Any] = field(default_factory=dict)
    time: str = ""
    host: str = ""
    kernel_release: str = "?"
    label: str = ""
    variant: str = ""
    workload: WorkloadInfo = WorkloadInfo()
    params: dict[str, Any] = field(default_factory=dict)
    cpu_name: str = ""
    cpus: tuple[int, ...] = ()
    runs: int | None = None               # the plan's runs and worker processes
    processes: int = 1
    perf: bool = False
    batch: Batch | None = None
    remote: str = ""                      # the [host.NAME] it ran on over SSH, if it did

    @classmethod
    def of(cls, h: dict[str, Any]) -> Header:
        def table(name: str) -> dict[str, Any]:
            v = h.get(name)
            return v if isinstance(v, dict) else {}
        w, cpu, plan, batch = table("workload"), table("cpu"), table("plan"), h.get("batch")
        remote = table("remote")
        runs, procs = plan.get("runs"), plan.get("processes", 1)
        return cls(
            fields=h, time=str(h.get("time", "")), host=str(h.get("host", "")),
            kernel_release=str(h.get("kernel_release", "?")), label=str(h.get("label") or ""),
            variant=str(h.get("variant") or ""),
            workload=WorkloadInfo(str(w.get("name", "?")), str(w.get("metric", "value")),
                                  str(w.get("unit", "")), bool(w.get("higher_is_better", True))),
            params=table("params"), cpu_name=str(cpu.get("name", "")),
            cpus=tuple(c for c in cpu.get("cpus") or () if isinstance(c, int)),
            runs=runs if isinstance(runs, int) and not isinstance(runs, bool) else None,
            processes=procs if isinstance(procs, int) and procs >= 1 else 1,
            perf=bool(plan.get("perf", False)),
            batch=Batch(str(batch["id"]) if batch.get("id") is not None else None,
                        bool(batch.get("interleaved")),
                        _count(batch.get("variants")))
            if isinstance(batch, dict) else None,
            remote=str(remote.get("host", "")))


def _count(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0
