"""A run's variants as `run` names them, and --aa: one variant run against itself."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hotloop import catalog
from hotloop.errors import HotloopError


@dataclass(frozen=True)
class Variant:
    """One variant of a run: its name ("block_size=4096", "cpu=split"), its resolved plan,
    its result file."""
    label: str
    rp: catalog.ResolvedPlan
    out: Path


AA = ("a1", "a2")                       # --aa: the one variant's two sides


def aa_variants(out: list[Variant], here: bool = True) -> list[Variant]:
    """--aa: the one variant asked for, twice, as sides a1 and a2 (after its own name, if it
    has one): an A/A, what noise alone does to every row of the comparison."""
    if not here:
        raise HotloopError("--aa runs one variant twice on this machine; --host compares "
                           "machines: one variant on each")
    if len(out) != 1:
        raise HotloopError(f"--aa runs one variant against itself, and this run names "
                           f"{len(out)}: {', '.join(repr(v.label) for v in out)}; keep one "
                           f"plan, one --cpu, one --kernel, one value a --param")
    (one,) = out
    return [Variant(f"{one.label} {side}".strip(), one.rp,
                    one.out.with_name(f"{one.out.stem}-{side}{one.out.suffix}")) for side in AA]
