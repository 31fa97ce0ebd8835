"""Installed as users install it (a wheel in a venv of its own, as pipx does), hotloop runs
from any directory on the files it ships: the bundled profiles and C sources inside the
package, builds in the user's cache, the worker importing this very installation.

The venv is a fresh one with the wheel's declared dependencies (from the local indexes:
about 15 s), made once for the module (its tests keep to one pytest-xdist worker), not one
that sees this interpreter's packages: a dependency missing from pyproject.toml fails here,
and the repository's own editable install cannot stand in for the wheel's files.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import ROOT, hotloop
from test_startup import TINY, command, heavy, loaded

from hotloop.cli import wheel

TINY_C = r"""
#include "hotloop.h"
#include <stdlib.h>
#include <unistd.h>

void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t errlen)
{
    (void)env; (void)err; (void)errlen;
    int64_t *calls = malloc(sizeof(*calls));
    if (calls)
        *calls = hl_param_int(p, n, "calls", 1000);
    return calls;
}

int hl_run(void *state, struct hl_result *res, char *err, size_t errlen)
{
    int64_t calls = *(int64_t *)state;
    struct hl_clock c;
    (void)err; (void)errlen;
    hl_clock_start(&c);
    for (int64_t i = 0; i < calls; i++)
        getppid();
    hl_clock_stop(&c, res);
    res->ops = (uint64_t)calls;
    return 0;
}

int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state) { free(state); }
"""

TINY_TOML = """
[workload.tiny]
source = "tiny.c"
summary = "getppid, from a --profiles directory"
metric = "ns/op"
params.calls = { default = 1000, min = 1 }
"""


def _sources(dest: Path) -> Path:
    """The repository's tracked files (a clean clone's), not a build/ or .venv lying about."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if listed.returncode == 0 and listed.stdout:
        for name in listed.stdout.decode().split("\0"):
            if name and (ROOT / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, dest / name)
    else:
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "results", "__pycache__", ".*_cache"))
    return dest


