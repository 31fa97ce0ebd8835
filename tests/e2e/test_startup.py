"""What a start loads.  `hotloop run --format events` is what a VM guest and a remote host run
for every session, and an emulated guest reads each module over 9p at a fraction of this
CPU's speed; the worker starts for every plan.  Neither loads rich (the progress bars, the
pictures), shtab (completion) or importlib.metadata (host setup's wheel): the commands that
use rich and shtab still do, which the second half checks, so the first half can fail.  (An
installed copy's start: test_install.py.)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

HEAVY = ("rich", "shtab", "importlib.metadata")
TINY = ["syscall", "--runs", "1", "--warmup", "0", "--no-perf", "--param", "calls=1000",
        "--out", "r.jsonl", "--force"]


def loaded(tmp_path: Path, code: str, python: str = sys.executable,
           env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh process of `python` running `code` (from tmp_path) had at its
    exit."""
    record = tmp_path / "modules.json"
    prologue = ("import atexit, json, sys; atexit.register(lambda: open("
                f"{str(record)!r}, 'w').write(json.dumps(sorted(sys.modules)))); ")
    p = subprocess.run([python, "-c", prologue + code], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env=env if env is not None else dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr
    return set(json.loads(record.read_text()))


def command(*argv: str) -> str:
    return (f"sys.argv = ['hotloop', *{list(argv)!r}]; import runpy; "
            "runpy.run_module('hotloop', run_name='__main__')")


def heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))}


def test_a_guests_run_and_a_worker_load_none_of_the_heavy_modules(tmp_path):
    assert heavy(loaded(tmp_path, command("run", *TINY, "--format", "events"))) == set()
    assert '"type":"finished"' in (tmp_path / "r.jsonl").read_text()     # it did run
    assert heavy(loaded(tmp_path, "import hotloop.run.worker")) == set()
    assert heavy(loaded(tmp_path, command("-V"))) == set()


# What `run --format events` (a guest's, a remote host's) has no use for: the reports, the
# comparisons and pictures, the --host path (ssh, the wheel), the other subcommands, the
# sessions it does not run (a VM's, a host's, interleaved ones, a series).
NOT_THE_RUN_PATH = ("hotloop.render", "hotloop.analysis", "hotloop.cli.reports",
                    "hotloop.cli.hosts", "hotloop.cli.wheel", "hotloop.cli.series",
                    "hotloop.cli.listing", "hotloop.cli.compare", "hotloop.cli.calibrate",
                    "hotloop.results.index", "hotloop.run.vm", "hotloop.run.guest",
                    "hotloop.run.remote", "hotloop.run.stream", "hotloop.run.interleave",
                    "hotloop.run.series")


def test_a_guests_run_loads_only_the_run_path(tmp_path):
    modules = loaded(tmp_path, command("run", *TINY, "--format", "events"))
    assert {m for m in modules if m.startswith(NOT_THE_RUN_PATH)} == set()
    assert {"hotloop.cli.run", "hotloop.run.session", "hotloop.run.worker"} - modules \
        == {"hotloop.run.worker"}       # the worker is its own process


def test_version_loads_the_command_line_alone(tmp_path):
    modules = {m for m in loaded(tmp_path, command("-V")) if m.split(".")[0] == "hotloop"}
    # no catalogue, no events, no perf probing, no host: the parser and the source's digest
    assert {m.split(".")[1] for m in modules if "." in m} == {
        "cli", "errors", "paths", "perf", "visible"}
    assert modules & {"hotloop.perf.probe", "hotloop.cli.common", "hotloop.host"} == set()


@pytest.mark.parametrize("argv, needs", [
    (["run", *TINY], "rich"),                  # a person's run: the progress bar
    (["run", *TINY], "hotloop.cli.reports"),   # and its report at the end
    (["completion", "bash"], "shtab"),
])
def test_the_commands_that_use_them_still_load_them(tmp_path, argv, needs):
    assert needs in loaded(tmp_path, command(*argv))


def test_a_worker_loads_none_of_the_builds_machinery(tmp_path):
    # every session starts a worker (each of a series' sessions too): the build, cffi's
    # compiler and the rest are the session's to load, not the worker's (#34)
    modules = loaded(tmp_path, "import hotloop.run.worker")
    assert {"hotloop.run.build", "cffi.recompiler", "cffi"} & modules == set()
