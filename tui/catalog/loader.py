"""Loading the catalogue: the bundled profiles, the user's and any --profiles directory.
"""
from __future__ import annotations

import difflib
import itertools
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hotloop import paths
from hotloop.errors import HotloopError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

from hotloop.catalog.files import NotAProfile, read_text, text_or_empty
from hotloop.catalog.model import (
    KINDS,
    CpuProfile,
    Host,
    KernelProfile,
    Plan,
    ResolvedPlan,
    Workload,
)
from hotloop.catalog.schema import BUILDERS, NAME, REQUIRED, SPECS, Where, check_keys
from hotloop.host.cpus import validate_cpus
from hotloop.host.procs import validate_priority


def table_error(origin: str, kind: str, name: str, key: str, message: str) -> HotloopError:
    """`file:line: [kind.name] key: message` where the table's file is known, else without."""
    if origin and Path(origin).is_file():
        return Where(Path(origin), text_or_empty(Path(origin))).error(kind, name, key, message)
    return HotloopError(f"[{kind}.{name}]" + (f" {key}" if key else "") + f": {message}")


def fit_to_machine(cpu: CpuProfile) -> tuple[CpuProfile, list[str]]:
    """The profile with CPUs this machine lacks dropped, and a warning saying so.

    A strict profile, a profile left with no CPU, or a priority the policy does
    not allow, is an error naming the file, table and key instead."""
    def error(key: str, message: str) -> HotloopError:
        return table_error(cpu.origin, "cpu", cpu.name, key, message)

    bad = validate_priority(cpu.sched, cpu.priority)
    if bad:
        raise error("priority", bad)
    missing = [c for c in cpu.cpus if validate_cpus([c])]
    if not missing:
        return cpu, []
    problem = validate_cpus(missing) or ""
    keep = tuple(c for c in cpu.cpus if c not in missing)
    if cpu.strict or not keep:
        raise error("cpus", problem)
    return replace(cpu, cpus=keep), [
        f"[cpu.{cpu.name}] cpus: {problem}; skipped, its processes share CPUs "
        f"{','.join(map(str, keep))} (strict = true makes this an error)"]


# --- the catalogue ---------------------------------------------------------

KIND_NAMES = {"workload": "workload", "cpu": "CPU profile", "kernel": "kernel profile",
              "plan": "plan", "host": "host"}


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """'; did you mean split?' for a name close to a known one (a typo), else ''."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


_HEADER = re.compile(r"""^\s*\[\s*(workload|cpu|kernel|plan|host)\s*\.\s*"""
                     r"""(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_+-]+))""")


def defined_in(text: str) -> frozenset[tuple[str, str]]:
    """The (kind, name) tables a TOML file defines, as far as can be told: from the parsed
    document, or from its table headers when it does not parse."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        found = set()
        for line in text.splitlines():
            m = _HEADER.match(line)
            if m:
                found.add((m.group(1), next(g for g in m.groups()[1:] if g)))
        return frozenset(found)
    return frozenset((kind, name) for kind, tables in data.items() if kind in KINDS
                     and isinstance(tables, dict) for name in tables)


@dataclass(frozen=True)
class Skipped:
    """A file (or a plan) left out of the catalogue with `skip_bad`."""
    error: str                                  # one line: file:line: [table] key: message
    warning: str                                # the line that says it was left out
    defines: frozenset[tuple[str, str]]         # (kind, name) it would have defined

_BUILTIN_CPU = CpuProfile("default", "no pinning, normal scheduling", origin="built in")
_BUILTIN_KERNEL = KernelProfile("default", "the running kernel as it is", label="",
                                origin="built in")


def _bundled(origin: str) -> bool:
    """Whether a table came from the bundled profiles (which a file of the user's may replace)."""
    return bool(origin) and Path(origin).resolve().parent == paths.BUNDLED_PROFILES.resolve()