class Installed:
    def __init__(self, venv: Path, cache: Path) -> None:
        self.venv = venv
        self.cache = cache
        self.bin = venv / "bin" / "hotloop"
        found = subprocess.run([str(venv / "bin" / "python"), "-c",
                                "import hotloop; print(hotloop.__file__)"],
                               capture_output=True, text=True, cwd="/", env=self.env())
        assert found.returncode == 0, found.stderr
        self.package = Path(found.stdout.strip()).parent

    def env(self) -> dict[str, str]:
        # PYTHONDONTWRITEBYTECODE (set on the machines these tests run on) too: else each of
        # the tests' twenty-odd processes compiled again every module it imports, cffi's and
        # hotloop's, the install being left uncompiled
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "VIRTUAL_ENV",
                            "PYTHONDONTWRITEBYTECODE")}
        env["XDG_CACHE_HOME"] = str(self.cache)     # its own builds, from its own csrc/
        return env

    def run(self, *args: str, cwd: Path | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin), *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env(), cwd=cwd, stdin=subprocess.DEVNULL)

    def files(self) -> set[Path]:
        return {p for p in self.package.rglob("*") if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("install")
    src = _sources(base / "src")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                            "-w", str(base / "wheels"), str(src)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel, = (base / "wheels").glob("hotloop-*.whl")
    # As pipx makes it: a venv without pip of its own, this pip installing into it.  Not
    # byte-compiled: compiling every dependency's modules (scipy's, numpy's) costs more than
    # the imports of the tests' few hotloop processes that compile what they use, once
    # (env() lets them write it).
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                           "install", "-q", "--no-compile", str(wheel)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return Installed(venv, base / "cache")


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    d = tmp_path / "elsewhere"
    d.mkdir()
    return d


def test_the_wheel_holds_the_bundled_files_and_runs_from_elsewhere(installed, elsewhere,
                                                                    leftovers):
    assert (installed.package / "csrc" / "hotloop.h").is_file()
    assert (installed.package / "profiles" / "plans.toml").is_file()
    assert ROOT not in installed.package.parents
    before = installed.files()
    p = installed.run("run", "quick", "--runs", "2", "--format", "json", cwd=elsewhere)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["workload"] == "seqpacket" and len(doc["runs"]) == 2
    result = elsewhere / doc["result_file"]     # relative to where it ran: there
    assert result.is_file()
    header = json.loads(result.read_text().splitlines()[0])["header"]
    assert Path(header["workload"]["source"]) == installed.package / "csrc" / "seqpacket.c"
    assert Path(header["cpu"]["origin"]).parent == installed.package / "profiles"
    assert list((installed.cache / "hotloop" / "build").glob("_hl_seqpacket_*"))
    assert installed.files() == before      # nothing written into the installed package
    assert leftovers() == []


def test_an_installed_copys_run_loads_none_of_the_heavy_modules(installed, elsewhere):
    """What host setup puts on a remote host starts as lean as a checkout: its bundled files
    are checked from the wheel's RECORD without importlib.metadata."""
    python = str(installed.venv / "bin" / "python")
    modules = loaded(elsewhere, command("run", *TINY, "--format", "events"), python,
                     installed.env())
    assert heavy(modules) == set()
    assert '"type":"finished"' in (elsewhere / "r.jsonl").read_text()


def test_an_installation_without_its_source_tree_makes_its_own_wheel(installed, tmp_path):
    # `pipx install .` keeps no source tree: host setup puts the wheel back together from
    # the installed files, and what it installs elsewhere is this code (the same digest)
    py = str(installed.venv / "bin" / "python")
    made = subprocess.run([py, "-c", "import sys; from pathlib import Path; "
                           "from hotloop.cli import wheel; "
                           "assert wheel.source_tree() is None; "
                           "print(wheel.build(Path(sys.argv[1])))", str(tmp_path)],
                          capture_output=True, text=True, env=installed.env(), cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    target = tmp_path / "there"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--no-compile", "--target", str(target), made.stdout.strip()],
                          capture_output=True, text=True, env=installed.env(), timeout=300)
    assert done.returncode == 0, done.stderr
    digest = "from hotloop import paths; print(paths.source_digest())"
    here = subprocess.run([py, "-c", digest], capture_output=True, text=True,
                          env=installed.env(), cwd=tmp_path)
    there = subprocess.run([py, "-c", digest], capture_output=True, text=True, cwd=tmp_path,
                           env={**installed.env(), "PYTHONPATH": str(target)})
    assert here.returncode == there.returncode == 0, there.stderr
    assert here.stdout == there.stdout and len(here.stdout.strip()) == 12
    ours = {p.relative_to(installed.package) for p in installed.files()}
    theirs = {p.relative_to(target / "hotloop") for p in (target / "hotloop").rglob("*")
              if "__pycache__" not in p.parts}
    assert ours == theirs


def test_a_checkouts_wheel_holds_what_the_checkout_holds_now(tmp_path):
    """host setup from a checkout: a build/lib left by an older build (a module since
    deleted) and stale bytecode are not shipped; pip builds in the tree it is given."""
    src = _sources(tmp_path / "src")
    ghost = src / "build" / "lib" / "hotloop" / "ghost.py"
    ghost.parent.mkdir(parents=True)
    ghost.write_text("raise SystemExit('a module deleted from the checkout')\n")
    (src / "tui" / "__pycache__").mkdir(exist_ok=True)
    (src / "tui" / "__pycache__" / "gone.cpython-311.pyc").write_bytes(b"stale")
    dest = tmp_path / "wheels"
    dest.mkdir()
    made = wheel.build(dest, src)
    names = set(zipfile.ZipFile(made).namelist())
    assert "hotloop/ghost.py" not in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert {"hotloop/cli/wheel.py", "hotloop/csrc/hotloop.h", "hotloop/profiles/cpu.toml",
            "hotloop/console/app.tcss"} <= names
    assert list(dest.iterdir()) == [made]       # the clean copy is gone with the build
    assert ghost.is_file()                      # and the checkout is as it was


def test_list_names_the_bundled_catalogue(installed, elsewhere):
    p = installed.run("list", cwd=elsewhere)
    assert p.returncode == 0, p.stderr
    for name in ("seqpacket", "zero_null", "tcp_rr", "pool", "syscall", "pipe", "quick",
                 "same-core", "busy-poll"):
        assert name in p.stdout
    m = subprocess.run([str(installed.venv / "bin" / "python"), "-m", "hotloop", "list", "plans"],
                       capture_output=True, text=True, env=installed.env(), cwd=elsewhere)
    assert m.returncode == 0 and "quick" in m.stdout, m.stderr
    # the wheel and the checkout it was built from: one version, one digest of the sources
    version = installed.run("--version", cwd=elsewhere).stdout
    assert version.startswith("hotloop ") and "(source " in version
    assert version == hotloop("--version").stdout


def test_a_user_workload_builds_against_the_installed_header(installed, elsewhere, monkeypatch):
    d = elsewhere / "mine"
    d.mkdir()
    (d / "tiny.c").write_text(TINY_C)
    (d / "w.toml").write_text(TINY_TOML)
    p = installed.run("run", "tiny", "--profiles", str(d), "--runs", "3", "--no-perf",
                      "--param", "calls=5000", "--format", "json", cwd=elsewhere)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["metric"] == "ns/op"
    assert [r["ops"] for r in doc["runs"]] == [5000] * 3
    # The checkout's hotloop (editable) shares the build cache with this one, side by side.
    monkeypatch.setenv("XDG_CACHE_HOME", str(installed.cache))
    q = hotloop("run", "tiny", "--profiles", str(d), "--runs", "2", "--no-perf",
                "--param", "calls=5000", cwd=elsewhere)
    assert q.returncode == 0, q.stderr


def test_a_hotloop_in_the_working_directory_is_not_what_the_worker_imports(installed, tmp_path):
    """Run from a directory named like the package that holds one too: the worker (started with
    `python -c`, which would put the working directory first on the path) still imports the
    installed hotloop, and leaves nothing in the environment its workload's children inherit."""
    here = tmp_path / "hotloop"
    (here / "hotloop").mkdir(parents=True)
    (here / "hotloop" / "__init__.py").write_text("raise SystemExit('imported the wrong hotloop')\n")
    (here / "hotloop.py").write_text("raise SystemExit('imported the wrong hotloop')\n")
    p = installed.run("run", "zero_null", "--runs", "2", "--no-perf", "--param", "count=2000",
                      cwd=here)
    assert p.returncode == 0, p.stderr
    assert "wrong hotloop" not in p.stdout + p.stderr


def _missing(path: Path) -> Callable[[], None]:
    path.unlink()
    return lambda: None


def _a_directory(path: Path) -> Callable[[], None]:
    path.unlink()
    path.mkdir()
    return path.rmdir


def _unreadable(path: Path) -> Callable[[], None]:
    path.chmod(0)
    return lambda: path.chmod(0o644)


@pytest.fixture
def broken(installed: Installed, request: pytest.FixtureRequest) -> Iterator[Path]:
    """One installed bundled file missing, a directory, or unreadable; put back after."""
    relative, how = request.param
    if how is _unreadable and os.geteuid() == 0:
        pytest.skip("root reads a file of mode 000 (the directory case covers unreadable)")
    path = installed.package / relative
    saved = path.read_bytes()
    undo = how(path)
    try:
        yield path
    finally:
        undo()
        if not path.is_file():
            path.write_bytes(saved)
        path.chmod(0o644)
        assert path.read_bytes() == saved


@pytest.mark.parametrize("broken", [
    ("csrc/hotloop.h", _missing), ("csrc/hotloop.h", _a_directory),
    ("csrc/hotloop.h", _unreadable), ("csrc/seqpacket.c", _missing),
    ("profiles/plans.toml", _missing), ("profiles/cpu.toml", _a_directory),
    ("profiles/cpu.toml", _unreadable),
], indirect=True, ids=lambda b: f"{b[0]}-{b[1].__name__.strip('_')}")
def test_a_broken_installation_names_the_file_and_exits_2(installed, broken, elsewhere):
    for args in (("run", "quick", "--runs", "2", "--no-perf"), ("list",), ()):   # () the console
        p = installed.run(*args, cwd=elsewhere, timeout=60)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
        assert lines[0].startswith(f"hotloop: {broken}: ") and "reinstall" in lines[0]
        assert not list(elsewhere.rglob("*.jsonl"))
