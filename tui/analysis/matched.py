"""Before and after, variant by variant: two sides that each hold several variants (a batch's
files, a series of variants' directory) matched by the variants' names, and each variant's
before compared with its after, as the page_pool bench's table has a row a mode.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hotloop.analysis.compare import compare_sides
from hotloop.analysis.compare_warnings import VariantUnmatched
from hotloop.analysis.comparison import Comparison
from hotloop.errors import HotloopError
from hotloop.results import Result
from hotloop.visible import visible


@dataclass
class Matched:
    """Each variant both sides hold, in the first side's order, with its comparison."""
    before: str                         # the sides as given (a directory, files)
    after: str
    variants: list[str]
    comparisons: list[Comparison]
    warnings: list[VariantUnmatched] = field(default_factory=list)
    before_sessions: list[list[Result]] = field(default_factory=list)   # a variant each
    sides: list[list[Result]] = field(default_factory=list)    # before, after: all of each


def _name(r: Result) -> str:
    """A session's variant: the name its batch or series gave it, else its params."""
    h = r.header
    if h.variant:
        return re.sub(r"(^| )kernel=\S+", "", h.variant).strip() or h.variant
    return " ".join(f"{k}={v}" for k, v in h.params.items())


def variants(rs: Sequence[Result]) -> dict[str, list[Result]] | None:
    """The side's sessions by variant, None unless it holds two variants or more."""
    out: dict[str, list[Result]] = {}
    for r in rs:
        out.setdefault(_name(r), []).append(r)
    return out if len(out) > 1 else None


def match(sides: Sequence[Sequence[Result]], given: Sequence[str],
          pair_sessions: bool = True, noise_file: Path | None = None,
          primary: str | None = None) -> Matched | None:
    """Two sides of several variants each, compared variant by variant; None when the
    sides are not that (one variant a side, or more than two sides): a plain comparison."""
    if len(sides) != 2:
        return None
    before, after = variants(sides[0]), variants(sides[1])
    if before is None or after is None:
        return None
    common = [v for v in before if v in after]
    if not common:
        raise HotloopError(f"compare: {given[0]} and {given[1]} hold no variant of one name "
                           f"({', '.join(map(visible, before))} vs "
                           f"{', '.join(map(visible, after))}): nothing to match")
    warnings = [VariantUnmatched(variant=v, side=g)
                for g, mine, theirs in ((given[0], before, after), (given[1], after, before))
                for v in mine if v not in theirs]
    comps = [compare_sides([before[v], after[v]], [given[0], given[1]], noise_file,
                           pair_sessions=pair_sessions, primary=primary) for v in common]
    return Matched(given[0], given[1], common, comps, warnings,
                   [before[v] for v in common], [list(sides[0]), list(sides[1])])


def split_by_kernel(done: Sequence[Result], primary: str | None = None) -> Matched | None:
    """A batch of a plan's variants run on two kernels (`run page-pool --kernel stock
    --kernel patched`): each variant's first kernel against its second, else None."""
    kernels = list(dict.fromkeys(r.header.kernel.name for r in done))
    if len(kernels) != 2:
        return None
    sides = [[r for r in done if r.header.kernel.name == k] for k in kernels]
    try:
        return match(sides, kernels, primary=primary)
    except HotloopError:
        return None
