"""Before and around a session: what it would change on the system (consent), what its result
header records, and what one run's counters mean as the workload's metric.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
import time
from dataclasses import dataclass
from typing import Any, TypeVar

from hotloop import __version__, paths, record
from hotloop import events as ev
from hotloop.catalog import ResolvedPlan, Workload
from hotloop.errors import HotloopError
from hotloop.host.changes import Applied, Change, describe_changes, plan_changes
from hotloop.host.cpus import format_cpu_list
from hotloop.host.doctor import capabilities
from hotloop.host.facts import check_expect, kernel_facts
from hotloop.host.holds import describe_held, held_elsewhere
from hotloop.host.journal import boot_id
from hotloop.host.settings import read_sysctl, show_original
from hotloop.host.sysfs import SystemSettingError
from hotloop.record import Batch, CpuInfo, Header, KernelInfo, PlanInfo, SysctlState, WorkloadInfo
from hotloop.run import build, protocol

T = TypeVar("T")


def metric_value(w: Workload, run: protocol.Run) -> float:
    """The workload's primary metric from one run's counters (events.metric_value)."""
    return ev.metric_value(w.metric, run.ops, run.bytes, run.ns, run.cycles, run.extra)


def _record(cls: type[T], profile: Any) -> T:
    """A catalogue dataclass as its part of the record: the same fields, as JSON reads them."""
    return record.from_json(cls, json.loads(json.dumps(dataclasses.asdict(profile), default=str)))


@dataclass(frozen=True)
class Preflight:
    """What a run would change on the system (needs consent) and what it skips."""
    changes: list[Change]
    warnings: list[str]

    def refusal(self) -> str:
        return describe_changes(self.changes)


def preflight(rp: ResolvedPlan) -> Preflight:
    """Check the kernel profile's expectations and plan its system changes.

    Touches nothing; HotloopError (exit 2) for a profile that cannot run here,
    or whose settings another running hotloop holds (and will restore mid-run)."""
    k, cpu = rp.kernel, rp.cpu
    owner, held = held_elsewhere(k.sysctl, cpu.governor is not None,
                                        cpu.boost is not None, cpu.cpus)
    if held:
        raise HotloopError(describe_held(owner, held))
    try:
        # each change names the profile file that asks for it, in the consent line
        changes, warnings = plan_changes(k.sysctl, cpu.governor, cpu.boost,
                                                cpu.cpus, strict=cpu.strict,
                                                sysctl_source=k.origin, cpu_source=cpu.origin)
        mismatches = check_expect(k.expect)
    except SystemSettingError as e:
        raise HotloopError(f"{k.origin or cpu.origin}: {e}") from None
    if mismatches:
        raise HotloopError(f"{k.origin}: [kernel.{k.name}] expect: {'; '.join(mismatches)}")
    if cpu.isolated:
        isolated = next((c.value for c in capabilities() if c.name == "isolated cpus"),
                        None) or []
        outside = [c for c in cpu.cpus if c not in isolated]
        if outside or not cpu.cpus:
            msg = (f"[cpu.{cpu.name}] isolated: CPUs {format_cpu_list(outside)} are not "
                   f"in isolcpus/nohz_full" if cpu.cpus else
                   f"[cpu.{cpu.name}] isolated: the profile pins to no CPU")
            if cpu.strict:
                raise HotloopError(f"{cpu.origin}: {msg}")
            warnings.append(msg + "; other tasks may share them")
    return Preflight(changes, warnings)


def system_settings(rp: ResolvedPlan) -> list[str]:
    """What the profiles would set, as they say it (another machine's state is not known
    here: its hotloop plans the changes and asks for --apply-system)."""
    cpu = rp.cpu
    return [*(f"sysctl {k} = {v}" for k, v in rp.kernel.sysctl.items()),
            *([f"governor {cpu.governor}"] if cpu.governor is not None else []),
            *([f"boost {'on' if cpu.boost else 'off'}"] if cpu.boost is not None else [])]


def header(rp: ResolvedPlan, built: build.Built, variant: str = "",
           sysctl: dict[str, SysctlState] | None = None,
           batch: Batch | None = None) -> Header:
    w = rp.workload
    facts = kernel_facts()
    return Header(
        hotloop=__version__, hotloop_source=paths.source_digest(),
        time=time.strftime("%Y-%m-%dT%H:%M:%S%z"), host=socket.gethostname(),
        kernel_release=facts["release"], kernel_version=facts["version"],
        arch=facts["machine"], cmdline=facts["cmdline"], cpu_model=facts["cpu_model"],
        cpus=os.cpu_count() or 1, mitigations=facts["mitigations"],
        vulnerabilities=facts["vulnerabilities"], sysctl=sysctl or {},
        python=platform.python_version(), boot_id=boot_id(),
        plan=_record(PlanInfo, rp.plan),
        workload=WorkloadInfo(w.name, str(w.source), w.summary, w.metric, w.unit,
                              w.higher_is_better, w.procs),
        params=dict(rp.params), cpu=_record(CpuInfo, rp.cpu),
        kernel=_record(KernelInfo, rp.kernel), label=rp.kernel.label or rp.kernel.name,
        variant=variant, compiler=built.compiler, cflags=tuple(built.cflags),
        source_sha256=built.source_sha256, batch=batch)


def changed_during(during: dict[str, str | None]) -> list[str]:
    """The profile's sysctls that no longer read as the header's "during" says,
    read at the end of the run before restoring (another program changed them)."""
    out = []
    for name, was in during.items():
        try:
            now: str | None = read_sysctl(name)
        except SystemSettingError:
            now = None
        if now != was:
            show = [show_original(v) if v is not None else "unreadable"
                    for v in (was, now)]
            out.append(f"sysctl {name} changed during the run: {show[0]} at its start, "
                       f"{show[1]} at its end; the header's \"during\" does not hold for "
                       f"every run")
    return out


def restore(applied: Applied) -> list[str]:
    """Put the system back; what was restored, or why it could not be."""
    try:
        return applied.restore()
    except SystemSettingError as e:
        return [f"restore failed: {e}"]
