"""perf annotate's output read into instructions, and two builds' instructions aligned."""
from __future__ import annotations

import os
import struct

import pytest

from hotloop import events as ev
from hotloop.perf.annotate import Annotation, Instruction, align, parse
from hotloop.perf.buildid import (
    build_ids,
    file_build_id,
    kernel_build_id,
    mapped_files,
    notes_build_id,
    read_ids,
)
from hotloop.render import annotation

# `perf annotate --stdio --show-nr-samples -s __GI___getppid` of a run (perf 6.1)
GETPPID = """\
 Samples |\tSource code & Disassembly of libc.so.6 for cpu-clock:pppH (345 samples, percent: local period)
--------------------------------------------------------------------------------------------------------------
         :
         :
         :
         : 3     Disassembly of section .text:
         :
         : 5     00000000000d54f0 <getppid>:
         : 6     __GI_getppid():
         : 7     ./posix/../sysdeps/unix/syscall-template.S:91
       3 :   d54f0:  mov    $0x6e,%eax
       0 :   d54f5:  syscall
         : 10    ./posix/../sysdeps/unix/syscall-template.S:93
     342 :   d54f7:  ret
"""


def test_perfs_lines_become_instructions_with_their_source_lines():
    dso, insns = parse(GETPPID)
    assert dso == "libc.so.6"
    assert [(i.offset, i.text, i.samples) for i in insns] == [
        (0xd54f0, "mov    $0x6e,%eax", 3), (0xd54f5, "syscall", 0), (0xd54f7, "ret", 342)]
    assert insns[0].source == "./posix/../sysdeps/unix/syscall-template.S:91"
    assert insns[1].source == "" and insns[2].source.endswith(":93")


def test_shares_and_the_hottest_marked():
    a = Annotation("getppid", "libc.so.6", parse(GETPPID)[1], files=1)
    assert a.samples == 345 and a.hottest().text == "ret"
    assert round(a.share(a.instructions[2]), 1) == 99.1
    out = annotation.text(a).splitlines()
    assert out[0] == "getppid in libc.so.6: 345 samples in 1 perf window"
    assert out[-1].endswith("ret  ◀") and "99.1%" in out[-1]
    assert not out[-3].endswith("◀")                      # 3 samples: not hot
    by_share = annotation.text(a, by_share=True).splitlines()
    assert [ln.split()[-2 if ln.endswith("◀") else -1] for ln in by_share[2:]] == \
        ["ret", "$0x6e,%eax"]                             # sampled ones, hottest first


def _insns(*spec: tuple[int, str, int]) -> list[Instruction]:
    return [Instruction(o, t, n) for o, t, n in spec]


def test_the_same_build_aligns_by_address():
    a = Annotation("f", "x.so", _insns((0x10, "mov %rdi,%rax", 5), (0x13, "ret", 1)))
    b = Annotation("f", "x.so", _insns((0x10, "mov %rdi,%rax", 1), (0x13, "ret", 5)))
    assert [(x.offset, y.offset) for x, y in align(a, b)] == [(0x10, 0x10), (0x13, 0x13)]
    table = annotation.side_by_side(a, b, ("stock", "patched")).splitlines()
    assert table[3].split()[:3] == ["83.3%", "16.7%", "-66.7pp"]


def test_another_build_aligns_by_the_sequence_of_mnemonics():
    a = Annotation("f", "x.so", _insns((0x10, "stac", 9), (0x13, "mov %eax,(%rdx)", 1),
                                       (0x15, "clac", 0), (0x18, "ret", 0)))
    b = Annotation("f", "x.so", _insns((0x20, "stac", 5), (0x23, "lfence", 5),
                                       (0x26, "mov %ecx,(%rsi)", 0), (0x28, "clac", 0),
                                       (0x2b, "ret", 0)))
    pairs = [(x.text if x else None, y.text if y else None) for x, y in align(a, b)]
    assert pairs == [("stac", "stac"), (None, "lfence"), ("mov %eax,(%rdx)", "mov %ecx,(%rsi)"),
                     ("clac", "clac"), ("ret", "ret")]


