"""One perf window read by `perf script`: its samples, each the process's name and pid, the
symbol and the offset in it, and the DSO.  As a window is summarised while recording, one pass
gives both its hot symbols (the self samples by symbol and DSO that `perf report` gave: they
agree, sample for sample, on real sessions) and its samples by address, for the session's
tally (perf/addrs.py); annotate counts a symbol's samples of a kept window the same way.
"""
from __future__ import annotations

import bisect
import os
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from hotloop.events import HotSymbol

FIELDS = "comm,pid,ip,sym,symoff,dso"
# a window's: each sample's time too (perf record -k CLOCK_MONOTONIC: the clock of
# time.monotonic_ns()), which tells the run it fell in when a window holds several runs
WINDOW_FIELDS = "comm,pid,time,ip,sym,symoff,dso"
# "hl2555-spin  2555 11528.371766384:  7fed744f34f7 ...": the time, in ns with --ns
TIME = re.compile(r"\s(\d+)\.(\d{9}):\s")

# "hl2555-spin  2555  7fed744f34f7 __GI___getppid+0x7 (/usr/lib/x86_64-linux-gnu/libc.so.6)":
# the process's name and pid, the address, the symbol and offset, the DSO
SAMPLE = re.compile(r"^\s*(.*?)\s+(\d+)\s+([0-9a-f]+)\s+(.+)\+0x([0-9a-f]+)\s+\((.+)\)\s*$")
# the same, where perf cannot name the symbol: the DSO is still known
UNNAMED = re.compile(r"^\s*(.*?)\s+(\d+)\s+([0-9a-f]+)\s+\[unknown\]\s+\((.+)\)\s*$")
# "python 0 PERF_RECORD_MMAP2 3124/3124: [0x7fa09f611000(0x1b7000) @ 0x11000 fe:00 ...]: r-xp
# /usr/lib/x86_64-linux-gnu/libc.so.6": where a process mapped a file (--show-mmap-events)
MMAP = re.compile(r"PERF_RECORD_MMAP2? (-?\d+)/-?\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ "
                  r"(0x[0-9a-f]+|0)\b[^\]]*\]: \S+ (.+?)\s*$")
# DSOs perf names in brackets that are user space's
USER_PSEUDO = frozenset({"[vdso]", "[vsyscall]", "[vvar]", "[heap]", "[stack]", "[anon]",
                         "[uprobes]", "[unknown]"})
KERNEL_HALF = 1 << 63                   # x86-64 and arm64: the kernel's addresses


def script_argv(perf: str, path: str, kallsyms: str | None = None) -> list[str]:
    """The `perf script` of one window that `read_window` parses: no call chains, and the
    mappings (an address perf has no symbol for is named by its place in its file); the
    kernel's symbols from `kallsyms`, a copy of /proc/kallsyms, when given."""
    return [perf, "script", "-i", path, "-F", WINDOW_FIELDS, "--ns", "-G",
            "--show-mmap-events", *(["--kallsyms", kallsyms] if kallsyms else [])]


KALLSYMS = "/proc/kallsyms"


