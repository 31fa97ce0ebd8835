"""The catalogue's model: workloads, CPU and kernel profiles, plans, and the limits of a run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotloop.host import procs

METRICS = {"bytes/s": ("B/s", True), "ops/s": ("ops/s", True),
           "ns/op": ("ns/op", False), "cycles/op": ("cycles/op", False)}
SCHED_POLICIES = tuple(procs.SCHED_POLICIES)
KINDS = ("workload", "cpu", "kernel", "plan", "host")
# A plan's param: a value, or a list of values, which makes the plan a batch of one variant
# a value (Catalog.variants).
ParamSetting = int | str | list[int | str]

# What C receives: hl_param_int() returns an int64_t, so no param may leave its range.
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
# A plan's run settings, one definition for TOML plans, the command line and the
# console's form: (least, most).  The timeout's least is exclusive (above 0 s); a
# repetition running longer than a week has hung, and NaN or infinity is no deadline.
RUN_LIMITS: dict[str, tuple[int, int]] = {
    "runs": (1, 1_000_000), "warmup": (0, 10_000), "perf_freq": (1, 100_000),
    "processes": (1, 1000), "perf_keep_mb": (0, 1_000_000)}
TIMEOUT_MAX = 7 * 24 * 3600
# A stopped run on a host (Ctrl-C, a dropped console) ends and restores its system there, its
# last lines coming back within a host's stop_wait; a host that does not answer by then is
# left (ssh killed: the remote still stops as its stdin closes).  A machine with much to
# restore may need longer; a minute is the most a user is kept waiting.
STOP_WAIT_S = 10.0
STOP_WAIT_MAX = 60


def timeout_problem(value: Any) -> str | None:
    """Why `value` cannot be a repetition's timeout in seconds, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number of seconds, got {value!r}"
    if not math.isfinite(value) or not 0 < value <= TIMEOUT_MAX:
        return f"must be above 0 and at most {TIMEOUT_MAX} seconds"
    return None


def stop_wait_problem(value: Any) -> str | None:
    """Why `value` cannot be a host's stop_wait in seconds, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number of seconds, got {value!r}"
    if not math.isfinite(value) or not 0 < value <= STOP_WAIT_MAX:
        return f"must be above 0 and at most {STOP_WAIT_MAX} seconds"
    return None


def until_ci_problem(value: Any) -> str | None:
    """Why `value` cannot be an until_ci target (the median known to +-this %), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a percentage, got {value!r}"
    if not math.isfinite(value) or not 0 < value <= 100:
        return "must be above 0 and at most 100 (%)"
    return None


def int64_problem(value: int) -> str | None:
    if not INT64_MIN <= value <= INT64_MAX:
        return f"{value} does not fit a 64-bit integer (hl_param_int)"
    return None


@dataclass(frozen=True)
class Param:
    name: str
    default: int | str
    min: int | None = None
    max: int | None = None
    choices: tuple[str, ...] = ()
    help: str = ""

    @property
    def is_int(self) -> bool:
        return isinstance(self.default, int)

    def parse(self, text: str) -> int | str:
        """A value typed by the user (`--param k=v`, a TUI input); ValueError if bad."""
        if not self.is_int:
            value: int | str = text
        else:
            try:
                digits = text.strip().replace("_", "")
                value = int(digits, 16 if digits.lower().startswith(("0x", "+0x")) else 10)
            except ValueError:
                raise ValueError(f"expected an integer, got {text!r}") from None
        problem = self.problem(value)
        if problem:
            raise ValueError(problem)
        return value

    def problem(self, value: Any) -> str | None:
        """Why `value` is not acceptable, or None."""
        if self.is_int:
            if isinstance(value, bool) or not isinstance(value, int):
                return f"expected an integer, got {value!r}"
            bad = int64_problem(value)
            if bad:
                return bad
            if self.min is not None and value < self.min:
                return f"{value} is below the minimum {self.min}"
            if self.max is not None and value > self.max:
                return f"{value} is above the maximum {self.max}"
        else:
            if not isinstance(value, str):
                return f"expected a string, got {value!r}"
            if self.choices and value not in self.choices:
                return f"{value!r} is not one of {', '.join(self.choices)}"
        return None

    def describe(self) -> str:
        """Bounds or choices, for help texts."""
        if self.choices:
            return " | ".join(self.choices)
        lo = "" if self.min is None else f"{self.min:_}"
        hi = "" if self.max is None else f"{self.max:_}"
        return f"{lo}..{hi}" if (lo or hi) else ("int" if self.is_int else "str")


