"""What `hotloop calibrate` prints: a noise profile, and the stored profiles."""
from __future__ import annotations

import math
from pathlib import Path

from hotloop.analysis import boots, noise
from hotloop.render.units import duration


def report(profile: noise.NoiseProfile, saved: Path | None) -> str:
    """What calibrate prints: both CVs per metric, and the cheapest design per change."""
    k = profile.key
    run = profile.run_cost_s
    cost = (f"a session's start costs {profile.session_cost_s:.1f} s"
            + ("" if profile.cost_measured else " (assumed: sessions read from files)")
            + f", a run {duration(run) if run >= 0.1 else f'{1e3 * run:.1f} ms'}")
    lines = [f"calibrate {noise.describe_key(k)}",
             f"{profile.sessions} sessions, kernel {', '.join(profile.kernels)}; {cost}"]
    lines += [f"warning: {w}" for w in boot_warnings(profile)] + [""]
    rows = [["metric", "within a session", "session to session", "(90% bound)"]]
    for name, m in profile.metrics.items():
        # The session noise is what the runs do not explain; from few sessions it can come
        # out as 0: the bound says how large it may still be.
        bound = math.sqrt(max(0.0, m.upper() - m.median_var))
        # a perf counter is one value a session: nothing varies within one
        within = "-" if name.startswith("perf:") else f"CV {100 * m.sigma_within:.2f}%"
        rows.append([name, within, f"CV {100 * m.sigma_between:.2f}%",
                     f"<= {100 * bound:.2f}%"])
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines += [f"  {name}: not calibrated ({why}); compare tests it on its sessions alone"
              for name, why in profile.skipped.items()]
    name, primary = next(iter(profile.metrics.items()))
    lines += ["", f"to detect a change of {name} across sessions (alpha 0.05; at least 80% "
                  f"power with 90% assurance: planned on the bound), the cheapest a side:"]
    for change in noise.CHANGES:
        r = noise.repetitions(primary, profile.session_cost_s, profile.run_cost_s, change,
                              primary.df)
        if r.sessions is None:
            lines.append(f"  {change:g}%  not within {noise.MAX_SESSIONS} sessions a side: "
                         f"interleave the variants instead (one batch, a paired test)")
        else:
            lines.append(f"  {change:g}%  {r.sessions} session{'s' * (r.sessions != 1)} x "
                         f"{r.runs} runs (about {duration(r.cost_s or 0)} a side)")
    lines += symbol_lines(profile)
    if saved is not None:
        lines += ["", f"saved {saved}: compare uses it for results of this host, workload, "
                      f"params, CPU profile and perf setting"]
    return "\n".join(lines)


def symbol_lines(profile: noise.NoiseProfile) -> list[str]:
    """From the drift measured (the worker's CPU time, else ns/op, session to session): the
    sessions a side the differential profile needs to find a 5%-share symbol 30% costlier."""
    from hotloop.analysis.symstats import sessions_for_symbol_change
    metric = next((m for m in ("perf:task-clock", "ns/op") if m in profile.metrics), None)
    if metric is None:
        return []
    drift = profile.metrics[metric].sigma_between
    got = sessions_for_symbol_change(drift)
    head = (f"a symbol of 5% of the samples 30% costlier (the differential profile; drift "
            f"between sessions here: {metric} CV {100 * drift:.2f}%):")
    if got is None:
        return ["", head, "  beyond the drift benchmarks/symbol_power.py measured (20%): "
                          "quieten the machine, or run 10 sessions a side and more"]
    k, found, row = got
    return ["", head, f"  {k} sessions a side at 5,000 samples a session found it in "
                      f"{100 * found:.0f}% of pairs or more at {100 * row:.0f}-20% drift "
                      f"(benchmarks/symbol_power.py; the session's scale is removed, so "
                      f"drift costs little: docs/differential.md)"]


def boot_warnings(profile: noise.NoiseProfile) -> list[str]:
    """What the calibration's boots make it good for: only one session a boot measures what
    a reboot moves, and compare uses nothing else for sides that ran in different boots."""
    spread = profile.boot_spread
    if spread == boots.ACROSS:
        return []
    why = {boots.ONE: "its sessions ran in one boot, back to back",
           boots.UNKNOWN: "its sessions' files do not all say their boot",
           }.get(spread, "some of its sessions share a boot")
    return [f"{why}: it measured no reboot, so compare uses it only for sides within one boot "
            f"(two kernels are always two boots); for kernels, calibrate from A/A sessions "
            f"one a boot (a reboot between, or a VM booted for each): hotloop calibrate "
            f"results/aa/"]


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
