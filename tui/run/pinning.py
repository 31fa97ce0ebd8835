"""The guest's vCPU threads pinned here to the CPU profile's CPUs (qemu's other threads to the
remaining ones), as qemu names them ("CPU 0/TCG"), never with virtme-ng's --pin: that talks to
qemu's monitor on TCP port 3636, open to every local user and shared by two guests.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import re
from pathlib import Path


def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for t in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                out += [int(x) for x in Path(f"/proc/{pid}/task/{t}/children").read_text()
                        .split()]
    return out


def _threads(pid: int) -> dict[int, str]:
    out: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for t in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                out[int(t)] = Path(f"/proc/{pid}/task/{t}/comm").read_text().strip()
    return out


VCPU_THREAD = re.compile(r"CPU (\d+)/(TCG|KVM)")


def pin_qemu(qemu_pid: int, cpus: tuple[int, ...]) -> int:
    """vCPU i's thread on cpus[i % len], qemu's others on the CPUs left (when any are):
    how many vCPU threads were pinned."""
    allowed = os.sched_getaffinity(0)
    rest = allowed - set(cpus)
    pinned = 0
    for tid, comm in _threads(qemu_pid).items():
        m = VCPU_THREAD.fullmatch(comm)
        with contextlib.suppress(OSError):
            if m:
                os.sched_setaffinity(tid, {cpus[int(m.group(1)) % len(cpus)]})
                pinned += 1
            elif rest:
                os.sched_setaffinity(tid, rest)
    return pinned



def notes(cpus: tuple[int, ...], vcpus: int) -> list[str]:
    """What the header says of the pinning: none, or vCPUs sharing CPUs."""
    if not cpus:
        return ["the VM's vCPUs are not pinned: the CPU profile names no CPUs"]
    if len(set(cpus)) < vcpus:
        return [f"the CPU profile's {len(set(cpus))} CPU{'s' if len(set(cpus)) > 1 else ''} "
                f"cannot give the VM's {vcpus} vCPUs one each: they share"]
    return []


async def pin_guest(virtme_pid: int, cpus: tuple[int, ...], vcpus: int) -> None:
    """Pin qemu's vCPU threads as they appear (qemu names them "CPU 0/TCG")."""
    for _ in range(600):
        qemus = _children(virtme_pid)
        if qemus and pin_qemu(qemus[0], cpus) >= vcpus:
            # qemu's threads made later (9p's) inherit from its pinned main thread
            await asyncio.sleep(5)
            pin_qemu(qemus[0], cpus)
            return
        await asyncio.sleep(0.2)