@dataclass
class Catalog:
    workloads: dict[str, Workload] = field(default_factory=dict)
    cpus: dict[str, CpuProfile] = field(default_factory=dict)
    kernels: dict[str, KernelProfile] = field(default_factory=dict)
    plans: dict[str, Plan] = field(default_factory=dict)
    hosts: dict[str, Host] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)     # files left out (skip_bad)
    skipped: list[Skipped] = field(default_factory=list)  # the same, with what they define
    replaced: list[str] = field(default_factory=list)     # bundled tables a file of yours replaced

    def table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "workload": self.workloads, "cpu": self.cpus, "kernel": self.kernels,
            "plan": self.plans, "host": self.hosts}
        return tables[kind]

    def load_file(self, path: Path) -> None:
        """The file's tables into the catalogue: all of them, or none (an error in one)."""
        text = read_text(path)          # a regular file, at most PROFILE_CAP bytes
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise HotloopError(f"{path}: malformed TOML: {e}") from None
        where = Where(path, text)
        # built first, added once the whole file is good: a bad file leaves nothing behind
        # without a copy of the catalogue's tables per file
        built: list[tuple[str, str, Any]] = []
        replaced: list[str] = []
        for kind, tables in data.items():
            if kind not in KINDS:
                raise HotloopError(f"{path}:{where.line_of(kind, '') or 1}: unknown table "
                                   f"[{kind}] (known: {', '.join(KINDS)})")
            if not isinstance(tables, dict):
                raise HotloopError(f"{path}: [{kind}] must hold named tables like "
                                   f"[{kind}.NAME]")
            for name, t in tables.items():
                if not NAME.fullmatch(name):
                    raise where.error(kind, name, "", "bad name: use letters, digits, _ . + -")
                if not isinstance(t, dict):
                    raise where.error(kind, name, "", "expected a table")
                check_keys(where, kind, name, t, SPECS[kind])
                for req in REQUIRED[kind]:
                    if req not in t:
                        raise where.error(kind, name, "", f"missing key '{req}'")
                existing = self.table(kind).get(name)
                if existing is not None and not (_bundled(existing.origin)
                                                 and not _bundled(str(path))):
                    raise where.error(kind, name, "",
                                      f"defined twice (also in {existing.origin})")
                if existing is not None:        # yours replaces the bundled one of that name
                    replaced.append(f"[{kind}.{name}]")
                built.append((kind, name, BUILDERS[kind](where, name, t)))
        for kind, name, table in built:
            self.table(kind)[name] = table
        self.replaced += replaced
        self.files.append(path)

    def validate_plans(self) -> None:
        """Cross-table checks, once every file is in."""
        for plan in self.plans.values():
            self.check_plan(plan)

    def check_plan(self, plan: Plan) -> None:
        """A plan against the other tables: what it uses exists and fits, and its name is no
        workload's (`run NAME` would run the plan, and the workload could no longer be run
        by its name)."""
        if plan.name in self.workloads:
            raise table_error(plan.origin, "plan", plan.name, "", f"a workload is named "
                              f"{plan.name} too: a plan may not hide it (rename the plan)")
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
                w = Where(Path(plan.origin), text_or_empty(Path(plan.origin)))
                return w.error("plan", plan.name, key, message)
            return HotloopError(f"{key}: {message}")

        if here:    # about to run: nothing it uses may come from a file left out
            for kind, name in (("plan", plan.name), ("workload", plan.workload),
                               ("cpu", plan.cpu), ("kernel", plan.kernel)):
                self.check_skipped(kind, name)
        for kind, name in (("workload", plan.workload), ("cpu", plan.cpu),
                           ("kernel", plan.kernel)):
            problem = self.unknown(kind, name)
            if problem:
                raise where_key(kind, problem)
        w = self.workloads[plan.workload]
        cpu = self.cpus.get(plan.cpu) or _BUILTIN_CPU
        warnings: list[str] = []
        if here:
            cpu, warnings = fit_to_machine(cpu)
        kernel = self.kernels.get(plan.kernel) or _BUILTIN_KERNEL
        params = {name: p.default for name, p in w.params.items()}
        for key, value in plan.params.items():
            if isinstance(value, list):
                raise where_key(f"params.{key}", f"several values ({', '.join(map(str, value))}):"
                                f" the plan is a batch; run it with `hotloop run {plan.name}`")
            p = w.params.get(key)
            if p is None:
                raise where_key(f"params.{key}", f"workload {w.name} has no param {key!r}"
                                f"{did_you_mean(key, w.params)} "
                                f"(known: {', '.join(w.params) or 'none'})")
            bad = p.problem(value)
            if bad:
                raise where_key(f"params.{key}", bad)
            params[key] = value
        return ResolvedPlan(plan, w, cpu, kernel, params, tuple(warnings))

    def builtin(self, kind: str) -> tuple[str, ...]:
        """The names of one kind that need no table: the default CPU and kernel profiles."""
        return ("default",) if kind in ("cpu", "kernel") else ()

    def names(self, kind: str) -> list[str]:
        """The names of one kind, with the built-in ones."""
        return sorted({*self.table(kind), *self.builtin(kind)})

    def unknown(self, kind: str, name: str) -> str | None:
        """Why `name` is no `kind` of the catalogue ("did you mean" a close one), or None."""
        # a membership test: plans are checked one by one, and a sorted list of every name
        # per check made 10,000 files of profiles take half a minute to load
        if name in self.table(kind) or name in self.builtin(kind):
            return None
        known = self.names(kind)
        return (f"unknown {KIND_NAMES[kind]} {name!r}{did_you_mean(name, known)} "
                f"(known: {', '.join(known) or 'none'})")

    def check_skipped(self, kind: str, name: str) -> None:
        """A name a command needs that a file left out (skip_bad) defines: that file's
        error is the command's (the user may have meant that definition)."""
        for s in self.skipped:
            if (kind, name) in s.defines:
                raise HotloopError(s.error)

    def require(self, kind: str, name: str, flag: str) -> None:
        """A name given on the command line (`flag`, e.g. --cpu): one line blaming the
        command line, with "did you mean" for a typo."""
        self.check_skipped(kind, name)
        problem = self.unknown(kind, name)
        if problem:
            raise HotloopError(f"{flag} {name}: {problem}")

    def plan_for(self, name: str) -> Plan:
        """A plan by name, or a workload by name run with its defaults."""
        self.check_skipped("plan", name)
        self.check_skipped("workload", name)
        if name in self.plans:
            return self.plans[name]
        if name in self.workloads:
            return Plan(name=name, workload=name)
        raise HotloopError(f"unknown plan or workload {name!r}"
                           f"{did_you_mean(name, [*self.plans, *self.workloads])} (plans: "
                           f"{', '.join(sorted(self.plans)) or 'none'}; workloads: "
                           f"{', '.join(sorted(self.workloads)) or 'none'})")


