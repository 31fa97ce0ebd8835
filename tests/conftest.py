"""Shared fixtures: every test runs with its own config/state dirs and cwd.

tests/unit holds the fast tests (no process started); tests/e2e the end-to-end ones (real
gcc, worker processes, perf, the console under Pilot), marked `slow`: `pytest -m "not slow"`
runs the fast ones alone.

The build cache is shared by the whole test session (compiling is the slow
part and the cache is keyed by content, so sharing it is safe).  Each test
gets a tag in its environment that every process it starts inherits (the
worker, the workload's children, perf), so `leftovers()` can tell whether
any of them outlived the test.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TAG = "HOTLOOP_TEST_TAG"

# Two harmless sysctls the system tests read, plan and (as root) change and put back.
POLL = "net.core.busy_poll"
READ = "net.core.busy_read"
POLL_FILE = Path("/proc/sys/net/core/busy_poll")
READ_FILE = Path("/proc/sys/net/core/busy_read")
needs_root_sysctl = pytest.mark.skipif(
    not (POLL_FILE.exists() and os.access(POLL_FILE, os.W_OK) and os.access(READ_FILE, os.W_OK)),
    reason="needs writable net.core.busy_poll/busy_read (root)",
)


# Tests that change what the whole machine shares, and those that expect it unchanged:
# net.core.busy_poll and busy_read, which they set, record in headers and expect back as they
# were.  Each holds SYSCTL_LOCK, a lock every hotloop test run on this machine takes (another
# checkout's suite, another pytest-xdist worker), so none sees another's value.
SYSCTLS = {"test_system.py", "test_system_holds.py", "test_limits.py", "test_profiles.py",
           "test_hangup.py", "test_result_files.py", "test_quit.py",
           "test_app.py::test_system_changes_ask_first_no_then_yes",
           "test_hosts.py::test_a_system_change_there_needs_consent_and_the_refusal_names_the_host"}
SYSCTL_LOCK = Path("/tmp/hotloop-tests-sysctls.lock")
# When pytest-xdist spreads the suite (--dist loadgroup, pyproject's addopts), the tests of a
# group run one after another on one worker: those of the sysctls (rather than wait for each
# other's lock), the one sshd of the session's tests, perf's system-wide sampling, and the
# installed wheel's tests (one venv for the module).
GROUPS = {
    "machine": SYSCTLS | {"test_hosts.py", "test_sshd_fixture.py"},
    "perf": {"test_perf.py", "test_perf_session.py", "test_annotate.py", "test_differential.py",
             "test_stopped_session.py", "test_perf_budget.py", "test_disk_full.py",
             "test_perf_start.py"},
    "install": {"test_install.py"},     # its module's venv is made once
    # mypy's cache, filled by the whole package's check: the probe's check after it reads
    # hotloop's types from there (0.3 s of CPU), where on another worker at once it checked
    # them again, cold (2 s)
    "types": {"test_code.py::test_the_types_check",
              "test_code.py::test_the_type_check_sees_across_modules"},
}


def _named(item: pytest.Item, names: set[str]) -> bool:
    return item.path.name in names or (
        isinstance(item, pytest.Function) and f"{item.path.name}::{item.originalname}" in names)


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist registers it too; without xdist the marks are inert, and known
    config.addinivalue_line("markers", "xdist_group(name): run with the group's other tests, "
                            "one after another on one pytest-xdist worker")
    if not hasattr(config, "workerinput"):     # once, in the process that starts the workers
        compile_sources()


def compile_sources() -> None:
    """hotloop's bytecode, written once before any test starts a hotloop.  With
    PYTHONDONTWRITEBYTECODE set (as on the machines these tests run on) an editable install's
    modules are never cached: every `python -m hotloop` the suite starts, each worker and each
    VM guest's compiled again each module it imports (about 0.1 s of CPU a process; only a
    remote run over ssh, which sshd starts without that variable, left some bytecode behind).
    py_compile writes whatever the variable says, and Python checks each file's stamp against
    its source, so an edited module is never run stale."""
    import compileall
    compileall.compile_dir(ROOT / "tui", quiet=2, workers=1)


# First: pytest-xdist's worker reads the xdist_group marks in this same hook (to suffix each
# test's id with its group), and a conftest's hook would otherwise run after it, the marks
# set too late to group anything.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "e2e" in item.path.parts:
            item.add_marker(pytest.mark.slow)
        for group, names in GROUPS.items():
            if _named(item, names):
                item.add_marker(pytest.mark.xdist_group(group))
    # The longest groups first, the VM boots before all: --dist loadgroup hands the workers
    # the groups in this order (with --no-loadscope-reorder, pyproject's addopts; xdist's
    # default reorders them by their number of tests, and the 16 VM tests, the longest
    # group, then started only once the sysctl or perf group was done, and ended the run).
    # Sorted is stable: every other order stays.
    items[:] = sorted(items, key=_rank)


# What each group takes on one worker, longest first (2026-12-02, a quiet 2-core machine):
# the VM boots ~3.5 min, the sysctl and sshd tests ~3, perf's ~2.5, the wheel's venv 0.5.
# Under load (2026-12-03, the load ~5, the suite 937 s): 9.7 min (8.9 with udev kept out of
# the boots), 7.8, 7.5 and 0.9, beside 19.5 min of tests of no group; the 3 workers were busy
# 97% of the run (2726 s of tests in 3 x 937 s): they end together, the VM's chain shorter
# than the run, which the CPUs' work sets.
ORDER = ("vm", "machine", "perf", "install")


def _rank(item: pytest.Item) -> int:
    mark = item.get_closest_marker("xdist_group")
    group = (mark.args[0] if mark.args else mark.kwargs.get("name")) if mark else None
    return ORDER.index(group) if group in ORDER else len(ORDER)


@pytest.fixture(autouse=True)
def sysctls_held(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test of SYSCTLS holds SYSCTL_LOCK from before its fixtures read a setting until after
    they have put it back."""
    if not _named(request.node, SYSCTLS):
        yield
        return
    import fcntl
    with open(SYSCTL_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


# tests/unit starts no process: every test there but test_code's runs with process creation
# refused (fork, exec, posix_spawn, subprocess, asyncio's subprocesses), so a test that would
# start gcc, a worker or perf fails at once, naming what it tried to start, instead of being an
# end-to-end test in the wrong place.  test_code runs mypy, ruff and lint-imports, as tools.
_STARTERS = [("os", "fork"), ("os", "forkpty"), ("os", "posix_spawn"), ("os", "posix_spawnp"),
             ("os", "system"), ("os", "execv"), ("os", "execve"), ("_posixsubprocess", "fork_exec"),
             ("subprocess", "_fork_exec")]


@pytest.fixture(autouse=True)
def no_process_in_unit_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if "unit" not in request.node.path.parts or request.node.path.name == "test_code.py":
        return
    import importlib

    def refuse(name: str) -> Callable[..., object]:
        def started(*args: object, **kw: object) -> object:
            what = args[0] if args and not isinstance(args[0], int) else args[:3]
            raise AssertionError(f"a unit test started a process ({name}: {what!r}); "
                                 f"it belongs in tests/e2e")
        return started
    for module, name in _STARTERS:
        mod = importlib.import_module(module)
        if hasattr(mod, name):
            monkeypatch.setattr(mod, name, refuse(f"{module}.{name}"))


@pytest.fixture(scope="session")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("PYTEST_XDIST_WORKER"):   # one for every worker: a build is made once
        shared = tmp_path_factory.getbasetemp().parent / "cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    # root's restore journal is the machine's (/run/hotloop): each test keeps its own, in its
    # state directory, so tests beside each other and beside real runs do not meet there
    monkeypatch.setenv("HOTLOOP_SYSTEM_DIR", str(tmp_path / "state" / "hotloop"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    monkeypatch.setenv(TAG, uuid.uuid4().hex)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cpu_time() -> float:
    """CPU seconds this process and the children it has waited for have used: what a test of
    "cheap" measures, as a busy machine stretches the wall clock, not the work."""
    import resource
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def tagged_pids() -> list[int]:
    """Processes (other than this one) carrying this test's tag."""
    tag = f"{TAG}={os.environ[TAG]}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            if tag in (d / "environ").read_bytes().split(b"\0"):
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    found.append(int(d.name))
        except OSError:
            continue
    return found


@pytest.fixture
def leftovers() -> Callable[[], list[int]]:
    """Call to get the test's processes still alive after a short grace period."""
    def check(grace: float = 2.0) -> list[int]:
        deadline = time.monotonic() + grace
        while (pids := tagged_pids()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return pids
    return check


def hotloop(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess[str]:
    """Run the real command line, as a user would."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "hotloop", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, **kw)


@pytest.fixture
def run_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    return hotloop


def path_without(tmp_path: Path, *hidden: str) -> str:
    """A PATH with every command of this one except `hidden` (e.g. perf)."""
    shadow = tmp_path / "shadow-bin"
    shadow.mkdir(exist_ok=True)
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for entry in os.scandir(d):
            link = shadow / entry.name
            if entry.name not in hidden and not link.exists() and not link.is_symlink():
                link.symlink_to(entry.path)
    return str(shadow)


def profile_dir(tmp_path: Path, toml: str, name: str = "p.toml") -> Path:
    """A --profiles directory holding `toml` (and an empty mine.c for its workloads)."""
    d = tmp_path / "prof"
    d.mkdir(exist_ok=True)
    (d / "mine.c").write_text('#include "hotloop.h"\n')
    (d / name).write_text(textwrap.dedent(toml))
    return d


def bad_profiles(tmp_path: Path) -> Path:
    """Profiles with a broken file (cpu.c, plan p), a plan that needs it (q) and one fine."""
    d = tmp_path / "bad"
    d.mkdir()
    (d / "broken.toml").write_text(textwrap.dedent("""\
        [cpu.c]
        nice = "low"

        [plan.p]
        workload = "zero_null"
        cpu = "c"
        """))
    (d / "uses.toml").write_text('[plan.q]\nworkload = "zero_null"\ncpu = "c"\n')
    (d / "fine.toml").write_text('[plan.fine]\nworkload = "zero_null"\nruns = 2\n'
                                 'perf = false\nparams = { count = 2000 }\n')
    return d



@pytest.fixture
def faulty(tmp_path: Path) -> Path:
    """A profile directory with the `faulty` workload (tests/faulty.py)."""
    from faulty import FAULTY_C, FAULTY_TOML
    d = tmp_path / "myprofiles"
    d.mkdir()
    (d / "faulty.c").write_text(FAULTY_C)
    (d / "w.toml").write_text(FAULTY_TOML)
    return d


@pytest.fixture
def fake_cpufreq(tmp_path, monkeypatch):
    """A sysfs cpu tree with cpufreq: cpu0 and cpu1 share policy0, cpu2 has policy2."""
    root = tmp_path / "cpu"
    (root / "cpufreq").mkdir(parents=True)
    for pol in ("policy0", "policy2"):
        d = root / "cpufreq" / pol
        d.mkdir()
        (d / "scaling_governor").write_text("powersave\n")
        (d / "scaling_available_governors").write_text("performance powersave\n")
    for cpu, pol in ((0, "policy0"), (1, "policy0"), (2, "policy2")):
        (root / f"cpu{cpu}").mkdir()
        (root / f"cpu{cpu}" / "cpufreq").symlink_to(root / "cpufreq" / pol)
    (root / "cpufreq" / "boost").write_text("1\n")
    (root / "online").write_text("0-2\n")
    (root / "present").write_text("0-2\n")
    from hotloop.host import sysfs
    monkeypatch.setattr(sysfs, "CPU_SYS", root)
    return root


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """The command line called in this process (`hotloop.cli.main`), for what starts no other
    process (show, compare, list...): exit status, stdout and stderr as `hotloop()` gives them,
    without the 0.5 s of a Python start.  The signal handlers main() sets are put back."""
    import signal

    from hotloop.cli import main

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
        capsys.readouterr()
        try:
            code = main(list(args))
        except SystemExit as e:         # argparse's --help; as the interpreter would exit
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
        out = capsys.readouterr()
        return subprocess.CompletedProcess(["hotloop", *args], code, out.out, out.err)
    return call
