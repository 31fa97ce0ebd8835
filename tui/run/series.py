"""A series: N sessions of each of several variants (kernel profiles; or plans, CPU profiles,
param values), one after another in a balanced order, each a fresh start (fresh worker
processes here, a fresh boot for a kernel profile with an image), the plan's runs inside each.

Why a balanced order: the machine drifts over a sitting (thermal state, page cache, a
neighbour), and sessions of one kernel run back to back would carry that drift into the
comparison as if it were the kernel's.  Two kernels alternate A B B A A B B A ...; three or
more follow a Williams design (interleave.williams), so that over a cycle each kernel runs in
every position of a round, and right after every other kernel, equally often.  Round i holds
session i of every kernel: those ran side by side and share the drift of their moment, which
is what compare's paired test on the series' sessions (analysis.series_pairs) uses.

With one kernel a series is N sessions of it, which is what a calibration is (run.calibrate).

Files: results/<time>-PLAN/<variant>/sNN.jsonl, <variant> the kernel's name or the variant's
made safe as a directory (variant_directories), sNN the session's number within its variant,
from 1; each header's batch is Batch(id=<series id>, interleaved=False, variants=<how many>,
session=NN), so compare knows which sessions ran together, and the design (Schedule.batch: the
sides, what they differ in, the sessions a side, its position), so compare words it as the
series does.  Below, "kernel" is said for a
variant where the two are one (a kernel series is a series of kernel variants).
"""
from __future__ import annotations

import asyncio
import hashlib
import re
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
from hotloop.run.interleave import williams
from hotloop.run.sessionlike import SessionLike

# A session that did not finish is moved aside (sNN.jsonl.failed, .stopped): its runs are
# not the variant's sessions, and `hotloop compare DIR/A/ DIR/B/` then reads what the series
# compared.  It is kept for what it says (`hotloop show` reads it).
ASIDE = {"failed": ".failed", "stopped": ".stopped"}
MIN_SESSIONS = 2            # a kernel, to compare kernels: one session a side has no spread
MAX_SESSIONS = 99           # a kernel: sNN has two digits, and 99 is days of sessions already


def order(kernels: int, sessions: int, rounds: Sequence[Sequence[int]] = ()) -> list[int]:
    """The kernels' indices in the order their sessions run: `sessions` rounds, each holding
    every kernel once, the rounds' orders those of a Williams design in turn (A B, B A, ...
    for two), or those of `rounds` in turn (each an order of every kernel once)."""
    if kernels < 1 or sessions < 1:
        return []
    rows = [list(r) for r in rounds] or williams(kernels)
    if any(sorted(r) != list(range(kernels)) for r in rows):
        raise ValueError(f"a round's order must hold each of {kernels} variants once")
    return [k for r in range(sessions) for k in rows[r % len(rows)]]


