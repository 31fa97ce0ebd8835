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
from collections.abc import Callable
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "e2e" in item.path.parts:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
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


@pytest.fixture
def faulty(tmp_path: Path) -> Path:
    """A profile directory with the `faulty` workload (tests/faulty.py)."""
    from faulty import FAULTY_C, FAULTY_TOML
    d = tmp_path / "myprofiles"
    d.mkdir()
    (d / "faulty.c").write_text(FAULTY_C)
    (d / "w.toml").write_text(FAULTY_TOML)
    return d


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory, cache_home: Path) -> Path:
    """A result file the real command line wrote (5 runs of zero_null)."""
    base = tmp_path_factory.mktemp("good")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(cache_home),
               XDG_CONFIG_HOME=str(base / "config"), XDG_STATE_HOME=str(base / "state"))
    out = base / "good.jsonl"
    done = subprocess.run([sys.executable, "-m", "hotloop", "run", "zero_null", "--runs", "5",
                           "--param", "count=3000", "--no-perf", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


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
