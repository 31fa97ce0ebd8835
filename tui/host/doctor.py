"""What this machine allows: the host's lines of `hotloop doctor`, and its VM lines (qemu,
virtme-ng, KVM, each kernel image).
"""
from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotloop.host import kimage, sysfs
from hotloop.host.cpus import format_cpu_list, online_cpus, parse_cpu_list
from hotloop.host.kvm import (
    INSTALL_QEMU,
    INSTALL_VIRTME,
    QEMU,
    VIRTME,
    Accel,
    find_virtme,
    kvm_state,
    probe_kvm,
    qemu_version,
    tcg_warning,
)
from hotloop.host.settings import (
    available_governors,
    boost_control,
    cpufreq_dir,
    has_cpufreq,
    sysctl_writable,
)

# --------------------------------------------------------------------------- capabilities


@dataclass(frozen=True)
class Capability:
    """One line of `hotloop doctor`; `value` is the machine-readable part, if any."""
    name: str
    available: bool
    detail: str
    value: Any = None


def _cpu_flags() -> set[str]:
    text = sysfs.read_opt(sysfs.PROC / "cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def _probe_realtime() -> tuple[bool, str, bool]:
    """Try SCHED_FIFO 1 and nice -1 on a throwaway thread: (rt ok, rt error, negative nice ok).

    Linux applies sched_setscheduler(0)/setpriority(tid) to the calling thread
    only, and the thread exits right after, so nothing needs restoring.
    """
    out: dict[str, Any] = {"rt": False, "err": "", "nice": False}

    def probe() -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            out["rt"] = True
        except OSError as e:
            out["err"] = e.strerror or str(e)
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -1)
            out["nice"] = True
        except OSError:
            pass

    t = threading.Thread(target=probe, name="hotloop-rt-probe", daemon=True)
    t.start()
    t.join(2.0)
    return out["rt"], out["err"], out["nice"]


def capabilities() -> list[Capability]:
    """What this machine lets hotloop do (fast: sysfs reads and one short thread)."""
    caps: list[Capability] = []

    online = online_cpus()
    usable = sorted(os.sched_getaffinity(0))
    offline = sysfs.read_opt(sysfs.CPU_SYS / "offline") or ""
    detail = f"{len(online)} online ({format_cpu_list(online)})"
    if usable != online:
        detail += f", this process may use {format_cpu_list(usable)}"
    if offline:
        detail += f", offline {offline}"
    if len(usable) < 2:
        detail += ": one CPU, profiles that split processes share it"
    caps.append(Capability("cpus", len(usable) >= 2, detail, len(online)))

    if has_cpufreq():
        cpu = next(c for c in online if (cpufreq_dir(c) / "scaling_governor").exists())
        current = sysfs.read_opt(cpufreq_dir(cpu) / "scaling_governor") or "?"
        driver = sysfs.read_opt(cpufreq_dir(cpu) / "scaling_driver") or "?"
        govs = available_governors(cpu)
        caps.append(Capability(
            "cpufreq", True,
            f"driver {driver}, governor {current}, available: {' '.join(govs) or '?'}", govs,
        ))
    else:
        caps.append(Capability(
            "cpufreq", False, "no cpufreq (VM or disabled): governor settings are skipped", []))

    control = boost_control()
    if control is None:
        caps.append(Capability("boost", False, "no boost control: boost settings are skipped"))
    else:
        path, inverted = control
        raw = sysfs.read_opt(path) or "?"
        on = (raw == "1") != inverted
        caps.append(Capability("boost", True, f"{path.name} = {raw} (boost {'on' if on else 'off'})", on))

    smt_control = sysfs.read_opt(sysfs.CPU_SYS / "smt" / "control")
    smt_active = sysfs.read_opt(sysfs.CPU_SYS / "smt" / "active") == "1"
    caps.append(Capability(
        "smt", smt_active,
        f"SMT active (control: {smt_control})" if smt_active
        else f"no SMT (control: {smt_control or 'absent'})", smt_active,
    ))

    isolated = parse_cpu_list(sysfs.read_opt(sysfs.CPU_SYS / "isolated") or "")
    nohz_text = sysfs.read_opt(sysfs.CPU_SYS / "nohz_full")
    nohz = parse_cpu_list(nohz_text) if nohz_text and nohz_text != "(null)" else []
    caps.append(Capability(
        "isolated cpus", bool(isolated or nohz),
        f"isolcpus: {format_cpu_list(isolated) or 'none'}; nohz_full: {format_cpu_list(nohz) or 'none'}",
        {"isolcpus": isolated, "nohz_full": nohz},
    ))

    rt, err, nice = _probe_realtime()
    lo, hi = os.sched_get_priority_min(os.SCHED_FIFO), os.sched_get_priority_max(os.SCHED_FIFO)
    runtime = sysfs.read_opt(sysfs.PROC / "sys" / "kernel" / "sched_rt_runtime_us")
    if rt:
        detail = f"SCHED_FIFO/RR allowed (priority {lo}-{hi})"
        if runtime and runtime != "-1":
            period = sysfs.read_opt(sysfs.PROC / "sys" / "kernel" / "sched_rt_period_us") or "?"
            detail += f", RT throttled to {runtime} us per {period} us"
    else:
        detail = f"SCHED_FIFO not allowed: {err}; fifo/rr profiles cannot run as this user"
    detail += "; negative nice " + ("allowed" if nice else "not allowed")
    caps.append(Capability("sched_setscheduler", rt, detail, {"fifo": rt, "negative_nice": nice}))

    try:
        ro = bool(os.statvfs(sysfs.PROC_SYS).f_flag & os.ST_RDONLY)
    except OSError:
        ro = True
    sample = sysctl_writable("net.core.busy_poll") if (sysfs.PROC_SYS / "net/core/busy_poll").exists() \
        else sysctl_writable("kernel.sched_rt_runtime_us")
    if ro:
        caps.append(Capability("sysctl writable", False, "/proc/sys is mounted read-only", False))
    elif sample:
        caps.append(Capability("sysctl writable", True,
                               "/proc/sys is writable (kernel profiles can set sysctls)", True))
    else:
        caps.append(Capability("sysctl writable", False, sample.reason, False))

    flags = _cpu_flags()
    clock = sysfs.read_opt(sysfs.CLOCKSOURCE) or "?"
    if "tsc" in flags:
        stable = [f for f in ("constant_tsc", "nonstop_tsc") if f in flags]
        ok = "constant_tsc" in flags
        caps.append(Capability(
            "tsc", ok,
            f"TSC present ({' '.join(stable) or 'not constant: cycles drift with frequency'}), "
            f"clocksource {clock}",
            ok,
        ))
    else:
        caps.append(Capability("tsc", False, f"no TSC: cycles are not measured (clocksource {clock})", False))

    return caps