def check_sessions(sessions: int, kernels: int, what: str = "kernel") -> None:
    """--sessions within its bounds: one line saying why not (`what`: kernel or variant)."""
    if sessions > MAX_SESSIONS:
        raise HotloopError(f"--sessions {sessions}: at most {MAX_SESSIONS} a {what}")
    if sessions < 1:
        raise HotloopError(f"--sessions {sessions}: at least 1")
    if kernels > 1 and sessions < MIN_SESSIONS:
        raise HotloopError(f"--sessions {sessions}: comparing {what}s needs at least "
                           f"{MIN_SESSIONS} sessions of each (with one, a {what}'s change "
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


MAX_DIRECTORY = 64          # a variant's directory name, in characters (ASCII: bytes)
MAX_LABEL = 200             # a variant's name, as its headers carry it (record.NAME)


def variant_directories(labels: Sequence[str]) -> list[str]:
    """Each variant's directory in the series, from its name ("block_size=4096", "cpu=split",
    a plan's name, several joined by spaces): what a directory cannot hold or a shell would
    misread becomes _ (a '/', a newline, a space; ',' too: compare reads a,b as two files),
    a leading '.' or '-' too (no '..', no hidden directory, no option); one longer than
    MAX_DIRECTORY is cut and ends with a digest of the whole name.  Two variants that would
    share a directory (here, or on a case-insensitive file system) each end with the digest
    of their own name instead, so that neither is compared with the other's files.  Refused:
    a name twice, an empty one, one longer than MAX_LABEL."""
    def digest(label: str) -> str:
        return hashlib.sha256(label.encode()).hexdigest()[:8]

    def cut(slug: str, label: str, hashed: bool) -> str:
        if not hashed and len(slug) <= MAX_DIRECTORY:
            return slug
        return f"{slug[:MAX_DIRECTORY - 9]}-{digest(label)}"

    for label in labels:
        if not label.strip():
            raise HotloopError("a variant of the series has no name")
        if len(label) > MAX_LABEL:
            raise HotloopError(f"variant {label[:40]!r}...: a name of {len(label)} "
                               f"characters (at most {MAX_LABEL})")
        if labels.count(label) > 1:
            raise HotloopError(f"variant {label!r} twice: each variant of a series once")
    slugs = [re.sub(r"^[.-]", "_", re.sub(r"[^A-Za-z0-9_.+=-]", "_", label))
             for label in labels]
    names = [cut(slug, label, False) for slug, label in zip(slugs, labels)]
    keys = [n.casefold() for n in names]
    names = [cut(slug, label, keys.count(key) > 1)
             for slug, label, key in zip(slugs, labels, keys)]
    if len({n.casefold() for n in names}) < len(names):     # a digest's collision: refused
        raise HotloopError(f"variants {', '.join(map(repr, labels))}: no directory name "
                           f"for each")
    return names


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
    """One session of the series: which variant, its number within that variant, its
    place."""
    variant: str                # the variant's name: a kernel profile's in a kernel series
    session: int                # from 1, within the variant
    position: int               # from 0, within the series
    path: Path                  # its result file
    kernel: str                 # the kernel profile it runs


@dataclass(frozen=True)
class Schedule:
    """The series' sessions, in the order they run: which variant, which session, where."""
    id: str
    directory: Path
    variants: tuple[str, ...]
    sessions: int               # a variant
    slots: tuple[Slot, ...]
    differs: tuple[str, ...] = ()   # what the variants differ in by design (series_run.design)

    def folder(self, variant: str) -> Path:
        return self.slots[[s.variant for s in self.slots].index(variant)].path.parent

    def batch(self, slot: Slot) -> Batch:
        """What a session's header says of the series: its id and the session's number, and
        the design, so that `compare DIR/A/ DIR/B/` says what the series said."""
        return Batch(id=self.id, interleaved=False, variants=len(self.variants),
                     session=slot.session, sides=self.variants, differs=self.differs,
                     sessions=self.sessions, position=slot.position + 1)


def schedule(variants: Sequence[str], sessions: int, directory: Path,
             folders: Sequence[str] | None = None, kernels: Sequence[str] | None = None,
             differs: Sequence[str] = (), rounds: Sequence[Sequence[int]] = ()) -> Schedule:
    """The series' schedule, its variants' directories made in `directory`: `folders` (default:
    the variants as kernels' names, directory_names); `kernels` each variant's kernel
    profile (default: the variant's name); `differs`: what they differ in by design;
    `rounds`: the rounds' orders in turn (default: order's Williams design)."""
    paths = [directory / n for n in (folders or directory_names(variants))]
    try:
        for f in paths:
            f.mkdir(exist_ok=True)
    except OSError as e:
        raise HotloopError(f"{directory}: cannot make a variant's directory: {e.strerror}") \
            from None
    kernel_of = list(kernels or variants)
    count = dict.fromkeys(range(len(variants)), 0)
    slots = []
    for pos, k in enumerate(order(len(variants), sessions, rounds)):
        count[k] += 1
        slots.append(Slot(variants[k], count[k], pos, paths[k] / f"s{count[k]:02d}.jsonl",
                          kernel_of[k]))
    return Schedule(uuid.uuid4().hex[:12], directory, tuple(variants), sessions, tuple(slots),
                    tuple(differs))


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
class SeriesLoop:
    """Drive a series: each slot's session made by `make` when its turn comes (a VM session
    boots then), one after another.  A session that fails does not stop the others (nor one
    that fails before its header: a VM that does not boot); one stopped (stop(), a signal
    cancelling the loop) stops the series, the sessions done kept as they are (complete
    files) and the running one ended as a stopped session is."""
    schedule: Schedule
    make: Callable[[Slot], SessionLike]
    gap: float = 0.0            # seconds between two sessions
    sessions: list[SessionLike] = field(default_factory=list)     # made so far
    ends: dict[Slot, ev.Finished | ev.Failed | None] = field(default_factory=dict)
    current: SessionLike | None = None
    stopped: bool = False

    def stop(self) -> None:
        self.stopped = True
        if self.current is not None:
            self.current.stop()

    async def events(self) -> AsyncIterator[SeriesEvent]:
        for i, slot in enumerate(self.schedule.slots):
            if self.stopped:
                return
            if i and self.gap > 0:
                await asyncio.sleep(self.gap)
            yield Begins(slot, len(self.schedule.slots))
            s = self.make(slot)
            s.batch = self.schedule.batch(slot)
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
        while the series ran): a failed session, its runs gone from its variant's."""
        self.ends[slot] = ev.Failed(why)

    def set_aside(self) -> dict[Slot, Path]:
        """Every session that did not finish moved out of its variant's *.jsonl (ASIDE)."""
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
