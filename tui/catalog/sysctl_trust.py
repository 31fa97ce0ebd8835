"""Which sysctls a kernel profile from a shared directory may set.

`--apply-system` is one yes for everything a run's profiles would write, and the bundled
busy-poll profile needs it: a `[kernel.X]` from a --profiles directory could ride on that yes
to set any /proc/sys key as root (`kernel.core_pattern = "|/path %p"` runs that program at the
next crash; `kernel.modprobe`, `fs.suid_dumpable`...).  Outside the user's own config
directory (and the bundled profiles) a kernel profile may set only the benchmarking set:
net.* and vm.* (less the few of them that turn a protection off) and the scheduler, watchdog
and perf sampling knobs a benchmark tunes.
"""
from __future__ import annotations

PREFIXES = ("net.", "vm.")
KNOBS_PREFIXES = ("kernel.sched_",)
KNOBS = frozenset({"kernel.numa_balancing", "kernel.timer_migration", "kernel.nmi_watchdog",
                   "kernel.watchdog", "kernel.perf_event_max_sample_rate",
                   "kernel.perf_cpu_time_max_percent"})
# Within net.* and vm.*, the switches of a protection: the BPF JIT's hardening, the lowest
# address a process may map (a NULL dereference made exploitable), userfaultfd for all, a
# panic at the first out-of-memory
PROTECTIONS = ("net.core.bpf_jit_", "vm.mmap_min_addr", "vm.unprivileged_userfaultfd",
               "vm.panic_on_oom")
SET = ("net.*, vm.*, kernel.sched_*, kernel.numa_balancing, kernel.timer_migration, "
       "kernel.nmi_watchdog, kernel.watchdog, kernel.perf_event_max_sample_rate, "
       "kernel.perf_cpu_time_max_percent")


def benchmarking(key: str) -> bool:
    """Whether a shared profile may set sysctl `key`."""
    if key.startswith(PROTECTIONS):
        return False
    return key.startswith(PREFIXES + KNOBS_PREFIXES) or key in KNOBS
