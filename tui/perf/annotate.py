"""From a hot symbol to its hot instructions: `perf annotate` on a session's kept perf data.

A session with kept perf data (`--keep-perf`) has one perf.data file per window
(RESULT.perf/perf.data.*).  The symbol's samples are counted by address in each of them
(`perf script`), and its instructions come from one `perf annotate --stdio` of the file
with most of them: the whole run's annotation, as a single perf.data would give, for one
disassembly rather than one per window.  perf names binaries by path only (hotloop
records with -B), so the build ids the run kept are checked against what is on disk now.
Kernel symbols need the kernel's code: /proc/kcore or a vmlinux of the running kernel's
build (`--vmlinux`); without it, one line with the fixes, before any perf starts.
"""
from __future__ import annotations

import bisect
import contextlib
import dataclasses
import difflib
import gzip
import itertools
import os
import platform
import re
import subprocess
import tempfile
import threading
import zlib
from collections import Counter
from collections.abc import Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.events import HotSymbol
from hotloop.host.doctor import Capability
from hotloop.host.procs import child_setup
from hotloop.perf.buildid import KERNEL_DSO, file_build_id, kernel_build_id, module_build_id
from hotloop.perf.probe import PERF_MISSING, find_perf
from hotloop.perf.spread import spread

ANNOTATE_TIMEOUT_S = 120.0
PARALLEL = 4                            # perf annotate processes at once
# perf data gzips to about a ninth of its size (kept runs here): a window that unpacks to
# far more than its size on disk is not what hotloop kept (a gzip bomb), and is cut off
# before it fills $TMPDIR; small windows may always take the floor
EXPANSION = 32
EXPANSION_FLOOR = 32 << 20
CHUNK = 1 << 20                         # unpacked a chunk at a time: a stop is seen between
# perf looks for a vmlinux of the running kernel in these (and /proc/kcore first, and its
# build-id cache: perf buildid-cache -a VMLINUX)
VMLINUX_PLACES = ("/usr/lib/debug/boot/vmlinux-{r}", "/usr/lib/debug/lib/modules/{r}/vmlinux",
                  "/boot/vmlinux-{r}", "/lib/modules/{r}/build/vmlinux",
                  "/usr/lib/debug/vmlinux-{r}", "/usr/lib/debug/boot/vmlinux-{r}.debug",
                  "/boot/vmlinux", "vmlinux")
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
    sampled_from: int = 0               # counted an even spread of this many windows (0: all)

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


# "hl2555-spin  2555  7fed744f34f7 __GI___getppid+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)":
# the process's name and pid, the address, the symbol and offset, the DSO
_SAMPLE = re.compile(r"^\s*(.*?)\s+(\d+)\s+[0-9a-f]+\s+(.+)\+0x([0-9a-f]+)\s+\((.+)\)\s*$")
# the same, where perf cannot name the symbol: the DSO is still known
_UNNAMED = re.compile(r"^\s*(.*?)\s+(\d+)\s+[0-9a-f]+\s+\[unknown\]\s+\((.+)\)\s*$")


class NoSamples(HotloopError):
    """perf finds no sample of the symbol: none was taken, or its binary is not where the
    data says (perf then drops the samples it cannot place)."""


class KernelCodeMissing(HotloopError):
    """A kernel symbol, and neither /proc/kcore nor a vmlinux to disassemble it from."""


class _Stopped(Exception):
    """A perf thread's work abandoned: annotate was interrupted, or another file failed."""


@dataclass
class _Counts:
    """One perf.data file's samples of the symbol: {(DSO path, offset in it): samples}, and
    every DSO its samples fell in (to say which binary is gone or rebuilt when none is the
    symbol's)."""
    hits: Counter[tuple[str, int]] = field(default_factory=Counter)
    seen: set[str] = field(default_factory=set)


