"""A run's variant as `run` names it (the A/A's sides a1 and a2 among them: run.variants
makes them), with its resolved plan and result file."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hotloop import catalog


@dataclass(frozen=True)
class Variant:
    """One variant of a run: its name ("block_size=4096", "cpu=split", "a1"), its resolved
    plan, its result file."""
    label: str
    rp: catalog.ResolvedPlan
    out: Path
