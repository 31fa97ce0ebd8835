"""perf annotate's output read into instructions, and two builds' instructions aligned."""
from __future__ import annotations

from hotloop.perf.annotate import Annotation, Instruction, align, parse
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
