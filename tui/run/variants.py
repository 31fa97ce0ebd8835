"""The variants of a run or a series asked for as K=V items: the one expander of the command
line (`run --param K=V1,V2`, `--cpu`, `--kernel`, several plans, `--aa`) and of the console's
"vs" field, with one set of rules and one set of messages.

An item is KEY=VALUE, or KEY=V1,V2 for several (a variant each value); KEY is a param of the
workload or `cpu` (a CPU profile; a workload's own param of that name comes first); several
items give a variant each combination, in the order typed.  A variant is named by its
values of the keys that take several ("block_size=4096", "cpu=split block_size=4096"), with
the plan's name first when several plans are named.  The console's field is against the form
(`baseline`): the form's settings come first, named by the keys the text gives, and a value
list that holds the form's own values counts them once, as the form ("block_size=512,4096"
with the form at 512: 512 and 4096, as `run --param block_size=512,4096` runs).  A variant
named twice is refused, but for an A/A (`aa`: the one variant as sides a1 and a2).
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hotloop.catalog import Catalog, ParamSetting, Plan, Workload
from hotloop.catalog.loader import did_you_mean
from hotloop.errors import HotloopError
from hotloop.record import AA

KEYS = "a workload param, or cpu"
SYNTAX = f"expected KEY=VALUE, or KEY=V1,V2 for several ({KEYS})"
KERNEL = ("kernels are compared with --kernel A --kernel B (in the console, the vs kernel "
          "field), not as a K=V variant")


def once_each(variants: Sequence[Planned]) -> None:
    """A variant named twice refused (`K=1,1`, `--cpu a --cpu a`, `PLAN PLAN`): an A/A."""
    names = [v.name for v in variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise HotloopError(f"the batch names the same variant twice: {', '.join(twice)} (an "
                           f"A/A, one variant against itself, is --aa)")


def aa_of(names: Sequence[str]) -> str:
    return (f"--aa runs one variant against itself, and this run names {len(names)}: "
            f"{', '.join(repr(n) for n in names)}; keep one plan, one --cpu, one --kernel, "
            f"one value a --param")


def no_param(said: str, workload: Workload, key: str, keys: Sequence[str] = ("cpu",)) -> str:
    """A key that is no param of the workload: did you mean a close one, and which there are."""
    known = list(workload.params)
    return (f"{said}: workload {workload.name} has no param {key!r}"
            f"{did_you_mean(key, [*known, *keys])} (known: {', '.join(known) or 'none'}"
            + "".join(f"; or {k}" for k in keys) + ")")


@dataclass(frozen=True)
class Item:
    """One KEY=V1,V2 as given, and how a message names it: `said` "--param block_size=1,2",
    "vs cpu=split"; a flag's item (`flag`: --cpu, --kernel) names each value after it."""
    key: str
    values: tuple[str, ...]
    said: str
    flag: bool = False

    def named(self, value: str) -> str:
        return f"{self.said} {value}" if self.flag else self.said


@dataclass(frozen=True)
class VariantSpec:
    """What variants are asked for: K=V items (checked against a workload's params when
    expanded), the plans named (the command line's; none: the caller's one plan), an A/A,
    and whether the first side is the caller's plan as it is (`baseline`: the console's
    form)."""
    items: tuple[Item, ...] = ()
    plans: tuple[str, ...] = ()
    aa: bool = False
    baseline: bool = False

    @classmethod
    def parse(cls, items: Sequence[str], where: str, *, cpus: Sequence[str] = (),
              kernels: Sequence[str] = (), plans: Sequence[str] = (), aa: bool = False,
              baseline: bool = False) -> VariantSpec:
        """The K=V `items` as given after `where` ("--param", "vs"), the --cpu and --kernel
        flags' values before them; HotloopError in one line naming the item: not K=V (an
        empty value among V1,V2 too), a key twice."""
        out = [Item(key, tuple(values), f"--{key}", flag=True)
               for key, values in (("cpu", cpus), ("kernel", kernels)) if values]
        for text in items:
            said = f"{where} {text}"
            key, sep, value = text.partition("=")
            values = tuple(value.split(","))
            if not sep or not key or not all(values):
                raise HotloopError(f"{said}: {SYNTAX}")
            if key in (i.key for i in out if not i.flag):
                raise HotloopError(f"{said}: {key} twice (V1,V2 gives it several values)")
            out.append(Item(key, values, said))
        return cls(tuple(out), tuple(plans), aa, baseline)

    @classmethod
    def of_text(cls, text: str) -> VariantSpec:
        """The console's vs field: items separated by spaces, against the form."""
        return cls.parse(text.split(), "vs", baseline=True)

    @property
    def keys(self) -> set[str]:
        return {i.key for i in self.items}


@dataclass(frozen=True)
class Planned:
    """One variant as asked: its name, its plan with the variant's params, CPU profile and
    kernel set (not resolved: the caller resolves it for where it runs), and an A/A's side
    (a1, a2; the name is then the variant's own, the label ends with the side)."""
    name: str
    plan: Plan
    side: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} {self.side}".strip()


Value = int | str


def is_param(workload: Workload, item: Item) -> bool:
    """A workload param (its own param named cpu too), not a profile."""
    return item.key in workload.params and not item.flag


