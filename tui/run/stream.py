"""A session that runs elsewhere (another machine over SSH, a VM) and streams its events here.

The other side is the headless session itself: `hotloop run ... --format events --control
stdin` writes every event as the result file's own JSON line.  A child process here (ssh,
virtme-run) carries that stream; each line is read back through the result file's reader,
checked as a file's lines are and against the plan's Bounds, written to a result file here
and yielded, so that the reporter, the console, `show` and `compare` never know the
difference.  The subclasses say how the child starts, what its header gains here, and what
its failures mean (remote.RemoteSession, vm.VmSession).
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import os
import signal
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotloop import events as ev
from hotloop.catalog import STOP_WAIT_S  # stopped: how long the other side may take to end
from hotloop.errors import SessionFailed
from hotloop.paths import source_digest
from hotloop.record import Batch
from hotloop.results.reader import NotJson, Result, decode_line, run_problem
from hotloop.results.writer import Writer
from hotloop.visible import visible

STDERR_WAIT_S = 2.0                     # for the last of the child's words once stdout ended
LINE_SHOWN = 1000                       # characters of one stderr line kept
ERROR_LINES = 20                        # lines of the child's stderr kept for a message
LINE_LIMIT = 1 << 24                    # a session's longest line (hot symbols of a window)
START_S = 120.0                         # the child's start-up and the build, to its header
# A streamed session's warnings kept, each cut at LINE_SHOWN characters; those after are
# counted, and one line says how many (a remote that floods made a 36 MB file in 40 s)
WARNINGS_KEPT = 100
GRACE_S = 30.0                          # beyond a repetition's timeout, between two lines: a
                                        # worker process's start-up (drive.SETUP_GRACE)


@dataclass(frozen=True)
class Bounds:
    """What a streamed session may send: the plan's runs and warmups, a line within a
    repetition's timeout (its own and its turn's, interleaved).  One that sends more, or
    falls silent, is cut off: its lines cost memory and disk here."""
    runs: int
    warmups: int                        # the plan's warmup for each worker process
    timeout: float


# what the other side sends after its header
Streamed = ev.RunSample | ev.HotSymbols | ev.Warning | ev.PerfStart | ev.Finished | ev.Failed


class _Silent(str):
    """_lines' word for a child that sent nothing within its time."""


