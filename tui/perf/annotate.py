"""From a hot symbol to its hot instructions: `perf annotate` on a session's kept perf data.

A session with kept perf data (`--keep-perf`) has one perf.data file per window
(RESULT.perf/perf.data.*).  Each is annotated for the symbol with `perf annotate --stdio
--show-nr-samples`, and the samples of each instruction are summed over the files, so the
whole run's annotation is the one a single perf.data would give.  A window whose samples
missed the symbol is skipped.  Kernel symbols need the kernel's code: /proc/kcore or a
vmlinux of the running kernel's build (`--vmlinux`); without it, one line with the fixes.
"""
from __future__ import annotations

import difflib
import gzip
import os
import platform
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.host.doctor import Capability
from hotloop.perf.probe import PERF_MISSING, find_perf

ANNOTATE_TIMEOUT_S = 120.0
PARALLEL = 4                            # perf annotate processes at once
# perf looks for a vmlinux of the running kernel in these (and /proc/kcore first)
VMLINUX_PLACES = ("/usr/lib/debug/boot/vmlinux-{r}", "/usr/lib/debug/lib/modules/{r}/vmlinux",
                  "/boot/vmlinux-{r}", "/lib/modules/{r}/build/vmlinux",
                  "/usr/lib/debug/vmlinux-{r}")
KERNEL_FIXES = ("pass --vmlinux PATH (a vmlinux of this kernel's build), install the "
                "distribution's kernel debug symbols (Debian: linux-image-$(uname -r)-dbg), "
                "or add one to perf's cache (perf buildid-cache -a VMLINUX)")

NO_KERNEL_CODE = ("the kernel's code is not here to annotate (no /proc/kcore, no vmlinux of "
                  "this build): " + KERNEL_FIXES)

# "      38 :   25fd:   add    $0x1,%r14"
_INSN = re.compile(r"^\s*(\d+)\s+:\s+([0-9a-f]+):\s+(.*?)\s*$")
# "         : 6    hl_run():" and source lines: a line number, then the text
_CONTEXT = re.compile(r"^\s*:\s+(\d+)\s+(.*?)\s*$")
_HEADER = re.compile(r"Disassembly of (.+?) for ")


@dataclass
class Instruction:
    offset: int                         # its address in the DSO (the symbol's, in the kernel)
    text: str                           # mnemonic and operands, as objdump shows them
    samples: int = 0
    source: str = ""                    # the source line before it, where debug info says

    @property
    def mnemonic(self) -> str:
        return self.text.split(None, 1)[0] if self.text else ""


@dataclass
class Annotation:
    symbol: str
    dso: str
    instructions: list[Instruction] = field(default_factory=list)
    files: int = 0                      # perf.data files (windows) with samples of it

    @property
    def samples(self) -> int:
        return sum(i.samples for i in self.instructions)

    def share(self, insn: Instruction) -> float:
        """The instruction's share of the symbol's samples, in %."""
        total = self.samples
        return 100.0 * insn.samples / total if total else 0.0

    def hottest(self) -> Instruction | None:
        return max(self.instructions, key=lambda i: i.samples, default=None)


def perf_data_files(directory: Path) -> list[Path]:
    """A kept run's perf.data files (gzipped once the run is over: .gz), oldest first; not
    the one perf is still writing (plain perf.data, until the window ends)."""
    return sorted(p for p in directory.glob("perf.data.*") if p.is_file())


def parse(text: str) -> tuple[str, list[Instruction]]:
    """`perf annotate --stdio --show-nr-samples` of one symbol: its DSO and its
    instructions, with the source line perf printed before each, if any."""
    dso = ""
    out: list[Instruction] = []
    source = ""
    for line in text.splitlines():
        if not dso and (m := _HEADER.search(line)):
            dso = m.group(1)
            continue
        if m := _INSN.match(line):
            out.append(Instruction(int(m.group(2), 16), m.group(3), int(m.group(1)), source))
            source = ""
        elif (m := _CONTEXT.match(line)) and not m.group(2).startswith("Disassembly of"):
            text_ = m.group(2)
            if not re.fullmatch(r"[0-9a-f]+ <.*>:", text_):     # the symbol's own heading
                source = text_
    return dso, out


