"""A series: N sessions of each of several kernel profiles, one after another in a balanced
order, each a fresh start (fresh worker processes here, a fresh boot for a kernel profile with
an image), the plan's runs inside each.

Why a balanced order: the machine drifts over a sitting (thermal state, page cache, a
neighbour), and sessions of one kernel run back to back would carry that drift into the
comparison as if it were the kernel's.  Two kernels alternate A B B A A B B A ...; three or
more follow a Williams design (interleave.williams), so that over a cycle each kernel runs in
every position of a round, and right after every other kernel, equally often.  Round i holds
session i of every kernel: those ran side by side and share the drift of their moment, which
is what compare's paired test on the series' sessions (analysis.series_pairs) uses.

With one kernel a series is N sessions of it, which is what a calibration is (run.calibrate).

Files: results/<time>-PLAN/<kernel>/sNN.jsonl, sNN the session's number within its kernel,
from 1; each header's batch is Batch(id=<series id>, interleaved=False, variants=<kernels>,
session=NN), so compare knows which sessions ran together.
"""
from __future__ import annotations

import asyncio
import re
import stat
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hotloop import events as ev
from hotloop.catalog.schema import NAME
from hotloop.errors import HotloopError, SessionFailed
from hotloop.paths import RESULTS
from hotloop.record import Batch
from hotloop.run.interleave import Runnable, williams

# A session that did not finish is moved aside (sNN.jsonl.failed, .stopped): its runs are
# not the kernel's sessions, and `hotloop compare DIR/A/ DIR/B/` then reads what the series
# compared.  It is kept for what it says (`hotloop show` reads it).
ASIDE = {"failed": ".failed", "stopped": ".stopped"}
MIN_SESSIONS = 2            # a kernel, to compare kernels: one session a side has no spread
MAX_SESSIONS = 99           # a kernel: sNN has two digits, and 99 is days of sessions already


def order(kernels: int, sessions: int) -> list[int]:
    """The kernels' indices in the order their sessions run: `sessions` rounds, each holding
    every kernel once, the rounds' orders those of a Williams design in turn (A B, B A, ...
    for two)."""
    if kernels < 1 or sessions < 1:
        return []
    rows = williams(kernels)
    return [k for r in range(sessions) for k in rows[r % len(rows)]]


def check_sessions(sessions: int, kernels: int) -> None:
    """--sessions within its bounds: one line saying why not."""
    if sessions > MAX_SESSIONS:
        raise HotloopError(f"--sessions {sessions}: at most {MAX_SESSIONS} a kernel")
    if sessions < 1:
        raise HotloopError(f"--sessions {sessions}: at least 1")
    if kernels > 1 and sessions < MIN_SESSIONS:
        raise HotloopError(f"--sessions {sessions}: comparing kernels needs at least "
                           f"{MIN_SESSIONS} sessions of each (with one, a kernel's change "
                           f"cannot be told from a session's own offset)")


def directory_names(kernels: Sequence[str]) -> list[str]:
    """Each kernel profile's directory in the series: its name, checked by the catalogue's
    name rule, and no two that are (or a case-insensitive file system makes) one directory:
    a kernel compared with itself is a comparison of a file with itself."""
    out: list[str] = []
    seen: dict[str, str] = {}
    for k in kernels:
        slug = re.sub(r"[^A-Za-z0-9_.+-]+", "_", k)
        if not NAME.fullmatch(slug) or slug in (".", ".."):
            raise HotloopError(f"--kernel {k!r}: not a name a directory can take "
                               f"(letters, digits, _ . + -)")
        key = slug.casefold()
        if key in seen:
            same = "twice" if seen[key] == k else f"and {seen[key]!r}: one directory ({slug})"
            raise HotloopError(f"--kernel {k!r} {same}: each kernel of a series once")
        seen[key] = k
        out.append(slug)
    return out


def new_directory(stem: str, parent: Path = RESULTS) -> Path:
    """results/<time>-<stem>/, made here and now, so that two series (or calibrations) never
    share one."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            path = parent / f"{stamp}-{stem}{'' if n == 1 else f'-{n}'}"
            try:
                path.mkdir()
                return path
            except FileExistsError:
                continue
    except OSError as e:
        raise HotloopError(f"{parent}: cannot make the series' directory: "
                           f"{e.strerror}") from None
    raise HotloopError(f"{parent}: no free name for the series' directory")


@dataclass(frozen=True)
class Slot:
    """One session of the series: which kernel, its number within that kernel, its place."""
    kernel: str                 # the kernel profile's name
    session: int                # from 1, within the kernel
    position: int               # from 0, within the series
    path: Path                  # its result file


@dataclass(frozen=True)
class Plan:
    """The series' sessions, in the order they run."""
    id: str
    directory: Path
    kernels: tuple[str, ...]
    sessions: int               # a kernel
    slots: tuple[Slot, ...]

    def folder(self, kernel: str) -> Path:
        return self.slots[[s.kernel for s in self.slots].index(kernel)].path.parent

    def batch(self, slot: Slot) -> Batch:
        return Batch(id=self.id, interleaved=False, variants=len(self.kernels),
                     session=slot.session)


