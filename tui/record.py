"""The result record: what a result file's first line (the header) and its last line (the
summary, and why the session stopped) hold, as typed dataclasses.

Each has one `to_json` and one `from_json`.  `from_json` checks every field against the
dataclass's own annotations (a string, an integer that is not a bool, an object of...), so the
definitions below are the only statement of the format: a reader cannot check one shape while
the writer writes another.  A field missing from a file reads as its default: files of the
format before this one lack some.  A key the header's definitions do not name is refused (a
typo `runz`); one in a summary is left unread.  The codec is hotloop.codec's, the one of every
typed line.

The header says its `format`.  Files without it are format 1 (hotloop 0.1.0 before the record
was typed); a file of a newer format than FORMAT is refused in one line naming both numbers
(`NewerFormat`), since its fields may mean what this version cannot know.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hotloop import codec
from hotloop.codec import TEXT_MAX, Unknown, cut, cut_all, from_json, object_json, to_json

# This version's.  1: the files written before `format` existed; 2: the typed record; 3: adds
# the boot (boot_id), a session's place in a series (batch.session) and the VM it ran in (vm);
# 4: adds the perf_start line (whether perf started: a format 3 reader would refuse the line);
# 5: adds a series' design to its batch (sides, differs, sessions, position).
FORMAT = 5
# A string read from a file is cut to this many characters ("…" last): a forged 30 MB label
# would otherwise be printed, drawn and diffed in full.  A path or a kernel command line fits;
# a name shown in a table (NAME) is cut shorter.
NAME = {"cut": codec.NAME_MAX}
# the codec's, which callers of the record have always found here
__all__ = ["TEXT_MAX", "cut", "cut_all", "from_json", "object_json", "to_json"]


def compared(label: str, rank: int, *, within_side: bool = False) -> dict[str, Any]:
    """Field metadata: compare holds this header field equal (a fair comparison differs in
    the kernel only), names a difference `label` and lists it by `rank`; `within_side`:
    only among the sessions of one side.  compared_fields reads them."""
    return {"compared": (rank, label, within_side)}


class NewerFormat(codec.Whole):
    """A record written by a newer hotloop, in a format this one does not read."""


# --------------------------------------------------------------------------- the record

@dataclass(frozen=True)
class WorkloadInfo:
    """The workload as it was run: its metric decides what "better" means."""
    name: str = field(default="?", metadata=NAME)
    source: str = ""
    summary: str = ""
    metric: str = field(default="value", metadata=NAME)
    unit: str = field(default="", metadata=NAME)
    higher_is_better: bool = True
    procs: int = field(default=1, metadata={"min": 1})


@dataclass(frozen=True)
class PlanInfo:
    """The plan as it was run (catalog.Plan's fields, with the command line's overrides)."""
    name: str = field(default="", metadata=NAME)
    workload: str = ""
    cpu: str = "default"
    kernel: str = "default"
    runs: int | None = field(default=None, metadata={"min": 1})
    warmup: int = field(default=1, metadata={"min": 0})
    # sampling keeps vCPUs out of idle: on vs off can move wake-up-bound workloads
    perf: bool = field(default=False, metadata=compared("perf", 16))
    perf_freq: int = field(default=999, metadata=compared("perf_freq", 17))
    call_graph: str = "none"
    timeout: float = 300.0
    processes: int = field(default=1, metadata={"min": 1})
    until_ci: float | None = None
    perf_keep_mb: int = 200
    params: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    origin: str = ""


@dataclass(frozen=True)
class CpuInfo:
    """The CPU profile the run was pinned and scheduled by (catalog.CpuProfile's fields)."""
    name: str = field(default="", metadata={**NAME, **compared("cpu", 1)})
    summary: str = ""
    cpus: tuple[int, ...] = field(default=(), metadata=compared("cpu.cpus", 2))
    sched: str = field(default="other", metadata=compared("cpu.sched", 3))
    priority: int = field(default=0, metadata=compared("cpu.priority", 4))
    nice: int = field(default=0, metadata=compared("cpu.nice", 5))
    governor: str | None = field(default=None, metadata=compared("cpu.governor", 6))
    boost: bool | None = field(default=None, metadata=compared("cpu.boost", 7))
    cflags: tuple[str, ...] = ()
    isolated: bool = False
    strict: bool = False
    origin: str = ""


@dataclass(frozen=True)
class KernelInfo:
    """The kernel profile (catalog.KernelProfile's fields): the label names a side."""
    name: str = field(default="default", metadata=NAME)
    summary: str = ""
    label: str = field(default="", metadata=NAME)
    sysctl: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    image: str = ""                         # booted in a VM: the vm record says how
    append: str = ""
    cpus: int | None = field(default=None, metadata={"min": 1})
    memory: str = field(default="", metadata=NAME)


@dataclass(frozen=True)
class SysctlState:
    """A sysctl the kernel profile sets, as read before it was applied and once it was."""
    before: str | None = None
    during: str | None = None


AA = ("a1", "a2")                       # an A/A's two sides: "a1", or "block_size=512 a1"


def aa_twins(variants: Sequence[str]) -> bool:
    """Whether `variants` are an A/A's two sides (`--aa`): one variant as a1 and a2."""
    parts = [v.rpartition(" ") for v in variants]
    return sorted(p[2] for p in parts) == list(AA) and len({p[0] for p in parts}) == 1


@dataclass(frozen=True)
class Batch:
    """The variants of one batch; interleaved ones share an id that pairs their rounds."""
    id: str | None = None
    interleaved: bool = False
    variants: int = field(default=0, metadata={"min": 0})       # how many
    # In a series of sessions (run --sessions N), this session's number within its side, from
    # 1: session i of one kernel ran beside session i of the other, so compare can pair them.
    session: int | None = field(default=None, metadata={"min": 1})
    # A series' design (format 5): its sides' names in order, what they differ in by design
    # ("kernel", "cpu", "params.block_size", "plan"), its sessions a side and this session's
    # place in its order, from 1.  compare takes "designed variants" from `differs`.
    sides: tuple[str, ...] = ()
    differs: tuple[str, ...] = ()
    sessions: int | None = field(default=None, metadata={"min": 1})
    position: int | None = field(default=None, metadata={"min": 1})


@dataclass(frozen=True)
class Remote:
    """The [host.NAME] a session ran on over SSH, and where its own copies are there."""
    host: str = field(default="", metadata=NAME)
    address: str = ""
    result_file: str = ""
    perf_data: str = ""


@dataclass(frozen=True)
class Vm:
    """The virtual machine a session ran in: a kernel profile's image booted for it."""
    accel: str = field(default="", metadata=NAME)     # "kvm", or "tcg": emulated
    cpus: int = field(default=0, metadata={"min": 0})
    memory: str = field(default="", metadata=NAME)
    image: str = ""
    image_sha256: str = field(default="", metadata=NAME)
    append: str = ""
    qemu: str = field(default="", metadata=NAME)      # qemu's version
    why_not_kvm: str = ""                             # tcg: what the KVM probe said


@dataclass(frozen=True)
class Header:
    """A result file's first line: the machine, the kernel, the build and the plan a session
    ran with, written before its first run."""
    format: int = field(default=FORMAT, metadata={"min": 1, "max": FORMAT})
    hotloop: str = field(default="?", metadata=compared("hotloop", 14))
    hotloop_source: str = ""                # which sources, within one version
    time: str = field(default="", metadata=NAME)
    host: str = field(default="", metadata={**NAME, **compared("host", 8)})
    # the sides differ in their kernel by design; one side's sessions should not
    kernel_release: str = field(default="?", metadata={
        **NAME, **compared("kernel", 18, within_side=True)})
    kernel_version: str = ""
    arch: str = field(default="", metadata=compared("arch", 10))
    cmdline: str = ""
    cpu_model: str = field(default="", metadata=compared("cpu_model", 9))
    cpus: int = 0                           # the machine's; the pinned ones: cpu.cpus
    mitigations: str = ""
    vulnerabilities: dict[str, str] = field(default_factory=dict)
    sysctl: dict[str, SysctlState] = field(default_factory=dict)
    python: str = ""
    # The boot the session ran in (/proc/sys/kernel/random/boot_id): sessions of one boot
    # share whatever a boot fixes (memory layout, what ran since), sessions across boots not.
    boot_id: str = field(default="", metadata=NAME)
    plan: PlanInfo = PlanInfo()
    workload: WorkloadInfo = WorkloadInfo()
    # compared key by key: params.block_size
    params: dict[str, Any] = field(default_factory=dict, metadata=compared("params", 13))
    cpu: CpuInfo = CpuInfo()
    kernel: KernelInfo = KernelInfo()
    label: str = field(default="", metadata={**NAME, **compared("label", 19, within_side=True)})
    variant: str = field(default="", metadata=NAME)
    compiler: str = field(default="", metadata=compared("compiler", 11))
    cflags: tuple[str, ...] = field(default=(), metadata=compared("cflags", 12))
    source_sha256: str = field(default="", metadata=compared("source_sha256", 15))
    # The variants of one interleaved batch share an id: compare pairs their runs by round.
    batch: Batch | None = None
    perf_data: str = ""                     # the kept perf data, beside the file: NAME.perf
    remote: Remote | None = None
    vm: Vm | None = None

    # a key no format has is refused (a typo `runz` would read as nothing), wherever a header
    # is read: a newer writer's header says its newer format, refused first
    unknown_keys: ClassVar[Unknown] = "refuse"

    def to_json(self) -> dict[str, Any]:
        return object_json(self)

    @classmethod
    def from_json(cls, obj: Any) -> Header:
        return from_json(cls, obj)

    @staticmethod
    def from_older(obj: dict[str, Any]) -> dict[str, Any]:
        n = obj.get("format", 1)            # written before the record said its format
        if type(n) is int and n > FORMAT:
            raise NewerFormat(f"result format {n}, and this hotloop reads up to format "
                              f"{FORMAT}: read it with a newer hotloop")
        return {**obj, "format": n}

    # What readers ask of it, said once.
    @property
    def runs(self) -> int | None:
        return self.plan.runs

    @property
    def processes(self) -> int:
        return self.plan.processes

    @property
    def perf(self) -> bool:
        return self.plan.perf


@dataclass(frozen=True)
class Stop:
    """Why a session with an until_ci target stopped where it did."""
    reason: str = "runs"                    # "until_ci": the target was met; "runs": not
    target_pct: float = 0.0
    ci_pct: float | None = None             # None: too few runs to know
    runs: int = field(default=0, metadata={"min": 0})


@dataclass(frozen=True)
class SessionSummary:
    """A finished session's runs, summarised (None: no runs), and why it stopped."""
    n: int = field(default=0, metadata={"min": 0})
    median: float | None = None
    mean: float | None = None
    stdev: float | None = None
    cv: float | None = None
    min: float | None = None
    max: float | None = None
    stop: Stop | None = None

    def to_json(self) -> dict[str, Any]:
        return object_json(self)

    @classmethod
    def from_json(cls, obj: Any) -> SessionSummary:
        return from_json(cls, obj)


@functools.cache
def compared_fields(within_side: bool = False) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The header fields compare holds equal, as (label, path in the header's JSON), in the
    order it lists their differences: those marked `compared` above, so a field gains its
    place here where it is defined.  `within_side`: also those that may differ between
    sides but not among one side's sessions (the kernel, its label)."""
    found: list[tuple[int, str, tuple[str, ...]]] = []

    def walk(cls: type, path: tuple[str, ...]) -> None:
        hints = codec.hints(cls)
        for f in dataclasses.fields(cls):
            mark = f.metadata.get("compared")
            tp = hints[f.name]
            if mark is not None:
                rank, label, side_only = mark
                if within_side or not side_only:
                    found.append((rank, label, (*path, f.name)))
            elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
                walk(tp, (*path, f.name))
    walk(Header, ())
    return tuple((label, path) for _, label, path in sorted(found))
