"""The catalogue: TOML files of workloads, CPU and kernel profiles and plans.

Files are read from the bundled `profiles/`, the user's config directory and
any `--profiles DIR`, validated strictly (an unknown key is an error), and
turned into frozen dataclasses.  Every error is one line naming the file,
the line where it can be found, the table and the key.
"""
from __future__ import annotations

import itertools
import math
import os
import re
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

import tomli_w

from tui import paths, system
from tui.perf import CALL_GRAPHS
from tui.errors import HotloopError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

METRICS = {"bytes/s": ("B/s", True), "ops/s": ("ops/s", True),
           "ns/op": ("ns/op", False), "cycles/op": ("cycles/op", False)}
SCHED_POLICIES = ("other", "fifo", "rr", "batch", "idle")
KINDS = ("workload", "cpu", "kernel", "plan")

# What C receives: hl_param_int() returns an int64_t, so no param may leave its range.
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
# A plan's run settings, one definition for TOML plans, the command line and the
# console's form: (least, most).  The timeout's least is exclusive (above 0 s); a
# repetition running longer than a week has hung, and NaN or infinity is no deadline.
RUN_LIMITS: dict[str, tuple[int, int]] = {
    "runs": (1, 1_000_000), "warmup": (0, 10_000), "perf_freq": (1, 100_000),
    "processes": (1, 1000)}
TIMEOUT_MAX = 7 * 24 * 3600


def timeout_problem(value: Any) -> str | None:
    """Why `value` cannot be a repetition's timeout in seconds, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number of seconds, got {value!r}"
    if not math.isfinite(value) or not 0 < value <= TIMEOUT_MAX:
        return f"must be above 0 and at most {TIMEOUT_MAX} seconds"
    return None


def until_ci_problem(value: Any) -> str | None:
    """Why `value` cannot be an until_ci target (the median known to +-this %), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a percentage, got {value!r}"
    if not math.isfinite(value) or not 0 < value <= 100:
        return "must be above 0 and at most 100 (%)"
    return None


def _int64_problem(value: int) -> str | None:
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
            bad = _int64_problem(value)
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
    params: dict[str, int | str] = field(default_factory=dict)
    summary: str = ""
    origin: str = ""


@dataclass(frozen=True)
class ResolvedPlan:
    """A plan with its profiles looked up and every param filled in."""
    plan: Plan
    workload: Workload
    cpu: CpuProfile
    kernel: KernelProfile
    params: dict[str, int | str]
    warnings: tuple[str, ...] = ()        # what fitting it to this machine skipped


def fit_to_machine(cpu: CpuProfile) -> tuple[CpuProfile, list[str]]:
    """The profile with CPUs this machine lacks dropped, and a warning saying so.

    A strict profile, a profile left with no CPU, or a priority the policy does
    not allow, is an error naming the file, table and key instead."""
    def error(key: str, message: str) -> HotloopError:
        if cpu.origin and Path(cpu.origin).is_file():
            return _Where(Path(cpu.origin), Path(cpu.origin).read_text()).error(
                "cpu", cpu.name, key, message)
        return HotloopError(f"[cpu.{cpu.name}] {key}: {message}")

    bad = system.validate_priority(cpu.sched, cpu.priority)
    if bad:
        raise error("priority", bad)
    missing = [c for c in cpu.cpus if system.validate_cpus([c])]
    if not missing:
        return cpu, []
    problem = system.validate_cpus(missing) or ""
    keep = tuple(c for c in cpu.cpus if c not in missing)
    if cpu.strict or not keep:
        raise error("cpus", problem)
    return replace(cpu, cpus=keep), [
        f"[cpu.{cpu.name}] cpus: {problem}; skipped, its processes share CPUs "
        f"{','.join(map(str, keep))} (strict = true makes this an error)"]


# --- validation ------------------------------------------------------------

