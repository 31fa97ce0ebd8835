"""Kernel images on this machine: whether a file is one qemu can boot, its release, and
whether its kernel can mount this machine's root over 9p (virtme-ng's guest root).
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

# The x86 boot protocol: a bzImage holds "HdrS" at 0x202 and, at 0x20e, the offset (from
# 0x200) of its version string ("6.1.0-47-amd64 (debian-kernel@...) #1 SMP ...").
MAGIC_AT, MAGIC = 0x202, b"HdrS"
VERSION_PTR_AT = 0x20E
# Its length: the setup's sectors (the byte at 0x1f1; 0 means 4) plus the boot sector, then
# the protected-mode kernel, 0x1f4's syssize in 16-byte units (32 bits from protocol 2.04,
# the version at 0x206; 16 before).  A signed image carries more after it, never less.
SETUP_SECTS_AT, SYSSIZE_AT, PROTOCOL_AT = 0x1F1, 0x1F4, 0x206
# From protocol 2.08 the setup header says where the compressed kernel (vmlinux) lies: at
# 0x248 its offset from the protected-mode code's start, at 0x24c its length.
PAYLOAD_AT, PAYLOAD_PROTOCOL = 0x248, 0x208
ELF = b"\x7fELF"
# the modules or built-in options virtme-ng's guest needs for a 9p root over virtio
NINEP_MODULES = ("9p.ko", "9pnet.ko", "9pnet_virtio.ko")
NINEP_CONFIG = ("CONFIG_9P_FS", "CONFIG_NET_9P", "CONFIG_NET_9P_VIRTIO")


def image_problem(path: Path) -> str | None:
    """Why `path` is not a kernel image qemu boots (x86 bzImage), or None."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"no such file: {path}"
    except OSError as e:
        return f"{path}: {e.strerror}"
    if stat.S_ISDIR(st.st_mode):
        return (f"{path} is a directory, not a kernel image (a built tree's is "
                f"arch/x86/boot/bzImage)")
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    try:
        with open(path, "rb") as f:
            head = f.read(0x210)
    except OSError as e:
        return f"{path}: cannot read: {e.strerror}"
    if head[MAGIC_AT:MAGIC_AT + 4] == MAGIC:
        expected = declared_size(head)
        if st.st_size < expected:
            return (f"{path} is truncated: {st.st_size} bytes, where its boot header says "
                    f"{expected} (setup_sects and syssize)")
        return None
    if head[:4] == ELF:
        return (f"{path} is an ELF file, not a bootable kernel image (for a built tree: "
                f"arch/x86/boot/bzImage, not vmlinux)")
    return f"{path} is not a kernel image (no bzImage header 'HdrS' at 0x202)"


def declared_size(head: bytes) -> int:
    """A bzImage's length as its setup header gives it (its first 0x210 bytes)."""
    setup_sects = head[SETUP_SECTS_AT] or 4
    protocol = int.from_bytes(head[PROTOCOL_AT:PROTOCOL_AT + 2], "little")
    width = 4 if protocol >= 0x204 else 2
    syssize = int.from_bytes(head[SYSSIZE_AT:SYSSIZE_AT + width], "little")
    return (setup_sects + 1) * 512 + syssize * 16


def payload_offset(head: bytes) -> int | None:
    """Where a bzImage's compressed kernel starts in its file (its first 0x250 bytes), or
    None when its boot protocol is older than 2.08 and says not."""
    protocol = int.from_bytes(head[PROTOCOL_AT:PROTOCOL_AT + 2], "little")
    if len(head) < PAYLOAD_AT + 8 or protocol < PAYLOAD_PROTOCOL:
        return None
    return (head[SETUP_SECTS_AT] or 4) * 512 + 512 + int.from_bytes(
        head[PAYLOAD_AT:PAYLOAD_AT + 4], "little")


def image_release(path: Path) -> str:
    """The release a bzImage says it is ("6.1.0-47-amd64"), or "" when it says none."""
    return image_version(path).split(" ", 1)[0][:64]


def image_version(path: Path) -> str:
    """The version string a bzImage holds, as `file` reads it ("6.1.0-47-amd64
    (debian-kernel@lists.debian.org) #1 SMP PREEMPT_DYNAMIC Debian 6.1.170-3 (2026-05-08)"),
    or "" when it holds none: printable ASCII only, at most 256 characters."""
    try:
        with open(path, "rb") as f:
            head = f.read(0x210)
            if head[MAGIC_AT:MAGIC_AT + 4] != MAGIC:
                return ""
            ptr = int.from_bytes(head[VERSION_PTR_AT:VERSION_PTR_AT + 2], "little")
            if not ptr:
                return ""
            f.seek(ptr + 0x200)
            text = f.read(256)
    except OSError:
        return ""
    m = re.match(rb"[\x21-\x7e][\x20-\x7e]{0,255}", text)
    return m.group().decode().rstrip() if m else ""


def sha256(path: Path) -> str:
    """The image's SHA-256 (taken each session: a rebuilt tree's bzImage changes in place)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def ninep_problem(release: str, modules: Path = Path("/lib/modules"),
                  boot: Path = Path("/boot")) -> str | None:
    """Why a kernel of `release` cannot mount this machine's root over 9p, or None: its
    modules (virtme-ng loads them from /lib/modules/RELEASE) or its config built in."""
    if not release:
        return "the image names no release: its 9p support cannot be checked"
    config: dict[str, str] = {}
    try:
        for line in (boot / f"config-{release}").read_text(errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                config[key] = value
    except OSError:
        pass
    missing = []
    mods = modules / release
    found = {p.name.split(".ko")[0] + ".ko" for p in mods.rglob("*.ko*")} if mods.is_dir() \
        else set()
    for mod, option in zip(NINEP_MODULES, NINEP_CONFIG):
        if config.get(option) == "y" or mod in found:
            continue
        missing.append(mod.removesuffix(".ko"))
    if not missing:
        return None
    where = f"{mods}" if mods.is_dir() else f"no {mods}"
    return (f"kernel {release} lacks {', '.join(missing)} ({where}; the generic "
            f"linux-image-*-amd64 kernels carry them, the cloud flavour does not)")