def _note(kind: int, name: bytes, desc: bytes) -> bytes:
    pad = lambda b: b + b"\0" * (-len(b) % 4)
    return struct.pack("<III", len(name), len(desc), kind) + pad(name) + pad(desc)


def _elf(notes: bytes, phnum: int = 1) -> bytes:
    """A minimal 64-bit little-endian ELF: the header, one PT_NOTE program header, notes."""
    header = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, 0, 0, 64, 56, phnum, 64, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 4, 4, 64 + 56, 0, 0, len(notes), len(notes), 4)
    return header + phdr + notes


def test_build_ids_are_read_from_elf_notes_and_kernel_notes(tmp_path):
    build = bytes(range(20))
    notes = _note(1, b"GNU\0", b"abi!") + _note(3, b"GNU\0", build)
    (tmp_path / "a.so").write_bytes(_elf(notes))
    assert file_build_id(tmp_path / "a.so") == build.hex()
    assert notes_build_id(notes) == build.hex()             # /sys/kernel/notes' shape
    # what is not one: another vendor's note, not ELF, cut short, forged sizes, gone
    (tmp_path / "b.so").write_bytes(_elf(_note(3, b"XYZ\0", build)))
    (tmp_path / "c.so").write_bytes(b"#!/bin/sh\n")
    (tmp_path / "d.so").write_bytes(_elf(notes)[:100])
    (tmp_path / "e.so").write_bytes(_elf(notes, phnum=60000))
    (tmp_path / "f.so").write_bytes(_elf(struct.pack("<III", 4, 2**31, 3) + b"GNU\0"))
    for name in "bcdef":
        assert file_build_id(tmp_path / f"{name}.so") is None, name
    assert file_build_id(tmp_path / "gone.so") is None
    os.mkfifo(tmp_path / "fifo.so")                         # never blocks on one
    assert file_build_id(tmp_path / "fifo.so") is None
    assert file_build_id("/proc/self/exe")                  # this Python's, a real one
    kernel = kernel_build_id()
    assert kernel is None or len(kernel) >= 16


def test_a_runs_build_ids_map_perfs_names_to_the_files_mapped():
    mapped = mapped_files(os.getpid())
    python = os.path.realpath("/proc/self/exe")
    assert python in mapped
    ids = build_ids(["[kernel.kallsyms]", os.path.basename(python), "[vdso]", "[unknown]",
                     "not-mapped.so"], read_ids(mapped))
    assert ids[os.path.basename(python)] == file_build_id(python)
    assert set(ids) <= {"[kernel.kallsyms]", os.path.basename(python)}
    assert mapped_files(2**22 + 12345) == set()             # no such process: none


def test_a_result_line_with_a_forged_build_id_is_refused():
    line = {"type": "hot_symbols", "symbols": [], "scope": "session",
            "build_ids": {"libc.so.6": "93ac61ec"}}
    assert ev.from_json(line).build_ids == {"libc.so.6": "93ac61ec"}
    for bad in ("93ac\n61ec", "", "zz", 12, "a" * 130):
        with pytest.raises(ValueError, match="build_ids: libc.so.6: "):
            ev.from_json({**line, "build_ids": {"libc.so.6": bad}})


def test_a_kernel_modules_build_is_checked_as_a_module_not_as_a_file():
    """perf names a module's DSO "[nf_tables]": its build id is the loaded module's."""
    from hotloop.errors import HotloopError
    from hotloop.perf.annotate import _check_build
    with pytest.raises(HotloopError, match=r"kernel module no_such_mod is not the one the run "
                                           r"sampled \(build id none: not loaded, then ab"):
        _check_build("[no_such_mod]", {"[no_such_mod]": "ab" * 20}, None)
    _check_build("[no_such_mod]", {}, None)                 # nothing recorded: nothing to say
