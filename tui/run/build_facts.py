"""What a build is, for a bisect's report: the .config lines two kernel trees differ in, and
what a kernel image says of itself (its version string; the compiler and the build id its
compressed kernel holds).

Both read files a revision's build made, so both are made safe to print (`visible`) and
bounded: a forged .config or image costs at most a few seconds and a few megabytes.
"""
from __future__ import annotations

import bz2
import lzma
import os
import re
import stat
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from hotloop.host import kimage
from hotloop.perf.buildid import PT_NOTE, notes_build_id
from hotloop.visible import visible

CONFIG_LINES = 40                       # a report shows this many .config lines, then a count
CONFIG_MAX = 16 << 20                   # a kernel's .config is ~260 kB: beyond, not one
CHUNK = 1 << 20
INFLATED_MAX = 256 << 20                # decompressed bytes read at most (a forged image)
# The compressions a kernel may be built with, by their first bytes; the last three have no
# decompressor in Python's standard library, so their image says only its version string.
COMPRESSIONS = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"\x5d\x00\x00", "lzma"),
                (b"BZh", "bzip2"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"\x02\x21\x4c\x18", "lz4"),
                (b"\x89LZO", "lzo"))
# linux_banner, as /proc/version shows it: "Linux version RELEASE (BY@HOST) (COMPILER) BUILD"
BANNER = re.compile(rb"Linux version ([\x21-\x7e]{1,64} \([\x20-\x7e]{1,400})\n")


# --------------------------------------------------------------------------- .config

def build_differences(a: Path, b: Path) -> list[str]:
    """The .config lines that differ between two trees (`a` the last good's, `b` the first
    bad's): "-CONFIG_X=y" for a's line, "+CONFIG_X=m" for b's, "+# CONFIG_Y is not set" as
    .config writes it, by option name; at most CONFIG_LINES lines, then "... N more".  Empty
    when neither has a .config; a .config that cannot be read is a line saying so."""
    old, new = _config(a / ".config"), _config(b / ".config")
    if old is None and new is None:
        return []
    problems = [x for x in (old, new) if isinstance(x, str)]
    if problems:
        return problems
    old_lines = old if isinstance(old, dict) else {}
    new_lines = new if isinstance(new, dict) else {}
    lines: list[str] = []
    for key in sorted(old_lines.keys() | new_lines.keys()):
        was, now = old_lines.get(key), new_lines.get(key)
        if was != now:
            lines += [f"-{was}"] if was is not None else []
            lines += [f"+{now}"] if now is not None else []
    if len(lines) > CONFIG_LINES:
        lines[CONFIG_LINES:] = [f"... {len(lines) - CONFIG_LINES} more"]
    return lines


