"""A bisect's revisions without git: the range's text refused before git runs, the .config
lines two kernel trees differ in, and what a kernel image says of itself (the real Debian
image, and forged ones in every compression a kernel is built with).  git itself, the
worktrees and the builds: tests/e2e/test_revisions_git.py."""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import struct
import sys
from pathlib import Path

import pytest

from hotloop.errors import HotloopError
from hotloop.host import kimage
from hotloop.perf.buildid import file_build_id
from hotloop.run import build_facts
from hotloop.run.build_facts import build_differences, kernel_image_facts
from hotloop.run.revisions import revision_range

DEBIAN = Path("/boot/vmlinuz-6.1.0-47-amd64")


# --------------------------------------------------------------------------- the range's text

@pytest.mark.parametrize("spec, said", [
    ("v1\n..v2", r"revision range 'v1\n..v2': it holds a control character"),
    ("v1..v2\x1b[2J", r"'v1..v2\x1b[2J': it holds a control character"),
    ("--output=x..HEAD", "'--output=x' looks like an option, not a revision"),
    ("HEAD~3..-p", "'-p' looks like an option"),
    ("v1", "revision range 'v1': not a range: give GOOD..BAD"),
    ("v1...v2", "A...B is a symmetric difference, not a range"),
    ("..v2", "give both ends: GOOD..BAD"),
    ("v1..", "give both ends"),
])
def test_a_range_text_that_is_none_is_refused_before_git_runs(tmp_path, spec, said):
    # tests/unit refuses to start a process: git run here would fail the test otherwise
    with pytest.raises(HotloopError) as e:
        revision_range(tmp_path, spec)
    assert said in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- .config

def tree(root: Path, config: str | None) -> Path:
    root.mkdir()
    if config is not None:
        (root / ".config").write_text(config)
    return root


def test_the_config_lines_that_differ_by_option_as_config_writes_them(tmp_path):
    good = tree(tmp_path / "good", "#\n# Linux/x86 6.9.0 Kernel Configuration\n#\n"
                "CONFIG_A=y\nCONFIG_B=m\n# CONFIG_C is not set\nCONFIG_D=\"x\"\nCONFIG_F=1\n")
    bad = tree(tmp_path / "bad", "#\n# Linux/x86 6.10.0 Kernel Configuration\n#\n"
               "CONFIG_F=1\nCONFIG_A=y\nCONFIG_B=y\nCONFIG_C=y\nCONFIG_E=y\n")
    assert build_differences(good, bad) == [
        "-CONFIG_B=m", "+CONFIG_B=y", "-# CONFIG_C is not set", "+CONFIG_C=y",
        '-CONFIG_D="x"', "+CONFIG_E=y"]
    assert build_differences(bad, bad) == []


def test_no_config_on_either_side_is_no_difference_and_one_side_is_all_its_lines(tmp_path):
    a, b = tree(tmp_path / "a", None), tree(tmp_path / "b", None)
    assert build_differences(a, b) == []
    c = tree(tmp_path / "c", "CONFIG_X=y\n# CONFIG_Y is not set\n")
    assert build_differences(a, c) == ["+CONFIG_X=y", "+# CONFIG_Y is not set"]
    assert build_differences(c, a) == ["-CONFIG_X=y", "-# CONFIG_Y is not set"]


def test_at_most_forty_config_lines_then_how_many_more(tmp_path):
    a = tree(tmp_path / "a", "".join(f"CONFIG_N{i:03}=y\n" for i in range(30)))
    b = tree(tmp_path / "b", "".join(f"CONFIG_N{i:03}=m\n" for i in range(30)))
    lines = build_differences(a, b)
    assert len(lines) == 41 and lines[-1] == "... 20 more"
    assert lines[:4] == ["-CONFIG_N000=y", "+CONFIG_N000=m", "-CONFIG_N001=y", "+CONFIG_N001=m"]


