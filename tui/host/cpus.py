"""CPU lists: parse and format the kernel's "0-3,5", which CPUs exist, which we may use.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

from hotloop.host import sysfs


def parse_cpu_list(text: str) -> list[int]:
    """Parse a kernel CPU list ("0-3,5,7-8"; empty means none) into sorted CPUs."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return sorted(cpus)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """The inverse of parse_cpu_list: [0, 1, 2, 5] -> "0-2,5"."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(set(cpus)):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [cpu]
    if run:
        out.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
    return ",".join(out)


def online_cpus() -> list[int]:
    text = sysfs.read_opt(sysfs.CPU_SYS / "online")
    if text is None:  # no sysfs (odd container): trust the affinity mask
        return sorted(os.sched_getaffinity(0))
    return parse_cpu_list(text)


def present_cpus() -> list[int]:
    text = sysfs.read_opt(sysfs.CPU_SYS / "present")
    return parse_cpu_list(text) if text is not None else online_cpus()


def validate_cpus(cpus: Iterable[int]) -> str | None:
    """Problem with a CPU list for pinning, or None: beyond the machine, offline, or outside our cpuset."""
    cpus = list(cpus)
    present = present_cpus()
    online = set(online_cpus())
    usable = os.sched_getaffinity(0)
    for cpu in cpus:
        if not isinstance(cpu, int) or isinstance(cpu, bool) or cpu < 0:
            return f"CPU {cpu!r} is not a CPU number"
        if cpu not in present:
            return f"CPU {cpu} is beyond this machine (CPUs {format_cpu_list(present)})"
        if cpu not in online:
            return f"CPU {cpu} is offline (online: {format_cpu_list(online)})"
        if cpu not in usable:
            return f"CPU {cpu} is not allowed for this process (cpuset {format_cpu_list(usable)})"
    return None
