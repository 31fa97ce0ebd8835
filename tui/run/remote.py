"""A session on another machine, over SSH, as the same stream of events as a local one.

The remote side is the headless session itself: `hotloop run ... --format events --control
stdin` there writes every event as the result file's own JSON line.  Here `ssh` (the user's
OpenSSH, with ~/.ssh/config, the agent, ProxyJump and ControlMaster as they are) runs it,
and each line is read back through the result file's reader, checked as a file's lines are,
written to a result file here and yielded, so that the reporter, the console, `show` and
`compare` never know the difference (stream.StreamSession, shared with a VM's session).
The header says which host (`remote`).

Stopping is the remote's own: its standard input closing (stop(), a cancel, this process
gone: ssh dies with it) stops its run, kills its worker and restores its system, and its
last lines still come back when the connection does.  A connection that is lost instead
ends the local file with "ssh connection lost after N runs".  Every argument reaches the
remote shell quoted (shlex), so a value is a value there, never a command.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import posixpath
import shlex
import signal
from collections.abc import Callable, Sequence
from pathlib import Path

from hotloop import __version__
from hotloop import events as ev
from hotloop.catalog import Host
from hotloop.catalog.ssh_trust import own, pinned
from hotloop.errors import HotloopError
from hotloop.host.procs import die_with_parent
from hotloop.paths import source_digest
from hotloop.record import Remote
from hotloop.run.stream import LINE_LIMIT, Bounds, StreamSession
from hotloop.visible import visible

SSH = "ssh"
SSH_FAILED = 255                        # ssh's own exit status: connecting or authenticating


# Where `hotloop host setup` installs: its venv under the remote's cache directory.
SETUP_DIR = '"${XDG_CACHE_HOME:-$HOME/.cache}"/hotloop'
SETUP_HOTLOOP = SETUP_DIR + "/venv/bin/hotloop"
# ssh keeps an option's first value: hotloop's pinned ones come first (ssh_trust.pinned:
# BatchMode, and for a shared profile's host strict host key checking), then the host's,
# then these defaults, which a host may change.  ServerAlive: a dead network is found in
# 30 s (a quiet run sends nothing for longer).
DEFAULT_OPTIONS = ("ServerAliveInterval=10", "ServerAliveCountMax=3", "ConnectTimeout=15")


def remote_path(path: str) -> str:
    """A remote path for sh: "~/x" is the remote's home ("$HOME"/x), the rest quoted."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def which_hotloop(host: Host) -> str:
    """sh that sets $h to the host's hotloop: its `hotloop` key, else the one setup installed,
    else `hotloop` on the PATH."""
    if host.hotloop:
        return f"h={remote_path(host.hotloop)}; "
    return f'h={SETUP_HOTLOOP}; [ -x "$h" ] || h=hotloop; '


def script(host: Host, argv: Sequence[str]) -> str:
    """The sh script that runs `hotloop ARGV` on the host, in its directory (made if it is
    not there yet).  Every word quoted."""
    where = remote_path(host.directory)
    cd = f"mkdir -p {where} && cd {where} && " if host.directory else ""
    return f'{which_hotloop(host)}{cd}exec "$h" {shlex.join(argv)}'


def ssh_argv(host: Host, remote: str) -> list[str]:
    """The local command: ssh with the host's options, then `sh -c SCRIPT` for the remote
    shell (whatever the login shell is, the script is sh's)."""
    argv = [SSH, "-T"]
    if host.ssh_config:
        argv += ["-F", os.path.expanduser(host.ssh_config)]
    for opt in (*pinned(host.origin), *host.ssh_options, *DEFAULT_OPTIONS):
        argv += ["-o", opt]
    if host.port is not None:
        argv += ["-p", str(host.port)]
    if host.identity_file:
        argv += ["-i", os.path.expanduser(host.identity_file)]
    if host.user:
        argv += ["-l", host.user]
    return [*argv, "--", host.address, shlex.join(["sh", "-c", remote])]


def _start_child() -> None:
    # ssh ends with this process, even SIGKILLed: the remote then sees its stdin close and
    # stops.  Its own session: Ctrl-C in the terminal is ours to pass on, so the remote's
    # last lines (its restore) still come back.
    os.setsid()
    die_with_parent(os.getppid())


async def start_ssh(host: Host, remote: str) -> asyncio.subprocess.Process:
    """ssh running `remote` on the host, its three streams piped."""
    try:
        return await asyncio.create_subprocess_exec(
            *ssh_argv(host, remote), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            limit=LINE_LIMIT, preexec_fn=_start_child)
    except FileNotFoundError:
        raise HotloopError(f"{host.name}: no `ssh` here: install OpenSSH's client "
                           f"(Debian: openssh-client)") from None


def other_sources(host: Host, version: str, source: str | None) -> str:
    """The same version number, other code: another checkout, a local edit."""
    return (f"{host.name} runs hotloop {version} from other sources (source "
            f"{visible(source)[:16] if source else 'unknown: an older build'} there, "
            f"{source_digest()} here): {setup_advice(host)}")


def setup_advice(host: Host) -> str:
    """How to get the right hotloop there: setup, or (a `hotloop` key wins over what setup
    installs) the key's own program."""
    if host.hotloop:
        return (f"its hotloop key names {host.hotloop}: install this version there, or drop "
                f"the key and run hotloop host setup {host.name}")
    return f"install it there: hotloop host setup {host.name}"