def test_a_config_that_cannot_be_read_is_a_line_and_its_text_is_made_visible(tmp_path):
    a = tree(tmp_path / "a", 'CONFIG_LOCALVERSION="-\x1b[31mred"\n')
    b = tree(tmp_path / "b", 'CONFIG_LOCALVERSION=""\n')
    assert build_differences(a, b) == ['-CONFIG_LOCALVERSION="-\\x1b[31mred"',
                                       '+CONFIG_LOCALVERSION=""']
    odd = tree(tmp_path / "odd", None)
    (odd / ".config").mkdir()
    assert build_differences(a, odd) == [f"{odd}/.config: not a regular file"]
    fifo = tree(tmp_path / "fifo", None)
    os.mkfifo(fifo / ".config")                 # opened without blocking, refused
    assert build_differences(fifo, a) == [f"{fifo}/.config: not a regular file"]


# --------------------------------------------------------------------------- kernel images

@pytest.mark.skipif(not DEBIAN.is_file(), reason=f"{DEBIAN} is not on this machine "
                    "(.ci/run installs linux-image-6.1.0-47-amd64)")
def test_the_debian_image_says_its_release_compiler_and_build_id(tmp_path):
    facts = kernel_image_facts(DEBIAN)
    assert facts["version"].startswith("6.1.0-47-amd64 (debian-kernel@lists.debian.org) #1 SMP")
    assert facts["release"] == "6.1.0-47-amd64" == kimage.image_release(DEBIAN)
    assert facts["built_by"] == "debian-kernel@lists.debian.org"
    assert facts["build"].startswith("#1 SMP PREEMPT_DYNAMIC Debian 6.1.")
    assert facts["compression"] == "xz"
    # the compiler its config names, and the build id of the whole kernel decompressed
    config = (Path("/boot") / "config-6.1.0-47-amd64").read_text()
    cc = next(ln.split("=", 1)[1].strip('"') for ln in config.splitlines()
              if ln.startswith("CONFIG_CC_VERSION_TEXT="))
    assert facts["compiler"].startswith(cc + ", GNU ld")
    data = DEBIAN.read_bytes()
    at = kimage.payload_offset(data[:0x250])
    assert at is not None
    vmlinux = tmp_path / "vmlinux"
    vmlinux.write_bytes(lzma.LZMADecompressor().decompress(data[at:]))
    assert facts["build_id"] == file_build_id(vmlinux) and len(facts["build_id"]) == 40


@pytest.mark.parametrize("make", [
    lambda d: d.write_text("CONFIG_X=y\n"),                          # text
    lambda d: d.write_bytes(Path(sys.executable).read_bytes()[:1 << 16]),  # an ELF
    lambda d: d.write_bytes(b""),                                    # empty
    lambda d: d.write_bytes(b"\0" * 0x202 + b"HdrS"),                # the magic, no version
    lambda d: d.mkdir(),                                             # a directory
    lambda d: os.mkfifo(d),                                          # a FIFO: never opened
    lambda d: None,                                                  # nothing there
])
def test_a_file_that_is_no_bzimage_says_nothing(tmp_path, make):
    image = tmp_path / "image"
    make(image)
    assert kernel_image_facts(image) == {}


BANNER = b"Linux version 6.9.0-test (builder@host) (gcc (GCC) 13.2.0, GNU ld 2.41) #1 SMP\n"
BUILD_ID = bytes(range(20))


def fake_vmlinux(banner_at: int = (2 << 20) - 40, size: int = 3 << 20) -> bytes:
    """An ELF64 with one PT_NOTE (a GNU build id) at 0x1000 and the banner straddling the
    decompressor's second chunk boundary."""
    elf = bytearray(size)
    elf[:16] = b"\x7fELF\x02\x01\x01" + bytes(9)
    struct.pack_into("<Q", elf, 32, 64)                     # e_phoff
    struct.pack_into("<HH", elf, 54, 56, 1)                 # e_phentsize, e_phnum
    note = struct.pack("<III", 4, 20, 3) + b"GNU\0" + BUILD_ID
    struct.pack_into("<IIQQQQQQ", elf, 64, 4, 0, 0x1000, 0, 0, len(note), len(note), 4)
    elf[0x1000:0x1000 + len(note)] = note
    elf[banner_at:banner_at + len(BANNER)] = BANNER
    return bytes(elf)


