"""Saving plans as TOML, and plans with overrides.
"""
from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import tomli_w

from hotloop import paths
from hotloop.catalog.loader import Catalog
from hotloop.catalog.model import Plan
from hotloop.catalog.schema import NAME
from hotloop.errors import HotloopError


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
    if not NAME.fullmatch(plan.name):
        raise HotloopError(f"plan name {plan.name!r}: use letters, digits, _ . + -")
    directory = directory or paths.config_dir() / "plans"
    target = directory / f"{plan.name}.toml"
    if cat is not None:
        if plan.name in cat.workloads:
            raise HotloopError(f"plan name {plan.name!r}: a workload has this name, and a plan "
                               f"may not hide it: choose another")
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
