"""A series' life, owned by one object: `SeriesRun`, whoever asks for it (the command line's
`run --sessions`, calibrate here, the console).

Made from a typed request (SeriesRequest: the sides already expanded, a variant's plan
resolved where the caller resolved it, the user's Choices whole), it

  checks      on being made: here only, kernels or variants but not both, each side once
              under a name a directory can take, the number of sessions within bounds
              (HotloopError before anything is made);
  resolve()   each side's plan for this machine, once (one a side: a batch refused);
  consent()   what those plans would change on the system, to ask first;
  start()     the series' directory and schedule made (results/TIME-STEM/<side>/sNN.jsonl);
  events()    drives it (run.series.SeriesLoop: an async iterator, the event loop free),
              keeping each finished session's result in memory as it comes;
  stop()      no session after the running one, which ends as a stopped session does;
  finish()    once it is over (ended, stopped, broken): a finished session whose file was
              deleted, replaced or changed since is lost (a failed one), every session that
              did not finish set aside (series.ASIDE), a directory that holds nothing removed;
              what the series came to (SeriesOutcome: its results, its comparison's inputs).

Callers render what it hands back; none re-reads the files it wrote, nor parses a line.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hotloop import events as ev
from hotloop.catalog import Catalog, Plan, ResolvedPlan
from hotloop.errors import HotloopError
from hotloop.host.kvm import tools
from hotloop.paths import RESULTS
from hotloop.results import Result, gone
from hotloop.results.writer import sweep_below
from hotloop.run import launch, series
from hotloop.run.pinned import Pinned
from hotloop.run.sessionlike import SessionLike
from hotloop.run.start import Choices, here

if TYPE_CHECKING:
    from hotloop.analysis.comparison import Comparison

SERIES_HERE = "--sessions runs a series on this machine; --host runs one session on each host"
# Why not the cross product: the report compares every side with the first, so "patched
# block_size=4096" against "stock block_size=512" would be a row mixing two changes, and the
# series' length would be their product; one series a question, each kernel its own series.
KERNELS_AND_VARIANTS = ("--sessions alternates kernels or variants, not both: keep one "
                        "--kernel to compare the variants, or one variant (one plan, one "
                        "--cpu, one value a --param) to compare the kernels")


def by_variant(slot: series.Slot) -> str:
    return slot.variant


@dataclass(frozen=True)
class SeriesSide:
    """A variant of the series: its name ("block_size=4096", "cpu=split", a plan's) and its
    plan with the user's overrides; `rp` that plan resolved, where the caller resolved it
    already (run's variants), so that it is not resolved again."""
    name: str
    plan: Plan
    rp: ResolvedPlan | None = None


@dataclass(frozen=True)
class SeriesRequest:
    """`sessions` sessions of each of `kernels`, alternating (run.series), of one plan; or,
    with `variants`, of each of those (then `plan` is the first's and `kernels` its one)."""
    plan: Plan                          # with the user's overrides; its kernel: each of kernels
    kernels: tuple[str, ...]
    sessions: int                       # a kernel (a variant)
    variants: tuple[SeriesSide, ...] = ()
    # the user's (apply_system: the yes to consent()); a series' files are new: on_exists
    # is always "refuse"
    choices: Choices = Choices()
    host: str | None = None             # asked for one: refused, a series runs here
    results: Path = RESULTS             # where the series' directory is made
    stem: str = ""                      # its name after the time; "": the plan's
    gap: float = 0.0                    # seconds between two sessions
    session_name: Callable[[series.Slot], str] = field(default=by_variant)  # its variant
    mirror: Callable[[ev.Event], None] | None = None
    notice: Callable[[str], None] | None = None     # a VM's boot as it goes (stderr)
    # the rounds' orders of the sides, in turn (a bisect's: its revision between GOOD and
    # BAD); () for the balanced design
    rounds: tuple[tuple[int, ...], ...] = ()

    def sides(self) -> list[SeriesSide]:
        """What the series alternates, a kernel's side named for it."""
        if len(self.variants) > 1:
            return list(self.variants)
        return [SeriesSide(k, replace(self.plan, kernel=k)) for k in self.kernels]

    def folders(self) -> list[str]:
        """Each side's directory: a kernel's name, a variant's made safe for one."""
        names = [s.name for s in self.sides()]
        if len(self.variants) > 1:
            return series.variant_directories(names)
        return series.directory_names(names)


def check(req: SeriesRequest) -> None:
    """What needs no catalogue: here, kernels or variants but not both, each once under a
    name a directory can take, the number of sessions within bounds."""
    if req.host is not None:
        raise HotloopError(SERIES_HERE)
    if len(req.variants) > 1 and len(req.kernels) > 1:
        raise HotloopError(KERNELS_AND_VARIANTS)
    req.folders()
    series.check_sessions(req.sessions, len(req.sides()),
                          "variant" if len(req.variants) > 1 else "kernel")


def design(rps: Iterable[ResolvedPlan]) -> tuple[str, ...]:
    """What the sides differ in by design, as their headers say it: "plan" (several plans),
    "kernel", "cpu", "params.K" for each param whose value differs."""
    plans = list(rps)
    out = [key for key, of in (("plan", lambda rp: rp.plan.name),
                               ("kernel", lambda rp: rp.kernel.name),
                               ("cpu", lambda rp: rp.cpu.name))
           if len({of(rp) for rp in plans}) > 1]
    keys = sorted({k for rp in plans for k in rp.params})
    return (*out, *(f"params.{k}" for k in keys
                    if len({json.dumps(rp.params.get(k), sort_keys=True, default=str)
                            for rp in plans}) > 1))


Made = Callable[[series.Slot, ResolvedPlan], SessionLike]


@dataclass(frozen=True)
class Compared:
    """What the series' comparison is made of: each side that finished a session, its results
    and its directory ("DIR/A/", as `compare DIR/A/ DIR/B/` names it); those left out."""
    sides: list[list[Result]]
    given: list[str]
    left_out: list[str]


@dataclass(frozen=True)
class SeriesOutcome:
    """A series over: how each session ended, where those that did not finish went, whether
    the plan was refused (bad input: every session would be; nothing kept), and the finished
    sessions' results, as they came (in memory, not read back)."""
    schedule: series.Schedule
    ends: dict[series.Slot, ev.Finished | ev.Failed | None]
    moved: dict[series.Slot, Path]
    refused: str | None
    removed: bool                       # the series' directory held nothing: gone
    deleted: bool                       # by someone else, during the series
    interrupted: bool                   # stopped: by the user, a signal, a stopped session
    results: dict[series.Slot, Result]  # the finished sessions', in the order they ran

    @property
    def done(self) -> list[series.Slot]:
        return list(self.results)

    @property
    def failed(self) -> list[series.Slot]:
        return [s for s, e in self.ends.items() if s not in self.results
                and not (isinstance(e, ev.Failed) and e.interrupted)]

    @property
    def stopped(self) -> list[series.Slot]:
        return [s for s, e in self.ends.items() if isinstance(e, ev.Failed) and e.interrupted]

    def finished(self, variant: str) -> list[Result]:
        return [r for s, r in self.results.items() if s.variant == variant]

    def counts(self) -> dict[str, int]:
        """Each variant's finished sessions."""
        return {v: len(self.finished(v)) for v in self.schedule.variants}

    def file_of(self, slot: series.Slot) -> Path | None:
        """Where a session's file is, None when it has none (it failed before its header,
        or its file was deleted)."""
        where = self.moved.get(slot, slot.path)
        return where if where.exists() else None

    def compared(self) -> Compared | None:
        """The comparison's inputs: every variant with a finished session (None for a series
        of one variant)."""
        sch = self.schedule
        if len(sch.variants) < 2:
            return None
        kept = [v for v in sch.variants if self.finished(v)]
        return Compared([self.finished(v) for v in kept],
                        [f"{sch.folder(v)}/" for v in kept],
                        [v for v in sch.variants if v not in kept])

    def comparison(self, metric: str | None = None) -> tuple[Comparison | None, list[str]]:
        """The variants compared on their finished sessions, as `hotloop compare DIR/A/
        DIR/B/` would (the unfinished set aside, worded from the design in their headers):
        the comparison (None: a series of one variant, or it cannot be made) and what to say
        of it (a variant left out for want of a finished session, why there is none)."""
        inputs = self.compared()
        if inputs is None:
            return None, []
        short = inputs.left_out
        if len(inputs.sides) < 2:
            return None, [f"no comparison: no finished session of {', '.join(short)}"]
        notes = [f"no finished session of {', '.join(short)}: compared without "
                 f"{'it' if len(short) == 1 else 'them'}"] if short else []
        from hotloop.analysis import compare  # scipy: only when comparing
        try:
            return compare.compare_sides(inputs.sides, inputs.given, primary=metric), notes
        except HotloopError as e:
            return None, [*notes, f"no comparison: {e}"]


def _stat(path: Path) -> tuple[int, ...]:
    """What stat says of a finished session's file as it was left: to know it unchanged at
    the series' end."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _digest(path: Path) -> str:
    """A finished session's sha256 (its identity, Result.digest, as reading it would give: a
    noise profile keeps it).  Its bytes hashed, not read back as a result."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


class SeriesRun:
    """One series, from its request to its outcome (the module's docstring gives the order).
    `make`: each session, made when its turn comes (default: run.start.here, its builds the
    series' own); tests give stand-ins."""

    def __init__(self, req: SeriesRequest, make: Made | None = None) -> None:
        check(req)
        self.req = req
        self.resolved: dict[str, ResolvedPlan] = {}
        self.loop: series.SeriesLoop | None = None
        self._make = make
        self._at: series.Slot | None = None             # the session running
        self._open: tuple[series.Slot, Result] | None = None    # its result, once it started
        self._kept: dict[series.Slot, tuple[Result, tuple[int, ...]]] = {}
        # the session running's file, held open from its header on (its name is linked to
        # it then): its inode cannot be another's while held, so one replaced as the session
        # ends (unlinked, written anew) is told by its identity, not taken for the session's
        self._born: dict[series.Slot, int] = {}

    # --- before it starts ------------------------------------------------------------------
    def resolve(self, cat: Catalog) -> dict[str, ResolvedPlan]:
        """Each side's plan resolved for this machine, by its name; one variant a side (a
        plan whose params hold lists, a batch, refused).  Once: again, the same plans."""
        if self.resolved:
            return self.resolved
        rps: dict[str, ResolvedPlan] = {}
        for side in self.req.sides():
            if side.rp is not None:
                rps[side.name] = side.rp
                continue
            many = len(cat.variants(side.plan))
            if many > 1:
                raise HotloopError(f"--sessions runs a series of one variant; {side.plan.name} "
                                   f"is a batch of {many} (its params hold lists): pick one "
                                   f"value of each with --param")
            rps[side.name] = cat.resolve(side.plan)
        self.resolved = rps
        return rps

    def consent(self) -> list[str]:
        """What the sides' plans would change on the system (launch.consent)."""
        return launch.consent(self._rps().values())

    def _rps(self) -> dict[str, ResolvedPlan]:
        if not self.resolved:
            raise RuntimeError("SeriesRun: resolve() before this")
        return self.resolved

    def start(self, apply_system: bool | None = None) -> series.Schedule:
        """Its directory made, every result file new; `apply_system`: the user's yes to
        consent() where it came after the request.  Driven by events(); then finish()."""
        req, rps = self.req, self._rps()
        if any(rp.kernel.image for rp in rps.values()):
            tools()                     # no virtme-run or qemu: refused before a directory
        sweep_below(req.results)        # what killed series left there (results.writer)
        directory = series.new_directory(req.stem or req.plan.name, req.results)
        names, folders = [s.name for s in req.sides()], req.folders()
        try:
            sch = series.schedule(names, req.sessions, directory, folders,
                                  [rps[n].kernel.name for n in names], design(rps.values()),
                                  req.rounds)
        except HotloopError:            # a variant's folder: those made before it go too
            _remove_empty(directory, [directory / n for n in folders])
            raise
        chosen = replace(req.choices, on_exists="refuse")
        if apply_system is not None:
            chosen = replace(chosen, apply_system=apply_system)
        make = self._make or self._here(chosen)
        self.loop = series.SeriesLoop(sch, lambda slot: make(slot, rps[slot.variant]),
                                      gap=req.gap)
        return sch

    def _here(self, chosen: Choices) -> Made:
        req, pinned = self.req, Pinned()    # each workload built once: one build a series

        def make(slot: series.Slot, rp: ResolvedPlan) -> SessionLike:
            return here(rp, slot.path, chosen, variant=req.session_name(slot),
                              mirror=req.mirror, pinned=pinned, notice=req.notice)
        return make

    # --- while it runs -----------------------------------------------------------------------
    @property
    def schedule(self) -> series.Schedule:
        return self._loop().schedule

    @property
    def sessions(self) -> list[SessionLike]:
        """The sessions made so far (a signal names itself in each one's last line)."""
        return self._loop().sessions

    @property
    def current(self) -> SessionLike | None:
        return self._loop().current

    @property
    def stopped(self) -> bool:
        return self.loop is not None and self.loop.stopped

    def _loop(self) -> series.SeriesLoop:
        if self.loop is None:
            raise RuntimeError("SeriesRun: start() before this")
        return self.loop

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.stop()

    def result(self, slot: series.Slot) -> Result | None:
        """A finished session's result, once its Ends has come (in memory, not read back)."""
        kept = self._kept.get(slot)
        return kept[0] if kept is not None else None

    async def events(self) -> AsyncIterator[series.SeriesEvent]:
        """The series' events (SeriesLoop.events), each finished session's result kept as
        it came."""
        async for e in self._loop().events():
            if isinstance(e, series.Begins):
                self._at, self._open = e.slot, None
            elif isinstance(e, ev.Started) and self._at is not None:
                # its windows' hot symbols stay in the file (read when asked: Result.windows)
                self._open = (self._at, Result(Path(e.result_file), e.header, _windows=None))
                self._hold(self._at, e.result_file)
            elif isinstance(e, series.Ends):
                await self._ended(e)
            elif self._open is not None:
                result = self._open[1]
                result.add(e)
                if isinstance(e, ev.HotSymbols) and e.scope == "window":
                    result.perf_windows += 1
            yield e

    async def _ended(self, e: series.Ends) -> None:
        opened, self._open = self._open, None
        if not isinstance(e.end, ev.Finished) or opened is None or opened[0] != e.slot:
            return
        result = opened[1]
        born = self._let_go(e.slot)
        try:
            seen = _stat(result.path)
        except OSError:
            return                      # gone already: finish() says so
        if born is not None and born != seen[:2]:
            seen = (-1, -1, -1, -1)     # another file under its name already: finish() says so
        # kept before the hash: a cancel (Ctrl-C) during it leaves the digest to finish(),
        # and the session kept, not lost
        self._kept[e.slot] = (result, seen)
        try:
            result.digest = await asyncio.to_thread(_digest, result.path)
        except OSError:
            pass                        # finish() finds why

    def _hold(self, slot: series.Slot, path: str) -> None:
        try:
            self._born[slot] = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
                                       | os.O_NONBLOCK)
        except OSError:
            pass                        # gone already, or not a file: finish() says so

    def _let_go(self, slot: series.Slot) -> tuple[int, int] | None:
        """The (device, inode) of the file the session's header went to, no longer held."""
        fd = self._born.pop(slot, None)
        if fd is None:
            return None
        try:
            st = os.fstat(fd)
            return st.st_dev, st.st_ino
        finally:
            os.close(fd)

    # --- once it is over -----------------------------------------------------------------------
    def finish(self, interrupted: bool = False) -> SeriesOutcome:
        """Once the series is over (ended, stopped, or broken by an error): each finished
        session's file checked as it was left (one deleted, replaced or changed since is lost:
        a failed session), each session that did not finish set aside, and the directory
        removed where it holds nothing when no session finished (the plan refused, the disk
        full before the first file, stopped while its first session built or booted; a
        stopped session's file stays, and so does its directory)."""
        loop = self._loop()
        for slot in list(self._born):   # a session that never ended: its file let go
            self._let_go(slot)
        sch = loop.schedule
        deleted = not sch.directory.is_dir()
        results = self._check_files(loop)
        moved = loop.set_aside()
        bad = next((e for e in loop.ends.values() if isinstance(e, ev.Failed) and e.bad_input),
                   None)
        refused = bad.message if bad is not None and not results else None
        if refused is not None or not results:      # stopped too: empty, it keeps nothing
            _remove_empty(sch.directory, [sch.folder(k) for k in sch.variants])
        return SeriesOutcome(sch, dict(loop.ends), moved, refused,
                             not sch.directory.exists(), deleted,
                             interrupted or loop.stopped, results)

    def _check_files(self, loop: series.SeriesLoop) -> dict[series.Slot, Result]:
        """The finished sessions whose files are as they left them, with their results."""
        out: dict[series.Slot, Result] = {}
        for slot in loop.done:
            kept = self._kept.get(slot)
            try:
                st = os.stat(slot.path)
            except OSError:
                loop.lost(slot, f"{slot.path}: gone since the session finished "
                                f"({gone.since(slot.path)})")
                continue
            if not stat.S_ISREG(st.st_mode):
                loop.lost(slot, f"{slot.path}: no longer a file since the session finished")
            elif kept is None:          # gone as it ended, or no header came to here
                loop.lost(slot, f"{slot.path}: gone since the session finished "
                                f"({gone.since(slot.path)})")
            elif (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) != kept[1]:
                loop.lost(slot, f"{slot.path}: replaced or changed since the session "
                                f"finished")
            elif (why := _hashed(kept[0])) is not None:
                loop.lost(slot, f"{slot.path}: unreadable since the session finished "
                                f"({why})")
            else:
                out[slot] = kept[0]
        return out


def _hashed(result: Result) -> str | None:
    """Its digest hashed here, where the series was stopped while hashing it (a missing hash
    is not a lost session); why it could not be, else None."""
    if not result.digest:
        try:
            result.digest = _digest(result.path)
        except OSError as e:
            return e.strerror or str(e)
    return None


def _remove_empty(directory: Path, folders: Iterable[Path]) -> None:
    """Nothing ran: no directory left behind (a refused plan makes no result)."""
    for d in (*folders, directory):
        try:
            d.rmdir()
        except OSError:
            pass
