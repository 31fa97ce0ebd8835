"""What does starting hotloop cost?  Each command against the interpreter's own start.

Every session starts processes: the command, and a worker per plan; a session in a VM or on
a remote host starts `hotloop run --format events` there too, where an emulated guest reads
each module over 9p at a fraction of this CPU's speed.  So what matters is how much a start
imports.  Each row is run --rounds times, the rows interleaved round by round, in fresh
processes of this same Python, from an empty directory; the median wall time, its ratio to
`python -c pass` and the modules the process had loaded at its exit.  A profile directory
of 10,000 small TOML files (made here) is timed beside the bundled profiles alone.

    python benchmarks/startup.py [--rounds 15] [--against CHECKOUT]

--against runs every row with another checkout's code too (its tui/ as hotloop), in the same
rounds, and gives the ratio of this one's time to that one's.

Inside an emulated guest (how a VM session sees it), with this machine's root:

    virtme-run --kimg /boot/vmlinuz-6.1.0-47-amd64 --mods auto --disable-kvm --memory 1G \\
        --script-sh "cd $PWD && .venv/bin/python benchmarks/startup.py --rounds 3"
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Counts sys.modules when the process exits, whatever way it exits (the command's sys.exit).
COUNT = ("import atexit, sys; atexit.register(lambda: open('modules', 'w').write("
         "str(len(sys.modules)))); ")
RUN = ("sys.argv = ['hotloop', *{argv!r}]; import runpy; "
       "runpy.run_module('hotloop', run_name='__main__')")

ROWS: list[tuple[str, str]] = [
    ("python -c pass (the reference)", "pass"),
    ("the worker's imports", "import hotloop.run.worker"),
    ("hotloop -V", RUN.format(argv=["-V"])),
    ("hotloop list", RUN.format(argv=["list"])),
    ("hotloop list plans (the bundled profiles)", RUN.format(argv=["list", "plans"])),
    ("hotloop list plans --profiles DIR (10,000 small TOML files)",
     RUN.format(argv=["list", "plans", "--profiles", "../many"])),
    ("hotloop run --format events (a VM guest's, a remote host's; 1 tiny run)",
     RUN.format(argv=["run", "syscall", "--runs", "1", "--warmup", "0", "--no-perf",
                      "--param", "calls=1000", "--format", "events", "--out", "r.jsonl",
                      "--force"])),
    ("hotloop run (text; 1 tiny run)",
     RUN.format(argv=["run", "syscall", "--runs", "1", "--warmup", "0", "--no-perf",
                      "--param", "calls=1000", "--out", "r.jsonl", "--force"])),
]


MANY = 10_000


def many(d: Path, n: int) -> None:
    """A profile directory of `n` small files, each a plan and a CPU profile (a lab's saved
    plans)."""
    d.mkdir()
    for i in range(n):
        (d / f"p{i:05d}.toml").write_text(
            f'[plan.p{i:05d}]\nworkload = "syscall"\nruns = 5\n\n'
            f'[cpu.c{i:05d}]\nsummary = "one of many"\ncpus = [0]\n')


def once(code: str, cwd: str, env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, modules at exit) of one fresh process running `code`."""
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", COUNT + code], cwd=cwd, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{code[:60]}...: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    with open(os.path.join(cwd, "modules")) as f:
        return wall, int(f.read())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--against", type=Path, metavar="CHECKOUT",
                    help="another checkout of hotloop to time the same rows with")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hotloop-startup-") as cwd:
        trees = {"this": dict(os.environ)}
        if args.against is not None:
            # its tui/ as the package hotloop, ahead of this one's editable install
            os.symlink((args.against / "tui").resolve(), os.path.join(cwd, "hotloop"))
            trees["against"] = dict(os.environ, PYTHONPATH=cwd)
        times = {(tree, name): [] for tree in trees for name, _ in ROWS}
        modules: dict[tuple[str, str], int] = {}
        run_dir = os.path.join(cwd, "run")
        os.mkdir(run_dir)
        many(Path(cwd) / "many", MANY)
        for env in trees.values():          # warm the build and page caches, not counted
            for _, code in ROWS:
                once(code, run_dir, env)
        for _ in range(args.rounds):
            for tree, env in trees.items():
                for name, code in ROWS:
                    wall, modules[tree, name] = once(code, run_dir, env)
                    times[tree, name].append(wall)
    median = {key: statistics.median(t) for key, t in times.items()}
    ref = median["this", ROWS[0][0]]
    print(f"{args.rounds} rounds, interleaved; Python {sys.version.split()[0]}, "
          f"{os.uname().release}")
    head = f"{'start':<72}{'median':>9}{'x ref':>7}{'modules':>9}"
    if args.against is not None:
        head += f"{'x against':>11}{'its modules':>13}"
    print(head)
    for name, _ in ROWS:
        m = median["this", name]
        row = f"{name:<72}{m * 1000:>7.0f}ms{m / ref:>7.1f}{modules['this', name]:>9}"
        if args.against is not None:
            row += f"{m / median['against', name]:>11.2f}{modules['against', name]:>13}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
