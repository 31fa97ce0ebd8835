"""A stand-in session for a series' tests (hotloop.run.sessionlike.SessionLike's face, no
process): it writes its slot's file as a session would, through forge (a zero_null header with
the batch the series gave it, its runs, its last line), and yields each line as the event it
is.  The series' tests drive SeriesRun with it; the SessionLike tests hold it to that face."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import forge

from hotloop import catalog
from hotloop import events as ev
from hotloop.catalog import Catalog, ResolvedPlan
from hotloop.record import Batch, to_json
from hotloop.results.reader import decode_line
from hotloop.run import series


def with_vm_kernel(tmp_path: Path) -> Catalog:
    """The bundled catalogue (default, busy-poll) and a kernel profile, patched, booted in a
    VM (a forged bzImage: nothing boots it here)."""
    from conftest import profile_dir
    from test_vm_rules import fake_bzimage
    image = fake_bzimage(tmp_path / "bzImage")
    return catalog.load([profile_dir(tmp_path, f"""
        [kernel.patched]
        image = "{image}"
        """)])


NS = {"default": 2_000_000, "busy-poll": 1_900_000}     # a kernel's run, in ns
ENDS = ("finished", "failed", "stopped", "refused")


class Forged:
    """`end`: finished, failed, stopped (the series stopped while it ran) or refused (bad
    input: no file).  `on_start`: called with the session as it starts."""

    def __init__(self, slot: series.Slot, rp: ResolvedPlan, end: str = "finished",
                 on_start: Callable[[Forged], Any] | None = None):
        assert end in ENDS, end
        self.slot, self.rp, self.end, self.on_start = slot, rp, end, on_start
        self.gate: asyncio.Queue[None] | None = None
        self.batch: Batch | None = None
        self.variant = slot.variant
        self.result_file = slot.path
        self.interrupted_by = self.stopped_because = ""
        self.stopped = False
        self.pids: list[int] = []

    title = property(lambda self: self.variant)
    machine = property(lambda self: "")
    until_ci = property(lambda self: None)
    stop_elsewhere = property(lambda self: 0.0)
    perf_elsewhere = property(lambda self: "")
    cpus_here = property(lambda self: ())

    async def events(self) -> AsyncIterator[ev.Event]:
        if self.on_start is not None:
            self.on_start(self)
        if self.end == "refused":
            yield ev.Failed("param x: no", bad_input=True, variant=self.variant)
            return
        bs = self.rp.params["block_size"]
        head = forge.header(params={"block_size": bs, "count": 20000, "spin": 0},
                            variant=self.variant, label=self.slot.kernel,
                            kernel={**forge.header()["kernel"], "name": self.slot.kernel},
                            batch=to_json(self.batch))
        last = {"finished": "finished",
                "failed": {"type": "failed", "message": "the worker died", "run": 3},
                "stopped": {"type": "failed", "message": "interrupted", "interrupted": True}}
        ns = NS.get(self.slot.kernel, NS["default"]) * (512 / bs) ** 0.1
        forge.zero_null(self.slot.path, round(ns), block_size=bs, head=head,
                        end=last[self.end])
        for line in self.slot.path.read_bytes().splitlines():
            yield decode_line(line)
            await asyncio.sleep(0)

    def stop(self, quick: bool = False) -> None:
        self.stopped = True

    def abandon(self, message: str, signame: str = "") -> None:
        self.stopped = True
