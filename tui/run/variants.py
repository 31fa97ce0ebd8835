"""The variants of a series asked for as changes to one plan (the console's "vs" field):
"block_size=4096", "cpu=split", "block_size=1024,4096" (a variant each value), several keys
joined by spaces (a variant each combination).  The plan as it is comes first, the baseline;
each variant is named by the keys it changes, with the baseline's values for the baseline
("block_size=512" vs "block_size=4096"), as `run --param K=V1,V2` names its variants.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

from hotloop.catalog import Catalog, Plan
from hotloop.errors import HotloopError

KEYS = "a workload param, or cpu"


def versus(cat: Catalog, plan: Plan, text: str) -> tuple[tuple[str, Plan], ...]:
    """(name, plan) of the baseline (`plan`) and of each variant `text` asks for; empty for
    an empty text.  HotloopError in one line naming the item: an item not K=V, a key that is
    no param of the workload (nor cpu; kernel has its own field: a series alternates
    kernels or variants), a value the param refuses, an unknown CPU profile, a key twice, a
    variant that is the baseline."""
    items = text.split()
    if not items:
        return ()
    workload = cat.workloads[plan.workload]
    base = cat.resolve(plan, here=False).params
    keys: list[str] = []
    values: list[list[int | str]] = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise HotloopError(f"vs {item!r}: expected KEY=VALUE ({KEYS})")
        if key in keys:
            raise HotloopError(f"vs {item!r}: {key} twice (V1,V2 gives it several values)")
        if key == "kernel":
            raise HotloopError(f"vs {item!r}: the vs kernel field compares kernels; a series "
                               f"alternates kernels or variants, not both")
        if key == "cpu":
            for name in value.split(","):
                cat.require("cpu", name, "vs cpu")
            parsed: list[int | str] = list(value.split(","))
        elif key in workload.params:
            try:
                parsed = [workload.params[key].parse(v) for v in value.split(",")]
            except ValueError as e:
                raise HotloopError(f"vs {item!r}: {e}") from None
        else:
            raise HotloopError(f"vs {item!r}: workload {workload.name} has no param {key!r} "
                               f"({KEYS}: {', '.join(workload.params) or 'none'})")
        keys.append(key)
        values.append(parsed)

    def named(chosen: dict[str, int | str]) -> str:
        return " ".join(f"{k}={v}" for k, v in chosen.items())

    def changed(chosen: dict[str, int | str]) -> Plan:
        params = {k: v for k, v in chosen.items() if k != "cpu"}
        cpu = str(chosen.get("cpu", plan.cpu))
        return replace(plan, cpu=cpu, params={**plan.params, **params})

    first = {k: plan.cpu if k == "cpu" else base[k] for k in keys}
    out = [(named(first), plan)]
    for combo in itertools.product(*values):
        chosen = dict(zip(keys, combo))
        if chosen == first:
            raise HotloopError(f"vs {named(chosen)}: the form's own settings (the baseline); "
                               f"give another value")
        out.append((named(chosen), changed(chosen)))
    return tuple(out)