# --------------------------------------------------------------------------- VMs

def vm_rows(images: dict[str, str]) -> list[tuple[str, bool, str]]:
    """`hotloop doctor`'s VM rows: qemu, virtme-ng, KVM (present, usable, why not) and, for
    each kernel profile with an image (name: image), whether it boots with this root."""
    rows: list[tuple[str, bool, str]] = []
    qemu = shutil.which(QEMU)
    version = qemu_version(qemu) if qemu else ""
    rows.append(("qemu", qemu is not None,
                 f"{qemu} {version}".strip() if qemu else f"no {QEMU} on PATH ({INSTALL_QEMU})"))
    virtme = find_virtme()
    rows.append(("virtme-ng", virtme is not None,
                 virtme or f"no {VIRTME} beside this Python nor on PATH ({INSTALL_VIRTME})"))
    state = kvm_state()
    if state == "absent":
        rows.append(("kvm", False, "no /dev/kvm: guests would be emulated (TCG)"))
    elif not images or qemu is None:
        rows.append(("kvm", True, "/dev/kvm present; usable not probed (no kernel profile "
                                  "with an image" + (", no qemu" if qemu is None else "") + ")"))
    else:
        image = Path(next(iter(images.values())))
        problem = kimage.image_problem(image)
        accel = Accel("tcg", problem) if problem else \
            probe_kvm(qemu, image, kimage.sha256(image), version)
        rows.append(("kvm", accel.kind == "kvm",
                     "/dev/kvm present and usable" if accel.kind == "kvm" else
                     "/dev/kvm present, not usable: " + tcg_warning(accel.why_not_kvm)))
    for name, path in images.items():
        problem = kimage.image_problem(Path(path))
        release = kimage.image_release(Path(path)) if problem is None else ""
        ninep = problem or kimage.ninep_problem(release)
        rows.append((f"vm kernel {name}", ninep is None,
                     f"{path}: {release}, mounts the root over 9p" if ninep is None
                     else f"{path}: {ninep}"))
    return rows