def fake_bzimage(path: Path, payload: bytes, version: bytes = b"6.9.0-test (builder@host) "
                 b"#1 SMP PREEMPT_DYNAMIC") -> Path:
    """A bzImage's header (protocol 2.15, one setup sector) and its payload at 0x400."""
    head = bytearray(0x400)
    head[0x1F1] = 1
    head[0x202:0x206] = b"HdrS"
    head[0x206:0x208] = (0x20F).to_bytes(2, "little")
    head[0x20E:0x210] = (0x300 - 0x200).to_bytes(2, "little")
    head[0x300:0x300 + len(version)] = version
    struct.pack_into("<II", head, 0x248, 0, len(payload))
    path.write_bytes(bytes(head) + payload)
    return path


@pytest.mark.parametrize("kind, compress", [
    ("gzip", gzip.compress), ("xz", lambda b: lzma.compress(b, lzma.FORMAT_XZ)),
    ("lzma", lambda b: lzma.compress(b, lzma.FORMAT_ALONE)), ("bzip2", bz2.compress)])
def test_a_built_image_says_its_compiler_and_build_id_in_each_compression(tmp_path, kind, compress):
    image = fake_bzimage(tmp_path / "bzImage", compress(fake_vmlinux()) + b"\0\0\0\0")
    assert kernel_image_facts(image) == {
        "version": "6.9.0-test (builder@host) #1 SMP PREEMPT_DYNAMIC", "release": "6.9.0-test",
        "built_by": "builder@host", "build": "#1 SMP PREEMPT_DYNAMIC", "compression": kind,
        "compiler": "gcc (GCC) 13.2.0, GNU ld 2.41", "build_id": BUILD_ID.hex()}


def test_an_image_python_cannot_decompress_says_its_version_and_compression(tmp_path):
    image = fake_bzimage(tmp_path / "bzImage", b"\x28\xb5\x2f\xfd" + bytes(100))
    assert kernel_image_facts(image) == {
        "version": "6.9.0-test (builder@host) #1 SMP PREEMPT_DYNAMIC", "release": "6.9.0-test",
        "built_by": "builder@host", "build": "#1 SMP PREEMPT_DYNAMIC", "compression": "zstd"}
    broken = fake_bzimage(tmp_path / "broken", b"\x1f\x8b" + bytes(100))   # not gzip after all
    assert kernel_image_facts(broken)["release"] == "6.9.0-test"


def test_a_version_with_the_compiler_in_it_and_control_characters_made_visible(tmp_path):
    image = fake_bzimage(tmp_path / "bzImage", b"", b"6.9.0-x (me@box) (gcc (GCC) 13.2.0) "
                         b"#2 SMP \x1b[2J")
    facts = kernel_image_facts(image)
    assert (facts["release"], facts["built_by"], facts["compiler"], facts["build"]) == (
        "6.9.0-x", "me@box", "gcc (GCC) 13.2.0", "#2 SMP")    # the ESC ends the string
    unbalanced = fake_bzimage(tmp_path / "u", b"", b"6.9.0-y (me@box #3")
    assert kernel_image_facts(unbalanced) == {"version": "6.9.0-y (me@box #3",
                                              "release": "6.9.0-y", "build": "(me@box #3"}


def test_a_decompression_bomb_is_read_only_so_far(tmp_path, monkeypatch):
    monkeypatch.setattr(build_facts, "INFLATED_MAX", 4 << 20)
    image = fake_bzimage(tmp_path / "bzImage", gzip.compress(bytes(64 << 20), 1))
    read = []
    inflated = build_facts._inflated

    def counted(f, kind):
        for chunk in inflated(f, kind):
            read.append(len(chunk))
            yield chunk
    monkeypatch.setattr(build_facts, "_inflated", counted)
    facts = kernel_image_facts(image)
    assert facts["compression"] == "gzip" and "compiler" not in facts
    assert 4 << 20 < sum(read) <= (4 << 20) + build_facts.CHUNK and max(read) <= build_facts.CHUNK
