"""Launching a run or a series: the one place their rules are, whoever asks (the command line's
`run`, `run --sessions`, `calibrate`; the console).

A caller turns what the user asked into a request (RunRequest, SeriesRequest: typed, no
command line in it) and then:

  a run      check_host, consent (the console asks), start_run -> the session to drive;
  a series   check_series, resolve_series, consent (the console asks), start_series -> the
             Series to drive (its events() an async iterator: an event loop stays free),
             finish once it is over, stopped or broken.

The rules: a series runs on this machine only; a kernel profile with an image boots it in a VM
here, never on a host; a series alternates its kernels, or its variants (plans, CPU profiles,
param values: each side one plan, none a batch), never both (KERNELS_AND_VARIANTS); the
consent asked is one list, each change once, none for a kernel booted in a VM; a result file's
default name; the sessions of a series that did not finish set aside; a series' directory
that holds nothing removed.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from hotloop import events as ev
from hotloop import results
from hotloop.catalog import Catalog, Host, KernelProfile, Plan, ResolvedPlan
from hotloop.errors import HotloopError
from hotloop.host.kvm import tools
from hotloop.paths import RESULTS
from hotloop.results.writer import sweep_below
from hotloop.run import series, start
from hotloop.run.pinned import Pinned
from hotloop.run.preflight import preflight, system_settings
from hotloop.run.remote import RemoteSession
from hotloop.run.session import Session
from hotloop.run.vm import VmSession

SERIES_HERE = "--sessions runs a series on this machine; --host runs one session on each host"
# Why not the cross product: the report compares every side with the first, so "patched
# block_size=4096" against "stock block_size=512" would be a row mixing two changes, and the
# series' length would be their product; one series a question, each kernel its own series.
KERNELS_AND_VARIANTS = ("--sessions alternates kernels or variants, not both: keep one "
                        "--kernel to compare the variants, or one variant (one plan, one "
                        "--cpu, one value a --param) to compare the kernels")


def check_host(kernel: KernelProfile, host: str | None) -> None:
    """A kernel profile with an image boots it in a VM here; a host would silently run its
    own kernel instead: refused."""
    if host is not None and kernel.image:
        raise HotloopError(f"--host with kernel profile {kernel.name}: it boots {kernel.image} "
                           f"in a VM on this machine, and a host would run its own kernel "
                           f"instead (drop --host, or choose a kernel profile without an image)")


def consent(rps: Iterable[ResolvedPlan], host: str | None = None) -> list[str]:
    """The system changes the user says yes to before a run or a series starts, each once, in
    the order the kernels come: here, what the profiles would change on this machine; on a
    host, what they would set there (its state is not known here).  None for a kernel booted
    in a VM: its sysctls are its own guest's, applied there unasked.  HotloopError when a
    profile cannot run here (preflight).  Each change names the profile files that ask for
    it ("net.core.busy_poll 0 -> 50 (from A.toml, B.toml)")."""
    changes: dict[str, list[str]] = {}
    for rp in rps:
        if rp.kernel.image:
            continue
        if host is None:
            for c in preflight(rp).changes:
                files = changes.setdefault(replace(c, source="").describe(), [])
                if c.source and c.source not in files:
                    files.append(c.source)
        else:
            for setting in system_settings(rp):
                changes.setdefault(f"{setting} on {host}", [])
    return [f"{line} (from {', '.join(files)})" if files else line
            for line, files in changes.items()]


def result_path(stem: str, host: str | None = None, directory: Path = RESULTS) -> Path:
    """A run's result file when none is named: results/TIME-STEM.jsonl, the host's name after
    the stem for a run there."""
    return results.default_path(stem if host is None else f"{stem}-{host}", directory)


# --------------------------------------------------------------------------- a run

@dataclass(frozen=True)
class RunRequest:
    """One session: a plan resolved for this machine (or, on a host, for another)."""
    rp: ResolvedPlan
    choices: start.Choices = start.Choices()
    host: Host | None = None
    output: Path | None = None          # None: result_path of the plan (and host) in `results`
    results: Path = RESULTS
    variant: str = ""
    mirror: Callable[[ev.Event], None] | None = None
    notice: Callable[[str], None] | None = None     # a VM's boot as it goes (stderr)


def start_run(req: RunRequest) -> Session | VmSession | RemoteSession:
    """The session of `req`, not started yet (its events() runs it)."""
    host = req.host.name if req.host is not None else None
    check_host(req.rp.kernel, host)
    sweep_below(req.results)            # what killed series left there (results.writer)
    path = req.output or result_path(req.rp.plan.name, host, req.results)
    if req.host is None:
        return start.here(req.rp, path, req.choices, variant=req.variant, mirror=req.mirror,
                          notice=req.notice)
    return start.there(req.host, req.rp.plan, path, req.choices, variant=req.variant,
                       mirror=req.mirror)


# --------------------------------------------------------------------------- a series

def by_variant(slot: series.Slot) -> str:
    return slot.variant


@dataclass(frozen=True)
class SeriesRequest:
    """`sessions` sessions of each of `kernels`, alternating (run.series), of one plan; or,
    with `variants`, of each of those (then `plan` is the first's and `kernels` its one)."""
    plan: Plan                          # with the user's overrides; its kernel: each of kernels
    kernels: tuple[str, ...]
    sessions: int                       # a kernel (a variant)
    host: str | None = None             # asked for one: refused, a series runs here
    apply_system: bool = False          # the user's yes to consent()
    keep_perf: bool = True
    results: Path = RESULTS             # where the series' directory is made
    stem: str = ""                      # its name after the time; "": the plan's
    gap: float = 0.0                    # seconds between two sessions
    variant: Callable[[series.Slot], str] = field(default=by_variant)  # each session's name
    mirror: Callable[[ev.Event], None] | None = None
    # (name, plan with its overrides) a variant, "block_size=4096": empty for kernels
    variants: tuple[tuple[str, Plan], ...] = ()
    notice: Callable[[str], None] | None = None     # a VM's boot as it goes (stderr)

    def sides(self) -> list[tuple[str, Plan]]:
        """What the series alternates: (name, plan) each, a kernel's name its own."""
        if len(self.variants) > 1:
            return list(self.variants)
        return [(k, replace(self.plan, kernel=k)) for k in self.kernels]

    def folders(self) -> list[str]:
        """Each side's directory: a kernel's name, a variant's made safe for one."""
        names = [name for name, _ in self.sides()]
        if len(self.variants) > 1:
            return series.variant_directories(names)
        return series.directory_names(names)


def check_series(req: SeriesRequest) -> None:
    """What needs no catalogue: here, kernels or variants but not both, each once under a
    name a directory can take, the number of sessions within bounds.  Before anything is
    made."""
    if req.host is not None:
        raise HotloopError(SERIES_HERE)
    if len(req.variants) > 1 and len(req.kernels) > 1:
        raise HotloopError(KERNELS_AND_VARIANTS)
    req.folders()
    series.check_sessions(req.sessions, len(req.sides()),
                          "variant" if len(req.variants) > 1 else "kernel")


def resolve_series(cat: Catalog, req: SeriesRequest) -> dict[str, ResolvedPlan]:
    """Each side's plan resolved for this machine, by its name; one variant a side, a plan
    whose params hold lists (a batch) refused."""
    rps: dict[str, ResolvedPlan] = {}
    for name, one in req.sides():
        many = len(cat.variants(one))
        if many > 1:
            raise HotloopError(f"--sessions runs a series of one variant; {one.name} is a "
                               f"batch of {many} (its params hold lists): pick one value of "
                               f"each with --param")
        rps[name] = cat.resolve(one)
    return rps


def start_series(req: SeriesRequest, rps: dict[str, ResolvedPlan]) -> series.SeriesLoop:
    """The series of `req` (checked, resolved: `rps`), its directory made: results/TIME-STEM/
    <variant>/, every result file new.  Driven by its events(); then finish()."""
    if any(rp.kernel.image for rp in rps.values()):
        tools()                         # no virtme-run or qemu: refused before a directory
    sweep_below(req.results)            # what killed series left there (results.writer)
    directory = series.new_directory(req.stem or req.plan.name, req.results)
    names, folders = [name for name, _ in req.sides()], req.folders()
    try:
        sp = series.schedule(names, req.sessions, directory, folders,
                         [rps[n].kernel.name for n in names])
    except HotloopError:                # a variant's folder: those made before it go too
        _remove_empty(directory, [directory / n for n in folders])
        raise
    chosen = start.Choices(req.apply_system, req.keep_perf, on_exists="refuse")
    pinned = Pinned()                   # each workload built once: the series runs one build
    return series.SeriesLoop(sp, lambda slot: start.here(rps[slot.variant], slot.path, chosen,
                                                     variant=req.variant(slot),
                                                     mirror=req.mirror, pinned=pinned,
                                                     notice=req.notice),
                         gap=req.gap)


@dataclass(frozen=True)
class Finished:
    """A series over: where the sessions that did not finish went, and whether the plan
    was refused (bad input: every session would be; nothing finished, nothing kept)."""
    moved: dict[series.Slot, Path]
    refused: str | None
    removed: bool                       # the series' directory held nothing: gone


def finish(s: series.SeriesLoop, interrupted: bool = False) -> Finished:
    """Once a series is over (ended, stopped, or broken by an error): each session that did
    not finish set aside (series.ASIDE), and its directory removed where it holds nothing when
    no session finished (the plan refused, the disk full before the first file, stopped while
    its first session built or booted; a stopped session's file stays, and so does its
    directory).  A finished session whose file was deleted or replaced meanwhile is a failed
    one."""
    s.check_files()
    moved = s.set_aside()
    bad = next((e for e in s.ends.values() if isinstance(e, ev.Failed) and e.bad_input), None)
    refused = bad.message if bad is not None and not s.done else None
    if refused is not None or not s.done:       # stopped too: empty, it keeps nothing
        _remove_empty(s.schedule.directory, [s.schedule.folder(k) for k in s.schedule.variants])
    return Finished(moved, refused, not s.schedule.directory.exists())


def _remove_empty(directory: Path, folders: Iterable[Path]) -> None:
    """Nothing ran: no directory left behind (a refused plan makes no result)."""
    for d in (*folders, directory):
        try:
            d.rmdir()
        except OSError:
            pass
