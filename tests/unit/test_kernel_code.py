"""Why a kernel symbol does not annotate, by what of /proc/kcore is missing: the file (a kernel
built without it, as on this kind of VM), or perf's use of one that is there (root: readable);
and where an annotation's kernel code came from, in its title."""
from __future__ import annotations

from hotloop.perf import annotate
from hotloop.perf.annotate import Annotation, Instruction
from hotloop.render import annotation


def test_the_refusal_says_what_of_kcore_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(annotate, "KCORE", str(tmp_path / "kcore"))
    gone = annotate.no_kernel_code()
    assert f"this kernel has no {tmp_path / 'kcore'} (CONFIG_PROC_KCORE)" in gone
    assert "--vmlinux PATH" in gone and "perf buildid-cache" in gone
    (tmp_path / "kcore").write_bytes(b"\x7fELF")
    there = annotate.no_kernel_code()
    assert "perf did not read the kernel's code from" in there and "--vmlinux PATH" in there
    assert annotate.kernel_code_here() == f"{tmp_path / 'kcore'} readable"


def test_an_annotation_names_where_its_kernel_code_came_from():
    a = Annotation("do_syscall_64", "[kernel.kallsyms]", [Instruction(0, "push %rbp", 3)],
                   files=2, code="/proc/kcore")
    assert annotation.text(a).splitlines()[0].endswith("; the kernel's code from /proc/kcore")
    assert annotation.document(a)["code"] == "/proc/kcore"
    user = Annotation("hl_run", "libx.so", [Instruction(0, "add $1,%r14", 3)], files=1)
    assert "kernel's code" not in annotation.text(user) and annotation.document(user)["code"] is None
