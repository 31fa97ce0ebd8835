"""Launching a run: the one place its rules are, whoever asks (the command line's `run`, the
console); a series is run.series_run's SeriesRun, which asks consent() here too.

A caller turns what the user asked into a request (RunRequest: typed, no command line in it)
and then: check_host, consent (the console asks), start_run -> the session to drive.

The rules: a kernel profile with an image boots it in a VM here, never on a host; the consent
asked is one list, each change once, none for a kernel booted in a VM; a result file's default
name.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from hotloop import events as ev
from hotloop import results
from hotloop.catalog import Host, KernelProfile, ResolvedPlan
from hotloop.errors import HotloopError
from hotloop.paths import RESULTS
from hotloop.results.writer import sweep_below
from hotloop.run import start
from hotloop.run.preflight import preflight, system_settings
from hotloop.run.session import Session

if TYPE_CHECKING:
    from hotloop.run.remote import RemoteSession
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
