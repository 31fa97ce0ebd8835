"""Which boot each session ran in, and what that makes the unit of replication.

Sessions of one boot share whatever a boot fixes (the kernel's memory layout, what ran since,
the host's placement of a VM's vCPUs), so they differ by less than sessions across reboots.
Two sides of one boot are compared with the session as the replicate; two sides of different
boots (two kernels on one machine are always two boots) have a reboot between them, and only
boots measure what a reboot moves: there the **boot** is the replicate, a boot's sessions
averaged into one number.  Sessions of one boot are not independent replicates of a reboot:
three sessions of stock in one boot against three of patched in another are one boot a side,
and their spread says nothing about the offset each boot carries.

A session's boot is its header's `boot_id` (the kernel's /proc/sys/kernel/random/boot_id,
format 3).  A session that ran in a VM booted for it is a boot of its own, whatever its
boot_id says (a series A B B A... of fresh VMs: sessions as replicates are boots as
replicates).  A file without a boot_id (format 1 and 2) is of an unknown boot: possibly
another than every other session's (so two sides with one is never "within one boot"), and
counted as a boot of its own (as sessions were counted before files said their boot).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hotloop.results import Result

ONE = "one boot"                # every session of both sides in one known boot
ACROSS = "across boots"         # the sides ran in different boots
UNKNOWN = "boots unknown"       # some session does not say its boot: taken as across


def boot_of(r: Result) -> str:
    """A session's boot: "" when its file does not say (format 1 and 2)."""
    h = r.header
    if h.vm is not None:        # a VM booted for this session: its own boot
        return f"vm:{r.digest or r.path.resolve()}"
    return h.boot_id


@dataclass(frozen=True)
class Boots:
    """The boots of two compared sides, one key a session ("" unknown)."""
    base: tuple[str, ...]
    new: tuple[str, ...]
    relation: str               # ONE, ACROSS or UNKNOWN

    @property
    def across(self) -> bool:
        """The sides ran, or may have run, in different boots: boots are the replicates."""
        return self.relation != ONE

    @property
    def unknown(self) -> int:
        return sum(not k for k in (*self.base, *self.new))

    def units(self) -> tuple[list[list[int]], list[list[int]]]:
        """Each side's sessions (their indices) grouped into replicates: each session alone
        within one boot; across boots, the sessions of one boot together (an unknown boot
        alone)."""
        return _groups(self.base, self.across), _groups(self.new, self.across)

    def count(self) -> tuple[int, int]:
        """Replicates a side: boots across boots, sessions within one."""
        a, b = self.units()
        return len(a), len(b)


def _groups(keys: Sequence[str], by_boot: bool) -> list[list[int]]:
    if not by_boot:
        return [[i] for i in range(len(keys))]
    out: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        out.setdefault(k or f"?{i}", []).append(i)
    return list(out.values())


def of_sides(base: Sequence[Result], new: Sequence[Result]) -> Boots:
    """The boots of two sides.  Two kernels are two boots whatever the files say (a boot_id
    shared by two kernels is forged or broken)."""
    kernels = {r.header.kernel_release for r in (*base, *new)}
    return of_keys([boot_of(r) for r in base], [boot_of(r) for r in new], len(kernels) > 1)


def of_keys(base: Sequence[str], new: Sequence[str], kernels_differ: bool = False) -> Boots:
    """The boots of two sides from their sessions' keys ("" unknown)."""
    every = set(base) | set(new)
    if "" in every:
        relation = UNKNOWN
    elif len(every) == 1 and not kernels_differ and not next(iter(every)).startswith("vm:"):
        relation = ONE
    else:
        relation = ACROSS
    return Boots(tuple(base), tuple(new), relation)


def calibration_fits(pair: Boots, calibration_spread: str) -> bool:
    """Whether a calibration whose sessions spread over boots so (`spread`) may stand in for
    the replicates of these sides: across boots only one that had a boot a session measured
    what a reboot moves; within one boot any does (one across boots is only wider)."""
    return not pair.across or calibration_spread == ACROSS


def spread(keys: Sequence[str]) -> str:
    """How a calibration's sessions spread over boots: "across boots" only when each ran in a
    boot of its own (then its session variance holds a reboot's offset); "one boot" when all
    ran in one; "some share a boot" or "boots unknown" otherwise (neither measured a reboot
    the way one session a boot does)."""
    if not keys or any(not k for k in keys):
        return UNKNOWN
    if len(set(keys)) == len(keys):
        return ACROSS
    if len(set(keys)) == 1 and not keys[0].startswith("vm:"):
        return ONE
    return "some share a boot"
