"""The result record: what a result file's first line (the header) and its last line (the
summary, and why the session stopped) hold, as typed dataclasses.

Each has one `to_json` and one `from_json`.  `from_json` checks every field against the
dataclass's own annotations (a string, an integer that is not a bool, an object of...), so the
definitions below are the only statement of the format: a reader cannot check one shape while
the writer writes another.  A field missing from a file reads as its default: files of the
format before this one lack some.  Keys the definitions do not name are ignored.

The header says its `format`.  Files without it are format 1 (hotloop 0.1.0 before the record
was typed); a file of a newer format than FORMAT is refused in one line naming both numbers
(`NewerFormat`), since its fields may mean what this version cannot know.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hotloop.checks import show

# This version's.  1: the files written before `format` existed; 2: the typed record; 3: adds
# the boot (boot_id), a session's place in a series (batch.session) and the VM it ran in (vm);
# 4: adds the perf_start line (whether perf started: a format 3 reader would refuse the line);
# 5: adds a series' design to its batch (sides, differs, sessions, position).
FORMAT = 5
# A string read from a file is cut to this many characters ("…" last): a forged 30 MB label
# would otherwise be printed, drawn and diffed in full.  A path or a kernel command line fits;
# a name shown in a table (NAME) is cut shorter.
TEXT_MAX = 4096
NAME = {"max": 200}


def cut(text: str, most: int = TEXT_MAX) -> str:
    return text if len(text) <= most else text[:most - 1] + "…"


def compared(label: str, rank: int, *, within_side: bool = False) -> dict[str, Any]:
    """Field metadata: compare holds this header field equal (a fair comparison differs in
    the kernel only), names a difference `label` and lists it by `rank`; `within_side`:
    only among the sessions of one side.  compared_fields reads them."""
    return {"compared": (rank, label, within_side)}


class NewerFormat(ValueError):
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
    format: int = field(default=FORMAT, metadata={"min": 1})
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

    def to_json(self) -> dict[str, Any]:
        return object_json(self)

    @classmethod
    def from_json(cls, obj: Any) -> Header:
        if isinstance(obj, dict):
            n = obj.get("format", 1)        # written before the record said its format
            if isinstance(n, int) and not isinstance(n, bool) and n > FORMAT:
                raise NewerFormat(f"result format {n}, and this hotloop reads up to format "
                                  f"{FORMAT}: read it with a newer hotloop")
            obj = {**obj, "format": n}
        return from_json(cls, obj, strict=True)

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
class Summary:
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
    def from_json(cls, obj: Any) -> Summary:
        return from_json(cls, obj)


@functools.cache
def compared_fields(within_side: bool = False) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The header fields compare holds equal, as (label, path in the header's JSON), in the
    order it lists their differences: those marked `compared` above, so a field gains its
    place here where it is defined.  `within_side`: also those that may differ between
    sides but not among one side's sessions (the kernel, its label)."""
    found: list[tuple[int, str, tuple[str, ...]]] = []

    def walk(cls: type, path: tuple[str, ...]) -> None:
        hints = _hints(cls)
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


# --------------------------------------------------------------------------- the codec

T = TypeVar("T")


def object_json(obj: Any) -> dict[str, Any]:
    """A dataclass record as a JSON object, field by field."""
    return {f.name: to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def to_json(obj: Any) -> Any:
    """A record as JSON values: dataclasses as objects, tuples as lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return object_json(obj)
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    return obj


def from_json(cls: type[T], obj: Any, *, strict: bool = False) -> T:
    """`cls` from a parsed JSON object, every field checked against its annotation;
    ValueError naming the field's path ("workload: unit: expected a string, got 5").
    `strict`: a key no field names is refused too ("plan: unknown key 'runz'")."""
    value = _decode(cls, obj, strict=strict)
    assert isinstance(value, cls)
    return value


def cut_all(v: Any) -> Any:
    """Every string in a value of no declared shape (a param, an expect table), cut."""
    if isinstance(v, str):
        return cut(v)
    if isinstance(v, dict):
        return {cut(str(k), NAME["max"]): cut_all(x) for k, x in v.items()}
    if isinstance(v, list):
        return [cut_all(x) for x in v]
    return v


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _decode(tp: Any, v: Any, most: int = TEXT_MAX, strict: bool = False) -> Any:
    if tp is Any:
        return cut_all(v)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _decode(inner, v, most, strict)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(v, dict):
            raise ValueError(f"expected an object, got {show(v)}")
        hints, out = _hints(tp), {}
        if strict:
            names = {f.name for f in dataclasses.fields(tp)}
            unknown = next((k for k in v if k not in names), None)
            if unknown is not None:
                raise ValueError(f"unknown key {show(unknown)}")
        for f in dataclasses.fields(tp):
            if f.name not in v:
                continue                    # an older file's: the default
            try:
                out[f.name] = _decode(hints[f.name], v[f.name], f.metadata.get("max", TEXT_MAX),
                                      strict)
                least = f.metadata.get("min")
                if least is not None and out[f.name] is not None and out[f.name] < least:
                    raise ValueError(f"{out[f.name]} is below {least}")
            except ValueError as e:
                raise ValueError(f"{f.name}: {e}") from None
        return tp(**out)
    if origin is dict:
        if not isinstance(v, dict):
            raise ValueError(f"expected an object, got {show(v)}")
        out = {}
        for k, x in v.items():
            try:
                out[cut(k, NAME["max"])] = _decode(args[1], x, strict=strict)
            except ValueError as e:
                raise ValueError(f"{cut(k, 40)}: {e}") from None
        return out
    if origin in (list, tuple):
        if not isinstance(v, list):
            raise ValueError(f"expected a list, got {show(v)}")
        items = []
        for i, x in enumerate(v):
            try:
                items.append(_decode(args[0], x, strict=strict))
            except ValueError as e:
                raise ValueError(f"item {i}: {e}") from None
        return tuple(items) if origin is tuple else items
    if tp is bool:
        if isinstance(v, bool):
            return v
        raise ValueError(f"expected true or false, got {show(v)}")
    if tp is int:
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        raise ValueError(f"expected an integer, got {show(v)}")
    if tp is float:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                if math.isfinite(v):
                    return float(v)
            except OverflowError:           # an integer beyond any float
                pass
            raise ValueError(f"{show(v)} is not a finite number")
        raise ValueError(f"expected a number, got {show(v)}")
    if tp is str:
        if isinstance(v, str):
            return cut(v, most)
        raise ValueError(f"expected a string, got {show(v)}")
    raise TypeError(f"no JSON form for {tp!r}")     # a definition above the codec lacks