def failure(host: Host, returncode: int, stderr: Sequence[str]) -> str:
    """One line for a remote command that failed: ssh's words, or the remote hotloop's."""
    lines = [ln for ln in (visible(x.strip()) for x in stderr) if ln]
    said = next((ln for ln in reversed(lines) if ln.startswith("hotloop: ")), None)
    if returncode == SSH_FAILED or said is None:
        last = lines[-1] if lines else f"ssh exited with status {returncode}"
        if returncode == 127 or "not found" in last:
            last += f" ({setup_advice(host)})"
        elif "Host key verification failed" in last:
            # a shared profile's host checks keys strictly, whatever it says (ssh_trust)
            mine = host.origin and own(Path(host.origin))
            last += (f" (its key is not known here: `ssh {host.address} true` once accepts it"
                     + (f", or ssh_options = [\"StrictHostKeyChecking=accept-new\"] in "
                        f"[host.{host.name}])" if mine else
                        "; a host from a profile outside your config directory connects "
                        "only to a host whose key is known)"))
        ssh = returncode == SSH_FAILED and not last.startswith("ssh: ")
        return f"{host.name}: {'ssh: ' if ssh else ''}{last}"
    return f"{host.name}: {said.removeprefix('hotloop: ')}"


OUTPUT_CAP = 1 << 20                    # bytes of a one-off command's output kept


async def _capped(stream: asyncio.StreamReader | None) -> bytes:
    """All of a stream read (so the remote never blocks on it), its first OUTPUT_CAP kept."""
    data = bytearray()
    while stream is not None and (chunk := await stream.read(1 << 16)):
        data += chunk[:max(0, OUTPUT_CAP - len(data))]
    return bytes(data)


async def run_remote(host: Host, remote: str, timeout: float = 60.0,
                     stdin: bytes = b"") -> tuple[int, str, list[str]]:
    """Run an sh script on the host once (host check, setup): its status, stdout and
    stderr lines (each at most OUTPUT_CAP); HotloopError when it takes longer than
    `timeout` (then killed)."""
    proc = await start_ssh(host, remote)

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(ConnectionError):
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        proc.stdin.close()
    try:
        _, out, err, _ = await asyncio.wait_for(asyncio.gather(
            feed(), _capped(proc.stdout), _capped(proc.stderr), proc.wait()), timeout)
    except asyncio.TimeoutError:
        raise HotloopError(f"{host.name}: no answer within {timeout:g} s") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
    return proc.returncode or 0, out.decode(errors="replace"), \
        [ln.rstrip("\r") for ln in err.decode(errors="replace").splitlines()]


class RemoteSession(StreamSession):
    """`hotloop run ARGV` on `host` over ssh (stream.StreamSession): the header names the
    host (`remote`), and its hotloop must be this one."""

    def __init__(self, host: Host, argv: Sequence[str], result_file: Path, bounds: Bounds,
                 variant: str = "", on_exists: str = "rename", until_ci: float | None = None,
                 mirror: Callable[[ev.Event], None] | None = None):
        super().__init__(argv, result_file, bounds, variant or host.name, on_exists,
                         until_ci, mirror)
        self.host = host
        self.stop_wait = host.stop_wait     # a host with much to restore may take longer
        self.perf_elsewhere = host.name     # kept there, beside its copy (header's remote)

    @property
    def machine(self) -> str:
        return self.host.name

    async def _spawn(self) -> asyncio.subprocess.Process:
        return await start_ssh(self.host, script(self.host, self.remote_argv()))

    def _silent_start(self) -> str:
        return f"{self.host.name}: no answer within {self.start_s:g} s of ssh starting " \
               f"(a hung host?)"

    def _no_header(self, returncode: int) -> str:
        return failure(self.host, returncode, list(self._stderr))

    def _header_warnings(self, started: ev.Started) -> list[str]:
        remote_version = started.header.hotloop
        source = started.header.hotloop_source
        if remote_version != __version__:
            return [f"{self.host.name} runs hotloop {remote_version}, this is "
                    f"{__version__}: {setup_advice(self.host)}"]
        if source != source_digest():
            return [other_sources(self.host, __version__,
                                  source if isinstance(source, str) else None)]
        return []

    def _lost_message(self, runs: int) -> str:
        said = f" ({self._stderr[-1]})" if self._stderr else ""
        # the host is named by whoever shows it (its variant, the header's `remote`)
        return f"ssh connection lost after {runs} run{'' if runs == 1 else 's'}{said}"

    def _local_header(self, started: ev.Started) -> ev.Started:
        h = started.header
        # the remote's copy, where it is there: relative to where it ran (its login
        # directory unless the host says)
        theirs = posixpath.join(self.host.directory or "~", started.result_file)
        # the perf data stays there, beside its copy: annotate runs there
        kept = posixpath.join(posixpath.dirname(theirs), h.perf_data) if h.perf_data else ""
        label = h.label
        if self.host.label:
            # the host names the side; a kernel profile of the run's own stays in the name
            label = self.host.label if h.kernel.name == "default" else \
                f"{self.host.label} + {h.label or h.kernel.name}"
        h = dataclasses.replace(
            h, remote=Remote(self.host.name, self.host.address, theirs, kept), perf_data="",
            variant=self.variant, label=label, batch=self.batch or h.batch)
        return ev.Started(h, started.result_file)
