"""A session: one resolved plan, run in a worker process, as a stream of events.

The session is the only place that knows how a run happens: it builds the
workload, starts `python -m tui.worker` in its own process group, turns the
worker's JSON lines into typed events, appends each to the result file as it
arrives, and yields it to the consumer (the headless reporter or the TUI).
Whatever happens (a normal end, a crash, a timeout, Ctrl-C, stop()), the
worker's whole process group is killed before the stream ends.
"""
from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, AsyncIterator

from tui import __version__, build, paths, sysinfo
from tui import events as ev
from tui.catalog import ResolvedPlan, Workload
from tui.errors import HotloopError
from tui.results import Writer
from tui.stats import summarize

SETUP_GRACE = 30.0                      # seconds for Python start-up and hl_setup


def metric_value(w: Workload, sample: dict[str, Any]) -> float:
    """The workload's primary metric from one run's counters."""
    ns, ops = sample["ns"] or 1, sample["ops"] or 1
    match w.metric:
        case "bytes/s":
            return sample["bytes"] * 1e9 / ns
        case "ops/s":
            return sample["ops"] * 1e9 / ns
        case "ns/op":
            return sample["ns"] / ops
        case "cycles/op":
            return sample["cycles"] / ops
    try:
        return float(sample["extra"][w.metric])
    except KeyError:
        raise ValueError(f"the workload reported no metric {w.metric!r} (it reported: "
                         f"{', '.join(sample['extra']) or 'none'})") from None


def _plain(obj: Any) -> Any:
    return json.loads(json.dumps(dataclasses.asdict(obj), default=str))


def header(rp: ResolvedPlan, built: build.Built, variant: str = "") -> dict[str, Any]:
    w = rp.workload
    return {
        "hotloop": __version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        **sysinfo.machine(),
        "plan": _plain(rp.plan),
        "workload": {"name": w.name, "source": str(w.source), "summary": w.summary,
                     "metric": w.metric, "unit": w.unit,
                     "higher_is_better": w.higher_is_better, "procs": w.procs},
        "params": dict(rp.params),
        "cpu": _plain(rp.cpu),
        "kernel": _plain(rp.kernel),
        "label": rp.kernel.label or rp.kernel.name,
        "variant": variant,
        "compiler": built.compiler,
        "cflags": list(built.cflags),
        "source_sha256": built.source_sha256,
    }


class Session:
    """Run `rp` once; iterate `events()` to drive it."""

    def __init__(self, rp: ResolvedPlan, result_file: Path, variant: str = ""):
        self.rp = rp
        self.result_file = result_file
        self.variant = variant
        self.pids: list[int] = []        # worker and its helper processes, once ready
        self._proc: asyncio.subprocess.Process | None = None
        self._stopping = False
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)

    def stop(self) -> None:
        """End the run now; the stream then ends with Failed(interrupted=True)."""
        self._stopping = True
        self._kill()

    def _kill(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    async def events(self) -> AsyncIterator[ev.Event]:
        rp = self.rp
        built = await asyncio.to_thread(build.build, rp.workload.source, rp.cpu.cflags,
                                        rp.workload.name)
        writer = Writer(self.result_file)
        runs: list[float] = []
        try:
            started = ev.Started(header(rp, built, self.variant), str(self.result_file))
            writer.write(started)
            yield started
            async for event in self._drive(built, runs):
                writer.write(event)
                yield event
        except asyncio.CancelledError:
            writer.write(ev.Failed("interrupted", run=len(runs), interrupted=True,
                                   variant=self.variant))
            raise
        finally:
            self._kill()
            if self._proc is not None:
                await asyncio.shield(self._proc.wait())
            writer.close()

    async def _spawn(self, built: build.Built) -> asyncio.subprocess.Process:
        rp = self.rp
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(paths.ROOT),
                                                          env.get("PYTHONPATH")]))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tui.worker", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, env=env, limit=1 << 20)
        spec = {"parent": os.getpid(), "module_path": str(built.path),
                "module_name": built.module_name, "params": rp.params,
                "cpus": list(rp.cpu.cpus), "sched": rp.cpu.sched,
                "priority": rp.cpu.priority, "nice": rp.cpu.nice,
                "runs": rp.plan.runs, "warmup": rp.plan.warmup, "wait_go": True}
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(spec) + "\n").encode())
        await proc.stdin.drain()
        return proc

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            self._stderr.append(line.decode(errors="replace").rstrip())

    async def _drive(self, built: build.Built, runs: list[float]) -> AsyncIterator[ev.Event]:
        rp, v = self.rp, self.variant
        self._proc = proc = await self._spawn(built)
        assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
        stderr_task = asyncio.create_task(self._drain_stderr(proc.stderr))
        timeout = rp.plan.timeout * (1 + rp.plan.warmup) + SETUP_GRACE
        try:
            while True:
                try:
                    line = await asyncio.wait_for(proc.stdout.readline(), timeout)
                except asyncio.TimeoutError:
                    self._kill()
                    yield ev.Failed(f"run {len(runs) + 1}: no result within the timeout of "
                                    f"{rp.plan.timeout:g}s; worker killed", run=len(runs),
                                    signal="SIGKILL", variant=v)
                    return
                if not line:
                    yield await self._ended(len(runs))
                    return
                msg = json.loads(line)
                kind = msg.pop("type")
                if kind == "run":
                    try:
                        value = metric_value(rp.workload, msg)
                    except ValueError as e:
                        yield ev.Failed(str(e), run=len(runs), variant=v)
                        return
                    if not msg["warmup"]:
                        runs.append(value)
                    timeout = rp.plan.timeout
                    yield ev.RunSample(value=value, variant=v, **msg)
                elif kind == "ready":
                    self.pids = [msg["pid"], *msg["pids"]]
                    timeout = rp.plan.timeout
                    proc.stdin.write(b"go\n")
                    await proc.stdin.drain()
                elif kind == "warning":
                    yield ev.Warning(msg["message"], variant=v)
                elif kind == "failed":
                    await proc.wait()
                    yield ev.Failed(msg["message"], run=msg["run"],
                                    bad_input=msg["bad_input"], variant=v)
                    return
                elif kind == "finished":
                    s = summarize(runs)
                    yield ev.Finished(s.to_json() if s else {}, variant=v)
                    return
        finally:
            stderr_task.cancel()

    async def _ended(self, done: int) -> ev.Failed:
        """The worker's stream ended without a last word: say how it died."""
        assert self._proc is not None
        code = await self._proc.wait()
        if self._stopping:
            return ev.Failed("stopped by the user", run=done, interrupted=True,
                             variant=self.variant)
        if code < 0:
            name = signal.Signals(-code).name
            why = f"worker killed by {name}"
        else:
            name, why = "", f"worker exited with status {code}"
        tail = "; ".join(list(self._stderr)[-3:])
        return ev.Failed(f"run {done + 1}: {why}" + (f" ({tail})" if tail else ""),
                         run=done, signal=name, variant=self.variant)