class _Where:
    """Builds `file:line: [table] key: message` errors for one file."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def line_of(self, kind: str, name: str, key: str = "") -> int | None:
        # tomllib keeps no positions: find the table header, then the key.
        header = re.compile(r"^\s*\[\s*" + re.escape(kind) + r"\s*\.\s*\"?" + re.escape(name)
                            + r"\"?\s*\]")
        start = next((i for i, l in enumerate(self.lines) if header.match(l)), None)
        if start is None:
            start = next((i for i, l in enumerate(self.lines)
                          if re.search(r"\b" + re.escape(name) + r"\b", l)), None)
            if start is None:
                return None
        if not key:
            return start + 1
        first = key.split(".")[0]
        pat = re.compile(r"^\s*\"?" + re.escape(first) + r"\"?\s*[=.]")
        for i in range(start + 1, len(self.lines)):
            if self.lines[i].lstrip().startswith("["):
                break
            if pat.match(self.lines[i]):
                return i + 1
        return start + 1

    def error(self, kind: str, name: str, key: str, message: str) -> HotloopError:
        line = self.line_of(kind, name, key)
        loc = f"{self.path}:{line}" if line else str(self.path)
        what = f"[{kind}.{name}]" + (f" {key}" if key else "")
        return HotloopError(f"{loc}: {what}: {message}")


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)


Check = Callable[[Any], str | None]


def _is(*types: type) -> Check:
    names = " or ".join(_type_name(t()) for t in types)

    def check(v: Any) -> str | None:
        if isinstance(v, bool) and bool not in types:
            return f"expected {names}, got {_type_name(v)}"
        return None if isinstance(v, types) else f"expected {names}, got {_type_name(v)}"
    return check


def _one_of(choices: tuple[str, ...]) -> Check:
    def check(v: Any) -> str | None:
        return _is(str)(v) or (None if v in choices else
                               f"{v!r} is not one of {', '.join(choices)}")
    return check


def _int_range(lo: int | None, hi: int | None) -> Check:
    def check(v: Any) -> str | None:
        bad = _is(int)(v)
        if bad:
            return bad
        if lo is not None and v < lo:
            return f"{v} is below the minimum {lo}"
        if hi is not None and v > hi:
            return f"{v} is above the maximum {hi}"
        return None
    return check


def _list_of(item: Check) -> Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, list):
            return f"expected an array, got {_type_name(v)}"
        for i, x in enumerate(v):
            bad = item(x)
            if bad:
                return f"item {i}: {bad}"
        return None
    return check


_SPECS: dict[str, dict[str, Check]] = {
    "workload": {"source": _is(str), "summary": _is(str), "metric": _is(str),
                 "unit": _is(str), "higher_is_better": _is(bool),
                 "procs": _int_range(1, 64), "params": _is(dict)},
    "cpu": {"summary": _is(str), "cpus": _list_of(_int_range(0, 4095)),
            "sched": _one_of(SCHED_POLICIES), "priority": _int_range(0, 99),
            "nice": _int_range(-20, 19), "governor": _is(str), "boost": _is(bool),
            "cflags": _list_of(_is(str)), "isolated": _is(bool), "strict": _is(bool)},
    "kernel": {"summary": _is(str), "label": _is(str), "sysctl": _is(dict),
               "expect": _is(dict)},
    "plan": {"summary": _is(str), "workload": _is(str), "cpu": _is(str), "kernel": _is(str),
             "runs": _int_range(*RUN_LIMITS["runs"]),
             "warmup": _int_range(*RUN_LIMITS["warmup"]),
             "perf": _is(bool), "perf_freq": _int_range(*RUN_LIMITS["perf_freq"]),
             "call_graph": _one_of(CALL_GRAPHS), "timeout": timeout_problem,
             "processes": _int_range(*RUN_LIMITS["processes"]),
             "until_ci": until_ci_problem, "params": _is(dict)},
}
_REQUIRED = {"workload": ("source",), "plan": ("workload",), "cpu": (), "kernel": ()}
_PARAM_SPEC: dict[str, Check] = {"default": _is(int, str),
                                 "min": lambda v: _is(int)(v) or _int64_problem(v),
                                 "max": lambda v: _is(int)(v) or _int64_problem(v),
                                 "choices": _list_of(_is(str)), "help": _is(str)}
_EXPECT_SPEC: dict[str, Check] = {"release": _is(str), "cmdline_contains": _list_of(_is(str)),
                                  "mitigations": _one_of(("on", "off"))}
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def _check_keys(where: _Where, kind: str, name: str, table: dict, spec: dict[str, Check],
                prefix: str = "") -> None:
    for key, value in table.items():
        if key not in spec:
            known = ", ".join(spec)
            raise where.error(kind, name, prefix + key, f"unknown key (known: {known})")
        bad = spec[key](value)
        if bad:
            raise where.error(kind, name, prefix + key, bad)


def _param(where: _Where, wname: str, pname: str, spec: Any) -> Param:
    key = f"params.{pname}"
    if not isinstance(spec, dict):
        raise where.error("workload", wname, key, "expected a table like { default = 1 }")
    _check_keys(where, "workload", wname, spec, _PARAM_SPEC, key + ".")
    if "default" not in spec:
        raise where.error("workload", wname, key, "missing key 'default'")
    default = spec["default"]
    if isinstance(default, str) and ("min" in spec or "max" in spec):
        raise where.error("workload", wname, key, "min/max apply to integer params only")
    if isinstance(default, int) and "choices" in spec:
        raise where.error("workload", wname, key, "choices apply to string params only")
    p = Param(pname, default, spec.get("min"), spec.get("max"),
              tuple(spec.get("choices", ())), spec.get("help", ""))
    if p.min is not None and p.max is not None and p.min > p.max:
        raise where.error("workload", wname, key, f"min {p.min} is above max {p.max}")
    bad = p.problem(default)
    if bad:
        raise where.error("workload", wname, key + ".default", bad)
    return p


def _workload(where: _Where, name: str, t: dict) -> Workload:
    source = (where.path.parent / t["source"]).resolve()
    if not source.is_file():
        raise where.error("workload", name, "source", f"no such file: {source}")
    metric = t.get("metric", "ops/s")
    if metric not in METRICS and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", metric):
        raise where.error("workload", name, "metric", f"unknown metric {metric!r} (one of "
                          f"{', '.join(METRICS)}, or the name of an extra the workload "
                          f"reports with hl_add_extra)")
    unit, better = METRICS.get(metric, (metric, True))
    params = {p: _param(where, name, p, s) for p, s in t.get("params", {}).items()}
    return Workload(name, source, t.get("summary", ""), metric, t.get("unit", unit),
                    t.get("higher_is_better", better), t.get("procs", 1), params,
                    str(where.path))


def _cpu(where: _Where, name: str, t: dict) -> CpuProfile:
    sched = t.get("sched", "other")
    prio = t.get("priority", 0)
    if sched in ("fifo", "rr") and not 1 <= prio <= 99:
        raise where.error("cpu", name, "priority", f"sched {sched} needs a priority in 1..99")
    if sched not in ("fifo", "rr") and prio != 0:
        raise where.error("cpu", name, "priority", f"sched {sched} takes priority 0 only")
    return CpuProfile(name, t.get("summary", ""), tuple(t.get("cpus", ())), sched, prio,
                      t.get("nice", 0), t.get("governor"), t.get("boost"),
                      tuple(t.get("cflags", ("-O2",))), t.get("isolated", False),
                      t.get("strict", False), str(where.path))


def _kernel(where: _Where, name: str, t: dict) -> KernelProfile:
    for key, value in t.get("sysctl", {}).items():
        if not re.fullmatch(r"[a-z0-9_]+(\.[a-zA-Z0-9_-]+)+", key):
            raise where.error("kernel", name, "sysctl", f"{key!r} is not a sysctl name")
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            raise where.error("kernel", name, "sysctl",
                              f"{key}: expected an integer or a string, got {_type_name(value)}")
        # Control characters, "" and "011" would not be written as they read.
        problem = system.value_problem(str(value))
        if problem:
            raise where.error("kernel", name, "sysctl", f"{key}: {problem}")
    _check_keys(where, "kernel", name, t.get("expect", {}), _EXPECT_SPEC, "expect.")
    return KernelProfile(name, t.get("summary", ""), t.get("label", name),
                         dict(t.get("sysctl", {})), dict(t.get("expect", {})), str(where.path))


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _plan(where: _Where, name: str, t: dict) -> Plan:
    for key, value in t.get("params", {}).items():
        # A list of values makes the plan a batch: one variant per value.
        if isinstance(value, list) and value and all(map(_scalar, value)):
            continue
        if not _scalar(value):
            raise where.error("plan", name, f"params.{key}", "expected an integer, a string "
                              f"or a non-empty array of them, got {_type_name(value)}")
    fields = {k: v for k, v in t.items() if k != "params"}
    return Plan(name=name, params=dict(t.get("params", {})), origin=str(where.path), **fields)


_BUILDERS = {"workload": _workload, "cpu": _cpu, "kernel": _kernel, "plan": _plan}


# --- the catalogue ---------------------------------------------------------

_BUILTIN_CPU = CpuProfile("default", "no pinning, normal scheduling", origin="built in")
_BUILTIN_KERNEL = KernelProfile("default", "the running kernel as it is", label="",
                                origin="built in")


@dataclass
class Catalog:
    workloads: dict[str, Workload] = field(default_factory=dict)
    cpus: dict[str, CpuProfile] = field(default_factory=dict)
    kernels: dict[str, KernelProfile] = field(default_factory=dict)
    plans: dict[str, Plan] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)     # files left out (skip_bad)

    def table(self, kind: str) -> dict[str, Any]:
        return {"workload": self.workloads, "cpu": self.cpus, "kernel": self.kernels,
                "plan": self.plans}[kind]

    def load_file(self, path: Path) -> None:
        try:
            text = path.read_text()
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise HotloopError(f"{path}: malformed TOML: {e}") from None
        except (OSError, UnicodeDecodeError) as e:
            raise HotloopError(f"{path}: cannot read: {e}") from None
        where = _Where(path, text)
        for kind, tables in data.items():
            if kind not in KINDS:
                raise HotloopError(f"{path}:{where.line_of(kind, '') or 1}: unknown table "
                                   f"[{kind}] (known: {', '.join(KINDS)})")
            if not isinstance(tables, dict):
                raise HotloopError(f"{path}: [{kind}] must hold named tables like "
                                   f"[{kind}.NAME]")
            for name, t in tables.items():
                if not _NAME.match(name):
                    raise where.error(kind, name, "", "bad name: use letters, digits, _ . + -")
                if not isinstance(t, dict):
                    raise where.error(kind, name, "", "expected a table")
                _check_keys(where, kind, name, t, _SPECS[kind])
                for req in _REQUIRED[kind]:
                    if req not in t:
                        raise where.error(kind, name, "", f"missing key '{req}'")
                existing = self.table(kind).get(name)
                if existing is not None:
                    raise where.error(kind, name, "",
                                      f"defined twice (also in {existing.origin})")
                self.table(kind)[name] = _BUILDERS[kind](where, name, t)
        self.files.append(path)

    def validate_plans(self) -> None:
        """Cross-table checks, once every file is in."""
        for plan in self.plans.values():
            for _, variant in self.variants(plan):
                self.resolve(variant, here=False)

    def variants(self, plan: Plan) -> list[tuple[str, Plan]]:
        """A plan whose params hold lists is a batch: (label, plan) per combination."""
        multi = {k: v for k, v in plan.params.items() if isinstance(v, list)}
        if not multi:
            return [("", plan)]
        out = []
        for combo in itertools.product(*multi.values()):
            chosen = dict(zip(multi, combo))
            label = " ".join(f"{k}={v}" for k, v in chosen.items())
            out.append((label, replace(plan, params={**plan.params, **chosen})))
        return out

    def resolve(self, plan: Plan, here: bool = True) -> ResolvedPlan:
        """Look up the plan's profiles and fill in its params; with `here`, also fit
        the CPU profile to this machine (only for a plan about to run: a profile
        for a bigger machine may sit in the catalogue without breaking anything)."""
        def where_key(key: str, message: str) -> HotloopError:
            if plan.origin and Path(plan.origin).is_file():
                w = _Where(Path(plan.origin), Path(plan.origin).read_text())
                return w.error("plan", plan.name, key, message)
            return HotloopError(f"{key}: {message}")

        w = self.workloads.get(plan.workload)
        if w is None:
            raise where_key("workload", f"unknown workload {plan.workload!r} "
                            f"(known: {', '.join(sorted(self.workloads))})")
        cpu = self.cpus.get(plan.cpu) or (_BUILTIN_CPU if plan.cpu == "default" else None)
        if cpu is None:
            raise where_key("cpu", f"unknown CPU profile {plan.cpu!r} "
                            f"(known: {', '.join(sorted(self.cpus))})")
        warnings: list[str] = []
        if here:
            cpu, warnings = fit_to_machine(cpu)
        kernel = (self.kernels.get(plan.kernel)
                  or (_BUILTIN_KERNEL if plan.kernel == "default" else None))
        if kernel is None:
            raise where_key("kernel", f"unknown kernel profile {plan.kernel!r} "
                            f"(known: {', '.join(sorted(self.kernels))})")
        params = {name: p.default for name, p in w.params.items()}
        for key, value in plan.params.items():
            if isinstance(value, list):
                raise where_key(f"params.{key}", f"several values ({', '.join(map(str, value))}):"
                                f" the plan is a batch; run it with `hotloop run {plan.name}`")
            p = w.params.get(key)
            if p is None:
                raise where_key(f"params.{key}", f"workload {w.name} has no param {key!r} "
                                f"(known: {', '.join(w.params) or 'none'})")
            bad = p.problem(value)
            if bad:
                raise where_key(f"params.{key}", bad)
            params[key] = value
        return ResolvedPlan(plan, w, cpu, kernel, params, tuple(warnings))

    def plan_for(self, name: str) -> Plan:
        """A plan by name, or a workload by name run with its defaults."""
        if name in self.plans:
            return self.plans[name]
        if name in self.workloads:
            return Plan(name=name, workload=name)
        raise HotloopError(f"unknown plan or workload {name!r} (plans: "
                           f"{', '.join(sorted(self.plans)) or 'none'}; workloads: "
                           f"{', '.join(sorted(self.workloads)) or 'none'})")


def search_path(extra: list[Path] | None = None) -> list[Path]:
    return [paths.BUNDLED_PROFILES, paths.config_dir(), *(extra or [])]


def load(extra: list[Path] | None = None, skip_bad: bool = False) -> Catalog:
    """The catalogue from every TOML file on the search path.

    A bad file is an error; with `skip_bad` (the console) it is left out instead,
    with its error in `errors`, so one broken file does not hide the others."""
    if not paths.BUNDLED_PROFILES.is_dir():
        raise HotloopError(f"the bundled profiles are missing ({paths.BUNDLED_PROFILES}): "
                           f"install hotloop from a checkout with `pip install -e .`")
    for d in extra or []:
        if not d.is_dir():
            raise HotloopError(f"--profiles {d}: no such directory")
    cat = Catalog()
    seen: set[Path] = set()
    for d in search_path(extra):
        if not d.is_dir():
            continue
        for f in sorted(d.rglob("*.toml")):
            if f.resolve() not in seen:
                seen.add(f.resolve())
                if not skip_bad:
                    cat.load_file(f)
                    continue
                before = [dict(cat.table(k)) for k in KINDS]
                try:
                    cat.load_file(f)
                except HotloopError as e:
                    for k, table in zip(KINDS, before):     # none of a bad file
                        cat.table(k).clear()
                        cat.table(k).update(table)
                    cat.errors.append(str(e))
    if not skip_bad:
        cat.validate_plans()
        return cat
    for name, plan in list(cat.plans.items()):
        try:
            for _, variant in cat.variants(plan):
                cat.resolve(variant, here=False)
        except HotloopError as e:
            del cat.plans[name]
            cat.errors.append(str(e))
    return cat


def plan_table(plan: Plan) -> dict[str, Any]:
    """The plan as a TOML table: the fields that differ from the defaults."""
    default = Plan(name=plan.name, workload=plan.workload)
    table: dict[str, Any] = {"workload": plan.workload}
    for f in fields(Plan):
        if f.name in ("name", "workload", "origin"):
            continue
        value = getattr(plan, f.name)
        if value != getattr(default, f.name) or f.name in ("cpu", "kernel", "runs"):
            table[f.name] = dict(value) if isinstance(value, dict) else value
    return table


def save_plan(plan: Plan, directory: Path | None = None, overwrite: bool = False,
              cat: Catalog | None = None) -> Path:
    """Write `[plan.NAME]` to NAME.toml in the user's profile directory (tomli-w).

    Refuses a name the catalogue already has from another file, since loading
    would then find it twice."""
    if not _NAME.match(plan.name):
        raise HotloopError(f"plan name {plan.name!r}: use letters, digits, _ . + -")
    directory = directory or paths.config_dir() / "plans"
    target = directory / f"{plan.name}.toml"
    if cat is not None:
        other = cat.plans.get(plan.name)
        if other is not None and Path(other.origin).resolve() != target.resolve():
            raise HotloopError(f"plan {plan.name!r} already exists in {other.origin}")
    if target.exists() and not overwrite:
        raise HotloopError(f"{target}: exists (pass --force to replace it)")
    directory.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".toml.tmp")
    tmp.write_text(tomli_w.dumps({"plan": {plan.name: plan_table(plan)}}))
    try:
        # Exactly the checks a later load makes: a saved plan must never break it.
        probe = Catalog(dict(cat.workloads), dict(cat.cpus), dict(cat.kernels)) if cat \
            else Catalog()
        probe.load_file(tmp)
        if cat is not None:
            for _, variant in probe.variants(probe.plans[plan.name]):
                probe.resolve(variant, here=False)
    except HotloopError as e:
        tmp.unlink(missing_ok=True)
        raise HotloopError(str(e).replace(str(tmp), f"plan {plan.name}")) from None
    os.replace(tmp, target)
    return target


def with_overrides(plan: Plan, **changes: Any) -> Plan:
    """The plan with command-line overrides (None means: keep the plan's)."""
    return replace(plan, **{k: v for k, v in changes.items() if v is not None})