def search_path(extra: list[Path] | None = None) -> list[Path]:
    return [paths.BUNDLED_PROFILES, paths.config_dir(), *(extra or [])]


def load(extra: list[Path] | None = None, skip_bad: bool = False) -> Catalog:
    """The catalogue from every TOML file on the search path.

    A bad file is an error; with `skip_bad` (the console) it is left out instead,
    with its error in `errors`, so one broken file does not hide the others."""
    problem = paths.bundled_problem()
    if problem:
        raise HotloopError(problem)
    for d in extra or []:
        if not d.is_dir():
            raise HotloopError(f"--profiles {d}: no such directory")
    cat = Catalog()
    seen: set[Path] = set()
    for d in search_path(extra):
        if not d.is_dir():
            continue
        for f in sorted(d.rglob("*.toml")):
            real = f.resolve()
            if real not in seen:
                seen.add(real)
                try:
                    cat.load_file(f)            # none of a bad file's tables stay
                except NotAProfile as e:
                    # a FIFO, a device, a huge file: never read, said in one line, and a
                    # command that needs what it might define says it is unknown
                    cat.errors.append(str(e))
                    cat.skipped.append(Skipped(str(e), str(e), frozenset()))
                except HotloopError as e:
                    if not skip_bad:
                        raise
                    cat.errors.append(str(e))
                    cat.skipped.append(Skipped(str(e), f"{e} (file skipped)",
                                               defined_in(text_or_empty(f))))
    if not skip_bad:
        cat.validate_plans()
        return cat
    for name, plan in list(cat.plans.items()):
        try:
            cat.check_plan(plan)
        except HotloopError as e:
            del cat.plans[name]
            error, warning = str(e), f"{e} (plan skipped)"
            for kind, ref in (("workload", plan.workload), ("cpu", plan.cpu),
                              ("kernel", plan.kernel)):
                # the plan is fine, what it uses is in a file left out: that is the cause
                cause = next((s for s in cat.skipped if (kind, ref) in s.defines), None)
                if cause is not None and cat.unknown(kind, ref):
                    error = f"{cause.error} (needed by plan {name})"
                    warning = (f"plan {name} skipped: its {KIND_NAMES[kind]} {ref} is in a "
                               f"file skipped")
                    break
            cat.errors.append(error)
            cat.skipped.append(Skipped(error, warning, frozenset({("plan", name)})))
    return cat