def copy_kallsyms(directory: str) -> str | None:
    """A copy of /proc/kallsyms in `directory` (its path), or None where it cannot be read.
    perf script reads the kernel's symbols at each window; from /proc, the kernel formats
    its 120,000 lines anew each time (half the CPU of a report here), from a copy it does
    not.  A module loaded after the copy is not in it: its samples would go unnamed."""
    path = os.path.join(directory, "kallsyms")
    try:
        with open(KALLSYMS, "rb") as src, open(path, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    except OSError:
        return None
    return path


def short(dso: str) -> str:
    """perf report's name of a DSO: the base name of a file, [kernel.kallsyms] as it is."""
    return dso if dso.startswith("[") else os.path.basename(dso)


class _Maps:
    """Each process's mappings of files, as the window's mmap events say: to name an address
    perf has no symbol for as perf report does, by its offset in the file.  Read only when
    such an address is sampled (most windows have none)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._of: dict[int, list[tuple[int, int, int, str]]] | None = None

    def _read(self) -> dict[int, list[tuple[int, int, int, str]]]:
        of: dict[int, list[tuple[int, int, int, str]]] = {}
        for line in self.lines:
            if m := MMAP.search(line):
                start, size = int(m.group(2), 16), int(m.group(3), 16)
                of.setdefault(int(m.group(1)), []).append(
                    (start, start + size, int(m.group(4), 16), m.group(5)))
        return of

    def name(self, pid: int, ip: int, dso: str) -> str:
        """perf report's name of the address: `0x` and its offset in the file where the
        process mapped `dso` there, else the address."""
        if self._of is None:
            self._of = self._read()
        for start, end, pgoff, path in reversed(self._of.get(pid, ())):   # the latest first
            if start <= ip < end and path == dso:
                return f"0x{ip - start + pgoff:016x}"
        return f"0x{ip:016x}"


def _kernel(dso: str, ip: int) -> bool:
    if dso.startswith("["):
        return dso not in USER_PSEUDO or dso == "[unknown]" and ip >= KERNEL_HALF
    return ".ko" in os.path.basename(dso)


@dataclass
class WindowSamples:
    """One window's samples: its hot symbols (of `comm`'s processes when recorded system
    wide, as perf report --comm gave them), the same by run (`runs`: {run: its symbols},
    the window's own run alone where the samples have no time), and the run's samples by
    address {(DSO path, symbol, offset): samples} (its pids' or its comm's: what annotate
    counts)."""
    symbols: list[HotSymbol] = field(default_factory=list)
    addresses: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    runs: dict[int, list[HotSymbol]] = field(default_factory=dict)


def read_window(text: str, comm: str | None = None, pids: Collection[int] = (),
                cuts: Sequence[int] = (), run: int = 0) -> WindowSamples:
    """`perf script` output (script_argv) as the window's hot symbols and its samples by
    address.  `comm`: the recording was of the whole CPUs, and that process name's samples
    are the run's (and `pids`', for the addresses: annotate counts those too).  `cuts`: when
    each run ended (CLOCK_MONOTONIC ns, sorted), so a sample at time t is of run
    bisect(cuts, t); one with no time is of `run`.  A line that is not a sample is
    skipped."""
    by_symbol: Counter[tuple[int, str, str]] = Counter()
    kernel: dict[tuple[str, str], bool] = {}
    addresses: Counter[tuple[str, str, int]] = Counter()
    maps = _Maps()
    # a sample's line repeats (the same process at the same address): read once; and one
    # that cannot be the run's (another process, on the whole CPUs) is not read at all
    seen: dict[str, tuple[str, int, str, str, int, int] | None] = {}
    marks = [f" {p} " for p in pids]
    for line in text.splitlines():
        if "PERF_RECORD_MMAP" in line:
            maps.lines.append(line)
            continue
        if comm is not None and not line.lstrip().startswith(comm) \
                and not any(mark in line for mark in marks):
            continue
        at = run
        if (t := TIME.search(line)) is not None:      # read without it: a line repeats
            at = bisect.bisect_right(cuts, int(t.group(1)) * 1_000_000_000 + int(t.group(2)))
            line = line[:t.start()] + " " + line[t.end():]
        if line in seen:
            got = seen[line]
        else:
            got = seen[line] = _sample(line)
        if got is None:
            continue
        name, pid, dso, symbol, offset, ip = got
        hot = comm is None or name == comm
        if not hot and pid not in pids:
            continue
        if offset >= 0:
            addresses[(dso, symbol, offset)] += 1
        else:
            symbol = maps.name(pid, ip, dso)
        if hot:
            key = (symbol, short(dso))
            by_symbol[(at,) + key] += 1
            if key not in kernel:
                kernel[key] = _kernel(dso, ip)
    whole: Counter[tuple[str, str]] = Counter()
    of_run: dict[int, Counter[tuple[str, str]]] = {}
    for (at, s, d), n in by_symbol.items():
        whole[(s, d)] += n
        of_run.setdefault(at, Counter())[(s, d)] += n
    return WindowSamples(_hot(whole, kernel), addresses,
                         {r: _hot(c, kernel) for r, c in sorted(of_run.items())})


def _hot(counts: Counter[tuple[str, str]], kernel: dict[tuple[str, str], bool]
         ) -> list[HotSymbol]:
    """Samples by (symbol, DSO) as hot symbols, the hottest first."""
    total = sum(counts.values())
    symbols = [HotSymbol(symbol=s, dso=d, percent=round(100.0 * n / total, 2),
                         kernel=kernel[(s, d)], samples=n)
               for (s, d), n in counts.items()]
    symbols.sort(key=lambda h: (-h.samples, h.symbol, h.dso))
    return symbols


def _sample(line: str) -> tuple[str, int, str, str, int, int] | None:
    """A sample's process name, pid, DSO, symbol, offset in it (-1: perf has no symbol for
    it) and address; None for a line that is not one."""
    if m := SAMPLE.match(line):
        return (m.group(1), int(m.group(2)), m.group(6), m.group(4), int(m.group(5), 16),
                int(m.group(3), 16))
    if m := UNNAMED.match(line):
        return m.group(1), int(m.group(2)), m.group(4), "[unknown]", -1, int(m.group(3), 16)
    return None