def _annotate_one(perf: str, data: Path, symbol: str, vmlinux: str | None
                  ) -> tuple[str, list[Instruction]] | None:
    """One file's annotation; None when the file holds no sample of the symbol."""
    if data.suffix == ".gz":            # kept: gzipped once the run was over
        with tempfile.TemporaryDirectory(prefix="hotloop-annotate-") as tmp:
            plain = Path(tmp) / data.stem
            try:
                with gzip.open(data, "rb") as src, open(plain, "wb") as dst:
                    shutil.copyfileobj(src, dst)
            except (OSError, EOFError, gzip.BadGzipFile) as e:
                raise HotloopError(f"{data}: cannot decompress: {e}") from None
            return _annotate_one(perf, plain, symbol, vmlinux)
    cmd = [perf, "annotate", "-i", str(data), "--stdio", "--show-nr-samples", "-s", symbol]
    if vmlinux:
        cmd += ["--vmlinux", vmlinux]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                              timeout=ANNOTATE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise HotloopError(f"{data}: perf annotate took over {ANNOTATE_TIMEOUT_S:g} s") \
            from None
    said = done.stdout + done.stderr
    if "No vmlinux file" in said or "vmlinux" in said and "ouldn't annotate" in said:
        raise KernelCodeMissing(f"{symbol} is a kernel symbol: {NO_KERNEL_CODE}")
    if "has no samples" in said:
        return None
    dso, insns = parse(done.stdout)
    if done.returncode != 0 and not insns:
        tail = [ln.strip() for ln in said.splitlines() if ln.strip()]
        raise HotloopError(f"{data}: perf annotate failed: "
                           f"{tail[-1] if tail else f'exit status {done.returncode}'}")
    if not insns or not any(i.samples for i in insns):
        return None
    return dso, insns


class NoSamples(HotloopError):
    """perf finds no sample of the symbol: none was taken, or its binary is not where the
    data says (perf then drops the samples it cannot place)."""


class KernelCodeMissing(HotloopError):
    """A kernel symbol, and neither /proc/kcore nor a vmlinux to disassemble it from."""


def annotate(files: list[Path], symbol: str, vmlinux: str | None = None) -> Annotation:
    """The symbol's instructions with their samples summed over `files`; HotloopError (one
    line) when perf is missing, a file cannot be read, or no file has samples of it."""
    perf = find_perf()
    if perf is None:
        raise HotloopError(PERF_MISSING)
    with ThreadPoolExecutor(PARALLEL) as pool:
        parts = list(pool.map(lambda f: _annotate_one(perf, f, symbol, vmlinux), files))
    found = [p for p in parts if p is not None]
    if not found:
        raise NoSamples(f"no samples of {symbol} in the perf data ({len(files)} files)")
    merged: dict[int, Instruction] = {}
    for _, insns in found:
        for i in insns:
            have = merged.get(i.offset)
            if have is None:
                merged[i.offset] = Instruction(i.offset, i.text, i.samples, i.source)
            else:
                have.samples += i.samples
    return Annotation(symbol, found[0][0], sorted(merged.values(), key=lambda i: i.offset),
                      files=len(found))


def kernel_code() -> Capability:
    """doctor: whether kernel symbols can be annotated here."""
    if os.access("/proc/kcore", os.R_OK):
        return Capability("annotate kernel", True, "/proc/kcore readable: kernel symbols "
                                                   "annotate")
    release = platform.release()
    for place in VMLINUX_PLACES:
        path = place.format(r=release)
        if os.path.isfile(path):
            return Capability("annotate kernel", True, f"vmlinux of this kernel: {path}")
    return Capability("annotate kernel", False, "no /proc/kcore and no vmlinux of this "
                                                f"kernel: kernel symbols do not annotate; "
                                                f"{KERNEL_FIXES}")


def align(a: Annotation, b: Annotation) -> list[tuple[Instruction | None, Instruction | None]]:
    """The two annotations' instructions side by side: by address where the code is the
    same (the same build), else by the sequence of mnemonics (another build of the same
    code moves addresses and registers, rarely the order of operations)."""
    if [(i.offset, i.text) for i in a.instructions] == \
            [(i.offset, i.text) for i in b.instructions]:
        return list(zip(a.instructions, b.instructions))
    matcher = difflib.SequenceMatcher(a=[i.mnemonic for i in a.instructions],
                                      b=[i.mnemonic for i in b.instructions], autojunk=False)
    pairs: list[tuple[Instruction | None, Instruction | None]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += zip(a.instructions[i1:i2], b.instructions[j1:j2])
        else:
            pairs += [(x, None) for x in a.instructions[i1:i2]]
            pairs += [(None, y) for y in b.instructions[j1:j2]]
    return pairs
