"""From a hot symbol to its hot instructions: `perf annotate` on a session's kept perf data.

A session with kept perf data (`--keep-perf`) has one perf.data file per window
(RESULT.perf/perf.data.*) and the tally of its samples by address made as its windows were
summarised (RESULT.perf/addrs.json.gz, perf/addrs.py).  The symbol's samples are the tally's,
over every window the session had (and those of kept windows it does not list, counted with
`perf script`), and its instructions come from one `perf annotate --stdio` of one window
holding it: the whole run's annotation, as a single perf.data would give, in seconds however
long the session.  Without a tally (older sessions' data) each window is counted, or an even
spread of them (perf/spread.py).  perf names binaries by path only (hotloop records with
-B), so the build ids the run kept are checked against what is on disk now.  Kernel symbols
need the kernel's code: /proc/kcore or a vmlinux of the running kernel's build
(`--vmlinux`); without it, one line with the fixes, before any perf starts.
"""
from __future__ import annotations

import bisect
import dataclasses
import difflib
import os
import platform
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.events import HotSymbol
from hotloop.host.doctor import Capability
from hotloop.perf import addrs
from hotloop.perf.annotate_perf import Counts, PerfRuns
from hotloop.perf.buildid import KERNEL_DSO, file_build_id, kernel_build_id, module_build_id
from hotloop.perf.probe import PERF_MISSING, find_perf
from hotloop.perf.script import short
from hotloop.perf.spread import spread

PARALLEL = 4                            # perf annotate processes at once
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
KCORE = "/proc/kcore"


def no_kernel_code() -> str:
    """NO_KERNEL_CODE, saying what of /proc/kcore is missing here: the file (a kernel built
    without it), the right to read it (root's: CAP_SYS_RAWIO), or perf's use of it."""
    if not os.path.exists(KCORE):
        why = f"this kernel has no {KCORE} (CONFIG_PROC_KCORE)"
    elif not os.access(KCORE, os.R_OK):
        why = f"{KCORE} is root's to read (CAP_SYS_RAWIO): annotate as root"
    else:
        why = f"perf did not read the kernel's code from {KCORE}"
    return (f"the kernel's code is not here to annotate ({why}; no vmlinux of this build): "
            + KERNEL_FIXES)

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
    code: str = ""                      # a kernel symbol's: where its code was read from

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
    return [directory / name for name in _window_names(directory)]


def _window_names(directory: Path) -> list[str]:
    # one scandir, no stat a file and names sorted as strings: a long session has 30,000
    try:
        with os.scandir(directory) as entries:
            return sorted(e.name for e in entries
                          if e.name.startswith("perf.data.") and e.is_file())
    except OSError:
        return []


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


class NoSamples(HotloopError):
    """perf finds no sample of the symbol: none was taken, or its binary is not where the
    data says (perf then drops the samples it cannot place)."""


class KernelCodeMissing(HotloopError):
    """A kernel symbol, and neither /proc/kcore nor a vmlinux to disassemble it from."""



def _check_build(dso: str, recorded: dict[str, str], vmlinux: str | None,
                 binaries: dict[str, str] | None = None) -> None:
    """The binary perf would disassemble is the build the run sampled, or one line saying
    which is not (a rebuilt library, another kernel booted since).  `binaries`: {path:
    build id} as the workers mapped them, else `recorded` by perf's name of the DSO."""
    then = (binaries or {}).get(dso) or recorded.get(short(dso))
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
             holding: Collection[int] | Callable[[], Collection[int]] | None = None
             ) -> Annotation:
    """The symbol's instructions with their samples summed over `files`; HotloopError (one
    line) when perf is missing, a file cannot be read, no file has samples of it, or its
    binary is not the build the run sampled (`build_ids`, recorded with its hot symbols).

    `dso` and `kernel` say where the run's hot symbols put it, when known: a user-space
    symbol is then counted without loading the kernel's symbols, several times faster.
    `binaries` ({path: build id}), `pids` and `comms`, recorded when the run's workers were
    set up, say which copy of `dso` is the run's and whose samples count (perf samples
    whole CPUs): the workers', and those of the processes they fork, named after them.
    `background`: the CPUs the running workload uses; perf then keeps off them, at idle
    priority.

    `files` all of a session's kept windows, and its tally of samples by address beside
    them (perf/addrs.py): the counts are the tally's, over every window the session had
    (thinned ones too), and those of the kept windows it does not list; one `perf annotate`
    of one window holding the symbol gives the instructions.  Without a tally (an older
    session's data, or some of its windows only), each file's samples are counted with
    `perf script`, one `perf annotate` of the file with most of them gives the
    instructions, and beyond MOST_WINDOWS files an even spread of those holding the symbol
    (`holding`: the windows whose line in the result lists it, or what reads them, only
    when needed: a long session's result file takes seconds) is counted: `spread`."""
    perf = find_perf()
    if perf is None:
        raise HotloopError(PERF_MISSING)
    if dso == KERNEL_DSO:
        # before any perf: counting a kernel symbol's samples loads the kernel's symbols for
        # every window, minutes on a loaded machine, only for perf annotate to refuse it
        _kernel_annotates(symbol, vmlinux, build_ids or {})
    how = _How(perf, symbol, vmlinux, dso, kernel, build_ids or {}, binaries or {},
               (frozenset(pids), frozenset(comms)), background)
    try:
        tally = tally_beside(files)
        if tally is not None and any(s == symbol for _, s in tally.held):
            return _annotate(how, files, tally, holding)
        files, of = spread(files, holding() if callable(holding) else holding)
        return dataclasses.replace(_annotate(how, files), sampled_from=of)
    except OSError as e:                # no room in $TMPDIR, a file unreadable: one line
        raise HotloopError(f"annotate {symbol}: {e.strerror or e}"
                           + (f": {e.filename}" if e.filename else "")) from None


