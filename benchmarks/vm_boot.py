"""What does a VM session's boot cost, with udev kept out of it and as virtme-ng left it?

A session in a VM (run/vm.py) boots its kernel with virtme-ng, and virtme-ng-init coldplugs
udev whenever the root holds systemd-udevd, waiting for it to settle: in an emulated guest
every device's rules and module looked up over 9p.  The guest's init of a session
(run/guest.py's INIT) names virtme-ng's script ports itself and hides udevd.  Each row is a
whole session of a tiny run (`hotloop run syscall --kernel K --runs 1`, its boot, the
guest's hotloop, the run, the power-off), in a fresh process of this Python: once as
hotloop runs it, once with the wrapper's rewrite of the init left out (udev as virtme-ng
starts it), the two interleaved round by round, in turn first.  The median wall time and
the median CPU time of the session's processes (qemu's emulation the most of it: the work,
which a busy machine stretches less than the wall clock), each with its ratio to the session
with udev.

    python benchmarks/vm_boot.py [--rounds 3] [--image /boot/vmlinuz-6.1.0-47-amd64]
                                 [--append "module_blacklist=..."]

Under KVM where hotloop's probe finds it usable (its answer cached by the warm-up session),
emulated (TCG) elsewhere: then a whole CPU for qemu while it runs, and the machine's load
moves the seconds (the ratio less).
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = {
    "udev kept out (hotloop's guest init)": "",
    "udev coldplugged (virtme-ng-init's boot as it was)":
        "from hotloop.run import guest; guest.init_sed = lambda init: ''; ",
}
REFERENCE = "udev coldplugged (virtme-ng-init's boot as it was)"
SESSION = ("import sys; {toggle}from hotloop.cli import main; "
           "raise SystemExit(main(sys.argv[1:]))")


def profiles(d: Path, image: Path, append: str) -> Path:
    d.mkdir()
    (d / "vm.toml").write_text(f'[kernel.vm]\nimage = "{image}"\ncpus = 1\n'
                               + (f'append = "{append}"\n' if append else "")
                               + '[cpu.one]\ncpus = [1]\n')
    return d


def cpu_of_children() -> float:
    """CPU seconds of the processes this one has waited for, theirs included (qemu's, under
    virtme-run, under hotloop)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def once(toggle: str, prof: Path, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole session in a VM."""
    argv = ["run", "syscall", "--kernel", "vm", "--cpu", "one", "--runs", "1", "--warmup",
            "0", "--no-perf", "--param", "calls=1000", "--out", str(out), "--force",
            "--profiles", str(prof)]
    t, cpu = time.perf_counter(), cpu_of_children()
    p = subprocess.run([sys.executable, "-c", SESSION.format(toggle=toggle), *argv],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                       timeout=1800)
    wall, cpu = time.perf_counter() - t, cpu_of_children() - cpu
    if p.returncode != 0:
        raise SystemExit(f"a session: exit {p.returncode}: {p.stderr.strip()[-500:]}")
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--image", type=Path, default=Path("/boot/vmlinuz-6.1.0-47-amd64"))
    ap.add_argument("--append", default="", help="the kernel profile's append")
    args = ap.parse_args()
    env = dict(os.environ)
    # virtme-run beside this Python (the vm extra)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in ROWS}
    with tempfile.TemporaryDirectory(prefix="hotloop-vm-boot-") as tmp:
        prof = profiles(Path(tmp) / "prof", args.image, args.append)
        env["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        env["XDG_STATE_HOME"] = str(Path(tmp) / "state")
        once("", prof, Path(tmp) / "warm.jsonl", env)      # the build, the page cache: uncounted
        names = list(ROWS)
        for r in range(args.rounds):
            for name in names[r % 2:] + names[:r % 2]:      # in turn first
                times[name].append(once(ROWS[name], prof, Path(tmp) / "r.jsonl", env))
                wall, cpu = times[name][-1]
                print(f"  round {r + 1}: {name}: {wall:.1f} s, CPU {cpu:.1f} s",
                      file=sys.stderr)
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds, interleaved; {args.image.name}, append "
          f"{args.append[:40] + '...' if len(args.append) > 40 else args.append or '(none)'}; "
          f"load {load:.1f} at the end")
    ref = [statistics.median(t[i] for t in times[REFERENCE]) for i in (0, 1)]
    print(f"| {'a session in a VM (boot, 1 tiny run, power-off)':<52} | wall | x udev "
          f"| CPU | x udev |")
    print(f"| {'-' * 52} | ---: | ---: | ---: | ---: |")
    for name in ROWS:
        wall, cpu = (statistics.median(t[i] for t in times[name]) for i in (0, 1))
        print(f"| {name:<52} | {wall:.1f} s | {wall / ref[0]:.2f} | {cpu:.1f} s "
              f"| {cpu / ref[1]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
