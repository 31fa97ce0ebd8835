"""A machine short of something (file descriptors, address space): one line, never a traceback,
the result file's last line says the run failed, and the system is restored."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import forge
import pytest
from conftest import POLL, ROOT, needs_root_sysctl

from hotloop.host.settings import read_sysctl, sysctl_path


def limited(limit: int, which: int, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command line with one resource limit lowered, as `ulimit` does."""
    def lower() -> None:
        resource.setrlimit(which, (limit, limit))
    return subprocess.run([sys.executable, "-m", "hotloop", *args], capture_output=True,
                          text=True, timeout=120, preexec_fn=lower,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


@pytest.fixture
def busy_poll():
    original = read_sysctl(POLL)
    yield original
    sysctl_path(POLL).write_text(original)


@needs_root_sysctl
@pytest.mark.parametrize("fds", [14, 15, 16])
def test_too_few_file_descriptors_fail_the_run_in_one_line(tmp_path, busy_poll, fds):
    k = tmp_path / "k"
    k.mkdir()
    want = "7" if busy_poll != "7" else "8"
    (k / "k.toml").write_text(f'[kernel.poll]\nsysctl = {{ "{POLL}" = {want} }}\n')
    args = ["run", "zero_null", "--runs", "2", "--param", "count=1000", "--profiles", str(k),
            "--kernel", "poll", "--apply-system"]
    warm = limited(1024, resource.RLIMIT_NOFILE, *args, "--out", str(tmp_path / "warm.jsonl"))
    assert warm.returncode == 0, warm.stderr        # built: the limited run gets to its worker
    out = tmp_path / f"fd{fds}.jsonl"
    p = limited(fds, resource.RLIMIT_NOFILE, *args, "--out", str(out))
    assert "Traceback" not in p.stderr, p.stderr
    assert read_sysctl(POLL) == busy_poll           # restored, whatever happened
    if p.returncode == 0:                           # enough for this run after all
        return
    assert p.returncode == 1, p.stderr
    said = [line for line in p.stderr.splitlines() if line.startswith("hotloop: ")]
    assert len(said) == 1 and "Too many open files" in said[0], p.stderr
    assert all(line.startswith(("hotloop: ", "warning: ")) for line in p.stderr.splitlines()
               if line.strip()), p.stderr
    last = json.loads(out.read_text().splitlines()[-1])
    assert last["type"] == "failed" and "Too many open files" in last["message"]


@pytest.mark.parametrize("kib", [60_000, 200_000, 250_000, 280_000, 300_000, 330_000])
def test_too_little_address_space_for_compare_is_one_line_never_a_hang(tmp_path: Path, kib):
    # 250,000 KiB hung for good in scipy's OpenBLAS start-up (deaf to SIGTERM); `limited`
    # gives up (SIGKILL) after 120 s, which fails the test.
    good = forge.zero_null(tmp_path / "good.jsonl", forge.NS_512)
    p = limited(kib * 1024, resource.RLIMIT_AS, "compare", str(good), str(good))
    assert "Traceback" not in p.stderr, p.stderr
    if p.returncode != 0:
        lines = [line for line in p.stderr.splitlines() if line.startswith("hotloop: ")]
        assert len(lines) == 1 and p.stderr.count("\n") == 1, p.stderr     # not OpenBLAS's
        assert ("memory" in lines[0] or "ulimit -v" in lines[0]) and len(lines[0]) < 300, \
            p.stderr                                                        # nor numpy's page


def test_compare_under_an_address_space_limit_that_leaves_room_compares(tmp_path: Path):
    # The limit keeps OpenBLAS to one thread: what it needs then is what make_room checks.
    good = forge.zero_null(tmp_path / "good.jsonl", forge.NS_512)
    p = limited(1_000_000 * 1024, resource.RLIMIT_AS, "compare", str(good), str(good),
                "--format", "json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["comparisons"], p.stdout