def plan(kernels: Sequence[str], sessions: int, directory: Path) -> Plan:
    """The series' plan, its kernels' directories made in `directory`."""
    names = directory_names(kernels)
    folders = [directory / n for n in names]
    try:
        for f in folders:
            f.mkdir(exist_ok=True)
    except OSError as e:
        raise HotloopError(f"{directory}: cannot make a kernel's directory: {e.strerror}") \
            from None
    count = dict.fromkeys(range(len(kernels)), 0)
    slots = []
    for pos, k in enumerate(order(len(kernels), sessions)):
        count[k] += 1
        slots.append(Slot(kernels[k], count[k], pos, folders[k] / f"s{count[k]:02d}.jsonl"))
    return Plan(uuid.uuid4().hex[:12], directory, tuple(kernels), sessions, tuple(slots))


# --------------------------------------------------------------------------- the loop

@dataclass(frozen=True)
class Begins:
    """A session of the series is about to start."""
    slot: Slot
    of: int                     # sessions in the whole series


@dataclass(frozen=True)
class Ends:
    """A session of the series is over: its last event (None when it gave none)."""
    slot: Slot
    end: ev.Finished | ev.Failed | None


SeriesEvent = Begins | Ends | ev.Event


@dataclass
class Series:
    """Drive a series: each slot's session made by `make` when its turn comes (a VM session
    boots then), one after another.  A session that fails does not stop the others (nor one
    that fails before its header: a VM that does not boot); one stopped (stop(), a signal
    cancelling the loop) stops the series, the sessions done kept as they are (complete
    files) and the running one ended as a stopped session is."""
    plan: Plan
    make: Callable[[Slot], Runnable]
    gap: float = 0.0            # seconds between two sessions
    sessions: list[Runnable] = field(default_factory=list)     # made so far
    ends: dict[Slot, ev.Finished | ev.Failed | None] = field(default_factory=dict)
    current: Runnable | None = None
    stopped: bool = False

    def stop(self) -> None:
        self.stopped = True
        if self.current is not None:
            self.current.stop()

    async def events(self) -> AsyncIterator[SeriesEvent]:
        for i, slot in enumerate(self.plan.slots):
            if self.stopped:
                return
            if i and self.gap > 0:
                await asyncio.sleep(self.gap)
            yield Begins(slot, len(self.plan.slots))
            s = self.make(slot)
            s.batch = self.plan.batch(slot)
            self.sessions.append(s)
            self.current = s
            end: ev.Finished | ev.Failed | None = None
            try:
                async for e in s.events():
                    if isinstance(e, (ev.Finished, ev.Failed)):
                        end = e
                    yield e
            except SessionFailed as x:
                end = ev.Failed(str(x), variant=s.variant)     # nothing ran: no file
            except (asyncio.CancelledError, KeyboardInterrupt):
                # a signal: the session wrote its own last line as it was cancelled
                self.stopped = True
                self.ends[slot] = end or ev.Failed("interrupted", interrupted=True)
                raise
            except Exception as x:
                self.ends[slot] = end or ev.Failed(str(x))
                raise
            finally:
                self.current = None
            self.ends[slot] = end
            yield Ends(slot, end)
            if isinstance(end, ev.Failed) and (end.interrupted or end.bad_input):
                # stopped; or the plan itself is refused, which every session would be
                self.stopped = True
                return

    @property
    def done(self) -> list[Slot]:
        """The sessions that finished (their files complete), in the order they ran."""
        return [s for s, e in self.ends.items() if isinstance(e, ev.Finished)]

    @property
    def failed(self) -> list[Slot]:
        return [s for s, e in self.ends.items()
                if not isinstance(e, ev.Finished) and not (isinstance(e, ev.Failed)
                                                           and e.interrupted)]

    def lost(self, slot: Slot, why: str) -> None:
        """A finished session whose file is no longer what it wrote (deleted, replaced, edited
        while the series ran): a failed session, its runs gone from its kernel's."""
        self.ends[slot] = ev.Failed(why)

    def check_files(self) -> None:
        """Each finished session's file still a file: one deleted or replaced (by a directory)
        since is lost."""
        for slot in self.done:
            try:
                mode = slot.path.stat().st_mode
            except OSError as e:
                self.lost(slot, f"{slot.path}: gone since the session finished ({e.strerror})")
                continue
            if not stat.S_ISREG(mode):
                self.lost(slot, f"{slot.path}: no longer a file since the session finished")

    def set_aside(self) -> dict[Slot, Path]:
        """Every session that did not finish moved out of its kernel's *.jsonl (ASIDE)."""
        moved: dict[Slot, Path] = {}
        for slot, end in self.ends.items():
            if isinstance(end, ev.Finished) or not slot.path.exists():
                continue
            kind = "stopped" if isinstance(end, ev.Failed) and end.interrupted else "failed"
            to = slot.path.with_name(slot.path.name + ASIDE[kind])
            try:
                slot.path.rename(to)
                moved[slot] = to
            except OSError:
                moved[slot] = slot.path
        return moved
