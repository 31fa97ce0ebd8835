"""What a VM's guest reads, all of it this session's own: a directory of the session's (locked
while its hotloop lives; the next session sweeps those whose hotloop died) holding the guest's
profiles (the CPU and kernel profiles as they apply there, the workload unless bundled), its
program (`sh FILE`: virtme-ng's command line would carry it base64 past x86's 2048 bytes),
qemu's wrapper (qemu dies with virtme-run, which dies with hotloop), the first step of the
guest's init (udev kept out: INIT) and, for virtme-ng, its TMPDIR.  The workload itself the
guest loads from the build cache: the same root.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import tomli_w

from hotloop import paths
from hotloop.catalog import CpuProfile, ResolvedPlan
from hotloop.errors import HotloopError
from hotloop.host.procs import TIME_SCALE_ENV
from hotloop.perf.control import HIDE_MODULES_ENV


def _locked(d: Path) -> bool:
    """Whether a live hotloop holds `d`'s lock."""
    try:
        fd = os.open(d / "lock", os.O_RDONLY)
    except OSError:
        return False                    # never locked, or half made: a dead one's
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def sweep(root: Path) -> None:
    """Remove the session directories of hotloops that died (their lock is free)."""
    with contextlib.suppress(OSError):
        for d in root.iterdir():
            if d.is_dir() and not d.is_symlink() and d.name.startswith("s-") and not _locked(d):
                shutil.rmtree(d, ignore_errors=True)