class _Perf:
    """perf runs of one annotation: from a temporary directory of the decompressed files,
    at idle priority on the spare CPUs when a run is going on (`background`)."""

    def __init__(self, perf: str, tmp: str, vmlinux: str | None,
                 background: set[int] | None) -> None:
        self.perf, self.tmp, self.vmlinux = perf, tmp, vmlinux
        self.idle = background is not None
        self._names = itertools.count()       # the decompressed files' (threads share it)
        # the CPUs the workload leaves free (none free: all of them, at idle priority)
        self.cpus = set(os.sched_getaffinity(0)) - background if background else None
        self.stopped = threading.Event()
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[str]] = set()

    @contextlib.contextmanager
    def plain(self, data: Path) -> Iterator[Path]:
        """The file perf reads: a kept one is gzipped once the run is over, and is unpacked
        for as long as perf reads it (all of a run's at once could be gigabytes), up to
        EXPANSION times its size."""
        if data.suffix != ".gz":
            yield data
            return
        plain = Path(self.tmp) / f"{next(self._names)}-{data.stem}"
        try:
            try:
                limit = max(EXPANSION_FLOOR, EXPANSION * data.stat().st_size)
                with gzip.open(data, "rb") as src, open(plain, "wb") as dst:
                    written = 0
                    while chunk := src.read(CHUNK):
                        self._check()
                        written += len(chunk)
                        if written > limit:
                            raise HotloopError(
                                f"{data}: expands beyond {limit >> 20} MB, {EXPANSION} times "
                                f"its size (perf data gzips to about a ninth): not the perf "
                                f"data hotloop kept; not unpacked further")
                        dst.write(chunk)
            except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
                raise HotloopError(f"{data}: cannot decompress: {e}") from None
            yield plain
        finally:
            plain.unlink(missing_ok=True)

    def _check(self) -> None:
        if self.stopped.is_set():
            raise _Stopped()

    def stop(self) -> None:
        """End every perf and unpacking under way (annotate interrupted, or failed)."""
        self.stopped.set()
        with self._lock:
            for proc in self._procs:
                with contextlib.suppress(OSError):
                    proc.kill()

    def run(self, argv: list[str], data: Path) -> subprocess.CompletedProcess[str]:
        if self.vmlinux:
            argv = [*argv, "--vmlinux", self.vmlinux]
        try:
            with self._lock:
                self._check()
                proc = subprocess.Popen(
                    [self.perf, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    text=True, errors="replace", stdin=subprocess.DEVNULL,
                    preexec_fn=child_setup(os.getpid(), self.idle, self.cpus or None))
                self._procs.add(proc)
        except OSError as e:            # no fork, no memory: one line, never a traceback
            raise HotloopError(f"{data}: cannot start perf {argv[0]}: "
                               f"{e.strerror or e}") from None
        try:
            out, err = proc.communicate(timeout=ANNOTATE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise HotloopError(f"{data}: perf {argv[0]} took over "
                               f"{ANNOTATE_TIMEOUT_S:g} s") from None
        finally:
            with self._lock:
                self._procs.discard(proc)
        self._check()                   # killed by stop(): its output is not an answer
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def count(self, data: Path, symbol: str, kernel: bool | None,
              run: tuple[frozenset[int], frozenset[str]]) -> _Counts:
        """The samples of `symbol` in one file, by address, of the run's processes: its
        workers' pids, or their names (inherited by what they fork per run); all when
        neither is known (the whole CPUs perf sampled may have run another user's copy of
        the workload).  A user-space symbol is counted without the kernel's symbol table
        (/proc/kallsyms: most of perf's time per file)."""
        pids, comms = run
        argv = ["script", "-F", "comm,pid,ip,sym,symoff,dso", "-G"]
        if kernel is False:
            argv += ["--kallsyms", os.devnull]
        with self.plain(data) as plain:
            done = self.run([*argv, "-i", str(plain)], data)
        counts = _Counts()
        for line in done.stdout.splitlines():
            if (m := _SAMPLE.match(line) or _UNNAMED.match(line)) and (pids or comms) \
                    and int(m.group(2)) not in pids and m.group(1) not in comms:
                continue
            if m := _SAMPLE.match(line):
                counts.seen.add(m.group(5))
                if m.group(3) == symbol:
                    counts.hits[(m.group(5), int(m.group(4), 16))] += 1
            elif m := _UNNAMED.match(line):
                counts.seen.add(m.group(3))
        if done.returncode != 0 and not counts.hits:
            said = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
            raise HotloopError(f"{data}: perf cannot read it: "
                               f"{said[-1] if said else f'exit status {done.returncode}'}")
        return counts

    def disassemble(self, data: Path, symbol: str, dso: str) -> list[Instruction]:
        """The symbol's instructions (and source lines), by perf annotate of one file that
        has samples of it."""
        with self.plain(data) as plain:
            done = self.run(["annotate", "-i", str(plain), "--stdio", "--show-nr-samples",
                             "-s", symbol, "-d", dso], data)
        said = done.stdout + done.stderr
        if "No vmlinux file" in said or "vmlinux" in said and "ouldn't annotate" in said:
            raise KernelCodeMissing(f"{symbol} is a kernel symbol: {NO_KERNEL_CODE}")
        _, insns = parse(done.stdout)
        if not insns:
            tail = [ln.strip() for ln in said.splitlines() if ln.strip()]
            raise HotloopError(f"{data}: perf annotate did not disassemble {symbol}: "
                               f"{tail[-1] if tail else f'exit status {done.returncode}'}")
        return insns


def _short(dso: str) -> str:
    """perf report's name of a DSO: the base name of a file, [kernel.kallsyms] as it is."""
    return dso if dso.startswith("[") else os.path.basename(dso)


def _check_build(dso: str, recorded: dict[str, str], vmlinux: str | None,
                 binaries: dict[str, str] | None = None) -> None:
    """The binary perf would disassemble is the build the run sampled, or one line saying
    which is not (a rebuilt library, another kernel booted since).  `binaries`: {path:
    build id} as the workers mapped them, else `recorded` by perf's name of the DSO."""
    then = (binaries or {}).get(dso) or recorded.get(_short(dso))
    if not then:
        return
    if dso.startswith("[") and dso != KERNEL_DSO:     # a module, [nf_tables]
        now = module_build_id(dso[1:-1])
        if now != then:
            raise HotloopError(f"kernel module {dso[1:-1]} is not the one the run sampled "
                               f"(build id {now or 'none: not loaded'}, then {then}): annotate "
                               f"on the machine and boot that ran it")
        return
    if dso == KERNEL_DSO:
        now = file_build_id(vmlinux) if vmlinux else kernel_build_id()
        if now != then:
            raise HotloopError(
                (f"{vmlinux} is not the kernel the run sampled (build id {now or 'none'}, "
                 if vmlinux else f"the kernel running now is not the one the run sampled "
                 f"(build id {now or 'unknown'}, ")
                + f"then {then}): its symbols would be misplaced; pass --vmlinux of that "
                  f"build, or annotate on the machine that ran it")
        return
    if not os.path.exists(dso):
        raise HotloopError(f"{dso} is gone, the binary the run sampled (build id {then}): "
                           f"annotate where the run ran, or rebuild it the same way")
    now = file_build_id(dso)
    if now != then:
        raise HotloopError(f"{dso} has changed since the run (build id {now or 'none'}, then "
                           f"{then}): its instructions are not the ones sampled; annotate "
                           f"where the run ran")


def annotate(files: list[Path], symbol: str, vmlinux: str | None = None, *, dso: str = "",
             kernel: bool | None = None, build_ids: dict[str, str] | None = None,
             binaries: dict[str, str] | None = None, pids: tuple[int, ...] = (),
             comms: tuple[str, ...] = (), background: set[int] | None = None,
             holding: Collection[int] | None = None) -> Annotation:
    """The symbol's instructions with their samples summed over `files`; HotloopError (one
    line) when perf is missing, a file cannot be read, no file has samples of it, or its
    binary is not the build the run sampled (`build_ids`, recorded with its hot symbols).

    `dso` and `kernel` say where the run's hot symbols put it, when known: a user-space
    symbol is then counted without loading the kernel's symbols, several times faster.
    `binaries` ({path: build id}), `pids` and `comms`, recorded when the run's workers were
    set up, say which copy of `dso` is the run's and whose samples count (perf samples
    whole CPUs): the workers', and those of the processes they fork, named after them.
    `background`: the CPUs the running workload uses; perf then keeps off them, at idle
    priority.  Each file's samples are counted with `perf script`, and one `perf annotate`
    (of the file with most of them) gives the instructions: not one per window.  Beyond
    MOST_WINDOWS files, an even spread of those holding the symbol (`holding`: the windows
    whose line in the result lists it) is counted: `spread`."""
    perf = find_perf()
    if perf is None:
        raise HotloopError(PERF_MISSING)
    if dso == KERNEL_DSO:
        # before any perf: counting a kernel symbol's samples loads the kernel's symbols for
        # every window, minutes on a loaded machine, only for perf annotate to refuse it
        _kernel_annotates(symbol, vmlinux, build_ids or {})
    files, of = spread(files, holding)
    try:
        return dataclasses.replace(
            _annotate(perf, files, symbol, vmlinux, dso, kernel, build_ids or {},
                      binaries or {}, (frozenset(pids), frozenset(comms)), background),
            sampled_from=of)
    except OSError as e:                # no room in $TMPDIR, a file unreadable: one line
        raise HotloopError(f"annotate {symbol}: {e.strerror or e}"
                           + (f": {e.filename}" if e.filename else "")) from None


def _annotate(perf: str, files: list[Path], symbol: str, vmlinux: str | None, dso: str,
              kernel: bool | None, build_ids: dict[str, str], binaries: dict[str, str],
              run: tuple[frozenset[int], frozenset[str]],
              background: set[int] | None) -> Annotation:
    # the run's own copy of the DSO, where the run recorded its path: another with the
    # same name (another user's build of the same workload) is not it
    own = {p for p in binaries if _short(p) == dso} if dso else set()

    def ours(path: str) -> bool:
        return path in own if own else not dso or _short(path) == dso

    with tempfile.TemporaryDirectory(prefix="hotloop-annotate-") as tmp:
        runner = _Perf(perf, tmp, vmlinux, background)
        pool = ThreadPoolExecutor(PARALLEL)
        try:
            counted = list(pool.map(lambda f: runner.count(f, symbol, kernel, run), files))
        except BaseException:
            # a signal (KeyboardInterrupt) or a file that failed: the threads' perf and
            # unpacking end now, not when each is done with its window
            runner.stop()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        by_dso: Counter[str] = Counter()
        for c in counted:
            for (path, _), n in c.hits.items():
                if ours(path):          # the DSO the run's hot symbols name
                    by_dso[path] += n
        if not by_dso:
            # its binary may be gone or rebuilt (perf then names no symbol, or others there)
            for path in sorted({p for c in counted for p in c.seen if dso and ours(p)}):
                if not path.startswith("[") and not os.path.exists(path):
                    raise HotloopError(f"{path} is gone, the binary the run sampled {symbol} "
                                       f"in: annotate where the run ran, or rebuild it the "
                                       f"same way")
                _check_build(path, build_ids, vmlinux, binaries)    # rebuilt, another kernel
                if path == KERNEL_DSO:
                    raise KernelCodeMissing(f"{symbol}: perf cannot name the kernel's "
                                            f"samples here (kptr_restrict, or no kernel "
                                            f"symbols): {KERNEL_FIXES}")
            raise NoSamples(f"no samples of {symbol} in the perf data ({len(files)} files)")
        where = by_dso.most_common(1)[0][0]
        if build_ids or binaries:
            _check_build(where, build_ids, vmlinux, binaries)
        # the file with the most samples of it: its annotation lists every instruction
        best = max(range(len(files)), key=lambda i: sum(
            n for (p, _), n in counted[i].hits.items() if p == where))
        insns = runner.disassemble(files[best], symbol, where)
    starts = [i.offset for i in insns]
    for insn in insns:
        insn.samples = 0
    for c in counted:
        for (path, off), n in c.hits.items():
            if path == where:
                at = bisect.bisect_right(starts, starts[0] + off) - 1
                insns[max(at, 0)].samples += n
    return Annotation(symbol, _short(where), insns,
                      files=sum(1 for c in counted if any(p == where for p, _ in c.hits)))


def _kernel_annotates(symbol: str, vmlinux: str | None, build_ids: dict[str, str]) -> None:
    """A kernel symbol perf can disassemble, or one line saying why not, known without
    perf: the --vmlinux given is no file, the kernel is not the build the run sampled, or
    there is no kernel code here to read (no /proc/kcore, no vmlinux perf would find)."""
    if vmlinux and not os.path.isfile(vmlinux):
        raise HotloopError(f"{symbol} is a kernel symbol, and --vmlinux {vmlinux} is no file "
                           f"to disassemble it from")
    _check_build(KERNEL_DSO, build_ids, vmlinux)
    if not vmlinux and not kernel_code_here(build_ids.get(KERNEL_DSO)):
        raise KernelCodeMissing(f"{symbol} is a kernel symbol: {NO_KERNEL_CODE}")


def _perf_cache() -> Path:
    """perf's build-id cache (perf buildid-cache), where perf finds a vmlinux by build id."""
    return Path(os.environ.get("PERF_BUILDID_DIR") or Path.home() / ".debug")


def kernel_code_here(build_id: str | None = None) -> str:
    """Where perf would read the running kernel's code from (its build id `build_id`, when
    known), or "": /proc/kcore, a vmlinux in one of perf's places, or perf's build-id
    cache."""
    if os.access("/proc/kcore", os.R_OK):
        return "/proc/kcore readable"
    release = platform.release()
    for place in VMLINUX_PLACES:
        path = place.format(r=release)
        if os.path.isfile(path):
            return f"vmlinux of this kernel: {path}"
    build_id = build_id or kernel_build_id()
    cache = _perf_cache()
    if build_id and any((cache / ".build-id" / build_id[:2] / build_id[2:] / name).is_file()
                        for name in ("elf", "vmlinux")):
        return f"vmlinux of this kernel in perf's build-id cache ({cache})"
    if (cache / "[kernel.kcore]").is_dir():
        return f"a copy of /proc/kcore in perf's build-id cache ({cache})"
    return ""


def nothing_to_annotate(hot: HotSymbol) -> str:
    """Why a hot symbol's row has no instructions to show, or ""."""
    if hot.named:
        return ""
    return (f"{hot.symbol} is an address perf has no symbol for (in {hot.dso}: stripped, "
            f"or code made at run time): nothing to annotate")


def kernel_code() -> Capability:
    """doctor: whether kernel symbols can be annotated here."""
    if where := kernel_code_here():
        return Capability("annotate kernel", True, where + (": kernel symbols annotate"
                                                            if "kcore" in where else ""))
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