def _checked(cat: Catalog, workload: Workload, item: Item) -> tuple[Value, ...]:
    """The item's values as the key takes them (an int param's 0x200 is 512)."""
    if is_param(workload, item):
        param = workload.params[item.key]
        try:
            return tuple(param.parse(v) for v in item.values)
        except ValueError as e:
            raise HotloopError(f"{item.said}: {e}") from None
    if item.key == "cpu" or (item.key == "kernel" and item.flag):
        for v in item.values:
            cat.check_skipped(item.key, v)
            problem = cat.unknown(item.key, v)
            if problem:
                raise HotloopError(f"{item.named(v)}: {problem}")
        return item.values
    if item.key == "kernel":
        raise HotloopError(f"{item.said}: {KERNEL}")
    raise HotloopError(no_param(item.said, workload, item.key))


def _changed(plan: Plan, items: Sequence[Item], combo: Sequence[Value],
             workload: Workload) -> Plan:
    params: dict[str, ParamSetting] = {}
    profiles = {"cpu": plan.cpu, "kernel": plan.kernel}
    for item, value in zip(items, combo):
        if is_param(workload, item):
            params[item.key] = value
        else:
            profiles[item.key] = str(value)
    return replace(plan, cpu=profiles["cpu"], kernel=profiles["kernel"],
                   params={**plan.params, **params})


def batch(cat: Catalog, plan: Plan, given: set[str]) -> list[tuple[str, Plan]]:
    """A plan's batch (its params that hold lists) but for the keys the items set:
    `run page-pool --param mode=slow` runs mode=slow once, not once a listed mode."""
    return cat.variants(replace(plan, params={k: v for k, v in plan.params.items()
                                              if not (isinstance(v, list) and k in given)}))


def expand(cat: Catalog, spec: VariantSpec, plan: Plan | None = None) -> list[Planned]:
    """Every variant `spec` asks for, of its plans (or of `plan`), in order; HotloopError in
    one line: an item the workload cannot take (no such param: did you mean; a value its
    param refuses; an unknown CPU or kernel profile; kernel= typed, not --kernel), a
    variant named twice but for an A/A, an A/A of more than one variant, a baseline alone."""
    if spec.plans:
        plans = [(name, label, p) for name in spec.plans
                 for label, p in batch(cat, cat.plan_for(name), spec.keys)]
    else:
        assert plan is not None, "a spec without plans expands the caller's plan"
        plans = [("", "", plan)]
    out: list[Planned] = []
    for name, plan_label, p in plans:
        cat.require("workload", p.workload, "--workload")
        workload = cat.workloads[p.workload]
        values = [_checked(cat, workload, i) for i in spec.items]
        profiles = [i for i in spec.items if not is_param(workload, i)]
        again = next((i for n, i in enumerate(profiles) if i.key in
                      (j.key for j in profiles[:n])), None)
        if again is not None:           # --cpu A with cpu=B: a workload's param cpu is not
            raise HotloopError(f"{again.said}: {again.key} twice (V1,V2 gives it several "
                               f"values)")
        shown = [spec.baseline or len(i.values) > 1 for i in spec.items]
        for combo in itertools.product(*values):
            parts = ([name] if len(spec.plans) > 1 else []) + ([plan_label] if plan_label
                                                               else [])
            parts += [f"{i.key}={v}" for i, v, show in zip(spec.items, combo, shown) if show]
            out.append(Planned(" ".join(parts), _changed(p, spec.items, combo, workload)))
    if spec.baseline:
        out = _against(cat, spec, plans[0][2], out)
    if spec.aa:
        one = list({v.name: v for v in out}.values())   # `K=1,1 --aa`: one variant twice
        if len(one) != 1:
            raise HotloopError(aa_of([v.name for v in one]))
        return [replace(one[0], side=side) for side in AA]
    once_each(out)
    return out


def _against(cat: Catalog, spec: VariantSpec, plan: Plan, asked: list[Planned]
             ) -> list[Planned]:
    """The form first (named by its own values of the keys given), then each variant asked
    that is not the form: a list holding the form's values counts them once."""
    once_each(asked)                    # before the form merges in: 512,512 is twice
    base = cat.resolve(plan, here=False).params
    own = {"cpu": plan.cpu, "kernel": plan.kernel}
    first = Planned(" ".join(f"{i.key}={base[i.key] if i.key in base else own[i.key]}"
                             for i in spec.items), plan)
    rest = [v for v in asked if v.name != first.name]
    if not rest:
        said = " ".join(i.said.removeprefix("vs ") for i in spec.items)
        raise HotloopError(f"vs {said}: the form's own settings (the baseline), and no "
                           f"variant beside them; give another value")
    return [first, *rest]


def single(cat: Catalog, plan: Plan, spec: VariantSpec) -> Plan:
    """`plan` with the items' one value each (a run of one variant, a calibration): a list
    (V1,V2) refused, it would be a batch."""
    several = next((i for i in spec.items if len(i.values) > 1), None)
    if several is not None:
        raise HotloopError(f"{several.said}: one value here (V1,V2 asks for a variant each, "
                           f"as `run` does)")
    (one,) = expand(cat, replace(spec, plans=(), aa=False, baseline=False), plan)
    return one.plan


def versus(cat: Catalog, plan: Plan, text: str) -> tuple[tuple[str, Plan], ...]:
    """The console's vs field: (name, plan) of the form's settings (`plan`) and of each
    variant `text` asks for; empty for an empty text.  HotloopError in one line (expand)."""
    spec = VariantSpec.of_text(text)
    if not spec.items:
        return ()
    return tuple((v.name, v.plan) for v in expand(cat, spec, plan))
