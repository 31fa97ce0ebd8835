"""How a series of a kernel booted in a VM ends before any session finished, for real (a
distribution kernel under virtme-ng and qemu, as tests/e2e/test_vm.py boots it): stopped by a
signal while its first session boots, SIGKILLed then, refused at its start (no qemu, no
virtme-run), or every boot failing.  Each is cheap: nothing here waits for a boot to end,
and qemu refuses the impossible memory before booting anything.  What each must leave: no
empty series directory, and words that say where the sessions are only when they are."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT, path_without, profile_dir
from test_vm import IMAGE, hotloop, python_without_virtme, vm_env

pytestmark = [pytest.mark.xdist_group("vm"),
              pytest.mark.skipif(not IMAGE.exists(), reason=f"needs {IMAGE}")]

SERIES = ["run", "syscall", "--kernel", "deb47", "--sessions", "2", "--runs", "2",
          "--warmup", "0", "--no-perf"]


def _profiles(tmp_path: Path, memory: str = "") -> Path:
    return profile_dir(tmp_path, textwrap.dedent(f"""
        [kernel.deb47]
        image = "{IMAGE}"
        cpus = 1
        """) + (f'memory = "{memory}"\n' if memory else ""))


def _booting(tmp_path: Path, *more: str) -> subprocess.Popen[str]:
    """The series, once its first session's hidden result file is there: virtme-run and
    qemu are starting or booting (the header comes from the guest, after its boot)."""
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", *SERIES, *more, "--profiles",
                             str(_profiles(tmp_path))], env=vm_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not list(tmp_path.glob("results/*/deb47/.s01.jsonl.*.tmp")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    assert not list(tmp_path.glob("results/*/deb47/s01.jsonl"))     # no header yet
    return proc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_series_stopped_while_its_vm_boots_names_no_file_and_keeps_nothing(
        tmp_path, leftovers, sig):
    proc = _booting(tmp_path, "--format", "json")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    series = json.loads(out)["series"]
    assert series["interrupted"] and series["done"] == [] and series["failed"] == []
    assert [(x["kernel"], x["session"], x["file"], x["interrupted"])
            for x in series["stopped"]] == [("deb47", 1, None, True)]     # no file: null
    # nothing finished, nothing written: the series' directory is not left empty
    d = series["directory"]
    assert f"hotloop: interrupted; 0 sessions done, none kept ({d} removed: nothing in it)" \
        in err.splitlines(), err
    assert list((tmp_path / "results").iterdir()) == []
    assert leftovers(10) == []


def test_a_series_killed_while_its_vm_boots_is_swept_by_the_next_run(tmp_path, leftovers):
    """SIGKILL: nothing of hotloop's runs to remove the hidden file; the next run does."""
    proc = _booting(tmp_path)
    proc.kill()
    proc.communicate()
    left = list(tmp_path.glob("results/*/deb47/.s01.jsonl.*.tmp"))
    assert len(left) == 1 and left[0].stat().st_size == 0
    assert leftovers(30) == []          # qemu died with it
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    nxt = subprocess.run([sys.executable, "-m", "hotloop", "run", "zero_null", "--runs", "3",
                          "--no-perf"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert nxt.returncode == 0, nxt.stderr
    assert [f.name for f in (tmp_path / "results").iterdir()] == \
        [Path(nxt.stdout.splitlines()[-1].removeprefix("result file: ")).name]


def test_a_series_without_qemu_or_virtme_run_makes_no_directory(tmp_path):
    d = _profiles(tmp_path)
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
    no_qemu = vm_env(path_without(tmp_path / "a", "qemu-system-x86_64") + os.pathsep
                     + str(Path(sys.executable).parent))
    r = hotloop(*SERIES, "--profiles", str(d), env=no_qemu)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().endswith("no `qemu-system-x86_64` on PATH (Debian: apt-get "
                                     "install qemu-system-x86)"), r.stderr
    python = python_without_virtme(tmp_path)
    r = hotloop(*SERIES, "--profiles", str(d), env=vm_env(path_without(tmp_path / "b", "virtme-run")),
                python=python)
    assert r.returncode == 2, r.stderr
    assert "no `virtme-run` beside" in r.stderr
    assert not (Path.cwd() / "results").exists()


def test_a_series_whose_every_boot_fails_leaves_no_directory(tmp_path, leftovers):
    """qemu refuses the guest's memory at once, in each session: failed sessions, named, and
    no file, so no directory."""
    r = subprocess.run([sys.executable, "-m", "hotloop", *SERIES, "--profiles",
                        str(_profiles(tmp_path, memory="1048576M"))], env=vm_env(), cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr
    assert "the series' sessions that failed: deb47 s01, deb47 s02" in r.stderr
    assert "(removed: nothing in it): sessions finished: deb47 0 (of 2 each)" in r.stdout
    assert list((tmp_path / "results").iterdir()) == []
    assert leftovers(10) == []