def make_dir() -> tuple[Path, int]:
    """A new session directory, its lock held: (the directory, the lock's descriptor).  The
    dead sessions' directories are swept first."""
    root = paths.cache_dir() / "vm"
    try:
        root.mkdir(parents=True, exist_ok=True)
        sweep(root)
        d = root / f"s-{os.getpid()}-{secrets.token_hex(4)}"
        d.mkdir(mode=0o700)
        fd = os.open(d / "lock", os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError as e:
        raise HotloopError(f"{root}: cannot make a VM session's directory: "
                           f"{e.strerror}") from None
    fcntl.flock(fd, fcntl.LOCK_EX)
    return d, fd


def guest_cpus(cpu: CpuProfile, vcpus: int) -> tuple[int, ...]:
    """The CPU profile inside the guest: process i on vCPU i (mod the VM's), as process i
    runs on the profile's CPU i here; none pinned when the profile pins none."""
    if not cpu.cpus:
        return ()
    return tuple(i % vcpus for i in range(len(cpu.cpus)))


# What perf in the guest needs to sample and name the GUEST kernel's code (its own
# /proc/kallsyms, read inside the guest), whoever it runs as: kernel addresses shown
# (kptr_restrict 0; Debian's kernels are built to hide them from all but root at 1) and
# system-wide sampling allowed (Debian's kernels default perf_event_paranoid to 3: no perf
# at all without CAP_PERFMON).  The guest is the session's own: nothing to put back after.
PERF_SYSCTLS: dict[str, int | str] = {"kernel.kptr_restrict": 0,
                                      "kernel.perf_event_paranoid": -1}


def guest_profiles(rp: ResolvedPlan, vcpus: int) -> dict[str, Any]:
    """The guest's own catalogue: the plan's CPU and kernel profiles as they apply in it
    (no image: it runs there; no governor, boost or isolation: this machine's), and the
    workload unless it is bundled (its source by absolute path: the same root)."""
    c, k, w = rp.cpu, rp.kernel, rp.workload
    cpu: dict[str, Any] = {"summary": c.summary, "sched": c.sched, "priority": c.priority,
                           "nice": c.nice, "cflags": list(c.cflags)}
    if c.cpus:
        cpu["cpus"] = list(guest_cpus(c, vcpus))
    sysctl = {**(PERF_SYSCTLS if rp.plan.perf else {}), **k.sysctl}    # the profile's win
    kernel: dict[str, Any] = {"summary": k.summary, "label": k.label or k.name,
                              "sysctl": sysctl}
    if k.expect:
        kernel["expect"] = dict(k.expect)
    out: dict[str, Any] = {"cpu": {c.name: cpu}, "kernel": {k.name: kernel}}
    bundled = Path(w.origin).resolve().is_relative_to(paths.BUNDLED_PROFILES.resolve()) \
        if w.origin else True
    if not bundled:
        params = {}
        for p in w.params.values():
            spec: dict[str, Any] = {"default": p.default, "help": p.help}
            if p.min is not None:
                spec["min"] = p.min
            if p.max is not None:
                spec["max"] = p.max
            if p.choices:
                spec["choices"] = list(p.choices)
            params[p.name] = spec
        out["workload"] = {w.name: {"source": str(w.source), "summary": w.summary,
                                    "metric": w.metric, "unit": w.unit,
                                    "higher_is_better": w.higher_is_better,
                                    "procs": w.procs, "params": params}}
    return out


def guest_program(d: Path, argv: list[str], scale: float) -> str:
    """The guest's program (sh): its environment, then this hotloop.  Its stdout is the
    session's alone; whatever else it says goes to stderr."""
    env = {"XDG_CONFIG_HOME": str(d / "config"), "XDG_STATE_HOME": str(d / "state"),
           "XDG_CACHE_HOME": str(paths.cache_dir().parent), "HOME": str(Path.home()),
           "PATH": os.environ.get("PATH", "/usr/bin:/bin"), TIME_SCALE_ENV: f"{scale:g}",
           "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(d / "tmp"),
           # the restore journal of the guest's sysctls: the guest's own (the root is
           # read-only there)
           "HOTLOOP_SYSTEM_DIR": str(d / "system"),
           # perf without the walk of /lib/modules over 9p (perf/control.py)
           HIDE_MODULES_ENV: "1"}
    lines = ["# written by hotloop for one session in a VM", "exec 3>&1 1>&2"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines += [f"cd {shlex.quote(str(d))} || exit 1",
              f"exec {shlex.join([sys.executable, '-m', 'hotloop', *argv])} 1>&3 3>&-"]
    return "\n".join(lines) + "\n"


# What the wrapper says on stderr as qemu starts the guest's kernel (not virtme-ng's probes
# of qemu): the session's clock of the boot starts there.
BOOTING = "hotloop-vm: qemu boots the kernel"
CONSOLE = "console"                     # the guest's serial console, in the session's directory
INIT_FILE = "init"                      # the guest's init's first step, in the same directory
# The guest's init, before virtme-ng's (its path in hotloop_init=, from the kernel's command
# line): udev kept out of the boot.  virtme-ng-init starts udevd whenever the root holds one,
# coldplugs every device and waits for it to settle (70 s of an emulated boot's 100 at a load
# of 20: each device's rules and module looked up over 9p), with no switch to skip it.  What
# a session needs of udev is one rule's work: the names of virtme-ng's script ports
# (/dev/virtio-ports/virtme.stdout...: without them the script runs on the console, and no
# event comes home), made here in devtmpfs (one instance: virtme-ng-init's mount of it shows
# them).  The rest it does not need: the devices' nodes are devtmpfs's, the modules virtme-
# ng's initramfs loads (9p, the console ports), the guest runs as root.  Once the ports are
# named, a read-only tmpfs over the directory holding systemd-udevd (the root, read-only, is
# left as it is) and virtme-ng-init says "unable to find udevd, skip udev"; ports that never
# came leave udev to run as before.
INIT = """#!/bin/sh
# written by hotloop for one session in a VM: the guest's init, then virtme-ng's
ports="virtme.stdin virtme.stdout virtme.stderr virtme.dev_stdout virtme.dev_stderr"
named() {
  for n in $ports; do [ -e "/dev/virtio-ports/$n" ] || return 1; done
}
if mount -n -t sysfs sysfs /sys && mount -n -t devtmpfs devtmpfs /dev; then
  mkdir -p /dev/virtio-ports
  tries=0
  until named || [ $tries -ge 300 ]; do     # a port is there once virtio_console hears of it
    for f in /sys/class/virtio-ports/*/name; do    # a command a port: each an exec over 9p
      [ -r "$f" ] && read -r name < "$f" && [ -n "$name" ] || continue
      [ -e "/dev/virtio-ports/$name" ] && continue
      port=${f%/name}
      ln -s "../${port##*/}" "/dev/virtio-ports/$name"
    done
    named || sleep 0.1
    tries=$((tries + 1))
  done
  if named; then
    for d in /usr/lib/systemd /lib/systemd; do
      [ -e "$d/systemd-udevd" ] && mount -n -t tmpfs -o ro,mode=0755 hotloop-no-udev "$d"
    done
  fi
  umount -n /dev
  umount -n /sys
fi
exec "$hotloop_init" "$@"
"""
QEMU_WRAPPER = """#!/bin/sh
# qemu dies with virtme-run (its parent), which dies with hotloop: no VM outlives it.
# The guest's serial console goes to a file of the session's (virtme-ng sends it to
# /dev/null) and its kernel boots without "quiet" (the early console then shows the kernel
# start): a kernel that never starts is told apart by its silence.  virtme-ng's init, last
# on the kernel's command line, is started by the session's own (INIT), which keeps udev out
# of the boot.
n=$#
boot=
for a do
  case $a in
    file,id=console,path=/dev/null) a=file,id=console,path={console} ;;
    *console=ttyS0*) a=$(printf '%s\\n' "$a" | sed -e 's/^quiet //' -e 's/ quiet / /g' \\
                           -e 's/ quiet$//' {init}) ;;
    -kernel) boot=1 ;;
  esac
  set -- "$@" "$a"
done
shift $n
[ -z "$boot" ] || echo '{booting}' >&2
exec setpriv --pdeathsig KILL -- {qemu} "$@"
"""


# A path the kernel's command line and sed's replacement carry as it is: no space, quote or
# separator.  Another (a cache directory named so) leaves virtme-ng's init as it was, udev
# and all: slower, not wrong.
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9/._+-]+")


def init_sed(init: Path) -> str:
    """The wrapper's sed expression that starts the guest's init with INIT at `init`, virtme-
    ng's (the command line's last word) in hotloop_init=; none for a path it cannot carry."""
    if not _PLAIN_PATH.fullmatch(str(init)):
        return ""
    return f"-e 's| init=\\([^ ]*\\)$| hotloop_init=\\1 init={init}|'"


def write_files(d: Path, rp: ResolvedPlan, vcpus: int, argv: list[str], scale: float,
                qemu: str) -> tuple[Path, Path]:
    """The guest's files in its session's directory `d`: (its program, qemu's wrapper)."""
    (d / "config" / "hotloop").mkdir(parents=True)
    (d / "state").mkdir()
    (d / "tmp").mkdir()
    (d / "virtme").mkdir()
    (d / "config" / "hotloop" / "vm.toml").write_text(tomli_w.dumps(guest_profiles(rp, vcpus)))
    program = d / "guest.sh"
    program.write_text(guest_program(d, argv, scale))
    init = d / INIT_FILE
    init.write_text(INIT)
    init.chmod(0o700)
    wrapper = d / "qemu"
    wrapper.write_text(QEMU_WRAPPER.format(qemu=shlex.quote(qemu), booting=BOOTING,
                                           console=shlex.quote(str(d / CONSOLE)),
                                           init=init_sed(init)))
    wrapper.chmod(0o700)
    return program, wrapper
