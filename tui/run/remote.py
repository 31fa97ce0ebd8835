"""A session on another machine, over SSH, as the same stream of events as a local one.

The remote side is the headless session itself: `hotloop run ... --format events --control
stdin` there writes every event as the result file's own JSON line.  Here `ssh` (the user's
OpenSSH, with ~/.ssh/config, the agent, ProxyJump and ControlMaster as they are) runs it,
and each line is read back through the result file's reader, checked as a file's lines are,
written to a result file here and yielded, so that the reporter, the console, `show` and
`compare` never know the difference.  The header says which host (`remote`).

Stopping is the remote's own: its standard input closing (stop(), a cancel, this process
gone: ssh dies with it) stops its run, kills its worker and restores its system, and its
last lines still come back when the connection does.  A connection that is lost instead
ends the local file with "ssh connection lost after N runs".  Every argument reaches the
remote shell quoted (shlex), so a value is a value there, never a command.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import os
import posixpath
import shlex
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotloop import __version__
from hotloop import events as ev
from hotloop.catalog import Host
from hotloop.errors import HotloopError
from hotloop.host.procs import die_with_parent
from hotloop.paths import source_digest
from hotloop.record import Batch, Remote
from hotloop.results import Writer
from hotloop.results.store import NotJson, Result, decode_line, run_problem
from hotloop.visible import visible

SSH = "ssh"
SSH_FAILED = 255                        # ssh's own exit status: connecting or authenticating
STDERR_WAIT_S = 2.0                     # for the last of ssh's words once its stdout ended
LINE_SHOWN = 1000                       # characters of one stderr line kept
ERROR_LINES = 20                        # lines of the remote's stderr kept for a message
LINE_LIMIT = 1 << 24                    # a session's longest line (hot symbols of a window)
START_S = 120.0                         # ssh, the remote's start-up and build, to its header
GRACE_S = 30.0                          # beyond a repetition's timeout, between two lines: a
                                        # worker process's start-up (session.SETUP_GRACE)


@dataclass(frozen=True)
class Bounds:
    """What a remote session may send: the plan's runs and warmups, a line within a
    repetition's timeout (its own and its turn's, interleaved).  A remote that sends more, or
    falls silent, is cut off: its lines cost memory and disk here."""
    runs: int
    warmups: int                        # the plan's warmup for each worker process
    timeout: float


class _Silent(str):
    """_lines' word for a remote that sent nothing within its time."""


# Where `hotloop host setup` installs: its venv under the remote's cache directory.
SETUP_DIR = '"${XDG_CACHE_HOME:-$HOME/.cache}"/hotloop'
SETUP_HOTLOOP = SETUP_DIR + "/venv/bin/hotloop"
# ssh's options before the user's: the user's come first, and ssh keeps an option's first
# value.  BatchMode: never a password prompt the console cannot answer.  ServerAlive: a
# dead network is found in 30 s (a quiet run sends nothing for longer).
DEFAULT_OPTIONS = ("BatchMode=yes", "ServerAliveInterval=10", "ServerAliveCountMax=3",
                   "ConnectTimeout=15")


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
    for opt in (*host.ssh_options, *DEFAULT_OPTIONS):
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
            last += (f" (its key is not known here: `ssh {host.address} true` once accepts it, "
                     f"or ssh_options = [\"StrictHostKeyChecking=accept-new\"] in "
                     f"[host.{host.name}])")
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


