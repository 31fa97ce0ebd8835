"""What does starting hotloop cost?  Each command against the interpreter's own start.

Every session starts processes: the command, and a worker per plan; a session in a VM or on
a remote host starts `hotloop run --format events` there too, where an emulated guest reads
each module over 9p at a fraction of this CPU's speed.  So what matters is how much a start
imports.  Each row is run --rounds times, the rows interleaved round by round, in fresh
processes of this same Python, from an empty directory; the median wall time, its ratio to
`python -c pass` and the modules the process had loaded at its exit (all, and hotloop's).
One row imports, without running anything, the hotloop modules `run --format events` had
loaded (found in the warm-up round): the run path's own cost, apart from its worker and its
build.  A profile directory of 10,000 small TOML files (made here) is timed beside the
bundled profiles alone.

    python benchmarks/startup.py [--rounds 15] [--against CHECKOUT] [--lean]

--against runs every row with another checkout's code too (its tui/ as hotloop), in the same
rounds, and gives the ratio of this one's time to that one's.  --lean times only the rows of
the lean start (the reference, -V, run --format events and its imports), so that more rounds
fit on a busy machine.

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

# sys.modules when the process exits, whatever way it exits (the command's sys.exit): the
# count on the first line, hotloop's modules on the second.
COUNT = ("import atexit, sys; atexit.register(lambda: open('modules', 'w').write("
         "f'{len(sys.modules)}\\n' + ' '.join(sorted(m for m in sys.modules "
         "if m.split('.')[0] == 'hotloop')))); ")
RUN = ("sys.argv = ['hotloop', *{argv!r}]; import runpy; "
       "runpy.run_module('hotloop', run_name='__main__')")

EVENTS = "hotloop run --format events (a VM guest's, a remote host's; 1 tiny run)"
EVENTS_IMPORTS = "run --format events' hotloop modules, imported (no run)"
ROWS: list[tuple[str, str]] = [
    ("python -c pass (the reference)", "pass"),
    ("the worker's imports", "import hotloop.run.worker"),
    ("hotloop -V", RUN.format(argv=["-V"])),
    ("hotloop list", RUN.format(argv=["list"])),
    ("hotloop list plans (the bundled profiles)", RUN.format(argv=["list", "plans"])),
    ("hotloop list plans --profiles DIR (10,000 small TOML files)",
     RUN.format(argv=["list", "plans", "--profiles", "../many"])),
    (EVENTS, RUN.format(argv=["run", "syscall", "--runs", "1", "--warmup", "0", "--no-perf",
                      "--param", "calls=1000", "--format", "events", "--out", "r.jsonl",
                      "--force"])),
    ("hotloop run (text; 1 tiny run)",
     RUN.format(argv=["run", "syscall", "--runs", "1", "--warmup", "0", "--no-perf",
                      "--param", "calls=1000", "--out", "r.jsonl", "--force"])),
]


LEAN = ("python -c pass (the reference)", "hotloop -V", EVENTS)
MANY = 10_000
VERSION_AIM = 3.0                       # -V within 3x the interpreter's own start


def many(d: Path, n: int) -> None:
    """A profile directory of `n` small files, each a plan and a CPU profile (a lab's saved
    plans)."""
    d.mkdir()
    for i in range(n):
        (d / f"p{i:05d}.toml").write_text(
            f'[plan.p{i:05d}]\nworkload = "syscall"\nruns = 5\n\n'
            f'[cpu.c{i:05d}]\nsummary = "one of many"\ncpus = [0]\n')


def once(code: str, cwd: str, env: dict[str, str]) -> tuple[float, int, list[str]]:
    """(wall seconds, modules at exit, hotloop's among them) of one fresh process running
    `code`."""
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", COUNT + code], cwd=cwd, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{code[:60]}...: exit {p.returncode}: {p.stderr.strip()[-300:]}")
    with open(os.path.join(cwd, "modules")) as f:
        count, _, names = f.read().partition("\n")
    return wall, int(count), names.split()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--against", type=Path, metavar="CHECKOUT",
                    help="another checkout of hotloop to time the same rows with")
    ap.add_argument("--lean", action="store_true",
                    help="only the reference, -V, run --format events and its imports")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hotloop-startup-") as cwd:
        trees = {"this": dict(os.environ)}
        if args.against is not None:
            # its tui/ as the package hotloop, ahead of this one's editable install
            os.symlink((args.against / "tui").resolve(), os.path.join(cwd, "hotloop"))
            trees["against"] = dict(os.environ, PYTHONPATH=cwd)
        run_dir = os.path.join(cwd, "run")
        os.mkdir(run_dir)
        if not args.lean:
            many(Path(cwd) / "many", MANY)
        chosen = [r for r in ROWS if not args.lean or r[0] in LEAN]
        rows = {tree: list(chosen) for tree in trees}
        for tree, env in trees.items():     # warm the build and page caches, not counted
            for name, code in chosen:
                _, _, names = once(code, run_dir, env)
                if name == EVENTS:          # what the run path imports: a row before it
                    rows[tree].insert(rows[tree].index((name, code)),
                                      (EVENTS_IMPORTS, "import " + ", ".join(names)))
        times: dict[tuple[str, str], list[float]] = {
            (tree, name): [] for tree in trees for name, _ in rows[tree]}
        modules: dict[tuple[str, str], tuple[int, int]] = {}
        for _ in range(args.rounds):
            for tree, env in trees.items():
                for name, code in rows[tree]:
                    wall, count, names = once(code, run_dir, env)
                    modules[tree, name] = count, len(names)
                    times[tree, name].append(wall)
    median = {key: statistics.median(t) for key, t in times.items()}
    ref = median["this", ROWS[0][0]]
    print(f"{args.rounds} rounds, interleaved; Python {sys.version.split()[0]}, "
          f"{os.uname().release}")
    head = f"{'start':<72}{'median':>9}{'x ref':>7}{'modules':>9}{'hotloop':>9}"
    if args.against is not None:
        head += f"{'x against':>11}{'its modules':>13}{'hotloop':>9}"
    print(head)
    for name, _ in rows["this"]:
        m = median["this", name]
        row = (f"{name:<72}{m * 1000:>7.0f}ms{m / ref:>7.1f}{modules['this', name][0]:>9}"
               f"{modules['this', name][1]:>9}")
        if args.against is not None and ("against", name) in median:
            its = modules["against", name]
            row += f"{m / median['against', name]:>11.2f}{its[0]:>13}{its[1]:>9}"
        print(row)
    version = median["this", "hotloop -V"] / ref
    print(f"hotloop -V: {version:.1f}x python -c pass (the aim: within {VERSION_AIM:g}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
