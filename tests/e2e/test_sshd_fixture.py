"""The real sshd the `--host` tests log into (tests/e2e/sshd.py): it answers, it carries the
test's environment, it refuses a stranger's key, and an unreachable host is told apart."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from conftest import TAG, tagged_pids

# The session fixture `sshd_server`: one server for the whole session, whichever modules ask;
# it skips where OpenSSH is missing.
pytest_plugins = ["sshd"]


def test_a_command_runs_on_the_host(sshd_server):
    done = sshd_server.ssh("lab1", "echo", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n"


def test_the_second_alias_reaches_the_same_server(sshd_server):
    done = sshd_server.ssh("lab2", "echo", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello\n"


def test_the_tests_environment_arrives(sshd_server):
    names = (TAG, "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME")
    done = sshd_server.ssh("lab1", "printenv", *names)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [os.environ[name] for name in names]


def test_the_remote_command_gets_a_login_environment(sshd_server):
    done = sshd_server.ssh("lab1", 'echo "$HOME"; pwd; echo "$PATH"')
    assert done.returncode == 0, done.stderr
    home, cwd, path = done.stdout.splitlines()
    assert home == cwd == os.path.expanduser("~")
    assert "/usr/bin" in path.split(":")


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except OSError:
        return []


def test_the_remote_processes_carry_the_tests_tag(sshd_server, leftovers):
    # the host is this machine: tagged_pids()/leftovers() see what a test ran over ssh
    client = subprocess.Popen(["ssh", "-F", str(sshd_server.config), "lab1", "--", "exec sleep 2"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not any(_cmdline(pid) == ["sleep", "2"] for pid in tagged_pids()):
            assert client.poll() is None and time.monotonic() < deadline, client.communicate()
            time.sleep(0.05)
    finally:
        _, err = client.communicate(timeout=30)
    assert client.returncode == 0, err
    assert leftovers() == []


def test_a_key_the_host_does_not_accept_is_refused(sshd_server):
    done = sshd_server.ssh("nokey", "echo", "hello")
    assert done.returncode == 255
    assert "Permission denied" in done.stderr
    assert done.stdout == ""


def test_a_host_nobody_listens_on_is_unreachable(sshd_server):
    done = sshd_server.ssh("nowhere", "echo", "hello")
    assert done.returncode == 255
    assert "Connection refused" in done.stderr
    assert done.stdout == ""