class RemoteSession:
    """`hotloop run ARGV` on `host`, driven as a Session: `events()`, `stop()`, a `gate` for
    interleaving (each token becomes a line "go" that lets the remote run one repetition),
    and a result file here."""

    def __init__(self, host: Host, argv: Sequence[str], result_file: Path, bounds: Bounds,
                 variant: str = "", on_exists: str = "rename", until_ci: float | None = None,
                 mirror: Callable[[ev.Event], None] | None = None):
        self.host = host
        self.bounds = bounds
        self.mirror = mirror            # sees each line the result file gets, as it does
        self.argv = list(argv)          # after "run": names and the plan's options
        self.result_file = result_file
        self.variant = variant or host.name
        self.on_exists = on_exists
        self.until_ci = until_ci
        self.gate: asyncio.Queue[None] | None = None
        self.batch: Batch | None = None
        self.interrupted_by = ""
        self.pids: list[int] = []       # ssh, once it runs
        self._proc: asyncio.subprocess.Process | None = None
        self._stopping = False          # stop() came: the remote's stdin is (to be) closed
        self._deadline: asyncio.TimerHandle | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=ERROR_LINES)
        self._turns = 0                 # tokens passed to a gated remote: its repetitions
        self._reps = 0                  # repetitions (warmups too) it has sent
        self._ended = False             # its last line (finished, failed) came
        self._heard = 0.0               # when it last sent a line or was given a turn

    @property
    def title(self) -> str:
        return self.variant

    @property
    def machine(self) -> str:
        return self.host.name

    def remote_argv(self) -> list[str]:
        gated = ["--gated"] if self.gate is not None else []
        return ["run", "--format=events", "--control=stdin", *gated, *self.argv]

    def stop(self) -> None:
        """End the run: the remote sees its stdin close, stops and restores; its last lines
        still come within the host's stop_wait (else ssh is killed: the remote still
        stops)."""
        first, self._stopping = not self._stopping, True
        proc = self._proc
        if proc is None:
            return                      # events() passes it on once ssh runs
        if first:
            # a remote that does not answer (a hung machine, a dead network) is left
            with contextlib.suppress(RuntimeError):
                self._deadline = asyncio.get_running_loop().call_later(
                    self.host.stop_wait, self._kill)
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()

    def abandon(self, message: str, signame: str = "") -> None:
        """From another thread, when the event loop may never run again (the console lost
        its terminal): ssh goes, so the remote sees its stdin close and stops, restoring its
        system there.  The file here keeps its runs and reads as partial."""
        self._stopping = True
        self._kill()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        """Keep the last lines of what ssh and the remote say on stderr (read to the end, so
        that a talkative remote never blocks on a full pipe)."""
        pending = b""
        while chunk := await stream.read(1 << 16):
            *lines, pending = (pending + chunk).split(b"\n")
            self._stderr.extend(ln.rstrip(b"\r").decode(errors="replace") for ln in lines)
            pending = pending[-LINE_SHOWN:]
        if pending:
            self._stderr.append(pending.decode(errors="replace"))

    async def _pass_tokens(self, proc: asyncio.subprocess.Process) -> None:
        assert self.gate is not None and proc.stdin is not None
        while True:
            await self.gate.get()
            if proc.stdin.is_closing():
                return
            proc.stdin.write(b"go\n")
            self._turns += 1
            self._heard = asyncio.get_running_loop().time()    # its clock starts with its turn
            with contextlib.suppress(ConnectionError):
                await proc.stdin.drain()

    async def events(self) -> AsyncIterator[ev.Event]:
        """The remote's events, each written here first.  Before its header, a failure is a
        HotloopError (ssh's words or the remote's: nothing ran, no file here); after it, the
        stream ends with Finished or Failed like a local one's."""
        await asyncio.to_thread(source_digest)     # compared with the header's: read once,
        # off the event loop.  The file here first: one that cannot be written stops the run
        # before it starts there; it is removed again if nothing comes (HotloopError if it
        # cannot be made)
        writer = Writer(self.result_file, self.on_exists)
        self.result_file = writer.path
        try:
            proc = self._proc = await start_ssh(self.host,
                                                script(self.host, self.remote_argv()))
        except BaseException:
            writer.discard()
            raise
        self.pids = [proc.pid]
        if self._stopping:              # stop() came while ssh started
            self._stopping = False
            self.stop()
        assert proc.stdout is not None and proc.stderr is not None
        helpers = [asyncio.create_task(self._read_stderr(proc.stderr))]
        if self.gate is not None:
            helpers.append(asyncio.create_task(self._pass_tokens(proc)))
        result: Result | None = None       # once the header came
        ended = False

        def put(event: ev.Event) -> ev.Event:
            nonlocal ended
            assert result is not None
            ended = self._ended = ended or isinstance(event, (ev.Finished, ev.Failed))
            self._reps += isinstance(event, ev.RunSample)
            if not isinstance(event, ev.Started):
                result.add(event)
            writer.write(event)
            if self.mirror is not None:
                self.mirror(event)
            return event
        try:
            async for event in self._lines(proc):
                if result is None:
                    if isinstance(event, _Silent):
                        self._kill()
                        raise HotloopError(f"{self.host.name}: no answer within "
                                           f"{START_S:g} s of ssh starting (a hung host?)")
                    if not isinstance(event, ev.Started):
                        what = event if isinstance(event, str) else \
                            f"sent {type(event).__name__} before its header"
                        self._kill()
                        raise HotloopError(f"{self.host.name}: {what}: not a hotloop session")
                    started = self._local_header(event)
                    started = dataclasses.replace(started, result_file=str(writer.path))
                    result = Result(self.result_file, started.header)
                    yield put(started)
                    remote_version = event.header.hotloop
                    source = event.header.hotloop_source
                    if remote_version != __version__:
                        yield put(ev.Warning(
                            f"{self.host.name} runs hotloop {remote_version}, this is "
                            f"{__version__}: {setup_advice(self.host)}",
                            variant=self.variant))
                    elif source != source_digest():
                        yield put(ev.Warning(other_sources(
                            self.host, __version__, source if isinstance(source, str) else None),
                            variant=self.variant))
                    continue
                assert result is not None
                if ended and isinstance(event, _Silent):
                    break               # whole, and still there: let go (it is stopped below)
                problem = event if isinstance(event, str) else \
                    self._problem(result, event, ended)
                if problem:
                    self._kill()
                    yield put(ev.Failed(problem, run=len(result.runs),
                                        variant=self.variant))
                    return
                assert not isinstance(event, (str, ev.Started))     # _problem's
                if isinstance(event, ev.Failed) and event.interrupted and self.interrupted_by:
                    event = dataclasses.replace(event, signal=self.interrupted_by)
                yield put(dataclasses.replace(event, variant=self.variant))
            if result is None:              # nothing came: why, in ssh's or hotloop's words
                await self._exit()
                await asyncio.wait(helpers[:1], timeout=STDERR_WAIT_S)
                assert proc.returncode is not None
                if self._stopping:
                    return
                raise HotloopError(failure(self.host, proc.returncode, list(self._stderr)))
            if not ended:
                assert result is not None
                await asyncio.wait(helpers[:1], timeout=STDERR_WAIT_S)
                yield put(self._lost(len(result.runs)))
        except (asyncio.CancelledError, GeneratorExit):
            # Cancelled (Ctrl-C): the remote stops as its stdin closes; its last lines
            # (its restore, "interrupted") are kept if they come within its stop_wait.  A
            # second cancel, or a remote that does not answer, ends it at once; the file
            # here gets its last line either way.
            self.stop()
            if result is not None and not ended:
                try:
                    await asyncio.wait_for(self._finish(proc, put, result),
                                           self.host.stop_wait)
                except (Exception, asyncio.CancelledError):  # noqa: BLE001 - leaving anyway
                    self._kill()
                finally:
                    if not ended:
                        with contextlib.suppress(Exception):
                            put(ev.Failed("interrupted", run=len(result.runs),
                                          signal=self.interrupted_by, interrupted=True,
                                          variant=self.variant))
            raise
        finally:
            try:
                self.stop()
                await self._exit()
            finally:
                if self._deadline is not None:
                    self._deadline.cancel()
                for t in helpers:
                    t.cancel()
                if result is None:
                    writer.discard()        # nothing ran there: nothing kept here
                else:
                    writer.close()
            await asyncio.gather(*helpers, return_exceptions=True)
        if writer.error is not None:
            raise writer.error

    async def _finish(self, proc: asyncio.subprocess.Process, put: Any,
                      result: Result) -> None:
        """After a cancel: the remote's lines until it ends (shielded from the cancel)."""
        async for event in self._lines(proc):
            if isinstance(event, str):
                return
            if self._problem(result, event, False) is None and not isinstance(event, ev.Started):
                if isinstance(event, ev.Failed) and event.interrupted:
                    event = dataclasses.replace(event, signal=self.interrupted_by)
                put(dataclasses.replace(event, variant=self.variant))

    async def _lines(self, proc: asyncio.subprocess.Process) -> AsyncIterator[ev.Event | str]:
        """The remote's events until its stdout ends; a line that is no result line, or
        silence beyond its time (a _Silent), is the last item, as what is wrong with it."""
        assert proc.stdout is not None
        loop = asyncio.get_running_loop()
        self._heard = loop.time()
        header = True
        while True:
            # after its last line, only as long as a stop may take
            limit = START_S if header else self.host.stop_wait if self._ended \
                else self.bounds.timeout + GRACE_S
            try:
                raw = await asyncio.wait_for(proc.stdout.readline(),
                                             self._heard + limit - loop.time())
            except asyncio.TimeoutError:
                if loop.time() < self._heard + limit:
                    continue            # given a turn meanwhile: its clock started again
                if self.gate is not None and not header and self._reps >= self._turns:
                    self._heard = loop.time()   # waiting for its turn: the others' runs
                    continue
                yield _Silent(f"sent nothing for {limit:g} s (a repetition's timeout is "
                              f"{self.bounds.timeout:g} s)")
                return
            except ValueError:          # longer than LINE_LIMIT
                yield f"sent a line of over {LINE_LIMIT} bytes"
                return
            if not raw:
                return
            self._heard = loop.time()
            if not raw.strip():
                continue
            header = False
            try:
                yield decode_line(raw)
            except NotJson:
                if not raw.endswith(b"\n"):
                    return              # cut short as the connection went
                yield f"sent a line that is not JSON: " \
                      f"{visible(raw.decode(errors='replace'))[:120]}"
                return
            except ValueError as e:
                yield f"sent a bad line: {e}"
                return

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

    def _problem(self, result: Result, event: ev.Event, ended: bool) -> str | None:
        if ended:
            return "sent a line after the session's last"
        if isinstance(event, ev.Started):
            return "sent a second header (one variant a host: run a batch's variants apart)"
        if isinstance(event, ev.RunSample):
            b = self.bounds
            if not event.warmup and len(result.runs) >= b.runs:
                return f"sent more runs than the plan's {b.runs}"
            if event.warmup and len(result.warmups) >= b.warmups:
                return f"sent more warmups than the plan's {b.warmups}"
            if self.gate is not None and len(result.runs) + len(result.warmups) >= self._turns:
                return "ran a repetition out of its turn (interleaved)"
            return run_problem(result, event)
        return None

    def _lost(self, runs: int) -> ev.Failed:
        if self._stopping:
            return ev.Failed("interrupted", run=runs, signal=self.interrupted_by,
                             interrupted=True, variant=self.variant)
        said = f" ({self._stderr[-1]})" if self._stderr else ""
        # the host is named by whoever shows it (its variant, the header's `remote`)
        return ev.Failed(visible(f"ssh connection lost after {runs} "
                                 f"run{'' if runs == 1 else 's'}{said}"),
                         run=runs, variant=self.variant)

    async def _exit(self) -> None:
        """ssh's end: at once when the remote has ended, else killed after its stop_wait."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), self.host.stop_wait)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self._kill()
            await asyncio.shield(proc.wait())
