"""A session in a VM: a kernel profile's `image` booted with virtme-ng for it.

virtme-run boots the image with this machine's root filesystem read-only over 9p; the guest
runs this very hotloop (the same python, `-m hotloop`) as `run --format events --control
stdin`, and its events come home on the VM's stdout (virtme-ng's script port: the kernel's
console goes elsewhere) into a stream.StreamSession, checked line by line, written to the
result file here.  The header is the guest's (its kernel release, its boot) with the kernel
profile and `vm` (accel, image and its SHA-256, qemu) from this side.

What the guest reads is this session's own: the workload is built here first (the guest
loads it from the build cache, the same root), and a directory of the session's holds the
guest's profiles (the CPU and kernel profiles, the workload unless bundled), its program
(`sh FILE`: virtme-ng's command line would carry it base64 past x86's 2048 bytes) and, for
virtme-ng, its TMPDIR.  A session's directory is locked while it lives; the next session
sweeps those whose hotloop died.  qemu runs through a wrapper that dies with virtme-run,
which dies with hotloop: a SIGKILLed hotloop leaves no VM running.

The guest's vCPU threads are pinned here to the CPU profile's CPUs (qemu's other threads to
the remaining ones), never with virtme-ng's --pin: that talks to qemu's monitor on TCP port
3636, open to every local user and shared by two guests.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from hotloop import events as ev
from hotloop import paths
from hotloop.catalog import CpuProfile, ResolvedPlan
from hotloop.errors import HotloopError
from hotloop.host import kimage
from hotloop.host.procs import TIME_SCALE_ENV, die_with_parent
from hotloop.record import Batch, CpuInfo, KernelInfo, Vm, from_json
from hotloop.run import build
from hotloop.run.stream import GRACE_S, Bounds, Streamed, StreamSession
from hotloop.visible import visible

VIRTME = "virtme-run"
QEMU = "qemu-system-x86_64"
INSTALL_VIRTME = "pip install 'hotloop[vm]' (virtme-ng), with its bin directory on PATH"
INSTALL_QEMU = "Debian: apt-get install qemu-system-x86"
TCG_SCALE = 20                      # an emulated guest runs ~20x slower: its start-up bounds
BOOT_KVM_S = 120.0                  # the boot and the guest's start-up, to the header
BOOT_TCG_S = 900.0                  # emulated, on a busy machine: minutes
PROBE_S = 20.0                      # a guest under KVM prints its banner within this
DEFAULT_MEMORY = "1G"               # 9p's buffers (msize 512 kB) want more than qemu's 128 MB


def tcg_warning(why: str) -> str:
    return (f"no usable KVM ({why}): guests are emulated; their numbers do not measure "
            f"this CPU")


def tools() -> tuple[str, str]:
    """virtme-run and qemu as PATH finds them; HotloopError naming what is missing."""
    virtme = shutil.which(VIRTME)
    if virtme is None:
        raise HotloopError(f"a kernel profile with an image boots a VM: no `{VIRTME}` on "
                           f"PATH ({INSTALL_VIRTME})")
    qemu = shutil.which(QEMU)
    if qemu is None:
        raise HotloopError(f"a kernel profile with an image boots a VM: no `{QEMU}` on "
                           f"PATH ({INSTALL_QEMU})")
    return virtme, qemu


def qemu_version(qemu: str) -> str:
    """"7.2.22" (qemu's first line), or "" when it does not say."""
    try:
        out = subprocess.run([qemu, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else ""


# --------------------------------------------------------------------------- KVM or not

@dataclass(frozen=True)
class Accel:
    kind: str                       # "kvm" or "tcg"
    why_not_kvm: str = ""           # tcg: why, in qemu's words where it said


def kvm_state() -> str:
    """/dev/kvm as the probe found it: absent, or its device, mode and this user's access."""
    try:
        st = os.stat("/dev/kvm")
    except OSError:
        return "absent"
    ok = os.access("/dev/kvm", os.R_OK | os.W_OK)
    return f"{st.st_rdev}:{stat.S_IMODE(st.st_mode):o}:{st.st_uid}:{st.st_gid}:{ok}"


def _cache_file() -> Path:
    return paths.cache_dir() / "vm" / "kvm.json"


def _read_cache(path: Path) -> dict[str, dict[str, Any]]:
    """The probes' cache, when it is this user's alone; else nothing (probed again)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return {}
        data = json.loads(path.read_text()[:1 << 20])
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)
            and isinstance(v.get("usable"), bool) and isinstance(v.get("why", ""), str)}


def _write_cache(path: Path, key: str, usable: bool, why: str) -> None:
    data = _read_cache(path)
    data[key] = {"usable": usable, "why": why[:500]}
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(dict(list(data.items())[-50:])))
        os.replace(tmp, path)          # atomic: a reader sees the old or the new


def probe_kvm(qemu: str, image: Path, image_sha256: str, version: str) -> Accel:
    """Whether a guest runs under KVM here: qemu with `-accel kvm -cpu host` booting the
    image, its banner on the serial line within PROBE_S; cached per qemu version, image,
    this kernel and /dev/kvm's state."""
    state = kvm_state()
    if state == "absent":
        return Accel("tcg", "no /dev/kvm")
    if state.endswith(":False"):
        return Accel("tcg", "/dev/kvm is not readable and writable by this user")
    key = f"{version}|{image_sha256}|{os.uname().release}|{state}"
    cached = _read_cache(_cache_file()).get(key)
    if cached is not None:
        return Accel("kvm") if cached["usable"] else Accel("tcg", cached.get("why", "?"))
    usable, why = _probe(qemu, image)
    _write_cache(_cache_file(), key, usable, why)
    return Accel("kvm") if usable else Accel("tcg", why)


def _probe(qemu: str, image: Path) -> tuple[bool, str]:
    argv = ["setpriv", "--pdeathsig", "KILL", "--", qemu, "-accel", "kvm", "-cpu", "host",
            "-m", "256M", "-kernel", str(image), "-append", "console=ttyS0 panic=-1",
            "-display", "none", "-serial", "stdio", "-monitor", "none", "-nodefaults",
            "-no-reboot"]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        return False, f"qemu: {e.strerror}"
    out = bytearray()
    deadline = time.monotonic() + PROBE_S
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    try:
        while time.monotonic() < deadline and b"Linux version" not in out:
            chunk = b""
            with contextlib.suppress(BlockingIOError):
                chunk = proc.stdout.read(65536) or b""
            if not chunk:
                if proc.poll() is not None:
                    with contextlib.suppress(BlockingIOError, TypeError):
                        out += proc.stdout.read() or b""
                    break
                time.sleep(0.1)
            out += chunk[:1 << 16]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    text = out.decode(errors="replace")
    if "Linux version" in text:
        return True, ""
    return False, qemu_said(text.splitlines()) or \
        f"a guest under KVM printed nothing within {PROBE_S:g} s"


def qemu_said(lines: list[str]) -> str:
    """qemu's own error line, as "qemu: ...", or "" when it said none."""
    for line in lines:
        m = re.match(r"\s*qemu-system-\w+: (?:error: )?(.*)", line)
        if m and m.group(1).strip():
            return visible(f"qemu: {m.group(1).strip()}")[:300]
    return ""


# --------------------------------------------------------------------------- the session's files

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


def guest_cpus(cpu: CpuProfile, vcpus: int) -> tuple[int, ...]:
    """The CPU profile inside the guest: process i on vCPU i (mod the VM's), as process i
    runs on the profile's CPU i here; none pinned when the profile pins none."""
    if not cpu.cpus:
        return ()
    return tuple(i % vcpus for i in range(len(cpu.cpus)))


def guest_profiles(rp: ResolvedPlan, vcpus: int) -> dict[str, Any]:
    """The guest's own catalogue: the plan's CPU and kernel profiles as they apply in it
    (no image: it runs there; no governor, boost or isolation: this machine's), and the
    workload unless it is bundled (its source by absolute path: the same root)."""
    c, k, w = rp.cpu, rp.kernel, rp.workload
    cpu: dict[str, Any] = {"summary": c.summary, "sched": c.sched, "priority": c.priority,
                           "nice": c.nice, "cflags": list(c.cflags)}
    if c.cpus:
        cpu["cpus"] = list(guest_cpus(c, vcpus))
    kernel: dict[str, Any] = {"summary": k.summary, "label": k.label or k.name,
                              "sysctl": dict(k.sysctl)}
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
           "HOTLOOP_SYSTEM_DIR": str(d / "system")}
    lines = ["# written by hotloop for one session in a VM", "exec 3>&1 1>&2"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines += [f"cd {shlex.quote(str(d))} || exit 1",
              f"exec {shlex.join([sys.executable, '-m', 'hotloop', *argv])} 1>&3 3>&-"]
    return "\n".join(lines) + "\n"


QEMU_WRAPPER = """#!/bin/sh
# qemu dies with virtme-run (its parent), which dies with hotloop: no VM outlives it
exec setpriv --pdeathsig KILL -- {qemu} "$@"
"""


# --------------------------------------------------------------------------- pinning

def _children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for t in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                out += [int(x) for x in Path(f"/proc/{pid}/task/{t}/children").read_text()
                        .split()]
    return out


def _threads(pid: int) -> dict[int, str]:
    out: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for t in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                out[int(t)] = Path(f"/proc/{pid}/task/{t}/comm").read_text().strip()
    return out


VCPU_THREAD = re.compile(r"CPU (\d+)/(TCG|KVM)")


def pin_qemu(qemu_pid: int, cpus: tuple[int, ...]) -> int:
    """vCPU i's thread on cpus[i % len], qemu's others on the CPUs left (when any are):
    how many vCPU threads were pinned."""
    allowed = os.sched_getaffinity(0)
    rest = allowed - set(cpus)
    pinned = 0
    for tid, comm in _threads(qemu_pid).items():
        m = VCPU_THREAD.fullmatch(comm)
        with contextlib.suppress(OSError):
            if m:
                os.sched_setaffinity(tid, {cpus[int(m.group(1)) % len(cpus)]})
                pinned += 1
            elif rest:
                os.sched_setaffinity(tid, rest)
    return pinned


def _start_child() -> None:
    # virtme-run ends with this process, even SIGKILLed (and qemu with it, its wrapper's
    # pdeathsig); its own session: Ctrl-C is ours, and the whole group is killed at once
    os.setsid()
    die_with_parent(os.getppid())


# --------------------------------------------------------------------------- the session

class VmSession(StreamSession):
    """A session of `rp` in a VM booting its kernel profile's image."""

    def __init__(self, rp: ResolvedPlan, argv: list[str], result_file: Path, bounds: Bounds,
                 variant: str = "", on_exists: str = "rename",
                 mirror: Callable[[ev.Event], None] | None = None,
                 batch: Batch | None = None):
        super().__init__(argv, result_file, bounds, variant, on_exists, rp.plan.until_ci,
                         mirror)
        self.rp = rp
        self.batch = batch
        k = rp.kernel
        self.image = Path(k.image)
        cpus = rp.cpu.cpus
        self.vcpus = k.cpus or (len(cpus) if cpus else min(os.cpu_count() or 1, 4))
        self.memory = k.memory or DEFAULT_MEMORY
        self.accel = Accel("tcg", "not probed yet")
        self._qemu_version = ""
        self._sha256 = ""
        self._dir: Path | None = None
        self._lock: int | None = None
        self._pin_task: asyncio.Task[None] | None = None
        self._notes: list[str] = []

    @property
    def title(self) -> str:
        return self.variant or self.rp.kernel.name

    @property
    def machine(self) -> str:
        return f"VM {self.rp.kernel.name}"

    @property
    def where(self) -> str:
        return f"VM {self.rp.kernel.name}"

    @property
    def scale(self) -> float:
        return TCG_SCALE if self.accel.kind == "tcg" else 1.0

    @property
    def start_s(self) -> float:
        return BOOT_TCG_S if self.accel.kind == "tcg" else BOOT_KVM_S

    @property
    def grace_s(self) -> float:
        return GRACE_S * self.scale

    def stop(self) -> None:
        """Ends the guest at once, even booting: what it sent is here already, and the
        guest's system is its own (nothing to restore)."""
        self._stopping = True
        self._kill()

    async def _spawn(self) -> asyncio.subprocess.Process:
        virtme, qemu = tools()
        rp = self.rp
        problem = kimage.image_problem(self.image)      # gone or replaced since loading
        if problem:
            raise HotloopError(f"[kernel.{rp.kernel.name}] image: {problem}")
        await asyncio.to_thread(build.build, rp.workload.source, rp.cpu.cflags,
                                rp.workload.name)
        self._qemu_version = await asyncio.to_thread(qemu_version, qemu)
        self._sha256 = await asyncio.to_thread(kimage.sha256, self.image)
        self.accel = await asyncio.to_thread(probe_kvm, qemu, self.image, self._sha256,
                                             self._qemu_version)
        d = self._make_dir()
        (d / "config" / "hotloop").mkdir(parents=True)
        (d / "state").mkdir()
        (d / "tmp").mkdir()
        (d / "virtme").mkdir()
        (d / "config" / "hotloop" / "vm.toml").write_text(
            tomli_w.dumps(guest_profiles(rp, self.vcpus)))
        program = d / "guest.sh"
        program.write_text(guest_program(d, self.remote_argv(), self.scale))
        wrapper = d / "qemu"
        wrapper.write_text(QEMU_WRAPPER.format(qemu=shlex.quote(qemu)))
        wrapper.chmod(0o700)
        argv = [virtme, "--kimg", str(self.image), "--mods", "auto", "--memory", self.memory,
                "--cpus", str(self.vcpus), "--rwdir", str(d), "--qemu-bin", str(wrapper),
                # qemu names its threads ("CPU 0/TCG", for the pinning) only when asked
                "--qemu-opt=-name", "--qemu-opt=hotloop-vm,debug-threads=on",
                *(["--disable-kvm"] if self.accel.kind == "tcg" else []),
                # --kopt=WORD: a word starting with "-" stays virtme's argument
                *[f"--kopt={word}" for word in shlex.split(rp.kernel.append)],
                "--script-sh", f"sh {shlex.quote(str(program))}"]
        env = {**os.environ, "TMPDIR": str(d / "virtme")}
        if self._stopping:
            raise asyncio.CancelledError
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=1 << 24, env=env,
            preexec_fn=_start_child)
        self._pin_task = asyncio.create_task(self._pin(proc.pid))
        return proc

    def _make_dir(self) -> Path:
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
        self._dir, self._lock = d, fd
        return d

    async def _pin(self, virtme_pid: int) -> None:
        """Pin qemu's vCPU threads as they appear (qemu names them "CPU 0/TCG")."""
        cpus = self.rp.cpu.cpus
        if not cpus:
            self._notes.append("the VM's vCPUs are not pinned: the CPU profile names no CPUs")
            return
        if len(set(cpus)) < self.vcpus:
            self._notes.append(
                f"the CPU profile's {len(set(cpus))} CPU{'s' if len(set(cpus)) > 1 else ''} "
                f"cannot give the VM's {self.vcpus} vCPUs one each: they share")
        for _ in range(600):
            qemus = _children(virtme_pid)
            if qemus and pin_qemu(qemus[0], cpus) >= self.vcpus:
                # qemu's threads made later (9p's) inherit from its pinned main thread
                await asyncio.sleep(5)
                pin_qemu(qemus[0], cpus)
                return
            await asyncio.sleep(0.2)

    def _cleanup(self) -> None:
        self._kill()
        if self._pin_task is not None:
            self._pin_task.cancel()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _noise(self, raw: bytes) -> bool:
        return not raw.lstrip().startswith(b"{")

    def _local_header(self, started: ev.Started) -> ev.Started:
        h = started.header
        k = self.rp.kernel
        record = json.loads(json.dumps(dataclasses.asdict(k), default=str))
        vm = Vm(self.accel.kind, self.vcpus, self.memory, str(self.image), self._sha256,
                k.append, self._qemu_version, self.accel.why_not_kvm)
        cpu = from_json(CpuInfo, json.loads(json.dumps(dataclasses.asdict(self.rp.cpu),
                                                       default=str)))
        h = dataclasses.replace(h, kernel=from_json(KernelInfo, record), cpu=cpu, vm=vm,
                                perf_data="", variant=self.variant,
                                label=k.label or k.name, batch=self.batch or h.batch)
        return ev.Started(h, started.result_file)

    def _header_warnings(self, started: ev.Started) -> list[str]:
        out = [tcg_warning(self.accel.why_not_kvm)] if self.accel.kind == "tcg" else []
        if self.rp.plan.perf:
            out.append("perf sampled inside the VM (its kernel's symbols); its perf data is "
                       "not kept (annotate needs a session on this kernel's own machine)")
        return out + self._notes

    def _adopt(self, event: Streamed) -> ev.Event:
        if isinstance(event, ev.Warning):
            return dataclasses.replace(event, message=f"in the VM: {event.message}",
                                       variant=self.variant)
        return dataclasses.replace(event, variant=self.variant)

    def _said(self) -> str:
        lines = [visible(x.strip()) for x in self._stderr if x.strip()]
        said = qemu_said(lines)
        if said:
            return said
        hot = next((ln for ln in reversed(lines) if ln.startswith("hotloop: ")), "")
        return hot.removeprefix("hotloop: ") or (lines[-1] if lines else "")

    def _no_header(self, returncode: int) -> str:
        said = self._said() or f"virtme-run exited with status {returncode}"
        return f"{self.where}: {said}"

    def _silent_start(self) -> str:
        return (f"{self.where}: no header within {self.start_s:g} s of the boot "
                f"({'emulated' if self.accel.kind == 'tcg' else 'under KVM'}; a hung guest?)"
                + (f"; it said: {self._said()}" if self._said() else ""))

    def _lost_message(self, runs: int) -> str:
        said = f" ({self._said()})" if self._said() else ""
        return f"the VM ended after {runs} run{'' if runs == 1 else 's'}{said}"


# --------------------------------------------------------------------------- doctor

def doctor_rows(images: dict[str, str]) -> list[tuple[str, bool, str]]:
    """`hotloop doctor`'s VM rows: qemu, virtme-ng, KVM (present, usable, why not) and, for
    each kernel profile with an image (name: image), whether it boots with this root."""
    rows: list[tuple[str, bool, str]] = []
    qemu = shutil.which(QEMU)
    version = qemu_version(qemu) if qemu else ""
    rows.append(("qemu", qemu is not None,
                 f"{qemu} {version}".strip() if qemu else f"no {QEMU} on PATH ({INSTALL_QEMU})"))
    virtme = shutil.which(VIRTME)
    rows.append(("virtme-ng", virtme is not None,
                 virtme or f"no {VIRTME} on PATH ({INSTALL_VIRTME})"))
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
