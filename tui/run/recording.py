"""A session's perf, over its worker processes: one recorder a worker (its windows numbered on
from the workers before it), the binaries their samples fall in (read as the workers mapped
them), and at the end the per-run and whole-session hot symbols and the counters of them all.
The perf data is kept beside the result file, each window compressed as the next one fills and
the session's own within the plan's budget (perf/keep.py) as it runs; older runs' data within
that budget for the directory when the session ends.  `finish()` leaves it so on every way out.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

from hotloop import events as ev
from hotloop.catalog import ResolvedPlan
from hotloop.perf import opened
from hotloop.perf.buildid import binaries, build_ids, mapped_files, read_ids
from hotloop.perf.keep import UNFINISHED, KeptWindows
from hotloop.perf.recorder import PerfRecorder, PerfResult, merge
from hotloop.perf.tally import Tally
from hotloop.results.perf_data import PERF_MARK, claim_perf_dir, perf_dir, prune_perf_data

# A quit compresses up to this much plain perf data itself (a window or two at 999 Hz: 30 ms
# with a CPU to itself; in the event loop, so 4 MB was 0.3 s of a quit at a load of 12), and
# hands more to a detached finisher (perf/opened.py)
QUICK_INLINE = 1_000_000
WINDOW_TOP = 30                         # symbols kept per perf window and per run
# The whole session keeps every symbol sampled (HotSymbols.floor 1): one cut from the list
# would count 0 in that session and, against one that listed it, make a false new or gone
# row (analysis.symcost).  Older files kept their top 100 (OLD_SESSION_TOP there).
SESSION_TOP: int | None = None
SESSION_FLOOR = 1


class Recording:
    """The perf of the session of `rp`, its data kept beside `result_file` when `keep`."""

    def __init__(self, rp: ResolvedPlan, variant: str, result_file: Path, keep: bool):
        self.rp = rp
        self.variant = variant
        self.result_file = result_file   # the session's, as the header names it
        self.keep = keep                 # keep perf.data beside the result file
        self.counters: dict[str, float | None] = {}
        self._results: list[PerfResult] = []
        self._windows = 0                # perf windows of earlier workers, to number on
        self._said: set[str] = set()
        self._mapped: dict[str, str] = {}   # {path: build id} of what the workers mapped
        self._all_pids: list[int] = []      # every worker's and helper's, for annotate
        self._comms: list[str] = []         # and their names, which what they fork inherits
        self._tally = Tally(WINDOW_TOP)     # the windows so far: for a session cut short
        self._kept: KeptWindows | None = None   # the session's kept windows, once perf starts
        self._before: set[str] = set()          # in the perf directory before: not ours
        self._open: opened.OpenEntry | None = None  # held while the data is not finished
        self._finished = False
        self._recorder: PerfRecorder | None = None  # the running worker's, until stopped
        self._made_dir = False                  # the perf directory made by this session
        self._made: list[PerfRecorder] = []     # every worker's, to tell if one sampled
        self.quick = False                      # stopping for a quit: no report waited for

    def first_said(self, message: str) -> bool:
        """Whether perf says `message` for the first time: once a session, not once a
        worker."""
        if message in self._said:
            return False
        self._said.add(message)
        return True

    async def ready(self, pids: list[int], comm: str) -> None:
        """A worker is set up: the binaries its samples will be in, as they are now."""
        self._all_pids += pids
        self._comms.append(comm)
        mapped = {p for pid in pids for p in mapped_files(pid)}
        self._mapped.update(await asyncio.to_thread(read_ids, mapped - self._mapped.keys()))

    def recorder(self, inbox: asyncio.Queue[tuple[str, Any]],
                 first_run: int = 0) -> PerfRecorder:
        """A recorder of one worker (its first run the session's `first_run`), its windows
        and warnings put in `inbox`: made before the worker starts (its `prepare` spawns perf
        meanwhile), handed the worker's pids once it is ready (`attach`)."""
        plan = self.rp.plan
        if self.keep and not os.path.lexists(perf_dir(self.result_file)):
            self._made_dir = True       # by this session: gone again if nothing is recorded
        why = claim_perf_dir(self.result_file) if self.keep else None
        if why:                         # taken since the session started
            self.keep = False
            inbox.put_nowait(("warning", f"data not kept: {why}"))
        keep = perf_dir(self.result_file) if self.keep else None

        def warn(message: str) -> None:
            inbox.put_nowait(("warning", message))
        if keep is not None and self._kept is None:
            with contextlib.suppress(OSError):
                self._before = set(os.listdir(keep))
            self._open = opened.hold(self.result_file, plan.perf_keep_mb)
            self._kept = KeptWindows(str(keep), plan.perf_keep_mb * 1_000_000,
                                     budget_mb=plan.perf_keep_mb)
        if self._kept is not None:
            self._kept.warn = warn      # this worker's inbox
        self._recorder = PerfRecorder(
            (), frequency=plan.perf_freq, call_graph=plan.call_graph, keep_dir=keep,
            compress="gzip", kept=self._kept, window_base=self._windows,
            cpus=self.rp.cpu.cpus, budget_mb=plan.perf_keep_mb,
            on_window=functools.partial(self._on_window, inbox, (self._windows, first_run)),
            on_warning=warn)
        self._made.append(self._recorder)
        return self._recorder

    def interrupt(self) -> None:
        """A stop: the running worker's perf told to end now (PerfRecorder.interrupt), with
        the worker's kill, rather than once the worker is gone; `stop` waits for it."""
        if self._recorder is not None:
            self._recorder.interrupt()

    @staticmethod
    def _on_window(inbox: asyncio.Queue[tuple[str, Any]], base: tuple[int, int],
                   window: Any) -> None:
        # `base`: the windows of earlier workers when this one started, to number on, and
        # the worker's first run
        inbox.put_nowait(("window", (base, window)))

    def window(self, msg: tuple[tuple[int, int], Any]) -> ev.HotSymbols:
        """A perf window as the inbox had it, numbered in the session."""
        (base, first_run), w = msg
        for run, symbols in w.runs.items():        # a window may hold several short runs
            self._tally.add(first_run + run, symbols, sum(s.samples for s in symbols))
        return ev.HotSymbols(tuple(w.symbols[:WINDOW_TOP]), window=base + w.index,
                             samples=w.samples, variant=self.variant, dropped=w.dropped)

    async def stop(self, rec: PerfRecorder | None, first_run: int) -> None:
        """Stop one worker's recording and keep its result, run numbers made global."""
        if rec is None:
            return
        if rec is self._recorder:
            self._recorder = None
        if not rec.started:             # spawned, the worker never ready: nothing recorded,
            await rec.stop()            # no result (its counters are not unknown: not there)
            return
        result = await rec.stop(quick=self.quick)
        self._windows += rec.windows_done
        result.runs = {first_run + i: syms for i, syms in result.runs.items()}
        self._results.append(result)

    def _unmake_dir(self) -> None:
        """The perf directory this session made for perf that never sampled (its worker never
        ready, or perf not started): removed, as the session was before it (its mark, and the
        file of a perf killed before it recorded), so nothing is left of a failed start; never
        one holding anything else."""
        d = perf_dir(self.result_file)
        with contextlib.suppress(OSError):
            if set(os.listdir(d)) <= {PERF_MARK, UNFINISHED}:
                for name in (UNFINISHED, PERF_MARK):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(d / name)
                os.rmdir(d)
                self._made_dir = False

    def events(self) -> list[ev.Event]:
        """The per-run and whole-session hot symbols, and the counters, of every worker."""
        done, self._results = self._results, []
        self._tally.clear()
        if not done:
            return []
        events, self.counters = merge(done, self.variant, WINDOW_TOP, SESSION_TOP)
        return self._named(events)

    def so_far(self) -> list[ev.Event]:
        """The per-run and whole-session hot symbols of the windows summarised so far: for a
        session cut short (Ctrl-C, a stop cancelled), whose recorders never summed theirs,
        so that show, compare and annotate find them as in a finished session's file."""
        tally = self._tally
        if not tally.session.total:
            return []
        events: list[ev.Event] = [
            ev.HotSymbols(tuple(syms), scope="run", window=run, samples=samples,
                          variant=self.variant)
            for run, (syms, samples) in tally.runs().items()]
        events.append(ev.HotSymbols(tuple(tally.session.top(SESSION_TOP)), scope="session",
                                    samples=tally.session.total, variant=self.variant,
                                    floor=SESSION_FLOOR))
        tally.clear()
        return self._named(events)

    def _named(self, events: list[ev.Event]) -> list[ev.Event]:
        """The session's hot symbols with the binaries they are in and whose they are."""
        return [dataclasses.replace(e, floor=SESSION_FLOOR, build_ids=build_ids(
                    (s.dso for s in e.symbols), self._mapped),
                    binaries=binaries((s.dso for s in e.symbols), self._mapped),
                    pids=tuple(dict.fromkeys(self._all_pids)),
                    comms=tuple(dict.fromkeys(self._comms)))
                if isinstance(e, ev.HotSymbols) and e.scope == "session" else e
                for e in events]

    def finish(self) -> list[str]:
        """The session's perf data finished, however it ends (its end, a stop, Ctrl-C, a
        crash): what perf left plain compressed, the whole within the budget, older runs'
        data pruned; once.  What it did, as warnings (the pruning)."""
        if self._finished:
            return []
        self._finished = True
        try:
            if self._kept is not None:
                self._kept.warn = None          # said in the file already, or nowhere to say
                # a quit, a loaded machine's backlog of windows left plain: a detached
                # finisher at nice 19 compresses them, holding the entry's lock (a next
                # command would do it, should it die), and the console quits now
                if self.quick and self._open is not None \
                        and self._kept.plain_bytes(self._before) > QUICK_INLINE \
                        and opened.detach(self._open):
                    self._open = None
                    return []
                self._kept.settle(self._before)
            if self._made_dir and not any(r.sampled for r in self._made):
                self._unmake_dir()      # made for perf that never sampled: nothing in it
            return self.prune()
        finally:
            if self._open is not None:
                self._open.release()
                self._open = None

    def prune(self) -> list[str]:
        """Older runs' perf data beyond the plan's budget for the results directory: removed,
        oldest first (never a result file, never this run's)."""
        if not (self.keep and self.rp.plan.perf):
            return []
        budget = self.rp.plan.perf_keep_mb
        gone = prune_perf_data(self.result_file.parent, budget * 1_000_000,
                               perf_dir(self.result_file))
        return [f"perf data of {len(gone)} older run{'' if len(gone) == 1 else 's'} removed "
                f"({', '.join(d.name for d in gone[:3])}{'...' if len(gone) > 3 else ''}): "
                f"the perf data in {self.result_file.parent} keeps within {budget} MB "
                f"(plan key perf_keep_mb)"] if gone else []
