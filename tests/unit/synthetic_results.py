"""Result files with runs made up by the test (synthetic: for the statistics and the command's
exit status, never for what a workload measures).  The header is a real one, from
tests/e2e/data; each run's value follows from its counters, as a reader checks."""
from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hotloop import events as ev

DATA = Path(__file__).resolve().parent.parent / "e2e" / "data" / "zero_null-512-v0.1.jsonl"
BYTES = 10_240_000
OPS = 20_000


# Synthetic sessions share one boot unless a test says otherwise (boot="": a file that does
# not say its boot): sessions are then the replicates (hotloop.analysis.boots).
BOOT = "5e5e5e5e-0000-4000-8000-00000000b001"


def write(path: Path, values: Sequence[float], label: str = "stock", boot: str = BOOT,
          kernel: str | None = None, vm: dict[str, object] | None = None) -> Path:
    """A finished zero_null session whose runs have these bytes/s (about: ns is whole), run in
    `boot` (of `kernel`, the data file's unless given)."""
    started = json.loads(DATA.read_text().splitlines()[0])
    started["header"]["label"] = label
    if boot:
        started["header"]["boot_id"] = boot
    if kernel is not None:
        started["header"]["kernel_release"] = kernel
    if vm is not None:                  # a session in a VM booted for it
        started["header"]["vm"] = vm
    lines = [json.dumps(started)]
    got = []
    for i, v in enumerate(values):
        ns = max(1, round(BYTES * 1e9 / float(v)))
        value = ev.metric_value("bytes/s", OPS, BYTES, ns, 0, {})
        got.append(value)
        lines.append(json.dumps({"type": "run", "index": i, "value": value, "ops": OPS,
                                 "bytes": BYTES, "ns": ns, "cycles": 0, "extra": {},
                                 "warmup": False, "variant": ""}))
    mean = statistics.fmean(got)
    sd = statistics.stdev(got) if len(got) > 1 else 0.0
    lines.append(json.dumps({"type": "finished", "summary": {
        "n": len(got), "median": statistics.median(got), "mean": mean, "stdev": sd,
        "cv": sd / mean, "min": min(got), "max": max(got), "counters": {}}, "variant": ""}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def side(directory: Path, sessions: int, rng: np.random.Generator, change: float = 0.0,
         within: float = 0.01, between: float = 0.005, runs: int = 20,
         label: str = "stock", boots: Sequence[str] | None = None,
         kernel: str | None = None) -> Path:
    """A directory of `sessions` sessions: lognormal runs around a session offset, the rate
    scaled by 1 + change; session i in boots[i] (default: all in BOOT)."""
    for i in range(sessions):
        off = rng.normal(0, between)
        write(directory / f"s{i}.jsonl",
              1e9 * (1 + change) * np.exp(rng.normal(off, within, runs)), label,
              boot=BOOT if boots is None else boots[i], kernel=kernel)
    return directory
