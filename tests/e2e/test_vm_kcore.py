"""Annotating a kernel symbol from /proc/kcore, for real: this machine's kernel has no
/proc/kcore (CONFIG_PROC_KCORE), so `hotloop annotate` of a kernel symbol with no --vmlinux
is refused here (tests/e2e/test_annotate.py).  A guest of Debian's 6.1 kernel has one, and runs
as root: in one boot (emulated, virtme-ng with this machine's root read-only over 9p, as a VM
session's) a session keeps its perf data and `hotloop annotate` shows its hottest kernel
symbol's instructions, from /proc/kcore.  One boot: about 6 minutes on this machine at a load
of 15 (the boot 1.5, the session's perf 3, the annotate 1)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_vm import APPEND, BOOT_S, IMAGE, VENV_BIN, vm_env

from hotloop.host.procs import child_setup
from hotloop.run import guest

pytestmark = pytest.mark.xdist_group("vm")

# In the guest: a session with its perf data kept, then annotate of its hottest kernel symbol
# that perf named; what each said, in a file of the shared directory.
GUEST = """\
import contextlib, io, json, os, sys
from hotloop import results
from hotloop.cli import main
d = sys.argv[1]
out = d + "/kcore.jsonl"


def hotloop(*argv):
    # in this one process: hotloop's modules are read over 9p once, not once a command
    said, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return code, said.getvalue(), err.getvalue()[-3000:]


# the session's guest init kept udev out: no udevd ran, its directory hidden
said = {"udevd_ran": os.path.exists("/run/udev/control"),
        "hidden": [ln.split()[1] for ln in open("/proc/mounts")
                   if ln.startswith("hotloop-no-udev ")]}
code, _, err = hotloop("run", "syscall", "--runs", "2", "--warmup", "0", "--perf",
                       "--keep-perf", "--param", "calls=20000", "--out", out)
said.update(run=code, run_stderr=err)
if code == 0:
    res = results.read(out)
    kernel = [s for s in res.session_symbols.symbols if s.kernel and s.named]
    if kernel:
        said["symbol"] = kernel[0].symbol
        code, stdout, err = hotloop("annotate", out, kernel[0].symbol)
        said.update(annotate=code, stdout=stdout, stderr=err)
with open(d + "/said.json", "w") as f:
    json.dump(said, f)
"""


@pytest.mark.skipif(not IMAGE.exists(), reason=f"needs {IMAGE}")
@pytest.mark.skipif(not Path(VENV_BIN, "virtme-run").exists(), reason="needs virtme-ng")
def test_a_kernel_symbol_annotates_from_proc_kcore_in_a_guest_that_has_it(tmp_path, leftovers):
    d = tmp_path / "shared"
    for sub in ("config", "state", "tmp", "system"):
        (d / sub).mkdir(parents=True)
    env = vm_env()
    # built here first, as a VM session's workload is: the guest's root is read-only
    env_here = {**env, "XDG_CONFIG_HOME": str(d / "config")}
    built = subprocess.run([sys.executable, "-m", "hotloop", "run", "syscall", "--runs", "1",
                            "--warmup", "0", "--no-perf", "--param", "calls=1000", "--out",
                            str(tmp_path / "here.jsonl")], capture_output=True, text=True,
                           env=env_here, timeout=300)
    assert built.returncode == 0, built.stderr
    (d / "guest.py").write_text(GUEST)
    # the guest's environment as a VM session's (its directories, perf without the modules'
    # walk, bounds 20 times longer): that program's exports, then this test's program
    exports = [line for line in guest.guest_program(d, [], 20).splitlines()
               if line.startswith("export ")]
    (d / "guest.sh").write_text("\n".join([
        *exports, f"cd {shlex.quote(str(d))} || exit 1",
        shlex.join([sys.executable, str(d / "guest.py"), str(d)])]) + "\n")
    init = d / guest.INIT_FILE                  # udev kept out of the boot, as a session's
    init.write_text(guest.INIT)
    init.chmod(0o700)
    wrapper = tmp_path / "qemu"                 # qemu dies with virtme-run, as a session's
    wrapper.write_text(guest.QEMU_WRAPPER.format(
        qemu=shlex.quote("qemu-system-x86_64"), booting=guest.BOOTING,
        console=shlex.quote(str(tmp_path / "console")), init=guest.init_sed(init)))
    wrapper.chmod(0o700)
    (tmp_path / "virtme").mkdir()
    argv = [str(Path(VENV_BIN, "virtme-run")), "--kimg", str(IMAGE), "--mods", "auto",
            "--memory", "1G", "--cpus", "1", "--rwdir", str(d), "--qemu-bin", str(wrapper),
            "--disable-kvm", *[f"--kopt={word}" for word in APPEND.split()],
            "--script-sh", f"sh {shlex.quote(str(d / 'guest.sh'))}"]
    subprocess.run(argv, capture_output=True, text=True, timeout=2 * BOOT_S,
                   env={**env, "TMPDIR": str(tmp_path / "virtme")},
                   preexec_fn=child_setup(os.getpid()))
    said = json.loads((d / "said.json").read_text())
    assert not said["udevd_ran"] and "/usr/lib/systemd" in said["hidden"], said
    assert said["run"] == 0, said["run_stderr"]
    assert "symbol" in said, "no kernel symbol named in the guest's session"
    assert said["annotate"] == 0, said["stderr"]
    lines = said["stdout"].splitlines()
    # the title says where the code came from; the instructions follow, the hottest marked
    assert lines[0].startswith(f"{said['symbol']} in [kernel.kallsyms]: "), lines[:3]
    assert lines[0].endswith("; the kernel's code from /proc/kcore"), lines[0]
    assert sum(1 for ln in lines if ln.strip().startswith("ffffffff")) > 1, lines[:10]
    assert any(ln.rstrip().endswith("◀") for ln in lines), lines[:40]
    assert leftovers() == []