def _config(path: Path) -> dict[str, str] | str | None:
    """A .config's option lines by option (None: there is none; a str: why it cannot be
    read).  "# CONFIG_X is not set" is CONFIG_X's line; other comments are not options."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)     # a FIFO would block
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"{visible(str(path))}: cannot read: {e.strerror}"
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return f"{visible(str(path))}: not a regular file"
    try:
        with open(fd, "rb") as f:
            data = f.read(CONFIG_MAX + 1)
    except OSError as e:
        return f"{visible(str(path))}: cannot read: {e.strerror}"
    if len(data) > CONFIG_MAX:
        return f"{visible(str(path))}: over {CONFIG_MAX >> 20} MB: not a kernel .config"
    options: dict[str, str] = {}
    for raw in data.decode(errors="replace").splitlines():
        line = raw.strip()
        m = re.fullmatch(r"(CONFIG_\w+)=.*|# (CONFIG_\w+) is not set", line)
        if m:
            options[m.group(1) or m.group(2)] = visible(line)
    return options


# --------------------------------------------------------------------------- kernel images

def kernel_image_facts(image: Path) -> dict[str, str]:
    """What an x86 bzImage says of itself; {} for a file that is not one.

    From the setup header's version string (read as `file` does: the pointer at 0x20e,
    +0x200): "version" (all of it), "release", "built_by" (user@host) and "build" (what
    follows: "#1 SMP PREEMPT_DYNAMIC ..."); from the compressed kernel, when it is gzip, xz,
    lzma or bzip2: "compiler" (linux_banner's, as /proc/version shows it) and "build_id"
    (the vmlinux's GNU build id, as perf names the kernel); "compression" always when
    known.  The kernel is decompressed only up to what it needs (the Debian 6.1 image: its
    first 24 MB of 66), a chunk at a time."""
    try:
        if not stat.S_ISREG(os.stat(image).st_mode):
            return {}
    except OSError:
        return {}
    version = kimage.image_version(image)
    if not version:
        return {}
    facts = {"version": visible(version), **_version_parts(version)}
    facts.update(_payload_facts(image, facts["release"]))
    return facts


def _version_parts(text: str) -> dict[str, str]:
    """"RELEASE (BY@HOST) [(COMPILER)] BUILD" in its parts, each made visible."""
    release, _, rest = text.partition(" ")
    parts = {"release": visible(release)}
    groups: list[str] = []
    while rest.startswith("(") and len(groups) < 2:
        end = _closing(rest)
        if end is None:
            break                                   # unbalanced: the rest is the build
        groups.append(rest[1:end])
        rest = rest[end + 1:].lstrip()
    if groups and "@" in groups[0] and " " not in groups[0]:
        parts["built_by"] = visible(groups.pop(0))
    if groups:
        parts["compiler"] = visible(groups[0])
    if rest:
        parts["build"] = visible(rest)
    return parts


def _closing(text: str) -> int | None:
    """Where the parenthesis opening `text` closes, or None."""
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return i
    return None


class _Inflater(Protocol):
    def decompress(self, data: bytes, max_length: int = -1) -> bytes: ...
    @property
    def eof(self) -> bool: ...
    @property
    def needs_input(self) -> bool: ...


def _inflated(f: BinaryIO, kind: str) -> Iterator[bytes]:
    """The compressed kernel decompressed, a bounded chunk at a time (a forged image's
    bomb never fills memory)."""
    if kind == "gzip":
        z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while not z.eof:
            data = z.unconsumed_tail or f.read(CHUNK)
            if not data:
                return
            yield z.decompress(data, CHUNK)
        return
    d: _Inflater
    if kind == "bzip2":
        d = bz2.BZ2Decompressor()
    else:
        d = lzma.LZMADecompressor(lzma.FORMAT_XZ if kind == "xz" else lzma.FORMAT_ALONE)
    while not d.eof:
        data = f.read(CHUNK) if d.needs_input else b""
        if d.needs_input and not data:
            return
        yield d.decompress(data, max_length=CHUNK)


def _payload_facts(image: Path, release: str) -> dict[str, str]:
    """"compression", and "compiler" and "build_id" from the decompressed kernel."""
    try:
        with open(image, "rb") as f:
            at = kimage.payload_offset(f.read(0x250))
            if at is None:
                return {}
            f.seek(at)
            magic = f.read(8)
            kind = next((name for m, name in COMPRESSIONS if magic.startswith(m)), "")
            if not kind:
                return {}
            facts = {"compression": kind}
            if kind in ("zstd", "lz4", "lzo"):
                return facts
            f.seek(at)
            facts.update(_scan(_inflated(f, kind), release))
            return facts
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error):
        return {}


def _scan(chunks: Iterator[bytes], release: str) -> dict[str, str]:
    """The banner's compiler and the ELF notes' build id, read from the stream as it passes
    (only the ELF header, the note segments and a window are kept)."""
    facts: dict[str, str] = {}
    head, window, notes = b"", b"", None
    pos = 0
    want = f"Linux version {release} (".encode()
    for out in chunks:
        if len(head) < 4096:
            head += out[:4096 - len(head)]
            if notes is None and len(head) >= 4096:     # its program headers are in there
                notes = {span: bytearray() for span in _note_spans(head)}
        for (start, size), got in (notes or {}).items():
            lo, hi = max(start, pos), min(start + size, pos + len(out))
            if lo < hi:
                got += out[lo - pos:hi - pos]
        window = window[-512:] + out
        if "compiler" not in facts:
            for m in BANNER.finditer(window):
                if m.group(0).startswith(want):
                    compiler = _version_parts(m.group(1).decode()).get("compiler")
                    if compiler:
                        facts["compiler"] = compiler
                    break
        pos += len(out)
        done = notes is not None and all(len(b) == s for (_, s), b in notes.items())
        if "compiler" in facts and done or pos > INFLATED_MAX:
            break
    for (_, size), got in (notes or {}).items():
        build_id = notes_build_id(bytes(got), head[5:6] != b"\x02") if len(got) == size \
            else None
        if build_id:
            facts["build_id"] = build_id
            break
    return facts


def _note_spans(head: bytes) -> list[tuple[int, int]]:
    """The (offset, size) of each PT_NOTE segment an ELF header lists in `head`."""
    if head[:4] != kimage.ELF or head[4] not in (1, 2) or head[5] not in (1, 2):
        return []
    end = "<" if head[5] == 1 else ">"
    wide = head[4] == 2
    phoff = struct.unpack_from(end + ("Q" if wide else "I"), head, 32 if wide else 28)[0]
    phentsize, phnum = struct.unpack_from(end + "HH", head, 54 if wide else 42)
    spans = []
    for i in range(min(phnum, 64)):
        at = phoff + i * phentsize
        if at + (56 if wide else 32) > len(head):
            break
        if wide:
            kind, _, offset, _, _, size = struct.unpack_from(end + "IIQQQQ", head, at)
        else:
            kind, offset, _, _, size = struct.unpack_from(end + "IIIII", head, at)
        if kind == PT_NOTE and 0 < size <= 1 << 16:
            spans.append((offset, size))
    return spans
