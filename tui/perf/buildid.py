"""Build ids: which build of a binary a run sampled, so a later annotation is of that code.

perf records with -B -N (a build-id pass at every window rotation would cost CPU mid-run),
so its files name binaries by path only, and perf annotate disassembles whatever is at
that path today.  The session reads the build ids itself instead: from the ELF notes of
the files its worker mapped (/proc/PID/maps, as soon as it is set up) and the kernel's
(/sys/kernel/notes), and keeps them with the run's hot symbols; `hotloop annotate`
compares them with today's.
"""
from __future__ import annotations

import contextlib
import os
import stat
import struct
from collections.abc import Iterable, Mapping

KERNEL_DSO = "[kernel.kallsyms]"
NT_GNU_BUILD_ID = 3
PT_NOTE = 4
_MAX_NOTES = 1 << 16                    # a note segment larger than this is not a real one
_MAX_PHDRS = 256


def notes_build_id(data: bytes, little: bool = True) -> str | None:
    """The GNU build id among ELF notes (a PT_NOTE segment, /sys/kernel/notes), hex."""
    end = "<" if little else ">"
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from(end + "III", data, at)
        name_at = at + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        at = desc_at + (descsz + 3) // 4 * 4
        if at > len(data):
            return None
        if kind == NT_GNU_BUILD_ID and data[name_at:name_at + namesz].rstrip(b"\0") == b"GNU" \
                and 0 < descsz <= 64:
            return data[desc_at:desc_at + descsz].hex()
    return None


def file_build_id(path: str | os.PathLike[str]) -> str | None:
    """The build id of an ELF file, from its PT_NOTE segments; None when it has none, is
    not ELF, or cannot be read (gone, no permission)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)     # a FIFO would block: not ELF
        with open(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            ident = f.read(64)
            if len(ident) < 52 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) \
                    or ident[5] not in (1, 2):
                return None
            wide, little = ident[4] == 2, ident[5] == 1
            end = "<" if little else ">"
            if wide:
                phoff, = struct.unpack_from(end + "Q", ident, 32)
                phentsize, phnum = struct.unpack_from(end + "HH", ident, 54)
                entry = end + "II QQQ QQQ"      # type, flags, offset, vaddr, paddr, filesz...
            else:
                phoff, = struct.unpack_from(end + "I", ident, 28)
                phentsize, phnum = struct.unpack_from(end + "HH", ident, 42)
                entry = end + "I I III II II"   # type, offset, vaddr, paddr, filesz, ...
            size = struct.calcsize(entry)
            if phentsize < size or not 0 < phnum <= _MAX_PHDRS:
                return None
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                if len(table) < (i + 1) * phentsize:
                    return None
                fields = struct.unpack_from(entry, table, i * phentsize)
                kind = fields[0]
                offset, filesz = (fields[2], fields[5]) if wide else (fields[1], fields[4])
                if kind != PT_NOTE or filesz > _MAX_NOTES:
                    continue
                f.seek(offset)
                found = notes_build_id(f.read(filesz), little)
                if found:
                    return found
    except (OSError, struct.error, ValueError):
        return None
    return None


def kernel_build_id() -> str | None:
    """The running kernel's build id (what a vmlinux must have to annotate its symbols)."""
    try:
        with open("/sys/kernel/notes", "rb") as f:
            return notes_build_id(f.read(_MAX_NOTES))
    except OSError:
        return None


def module_build_id(name: str) -> str | None:
    """A loaded kernel module's build id (perf names its DSO "[name]")."""
    if not name or "/" in name or name.startswith("."):
        return None
    try:
        with open(f"/sys/module/{name}/notes/.note.gnu.build-id", "rb") as f:
            return notes_build_id(f.read(_MAX_NOTES))
    except OSError:
        return None


def mapped_files(pid: int) -> set[str]:
    """The files a process has mapped executable: the binaries its samples can be in."""
    out: set[str] = set()
    with contextlib.suppress(OSError), open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
                out.add(parts[5].rstrip("\n").removesuffix(" (deleted)"))
    return out


def read_ids(paths: Iterable[str]) -> dict[str, str]:
    """{path: build id} of the files that have one, read while the worker maps them (a
    library upgraded later in the run is not what it ran)."""
    return {p: found for p in sorted(paths) if (found := file_build_id(p))}


def build_ids(dsos: Iterable[str], mapped: Mapping[str, str]) -> dict[str, str]:
    """{DSO as perf report names it: build id} for those whose build is known: the kernel,
    its modules, and the files the worker mapped ({path: build id}; perf names those by
    their base name)."""
    by_name: dict[str, str] = {}
    for path in sorted(mapped):
        by_name.setdefault(os.path.basename(path), mapped[path])
    out: dict[str, str] = {}
    for dso in dict.fromkeys(dsos):
        if dso == KERNEL_DSO:
            found = kernel_build_id()
        elif dso.startswith("[") and dso.endswith("]"):
            found = module_build_id(dso[1:-1])      # [vdso], [unknown]: no such module
        else:
            found = by_name.get(dso)
        if found:
            out[dso] = found
    return out


def binaries(dsos: Iterable[str], mapped: Mapping[str, str]) -> dict[str, str]:
    """{path: build id} of the mapped files perf names among `dsos` (by base name): which
    copy of a binary the run sampled, where several have the same name."""
    names = set(dsos)
    return {p: i for p, i in sorted(mapped.items()) if os.path.basename(p) in names}
