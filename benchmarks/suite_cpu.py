"""Where the test suite's CPU goes: a pytest plugin that writes each test's CPU seconds, and
a report of them by file and by test.

The suite's length on the 2-core machines is set by its CPU work (its workers are busy all
the run, and wait on the CPUs more than on each other), and a test's wall time says how
loaded the machine was as much as what the test cost.  So each test is charged the CPU its
worker's whole process tree used meanwhile: the worker is moved into a cpuacct cgroup of its
own (v1, /sys/fs/cgroup/cpuacct, as root), which every process it starts stays in, those that
outlive their parent too (a qemu, the sshd's sessions).  Where no such cgroup can be made the
plugin falls back to getrusage (the worker and the children it has waited for: a process
reaped by init is missed), and says so in each line.  A module or session fixture is charged
to the first test that asks for it.

    PYTHONPATH=benchmarks SUITE_CPU=/tmp/cpu .venv/bin/python -m pytest -q -p suite_cpu
    python benchmarks/suite_cpu.py /tmp/cpu [--top 40]

The first writes /tmp/cpu.<worker> (a JSON line a test: its id, CPU seconds, wall seconds,
how the CPU was counted); the second prints the totals, the unit tests' share, and the files
and tests that used the most.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

CGROUPS = Path("/sys/fs/cgroup/cpuacct")


def _rusage() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _counter(out: str, worker: str) -> tuple[Callable[[], float], str]:
    """A clock of this worker's CPU seconds, and how it counts."""
    group = CGROUPS / "hotloop-suite-cpu" / f"{Path(out).name}-{worker}"
    try:
        group.mkdir(parents=True, exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        usage = group / "cpuacct.usage"
        usage.read_text()
    except OSError:
        return _rusage, "rusage"
    return (lambda: int(usage.read_text()) / 1e9), "cgroup"


_state: dict[str, Any] = {}


def _writer() -> tuple[IO[str], Callable[[], float], str]:
    if not _state:
        out = os.environ.get("SUITE_CPU", "/tmp/suite-cpu")
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        clock, how = _counter(out, worker)
        # open for the worker's life: one line a test, flushed
        _state.update(file=open(f"{out}.{worker}", "a"),  # noqa: SIM115
                      clock=clock, how=how)
    return _state["file"], _state["clock"], _state["how"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    f, clock, how = _writer()
    cpu, wall = clock(), time.monotonic()
    yield
    f.write(json.dumps([item.nodeid, round(clock() - cpu, 3),
                        round(time.monotonic() - wall, 3), how]) + "\n")
    f.flush()


def report(prefix: str, top: int) -> None:
    names = sorted(glob.glob(prefix + ".gw*")) + glob.glob(prefix + ".main")
    rows = [json.loads(line) for name in names for line in Path(name).read_text().splitlines()]
    if not rows:
        sys.exit(f"no {prefix}.gw* nor {prefix}.main")
    cpu = sum(r[1] for r in rows)
    unit = sum(r[1] for r in rows if "/unit/" in r[0])
    hows = sorted({r[3] if len(r) > 3 else "cgroup" for r in rows})
    print(f"{len(rows)} tests: {cpu:.0f} s of CPU ({', '.join(hows)}), "
          f"{sum(r[2] for r in rows):.0f} s of tests' wall time; the unit tests {unit:.0f} s")
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        f = files[r[0].split("::")[0]]
        f[0] += r[1]
        f[1] += r[2]
        f[2] += 1
    print("\n| file | tests | CPU s | share | wall s |\n| --- | ---: | ---: | ---: | ---: |")
    for name, (c, w, n) in sorted(files.items(), key=lambda x: -x[1][0])[:top]:
        print(f"| {name} | {n} | {c:.1f} | {100 * c / cpu:.1f}% | {w:.1f} |")
    print("\n| test | CPU s | wall s |\n| --- | ---: | ---: |")
    for r in sorted(rows, key=lambda r: -r[1])[:top]:
        print(f"| {r[0]} | {r[1]:.1f} | {r[2]:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("prefix", help="what SUITE_CPU was for the run")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    report(args.prefix, args.top)


if __name__ == "__main__":
    main()
