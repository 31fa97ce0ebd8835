"""`hotloop calibrate`: measure how much this machine's sessions of one benchmark differ.

K sessions of one plan, one after the other, each a fresh worker process (as separate
invocations of `hotloop run` would be), with an optional gap between them; their result files
are kept in one directory (they are A/A sessions: `hotloop calibrate DIR` reads them again).
tui.noise splits their variance, stores the profile that `compare` then uses, and plans the
cheapest sessions x runs a side for a 1%, 2% and 5% change.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from tui import events as ev
from tui import noise
from tui.errors import HotloopError
from tui.stats import duration


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


def new_directory(plan: str, parent: Path = Path("results")) -> Path:
    """results/<time>-calibrate-<plan>/, made here and now, so two calibrations never share one."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            path = parent / f"{stamp}-calibrate-{plan}{'' if n == 1 else f'-{n}'}"
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
    except OSError as e:
        raise HotloopError(f"{parent}: cannot make the calibration's directory: "
                           f"{e.strerror}") from None
    raise HotloopError(f"{parent}: no free name for the calibration's directory")


def report(profile: noise.NoiseProfile, saved: Path | None) -> str:
    """What calibrate prints: both CVs per metric, and the cheapest design per change."""
    k = profile.key
    run = profile.run_cost_s
    cost = (f"a session's start costs {profile.session_cost_s:.1f} s"
            + ("" if profile.cost_measured else " (assumed: sessions read from files)")
            + f", a run {duration(run) if run >= 0.1 else f'{1e3 * run:.1f} ms'}")
    lines = [f"calibrate {noise.describe_key(k)}",
             f"{profile.sessions} sessions, kernel {', '.join(profile.kernels)}; {cost}", ""]
    rows = [["metric", "within a session", "session to session", "(90% bound)"]]
    for name, m in profile.metrics.items():
        # The session noise is what the runs do not explain; from few sessions it can come
        # out as 0: the bound says how large it may still be.
        bound = math.sqrt(max(0.0, m.upper() - m.median_var))
        rows.append([name, f"CV {100 * m.sigma_within:.2f}%",
                     f"CV {100 * m.sigma_between:.2f}%", f"<= {100 * bound:.2f}%"])
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    name, primary = next(iter(profile.metrics.items()))
    lines += ["", f"to detect a change of {name} across sessions (alpha 0.05, power 0.8, "
                  f"planned on the bound), the cheapest a side:"]
    for change in noise.CHANGES:
        r = noise.repetitions(primary, profile.session_cost_s, profile.run_cost_s, change,
                              primary.df)
        if r.sessions is None:
            lines.append(f"  {change:g}%  not within {noise.MAX_SESSIONS} sessions a side: "
                         f"interleave the variants instead (one batch, a paired test)")
        else:
            lines.append(f"  {change:g}%  {r.sessions} session{'s' * (r.sessions != 1)} x "
                         f"{r.runs} runs (about {duration(r.cost_s or 0)} a side)")
    if saved is not None:
        lines += ["", f"saved {saved}: compare uses it for results of this host, workload, "
                      f"params, CPU profile and perf setting"]
    return "\n".join(lines)


def listing() -> str:
    found = noise.stored()
    if not found:
        return f"no noise profiles in {noise.directory()} (hotloop calibrate PLAN makes one)"
    lines = []
    for path, profile, why in found:
        if profile is None:
            lines.append(f"  {path}: {why}")
            continue
        lines.append(f"  {noise.describe_key(profile.key)}")
        lines.append(f"      {profile.describe()}, {path}")
    return "\n".join(lines)