class StreamSession:
    """`hotloop run ARGV` elsewhere, driven as a Session: `events()`, `stop()`, a `gate` for
    interleaving (each token becomes a line "go" that lets the other side run one
    repetition), and a result file here."""

    stop_wait: float = STOP_WAIT_S      # stopped: how long its last lines may take to come

    def __init__(self, argv: Sequence[str], result_file: Path, bounds: Bounds,
                 variant: str, on_exists: str = "rename", until_ci: float | None = None,
                 mirror: Callable[[ev.Event], None] | None = None):
        self.bounds = bounds
        self.mirror = mirror            # sees each line the result file gets, as it does
        self.argv = list(argv)          # after "run": names and the plan's options
        self.result_file = result_file
        self.variant = variant
        self.on_exists = on_exists
        self.until_ci = until_ci
        self.gate: asyncio.Queue[None] | None = None
        self.batch: Batch | None = None
        # what the session says as it goes, before its header (a VM's boot): the command
        # line prints it on stderr
        self.notice: Callable[[str], None] | None = None
        self.interrupted_by = ""
        self.stopped_because = ""       # said by the other side's last line, not here
        self.pids: list[int] = []       # the child, once it runs
        self._proc: asyncio.subprocess.Process | None = None
        self._stopping = False          # stop() came: the other side's stdin is (to be) closed
        self._deadline: asyncio.TimerHandle | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=ERROR_LINES)
        self._turns = 0                 # tokens passed to a gated session: its repetitions
        self._reps = 0                  # repetitions (warmups too) it has sent
        self._ended = False             # its last line (finished, failed) came
        self._heard = 0.0               # when it last sent a line or was given a turn
        self._stop_by: float | None = None  # stopped: its lines are read until then only

    # --- what a subclass says ------------------------------------------------------------
    @property
    def start_s(self) -> float:
        """How long the child may take to the header."""
        return START_S

    @property
    def grace_s(self) -> float:
        """Beyond a repetition's timeout, between two lines."""
        return GRACE_S

    @property
    def title(self) -> str:
        return self.variant

    @property
    def machine(self) -> str:
        raise NotImplementedError

    @property
    def where(self) -> str:
        """Who the messages name: the host, the VM."""
        return self.machine

    @property
    def stop_elsewhere(self) -> float:
        """Stopped, the other side ends its run and restores its system: up to stop_wait."""
        return self.stop_wait

    perf_elsewhere = ""                 # a host's: its own (remote.RemoteSession)
    cpus_here: tuple[int, ...] = ()     # a VM's: its vCPUs' (vm.VmSession)

    async def _spawn(self) -> asyncio.subprocess.Process:
        """The child, its three streams piped, in a process group of its own."""
        raise NotImplementedError

    def _local_header(self, started: ev.Started) -> ev.Started:
        return started

    def _header_warnings(self, started: ev.Started) -> list[str]:
        """Warnings right after the header (the other side's version, the VM's accel)."""
        return []

    def _noise(self, raw: bytes) -> bool:
        """A line before the header that is not the session's (a console's): skipped."""
        return False

    def _adopt(self, event: Streamed) -> ev.Event:
        """An event of the other side's, as this side's file keeps it."""
        return dataclasses.replace(event, variant=self.variant)

    def _no_header(self, returncode: int) -> str:
        """Why nothing came, in the child's words."""
        raise NotImplementedError

    def _silent_start(self) -> str:
        return f"{self.where}: no answer within {self.start_s:g} s (hung?)"

    def _lost_message(self, runs: int) -> str:
        raise NotImplementedError

    def _cleanup(self) -> None:
        """After the child is gone."""

    def _heard_stderr(self, line: str) -> bool:
        """A line of the child's stderr as it comes: whether to keep it for a message."""
        return True

    # --- the stream ----------------------------------------------------------------------
    def remote_argv(self) -> list[str]:
        gated = ["--gated"] if self.gate is not None else []
        return ["run", "--format=events", "--control=stdin", *gated, *self.argv]

    def stop(self, quick: bool = False) -> None:
        """End the run: the other side sees its stdin close, stops and restores; its last
        lines still come, within its stop_wait (else the child is killed).  `quick` changes
        nothing: the other side's restore is not this side's to cut short."""
        first, self._stopping = not self._stopping, True
        proc = self._proc
        if proc is None:
            return                      # events() passes it on once the child runs
        if first:
            # one that does not answer (a hung machine, a dead network) is left, and one
            # that floods is read no longer than it was announced: the lines it sent before
            # are not worked through after that
            with contextlib.suppress(RuntimeError):
                loop = asyncio.get_running_loop()
                self._deadline = loop.call_later(self.stop_wait, self._kill)
                self._stop_by = loop.time() + self.stop_wait
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()

    def abandon(self, message: str, signame: str = "") -> None:
        """From another thread, when the event loop may never run again (the console lost
        its terminal): the child goes.  The file here keeps its runs and reads as partial."""
        self._stopping = True
        self._kill()

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        """Keep the last lines the child says on stderr (read to the end, so that a
        talkative one never blocks on a full pipe)."""
        pending = b""
        while chunk := await stream.read(1 << 16):
            *lines, pending = (pending + chunk).split(b"\n")
            self._stderr.extend(text for ln in lines
                                if self._heard_stderr(text := ln.rstrip(b"\r").decode(
                                    errors="replace")))
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
        """The other side's events, each written here first.  Before its header, a failure
        is a SessionFailed (the child's words: nothing ran, no file here); after it, the
        stream ends with Finished or Failed like a local one's."""
        await asyncio.to_thread(source_digest)     # compared with the header's: read once,
        # off the event loop.  The file here first: one that cannot be written stops the run
        # before it starts there; it is removed again if nothing comes (HotloopError if it
        # cannot be made)
        writer = Writer(self.result_file, self.on_exists)
        self.result_file = writer.path
        try:
            proc = self._proc = await self._spawn()
        except BaseException:
            writer.discard()
            self._cleanup()
            raise
        self.pids = [proc.pid]
        if self._stopping:              # stop() came while the child started
            self._stopping = False
            self.stop()
        assert proc.stdout is not None and proc.stderr is not None
        helpers = [asyncio.create_task(self._read_stderr(proc.stderr))]
        if self.gate is not None:
            helpers.append(asyncio.create_task(self._pass_tokens(proc)))
        result: Result | None = None       # once the header came
        ended = False
        warned, unkept = 0, 0               # warnings it sent; those not kept (WARNINGS_KEPT)

        def unkept_said() -> ev.Warning | None:
            """Before its last line: how many warnings were not kept, once."""
            nonlocal unkept
            if not unkept:
                return None
            said = ev.Warning(f"{unkept:,} more warnings not kept (the first {WARNINGS_KEPT} "
                              f"are)", variant=self.variant)
            unkept = 0
            put(said)
            return said

        def kept(event: Streamed) -> Streamed | None:
            """The event as kept: a warning within WARNINGS_KEPT, cut to LINE_SHOWN."""
            nonlocal warned, unkept
            if isinstance(event, ev.Warning):
                warned += 1
                if warned > WARNINGS_KEPT:
                    unkept += 1
                    return None
                if len(event.message) > LINE_SHOWN:
                    return dataclasses.replace(event, message=event.message[:LINE_SHOWN] + "…")
            return event

        def put(event: ev.Event) -> ev.Event:
            nonlocal ended
            assert result is not None
            if isinstance(event, (ev.Finished, ev.Failed)) and not ended:
                unkept_said()
            ended = self._ended = ended or isinstance(event, (ev.Finished, ev.Failed))
            self._reps += isinstance(event, ev.RunSample)
            if not isinstance(event, ev.Started):
                result.add(event)
            event = writer.write(event)     # the header: the name it got, if not the chosen
            self.result_file = writer.path
            if self.mirror is not None:
                self.mirror(event)
            return event
        try:
            async for event in self._lines(proc):
                if result is None:
                    if isinstance(event, _Silent):
                        self._kill()
                        raise SessionFailed(self._silent_start())
                    if not isinstance(event, ev.Started):
                        what = event if isinstance(event, str) else \
                            f"sent {type(event).__name__} before its header"
                        self._kill()
                        raise SessionFailed(f"{self.where}: {what}: not a hotloop "
                                            f"session")
                    started = self._local_header(event)
                    started = dataclasses.replace(started, result_file=str(writer.path))
                    result = Result(self.result_file, started.header)
                    put(started)        # the name it got, if the chosen one was taken meanwhile
                    result.path = self.result_file
                    yield dataclasses.replace(started, result_file=str(writer.path))
                    for message in self._header_warnings(event):
                        yield put(ev.Warning(message, variant=self.variant))
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
                sent = kept(event)
                if sent is None:
                    continue
                if isinstance(sent, ev.Failed) and sent.interrupted and self.interrupted_by:
                    sent = dataclasses.replace(sent, signal=self.interrupted_by)
                if isinstance(sent, (ev.Finished, ev.Failed)) and \
                        (said := unkept_said()) is not None:
                    yield said
                yield put(self._adopt(sent))
            if result is None:              # nothing came: why, in the child's words
                await self._exit()
                await asyncio.wait(helpers[:1], timeout=STDERR_WAIT_S)
                assert proc.returncode is not None
                if self._stopping:
                    return
                raise SessionFailed(self._no_header(proc.returncode))
            if not ended:
                assert result is not None
                await asyncio.wait(helpers[:1], timeout=STDERR_WAIT_S)
                yield put(self._lost(len(result.runs)))
        except (asyncio.CancelledError, GeneratorExit):
            # Cancelled (Ctrl-C): the other side stops as its stdin closes; its last lines
            # (its restore, "interrupted") are kept if they come within its stop_wait.  A
            # second cancel, or one that does not answer, ends it at once; the file here
            # gets its last line either way.
            self.stop()
            if result is not None and not ended:
                try:
                    await asyncio.wait_for(self._finish(proc, put, kept, result),
                                           self.stop_wait)
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
                self._cleanup()
            await asyncio.gather(*helpers, return_exceptions=True)
        if writer.error is not None:
            raise writer.error

    async def _finish(self, proc: asyncio.subprocess.Process, put: Any, kept: Any,
                      result: Result) -> None:
        """After a cancel: the other side's lines until it ends (shielded from the cancel)."""
        async for event in self._lines(proc):
            if isinstance(event, str):
                return
            if self._problem(result, event, False) is None and \
                    not isinstance(event, ev.Started) and (event := kept(event)) is not None:
                if isinstance(event, ev.Failed) and event.interrupted:
                    event = dataclasses.replace(event, signal=self.interrupted_by)
                put(self._adopt(event))

    async def _lines(self, proc: asyncio.subprocess.Process) -> AsyncIterator[ev.Event | str]:
        """The other side's events until its stdout ends; a line that is no result line, or
        silence beyond its time (a _Silent), is the last item, as what is wrong with it."""
        assert proc.stdout is not None
        loop = asyncio.get_running_loop()
        self._heard = loop.time()
        header = True
        while True:
            # after its last line, only as long as a stop may take
            limit = self.start_s if header else self.stop_wait if self._ended \
                else self.bounds.timeout + self.grace_s
            if self._stop_by is not None and loop.time() > self._stop_by:
                return                  # stopped, and its time is up: what is left goes
            try:
                raw = await _readline(proc.stdout, self._heard + limit - loop.time())
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
            if not raw.strip():
                self._heard = loop.time()
                continue
            if header and self._noise(raw):
                # not the session's: its words, for a message; not its clock (boot noise
                # must not keep a hung start alive)
                self._stderr.append(visible(raw.decode(errors="replace").strip())[:LINE_SHOWN])
                continue
            self._heard = loop.time()
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

    def _problem(self, result: Result, event: ev.Event, ended: bool) -> str | None:
        if ended:
            return "sent a line after the session's last"
        if isinstance(event, ev.Started):
            return "sent a second header (one variant a stream: run a batch's variants apart)"
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
        return ev.Failed(visible(self._lost_message(runs)), run=runs, variant=self.variant)

    async def _exit(self) -> None:
        """The child's end: at once when the other side has ended, else killed after
        its stop_wait."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), self.stop_wait)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self._kill()
            await asyncio.shield(proc.wait())


async def _readline(stream: asyncio.StreamReader, timeout: float) -> bytes:
    """stream.readline() within `timeout` (else asyncio.TimeoutError).  Not wait_for: up to
    Python 3.11 it drops a cancel that comes as the line does, and a flood of lines made every
    Ctrl-C come then (its stop took a minute).  A cancel here always cancels."""
    read = asyncio.ensure_future(stream.readline())
    try:
        done, _ = await asyncio.wait({read}, timeout=max(timeout, 0))
    except BaseException:
        read.cancel()
        raise
    if not done:
        read.cancel()
        raise asyncio.TimeoutError
    return read.result()
