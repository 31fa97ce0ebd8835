"""`hotloop calibrate`: measure how much this machine's sessions of one benchmark differ.

K sessions of one plan, one after the other, each a fresh worker process (as separate
invocations of `hotloop run` would be), with an optional gap between them: a series of one
kernel (run.series, what `run PLAN --sessions K` runs); their result files are kept in one
directory, <time>-calibrate-PLAN/<kernel>/ (they are A/A sessions: `hotloop calibrate DIR` reads them again).
hotloop.analysis.noise splits their variance and stores the profile that `compare` then uses;
hotloop.render.calibration prints it with the cheapest sessions x runs a side for a 1%, 2%
and 5% change.  Sessions run here, one after another, share one boot (a VM booted for each
session is a boot of its own): the profile records each session's boot, and compare uses a
calibration within one boot only for sides within one boot (it measured no reboot); the
report says so.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from hotloop import events as ev
from hotloop.paths import RESULTS
from hotloop.run import series


@dataclass
class Stopwatch:
    """Wall times of sessions run one after another: what a session start costs against a run."""
    begun: dict[str, float] = field(default_factory=dict)
    runs: dict[str, list[float]] = field(default_factory=dict)
    ended: dict[str, float] = field(default_factory=dict)

    def see(self, variant: str, event: ev.Event | None) -> None:
        now = time.monotonic()
        if event is None:
            self.begun[variant] = now
        elif isinstance(event, ev.RunSample) and not event.warmup:
            self.runs.setdefault(variant, []).append(now)
        elif isinstance(event, (ev.Finished, ev.Failed)):
            self.ended[variant] = now

    def costs(self) -> tuple[float, float] | None:
        """(a session's cost beyond its runs, one run), medians over the sessions; None
        when no session had two runs to time."""
        per_run: list[float] = []
        overhead: list[float] = []
        for v, times in self.runs.items():
            if len(times) < 2 or v not in self.begun or v not in self.ended:
                continue
            run = (times[-1] - times[0]) / (len(times) - 1)
            per_run.append(run)
            overhead.append(max(0.0, self.ended[v] - self.begun[v] - len(times) * run))
        if not per_run:
            return None
        per_run.sort()
        overhead.sort()
        return overhead[len(overhead) // 2], per_run[len(per_run) // 2]


def stem(plan: str) -> str:
    """The name of a calibration's directory after its time: calibrate-<plan>."""
    return f"calibrate-{plan}"


def new_directory(plan: str, parent: Path = RESULTS) -> Path:
    """results/<time>-calibrate-<plan>/, made as a series' directory is (run.series): the
    sessions go in its <kernel>/sNN.jsonl, so two calibrations never share one."""
    return series.new_directory(stem(plan), parent)
