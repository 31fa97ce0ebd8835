"""What perf can do on this machine: finding it, its permissions, counters, warnings.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence

from hotloop.host.doctor import Capability
from hotloop.perf.parse import parse_stat_csv

# Defaults from benchmarks/perf_overhead.py on a 2-core KVM guest: workload CPU time per
# repetition +1.2..1.8% at 999 Hz, +4..6% at 1999 Hz, +12..15% at 3999 Hz (perf's default).


DEFAULT_FREQUENCY = 999          # Hz; odd so it does not beat against 1 kHz timers
# Summaries are flat (--no-children, -g none), so chains would only serve --keep-perf users;
# "fp" measured within noise of "none" (0..+6%), "dwarf" copies stack per sample.
DEFAULT_CALL_GRAPH = "none"
DEFAULT_WINDOW_S = 1.0           # windows must be <= 2 s; 1 s leaves slack for slow reports
STAT_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults",
               "cycles", "instructions")

PERF_MISSING = ("perf not found in PATH: install linux-perf (Debian), "
                "linux-tools-$(uname -r) (Ubuntu) or perf (Fedora)")



# --------------------------------------------------------------------------- capabilities

def find_perf() -> str | None:
    """The perf binary, looked up in PATH each time (tests hide it by changing PATH)."""
    return shutil.which("perf")


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _has_cap(bit: int) -> bool:
    """Whether this process holds capability `bit` (CAP_SYS_ADMIN=21, CAP_PERFMON=38, CAP_SYSLOG=34)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except (OSError, ValueError, IndexError):
        pass
    return os.geteuid() == 0


def _privileged() -> bool:
    # perf's own test: CAP_PERFMON (or the older CAP_SYS_ADMIN) bypasses perf_event_paranoid.
    return _has_cap(38) or _has_cap(21)


def _run_quick(argv: list[str], timeout: float = 2.0) -> tuple[int, str]:
    """Run a short command, return (status, stdout+stderr); never raises."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
        return p.returncode, p.stdout + p.stderr
    except (OSError, subprocess.SubprocessError) as e:
        return -1, str(e)


def probe_counters(perf: str, events: Sequence[str] = STAT_EVENTS) -> dict[str, bool]:
    """Which counters `perf stat` can count here, by counting `true` once (~30 ms)."""
    _, out = _run_quick([perf, "stat", "-x", ",", "-e", ",".join(events), "true"])
    counts = parse_stat_csv(out)
    return {ev: counts.get(ev) is not None for ev in events}


def capabilities(wanted: set[str] | None = None) -> list[Capability]:
    """What perf can do on this machine, each with the fix when it cannot. Fast (< 0.2 s).
    `wanted`: only those (by name) need be right: a perf started to tell another is not (each
    start, 30-50 ms here, is a session's before its first run)."""
    caps: list[Capability] = []
    perf = find_perf()
    if perf is None:
        caps.append(Capability("perf", False, PERF_MISSING))
    elif wanted is not None and "perf" not in wanted:
        caps.append(Capability("perf", True, perf))
    else:
        _, ver = _run_quick([perf, "--version"])
        caps.append(Capability("perf", True, f"{perf} ({ver.strip() or 'unknown version'})"))

    priv = _privileged()
    paranoid = _read_int("/proc/sys/kernel/perf_event_paranoid")
    if paranoid is None:
        caps.append(Capability("perf_event_paranoid", False,
                               "/proc/sys/kernel/perf_event_paranoid missing: kernel built "
                               "without perf events"))
    elif priv:
        caps.append(Capability("perf_event_paranoid", True,
                               f"paranoid={paranoid}; privileged (root/CAP_PERFMON): may profile "
                               f"any process and the kernel"))
    elif paranoid <= 1:
        caps.append(Capability("perf_event_paranoid", True,
                               f"paranoid={paranoid}: may profile own processes including kernel samples"))
    elif paranoid == 2:
        caps.append(Capability("perf_event_paranoid", False,
                               "paranoid=2: user-space samples only, no kernel [k] symbols; "
                               "fix: sysctl kernel.perf_event_paranoid=1 (or run as root)"))
    else:
        caps.append(Capability("perf_event_paranoid", False,
                               f"paranoid={paranoid}: unprivileged perf disabled; "
                               "fix: sysctl kernel.perf_event_paranoid=1 (or run as root)"))

    kptr = _read_int("/proc/sys/kernel/kptr_restrict")
    # perf hides kernel addresses when kptr_restrict=2, or =1 without CAP_SYSLOG.
    if kptr is None or kptr == 0 or (kptr == 1 and (_has_cap(34) or os.geteuid() == 0)):
        caps.append(Capability("kernel symbols", True,
                               f"kptr_restrict={kptr if kptr is not None else '?'}: kernel symbols resolve"))
    else:
        caps.append(Capability("kernel symbols", False,
                               f"kptr_restrict={kptr} hides kernel addresses; "
                               "fix: sysctl kernel.kptr_restrict=0"))

    if perf is None:
        caps.append(Capability("counters", False, "needs perf"))
        caps.append(Capability("call-graph fp", False, "needs perf"))
        caps.append(Capability("call-graph dwarf", False, "needs perf"))
        return caps

    counters = probe_counters(perf)
    ok = [k for k, v in counters.items() if v]
    missing = [k for k, v in counters.items() if not v]
    detail = "supported: " + (", ".join(ok) or "none")
    if missing:
        detail += "; not supported: " + ", ".join(missing)
        if {"cycles", "instructions"} & set(missing):
            detail += " (no PMU, e.g. a VM without vPMU: no cycles/IPC; software events still work)"
    caps.append(Capability("counters", bool(ok), detail))
    hw = counters.get("cycles", False) and counters.get("instructions", False)
    caps.append(Capability("hardware counters", hw,
                           "cycles and instructions count (IPC available)" if hw else
                           "cycles/instructions not supported: sampling falls back to cpu-clock, no IPC"))

    caps.append(Capability("call-graph fp", True,
                           "frame-pointer stacks; user frames need -fno-omit-frame-pointer"))
    if wanted is not None and "call-graph dwarf" not in wanted:
        return caps
    _, opts = _run_quick([perf, "version", "--build-options"])
    dwarf = bool(re.search(r"(libunwind|libdw-dwarf-unwind):\s*\[\s*on", opts))
    caps.append(Capability("call-graph dwarf", dwarf,
                           "perf built with a DWARF unwinder (costly: copies 8 KiB of stack per sample)"
                           if dwarf else "perf built without libunwind/libdw: no --call-graph dwarf"))
    return caps


@functools.cache
def recording_warnings(call_graph: str = DEFAULT_CALL_GRAPH) -> tuple[str, ...]:
    """What a recording here will lack, one line each with its fix (for Warning events)."""
    wanted = {"perf_event_paranoid", "kernel symbols", "hardware counters",
              f"call-graph {call_graph}"}
    return tuple(f"{c.name}: {c.detail}" for c in capabilities(wanted)
                 if c.name in wanted and not c.available)


def system_wide_allowed() -> bool:
    """May this process sample whole CPUs (`perf record -a`)?"""
    paranoid = _read_int("/proc/sys/kernel/perf_event_paranoid")
    return _privileged() or (paranoid is not None and paranoid <= 0)