def tally_beside(files: list[Path]) -> addrs.AddressTally | None:
    """The session's tally of samples by address, when `files` are all the windows kept
    beside it (not the console's latest window alone), and it counted to the end; AddrsError
    (one line) when it is not hotloop's."""
    if not files:
        return None
    directory = files[0].parent
    path = directory / addrs.FILE
    if not os.path.lexists(path) or any(f.parent != directory for f in files) \
            or {f.name for f in files} != set(_window_names(directory)):
        return None
    tally = addrs.read(path)
    return None if tally.full else tally


@dataclass
class _How:
    """What one annotation is of, and how perf is run for it."""
    perf: str
    symbol: str
    vmlinux: str | None
    dso: str
    kernel: bool | None
    build_ids: dict[str, str]
    binaries: dict[str, str]
    run: tuple[frozenset[int], frozenset[str]]
    background: set[int] | None

    def ours(self, path: str) -> bool:
        """The DSO the run's hot symbols name: the run's own copy, where the run recorded
        its path (another with the same name, another user's build, is not it)."""
        own = {p for p in self.binaries if short(p) == self.dso} if self.dso else set()
        return path in own if own else not self.dso or short(path) == self.dso


def _count(runner: PerfRuns, how: _How, files: list[Path]) -> list[Counts]:
    """Each file's samples of the symbol, PARALLEL perf scripts at a time."""
    if not files:
        return []
    pool = ThreadPoolExecutor(PARALLEL)
    try:
        return list(pool.map(lambda f: runner.count(f, how.symbol, how.kernel, how.run), files))
    except BaseException:
        # a signal (KeyboardInterrupt) or a file that failed: the threads' perf and
        # unpacking end now, not when each is done with its window
        runner.stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _annotate(how: _How, files: list[Path], tally: addrs.AddressTally | None = None,
              holding: Collection[int] | Callable[[], Collection[int]] | None = None
              ) -> Annotation:
    symbol = how.symbol
    covered = tally.windows if tally is not None else {}
    counting = [f for f in files if _window(f) not in covered]
    with tempfile.TemporaryDirectory(prefix="hotloop-annotate-") as tmp:
        runner = PerfRuns(how.perf, tmp, how.vmlinux, how.background)
        counted = _count(runner, how, counting)
        hits: Counter[tuple[str, int]] = tally.of(symbol) if tally is not None else Counter()
        for c in counted:
            hits.update(c.hits)
        by_dso: Counter[str] = Counter()
        for (path, _), n in hits.items():
            if how.ours(path):
                by_dso[path] += n
        if not by_dso:
            if tally is not None:       # not the run's copy: say why as without a tally
                return _annotate(how, spread(files)[0])
            _none(how, counted, len(files))
        where = by_dso.most_common(1)[0][0]
        if not where.startswith("[") and not os.path.exists(where):
            raise HotloopError(f"{where} is gone, the binary the run sampled {symbol} in: "
                               f"annotate where the run ran, or rebuild it the same way")
        if how.build_ids or how.binaries:
            _check_build(where, how.build_ids, how.vmlinux, how.binaries)
        holds = [sum(n for (p, _), n in c.hits.items() if p == where) for c in counted]
        if tally is None:
            # the file with the most samples of it: its annotation lists every instruction
            data = counting[max(range(len(counting)), key=holds.__getitem__)]
            windows = sum(1 for n in holds if n)
        else:
            held = tally.held.get((where, symbol))
            data = _holding(runner, how, where, files, counting, holds, tally, holding)
            windows = (held.windows if held else 0) + sum(1 for n in holds if n)
        insns = _disassemble(runner, data, symbol, where)
    starts = [i.offset for i in insns]
    for insn in insns:
        insn.samples = 0
    for (path, off), n in hits.items():
        if path == where:
            at = bisect.bisect_right(starts, starts[0] + off) - 1
            insns[max(at, 0)].samples += n
    code = "" if where != KERNEL_DSO else how.vmlinux or kernel_code_here(
        how.build_ids.get(KERNEL_DSO)).removesuffix(" readable")
    return Annotation(symbol, short(where), insns, files=windows, code=code)


