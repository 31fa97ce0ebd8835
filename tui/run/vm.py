"""A session in a VM: a kernel profile's `image` booted with virtme-ng for it.

virtme-run boots the image with this machine's root filesystem read-only over 9p; the guest
runs this very hotloop (the same python, `-m hotloop`) as `run --format events --control
stdin`, and its events come home on the VM's stdout (virtme-ng's script port: the kernel's
console goes elsewhere) into a stream.StreamSession, checked line by line, written to the
result file here.  The header is the guest's (its kernel release, its boot) with the kernel
profile and `vm` (accel, image and its SHA-256, qemu) from this side.

What the guest reads is this session's own (run/guest.py), the workload built here first;
whether KVM is usable is host/kvm.py's probe.  qemu runs through a wrapper that dies with
virtme-run, which dies with hotloop: a SIGKILLed hotloop leaves no VM running.  The guest's
vCPU threads are pinned here to the CPU profile's CPUs (run/pinning.py).
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

from hotloop import events as ev
from hotloop.catalog import ResolvedPlan
from hotloop.errors import SessionFailed
from hotloop.host import kimage
from hotloop.host.kvm import Accel, probe_kvm, qemu_said, qemu_version, tcg_warning, tools
from hotloop.host.procs import die_with_parent
from hotloop.record import Batch, CpuInfo, KernelInfo, Vm, from_json
from hotloop.run import build, guest, pinning
from hotloop.run.stream import GRACE_S, Bounds, Streamed, StreamSession
from hotloop.visible import visible

TCG_SCALE = 20                      # an emulated guest runs ~20x slower: its start-up bounds
BOOT_KVM_S = 120.0                  # the boot and the guest's start-up, to the header
BOOT_TCG_S = 900.0                  # emulated, on a busy machine: minutes
# From qemu's start of the kernel to the kernel's first line on its console: a kernel that
# does not start (a corrupt image behind an intact boot header) is silent, and was left to
# the boot's bound, 15 minutes emulated.  A kernel starts in under a second under KVM, in a
# few seconds emulated (its image decompressed by an emulated CPU).
CONSOLE_KVM_S = 15.0
CONSOLE_TCG_S = 60.0
CONSOLE_POLL_S = 0.5
DEFAULT_MEMORY = "1G"               # 9p's buffers (msize 512 kB) want more than qemu's 128 MB


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
        cpus = self.cpus_here = rp.cpu.cpus     # its vCPUs' (_pin)
        self.vcpus = k.cpus or (len(cpus) if cpus else min(os.cpu_count() or 1, 4))
        self.memory = k.memory or DEFAULT_MEMORY
        self.accel = Accel("tcg", "not probed yet")
        self._qemu_version = ""
        self._sha256 = ""
        self._dir: Path | None = None
        self._lock: int | None = None
        self._pin_task: asyncio.Task[None] | None = None
        self._watch_task: asyncio.Task[None] | None = None
        self._notes: list[str] = []
        self._silent = ""               # why the boot was given up: its console said nothing

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

    @property
    def stop_elsewhere(self) -> float:
        return 0.0                      # killed at once: see stop()

    def stop(self, quick: bool = False) -> None:
        """Ends the guest at once, even booting: what it sent is here already, and the
        guest's system is its own (nothing to restore)."""
        self._stopping = True
        self._kill()

    async def _spawn(self) -> asyncio.subprocess.Process:
        virtme, qemu = tools()
        rp = self.rp
        self._check_image()                             # gone or replaced since loading
        await asyncio.to_thread(build.build, rp.workload.source, rp.cpu.cflags,
                                rp.workload.name)
        self._qemu_version = await asyncio.to_thread(qemu_version, qemu)
        try:
            self._sha256 = await asyncio.to_thread(kimage.sha256, self.image)
        except OSError:
            self._check_image()         # gone meanwhile: said as above
            raise
        self._check_image()
        self.accel = await asyncio.to_thread(probe_kvm, qemu, self.image, self._sha256,
                                             self._qemu_version)
        d, lock = guest.make_dir()
        self._dir, self._lock = d, lock
        program, wrapper = guest.write_files(d, rp, self.vcpus, self.remote_argv(), self.scale,
                                             qemu)
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

    def _image_gone(self) -> str | None:
        """Why the image is no longer one to boot (deleted, replaced), in the words every
        session of a series uses for it, or None."""
        problem = kimage.image_problem(self.image)
        return f"[kernel.{self.rp.kernel.name}] image: {problem}" if problem else None

    def _check_image(self) -> None:
        if (gone := self._image_gone()) is not None:
            raise SessionFailed(gone)

    def _heard_stderr(self, line: str) -> bool:
        """The wrapper's word that qemu boots the kernel (guest.BOOTING): said, and the
        console watched from then on."""
        if line.strip() != guest.BOOTING:
            return True
        if self._watch_task is None and self._dir is not None:
            how = "emulated" if self.accel.kind == "tcg" else "under KVM"
            if self.notice is not None:
                self.notice(f"{self.where}: booting {self.image} ({how}, {self.vcpus} "
                            f"vCPU{'s' * (self.vcpus != 1)})")
            self._watch_task = asyncio.create_task(self._watch_console(self._dir / guest.CONSOLE))
        return False

    @property
    def console_s(self) -> float:
        return CONSOLE_TCG_S if self.accel.kind == "tcg" else CONSOLE_KVM_S

    async def _watch_console(self, console: Path) -> None:
        """Until the kernel's first line on its console (its early console's "Linux version",
        a printk line): past console_s without one, the boot is given up, in one line."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        while loop.time() - began < self.console_s:
            await asyncio.sleep(CONSOLE_POLL_S)
            if _kernel_spoke(console):
                return
        said = _last_words(console)
        self._silent = (f"{self.where}: the kernel did not start: its console silent for "
                        f"{self.console_s:g} s after qemu booted {self.image} "
                        f"({'emulated' if self.accel.kind == 'tcg' else 'under KVM'})"
                        + (f"; all it said: {said}" if said else "")
                        + " (a corrupt or foreign image?)")
        self._kill()                    # the session fails with it: said once, by its end

    async def _pin(self, virtme_pid: int) -> None:
        """Pin qemu's vCPU threads as they appear (qemu names them "CPU 0/TCG")."""
        cpus = self.rp.cpu.cpus
        self._notes += pinning.notes(cpus, self.vcpus)
        if cpus:
            await pinning.pin_guest(virtme_pid, cpus, self.vcpus)

    def _cleanup(self) -> None:
        self._kill()
        if self._pin_task is not None:
            self._pin_task.cancel()
        if self._watch_task is not None:
            self._watch_task.cancel()
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
        if self._silent:
            return self._silent
        if (gone := self._image_gone()) is not None:
            return gone                 # virtme-run's "X does not exist": said as elsewhere
        said = self._said() or f"virtme-run exited with status {returncode}"
        return f"{self.where}: {said}"

    def _silent_start(self) -> str:
        return (f"{self.where}: no header within {self.start_s:g} s of the boot "
                f"({'emulated' if self.accel.kind == 'tcg' else 'under KVM'}; a hung guest?)"
                + (f"; it said: {self._said()}" if self._said() else ""))

    def _lost_message(self, runs: int) -> str:
        said = f" ({self._said()})" if self._said() else ""
        return f"the VM ended after {runs} run{'' if runs == 1 else 's'}{said}"


def _kernel_spoke(console: Path) -> bool:
    """Whether the guest's console shows the kernel started: a line of its log ("[    0.0]
    ...", "Linux version"), not only the boot loader's ("Probing EDD ...")."""
    try:
        with open(console, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return any(ln.startswith(b"[") or b"Linux version" in ln for ln in head.splitlines())


def _last_words(console: Path) -> str:
    """What the console said, briefly: its last line, one line."""
    try:
        with open(console, "rb") as f:
            text = f.read(1 << 16).decode(errors="replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return visible(lines[-1])[:200] if lines else ""