@dataclass(frozen=True)
class Workload:
    name: str
    source: Path
    summary: str = ""
    metric: str = "ops/s"
    unit: str = "ops/s"
    higher_is_better: bool = True
    procs: int = 1
    params: dict[str, Param] = field(default_factory=dict)
    origin: str = ""


@dataclass(frozen=True)
class CpuProfile:
    name: str
    summary: str = ""
    cpus: tuple[int, ...] = ()
    sched: str = "other"
    priority: int = 0
    nice: int = 0
    governor: str | None = None
    boost: bool | None = None
    cflags: tuple[str, ...] = ("-O2",)
    isolated: bool = False
    strict: bool = False
    origin: str = ""


@dataclass(frozen=True)
class KernelProfile:
    name: str
    summary: str = ""
    label: str = ""
    sysctl: dict[str, int | str] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    # A kernel booted in a VM for each session (virtme-ng): its image (a path, ~ expanded),
    # extra kernel command line, the VM's CPUs (None: the CPU profile's count) and memory.
    image: str = ""
    append: str = ""
    cpus: int | None = None
    memory: str = ""

    @property
    def vm(self) -> bool:
        return bool(self.image)


@dataclass(frozen=True)
class Plan:
    """What to run: names into the catalogue plus run settings."""
    name: str
    workload: str
    cpu: str = "default"
    kernel: str = "default"
    runs: int = 10
    warmup: int = 1
    perf: bool = True
    perf_freq: int = 999
    call_graph: str = "none"
    timeout: float = 300.0          # seconds one repetition may take
    processes: int = 1              # worker processes the runs are spread over, in turn
    until_ci: float | None = None   # stop once the median's 95% CI is within +-this %
    perf_keep_mb: int = 200         # the results directory's budget for kept perf data
    params: dict[str, ParamSetting] = field(default_factory=dict)
    summary: str = ""
    origin: str = ""


@dataclass(frozen=True)
class Host:
    """A machine to run on over SSH: what `ssh` is given, and the hotloop it runs there.
    Empty means ssh's own default (~/.ssh/config, the agent); `hotloop` empty means the
    one `hotloop host setup` installed there, else `hotloop` on the remote's PATH."""
    name: str
    address: str
    user: str = ""
    port: int | None = None
    identity_file: str = ""
    ssh_config: str = ""
    ssh_options: tuple[str, ...] = ()
    hotloop: str = ""
    directory: str = ""             # where it runs there (its results/): the login directory
    label: str = ""                 # the sides of a comparison of hosts
    summary: str = ""
    origin: str = ""
    stop_wait: float = STOP_WAIT_S      # seconds a stopped run there may take to end


@dataclass(frozen=True)
class ResolvedPlan:
    """A plan with its profiles looked up and every param filled in."""
    plan: Plan
    workload: Workload
    cpu: CpuProfile
    kernel: KernelProfile
    params: dict[str, int | str]
    warnings: tuple[str, ...] = ()        # what fitting it to this machine skipped


def process_shares(runs: int, processes: int) -> list[int]:
    """How a plan's runs are split over its worker processes, in turn: 10 over 3 is 4, 3, 3.
    The session runs them so and compare pairs interleaved rounds by these blocks: one rule."""
    n, k = divmod(runs, processes)
    return [n + (i < k) for i in range(processes) if n + (i < k)]