def _window(f: Path) -> str:
    return f.name.removesuffix(".gz")


def _none(how: _How, counted: list[Counts], files: int) -> None:
    """No sample of the symbol in the run's copy of its DSO: why, in one line."""
    symbol = how.symbol
    # its binary may be gone or rebuilt (perf then names no symbol, or others there)
    for path in sorted({p for c in counted for p in c.seen if how.dso and how.ours(p)}):
        if not path.startswith("[") and not os.path.exists(path):
            raise HotloopError(f"{path} is gone, the binary the run sampled {symbol} "
                               f"in: annotate where the run ran, or rebuild it the "
                               f"same way")
        _check_build(path, how.build_ids, how.vmlinux, how.binaries)  # rebuilt, another kernel
        if path == KERNEL_DSO:
            raise KernelCodeMissing(f"{symbol}: perf cannot name the kernel's "
                                    f"samples here (kptr_restrict, or no kernel "
                                    f"symbols): {KERNEL_FIXES}")
    raise NoSamples(f"no samples of {symbol} in the perf data ({files} files)")


def _holding(runner: PerfRuns, how: _How, where: str, files: list[Path],
             counting: list[Path], holds: list[int], tally: addrs.AddressTally,
             holding: Collection[int] | Callable[[], Collection[int]] | None) -> Path:
    """A kept window with samples of the symbol in `where`, to disassemble: one the tally
    did not list that holds most of them, else the window with most of them or the one
    likeliest to survive thinning (the tally knows both), if kept; else the kept windows
    are counted, those whose line lists the symbol (`holding`) first, until one holds it."""
    if any(holds):
        return counting[max(range(len(counting)), key=holds.__getitem__)]
    kept = {_window(f): f for f in files}
    held = tally.held.get((where, how.symbol))
    for name in (held.best, held.durable) if held else ():
        if name in kept:
            return kept[name]
    counted = set(counting)
    rest = [f for f in files if f not in counted]
    lists = set(holding() if callable(holding) else holding or ())
    if lists:
        rest.sort(key=lambda f: tally.windows.get(_window(f), -1) not in lists)
    for at in range(0, len(rest), PARALLEL):
        batch = rest[at:at + PARALLEL]
        for f, c in zip(batch, _count(runner, how, batch)):
            if any(p == where for p, _ in c.hits):
                return f
    raise NoSamples(f"none of the {len(files)} kept windows holds {how.symbol} (its samples "
                    f"are in the tally of the windows thinned): nothing to disassemble")


def _disassemble(runner: PerfRuns, data: Path, symbol: str, dso: str) -> list[Instruction]:
    """The symbol's instructions (and source lines), by perf annotate of one file that
    has samples of it."""
    with runner.plain(data) as plain:
        done = runner.run(["annotate", "-i", str(plain), "--stdio", "--show-nr-samples",
                           "-s", symbol, "-d", dso], data)
    said = done.stdout + done.stderr
    if "No vmlinux file" in said or "vmlinux" in said and "ouldn't annotate" in said:
        raise KernelCodeMissing(f"{symbol} is a kernel symbol: {no_kernel_code()}")
    _, insns = parse(done.stdout)
    if not insns:
        tail = [ln.strip() for ln in said.splitlines() if ln.strip()]
        raise HotloopError(f"{data}: perf annotate did not disassemble {symbol}: "
                           f"{tail[-1] if tail else f'exit status {done.returncode}'}")
    return insns


def _kernel_annotates(symbol: str, vmlinux: str | None, build_ids: dict[str, str]) -> None:
    """A kernel symbol perf can disassemble, or one line saying why not, known without
    perf: the --vmlinux given is no file, the kernel is not the build the run sampled, or
    there is no kernel code here to read (no /proc/kcore, no vmlinux perf would find)."""
    if vmlinux and not os.path.isfile(vmlinux):
        raise HotloopError(f"{symbol} is a kernel symbol, and --vmlinux {vmlinux} is no file "
                           f"to disassemble it from")
    _check_build(KERNEL_DSO, build_ids, vmlinux)
    if not vmlinux and not kernel_code_here(build_ids.get(KERNEL_DSO)):
        raise KernelCodeMissing(f"{symbol} is a kernel symbol: {no_kernel_code()}")


def _perf_cache() -> Path:
    """perf's build-id cache (perf buildid-cache), where perf finds a vmlinux by build id."""
    return Path(os.environ.get("PERF_BUILDID_DIR") or Path.home() / ".debug")


def kernel_code_here(build_id: str | None = None) -> str:
    """Where perf would read the running kernel's code from (its build id `build_id`, when
    known), or "": /proc/kcore, a vmlinux in one of perf's places, or perf's build-id
    cache."""
    if os.access(KCORE, os.R_OK):
        return f"{KCORE} readable"
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
