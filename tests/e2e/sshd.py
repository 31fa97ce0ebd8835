"""A real OpenSSH server on 127.0.0.1 for the end-to-end tests of `--host`.

Nothing is mocked: `start()` runs /usr/sbin/sshd in the foreground on a free port with its
own host key, an authorized client key and a config in a temporary directory, and writes a
client `ssh_config` there with these aliases:

    lab1, lab2   the server, as the current user, with the authorized key
    nokey        the server, with a key it does not accept (authentication refused)
    nowhere      a port nobody listens on (connection refused)

Use it as `ssh -F <sshd.config> lab1 -- command`; `-F` makes ssh read that file alone.
That file names its own known_hosts (UserKnownHostsFile), a key hotloop accepts only from the
user's own config directory (a shared profile could make ssh append to any file with it): a
host table naming it belongs in the test's $XDG_CONFIG_HOME/hotloop, not in a --profiles
directory of the test's making.
The session fixture `sshd_server` starts one server for the whole test session (and skips
the test where OpenSSH is missing).  A test module gets it with `pytest_plugins = ["sshd"]`
(tests/e2e is on sys.path: pytest puts a test's directory there when it has no __init__.py)
and runs commands with `sshd_server.ssh("lab1", ...)`, importing nothing from here: a module
imported before pytest loads it as a plugin draws a PytestAssertRewriteWarning.  Importing the
fixture into each module instead would start one server per importing module, and a
tests/e2e/conftest.py would shadow tests/conftest.py for `from conftest import ...`.
"""
from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"
AVAILABLE = (os.access(SSHD, os.X_OK) and shutil.which("ssh-keygen") is not None
             and shutil.which("ssh") is not None)
needs_sshd = pytest.mark.skipif(not AVAILABLE, reason="needs OpenSSH: /usr/sbin/sshd, ssh, ssh-keygen")

# The variables the client sends and the server accepts (the tests' isolation).
ENV = ("HOTLOOP_TEST_TAG", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME",
       "HOTLOOP_SYSTEM_DIR")
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0


@dataclass
class Sshd:
    port: int
    config: Path               # the client's ssh_config (ssh -F config ALIAS)
    process: subprocess.Popen[bytes]
    log: Path                  # sshd's stderr
    key: Path                  # the client key the server accepts
    host_key: Path             # the server's host key (its .pub is what a client learns)

    def ssh(self, alias: str, *command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """`ssh -F config alias -- command...`: the module's ssh(), for a test holding the fixture."""
        return ssh(self, alias, *command, timeout=timeout)

    def stop(self) -> None:
        """End the listener (sessions' own sshd children end with their connections)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
                   check=True, capture_output=True, timeout=30)


def _listening(port: int) -> bool:
    # Read the kernel's table rather than connect: a probe connection that closes before the
    # SSH handshake makes sshd log "kex_exchange_identification: Connection closed".
    local = f"0100007F:{port:04X}"
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(f[1] == local and f[3] == "0A" for f in (line.split() for line in lines))   # LISTEN


def _server_env() -> dict[str, str]:
    # The listener outlives every test: it must not carry a test's tag (tagged_pids) or dirs.
    return {k: v for k, v in os.environ.items() if k not in ENV}


def start(tmp: Path) -> Sshd:
    """Start sshd on a free port of 127.0.0.1, with everything it needs in `tmp`."""
    tmp = tmp.resolve()
    host_key, client_key, stranger_key = tmp / "host_key", tmp / "client_key", tmp / "stranger_key"
    for key in (host_key, client_key, stranger_key):
        _keygen(key)
    authorized = tmp / "authorized_keys"
    authorized.write_text(client_key.with_suffix(".pub").read_text())
    authorized.chmod(0o600)

    port = _free_port()
    server_cfg = tmp / "sshd_config"
    server_cfg.write_text("\n".join([
        "ListenAddress 127.0.0.1",
        f"Port {port}",
        f"HostKey {host_key}",
        f"PidFile {tmp / 'sshd.pid'}",
        f"AuthorizedKeysFile {authorized}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        "LogLevel ERROR",
        f"AcceptEnv {' '.join(ENV)}",
    ]) + "\n")

    if os.geteuid() == 0:
        # the privilege separation directory, which sshd checks for at start (as root)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)

    checked = subprocess.run([SSHD, "-t", "-f", str(server_cfg)], capture_output=True, text=True,
                             timeout=30, env=_server_env())
    if checked.returncode != 0:
        raise RuntimeError(f"sshd -t rejects {server_cfg}: {checked.stderr.strip()}")

    known_hosts = tmp / "known_hosts"
    kind, blob = host_key.with_suffix(".pub").read_text().split()[:2]
    known_hosts.write_text(f"[127.0.0.1]:{port} {kind} {blob}\n")

    def alias(name: str, to_port: int, key: Path) -> str:
        return "\n".join([
            f"Host {name}",
            "    HostName 127.0.0.1",
            f"    Port {to_port}",
            f"    User {getpass.getuser()}",
            f"    IdentityFile {key}",
            "    IdentitiesOnly yes",
            f"    UserKnownHostsFile {known_hosts}",
            "    StrictHostKeyChecking yes",
            "    BatchMode yes",
            f"    SendEnv {' '.join(ENV)}",
            "    ConnectTimeout 5",
        ]) + "\n"

    nobody = _free_port()
    while nobody == port:
        nobody = _free_port()
    client_cfg = tmp / "ssh_config"
    client_cfg.write_text("\n".join([alias("lab1", port, client_key), alias("lab2", port, client_key),
                                     alias("nokey", port, stranger_key),
                                     alias("nowhere", nobody, client_key)]))
    client_cfg.chmod(0o600)   # ssh refuses a config others may write

    log = tmp / "sshd.log"
    with log.open("wb") as err:
        process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(server_cfg)], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err, env=_server_env(),
                                   start_new_session=True)
    server = Sshd(port=port, config=client_cfg, process=process, log=log, key=client_key,
                  host_key=host_key)
    deadline = time.monotonic() + START_TIMEOUT
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"sshd did not listen on 127.0.0.1:{port} "
                               f"(exit {process.returncode}): {log.read_text().strip()}")
        time.sleep(0.05)
    return server


def ssh(server: Sshd, alias: str, *command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run `ssh -F config alias -- command...` (the test's environment is sent as configured)."""
    return subprocess.run(["ssh", "-F", str(server.config), alias, "--", *command],
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def sshd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One real sshd for the session (a module asks with `pytest_plugins = ["sshd"]`)."""
    if not AVAILABLE:
        pytest.skip("needs OpenSSH: /usr/sbin/sshd, ssh, ssh-keygen")
    server = start(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()
