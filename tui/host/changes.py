"""Planned system changes, applied with a journal and restored on every path.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotloop.host import sysfs
from hotloop.host.cpus import format_cpu_list, online_cpus
from hotloop.host.holds import describe_held, held_in
from hotloop.host.journal import (
    JOURNAL_VERSION,
    RestoreLock,
    boot_id,
    finish_journal,
    holder_dirs,
    journal_owner,
    journal_path,
    live_owner,
    process_start,
    restore_entries,
    write_journal,
)
from hotloop.host.recovery import recover
from hotloop.host.settings import (
    Change,
    NotAsWritten,
    available_governors,
    boost_control,
    cpufreq_dir,
    has_cpufreq,
    read_setting,
    read_sysctl,
    show_original,
    show_value,
    sysctl_path,
    sysctl_value,
    sysctl_writable,
    value_problem,
    write_setting,
)
from hotloop.host.sysfs import SystemSettingError
from hotloop.paths import state_dir_problem

# --------------------------------------------------------------------------- planned changes


def describe_changes(changes: Iterable[Change], hint: str = "pass --apply-system") -> str:
    """One line for the consent refusal: "would change: a 0 -> 50, b 1 -> 2; pass --apply-system"."""
    changes = list(changes)
    if not changes:
        return "no system changes needed"
    # Governor changes repeat per CPU policy: group the identical ones.
    parts: list[str] = []
    gov: dict[tuple[str | None, str, str], list[int]] = {}
    for c in changes:
        if c.kind == "governor":
            gov.setdefault((c.original, c.value, c.source), []).append(
                int(c.target.removeprefix("cpu")))
        else:
            parts.append(c.describe())
    for (orig, value, source), cpus in gov.items():
        parts.append(f"cpu{format_cpu_list(cpus)} governor {show_original(orig)} -> "
                     f"{show_value(value)}" + (f" (from {source})" if source else ""))
    line = "would change: " + ", ".join(parts)
    return f"{line}; {hint}" if hint else line


def plan_changes(
    sysctls: Mapping[str, Any] | None,
    governor: str | None,
    boost: bool | None,
    cpus: Iterable[int] | None,
    strict: bool = False,
    sysctl_source: str = "",
    cpu_source: str = "",
) -> tuple[list[Change], list[str]]:
    """Work out what a CPU + kernel profile would change; touches nothing.

    Returns (changes, warnings). Values already in place are left out: they need
    neither consent nor restoring. Bad input (unknown or unwritable sysctl, bad
    value type) raises SystemSettingError; a feature this machine lacks (no
    cpufreq, no boost switch, governor not offered) is a warning, or a
    SystemSettingError when `strict`.
    """
    changes: list[Change] = []
    warnings: list[str] = []

    def lacking(msg: str) -> None:
        if strict:
            raise SystemSettingError(msg.replace(" skipped:", ":", 1) + " (strict profile)")
        warnings.append(msg)

    for name, raw in (sysctls or {}).items():
        value = sysctl_value(name, raw)
        current = read_sysctl(name)
        if sysfs.norm(current) == sysfs.norm(value):
            continue
        writable = sysctl_writable(name)
        if not writable:
            raise SystemSettingError(writable.reason)
        changes.append(Change("sysctl", name, value, current, str(sysctl_path(name)),
                              sysctl_source))

    cpu_list = sorted(set(cpus or [])) or online_cpus()

    if governor is not None:
        if not has_cpufreq():
            lacking(f"governor {governor!r} skipped: no cpufreq on this machine")
        else:
            seen: set[Path] = set()
            for cpu in cpu_list:
                d = cpufreq_dir(cpu)
                gov_file = d / "scaling_governor"
                if not gov_file.exists():
                    lacking(f"governor {governor!r} skipped on cpu{cpu}: no cpufreq for it")
                    continue
                # CPUs sharing a cpufreq policy share one file: change it once.
                real = gov_file.resolve()
                if real in seen:
                    continue
                seen.add(real)
                offered = available_governors(cpu)
                if offered and governor not in offered:
                    lacking(
                        f"governor {governor!r} skipped on cpu{cpu}: "
                        f"not offered (have {' '.join(offered)})"
                    )
                    continue
                current = sysfs.read(gov_file)
                if current != governor:
                    changes.append(Change("governor", f"cpu{cpu}", governor, current,
                                          str(gov_file), cpu_source))

    if boost is not None:
        control = boost_control()
        want = "on" if boost else "off"
        if control is None:
            lacking(f"boost {want!r} skipped: no cpufreq boost control on this machine")
        else:
            path, inverted = control
            value = "1" if (boost != inverted) else "0"
            current = sysfs.read(path)
            if current != value:
                target = "intel_pstate.no_turbo" if inverted else "boost"
                changes.append(Change("boost", target, value, current, str(path), cpu_source))

    return changes, warnings


@dataclass
class Applied:
    """System changes in force; restore() (or leaving `with`) puts the originals back.

    `changes` carry the originals as read at apply time. `recovered` holds the
    messages of a stale journal found (and restored) before applying.
    `errors` collects restore failures that happened while another exception
    was already propagating out of the `with` block.
    """
    changes: list[Change]
    journal: Path | None
    recovered: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _lock: RestoreLock | None = field(default=None, repr=False)
    _done: bool = field(default=False, repr=False)

    def restore(self) -> list[str]:
        """Restore originals in reverse order and remove the journal; idempotent.

        Returns what was restored. If a value cannot be put back, every other one
        still is, the journal keeps the failed ones (the next start retries), and
        SystemSettingError is raised with one line.
        """
        if self._done:
            return []
        self._done = True
        try:
            if not self.changes or self.journal is None:
                return []
            entries = [_entry(c) for c in self.changes]
            done, left, errors = restore_entries(entries)
            try:
                finish_journal(self.journal, _journal_data([]), left)
            except OSError as e:
                errors.append(f"could not update {self.journal}: {e.strerror}")
            if errors:
                raise SystemSettingError(
                    "; ".join(errors) + (f" (kept in {self.journal}, retried on next start)" if left else "")
                )
            return done
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> Applied:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self.restore()
        except SystemSettingError as e:
            if exc_type is None:
                raise
            # Don't mask the error that ended the run; keep ours for the caller.
            self.errors.append(str(e))


def _entry(c: Change) -> dict[str, Any]:
    return {"kind": c.kind, "target": c.target, "path": str(c.file()),
            "original": c.original, "value": c.value}


def _journal_data(entries: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "version": JOURNAL_VERSION,
        "pid": os.getpid(),
        "pid_start": process_start(os.getpid()),    # who the pid is: owner_alive()
        "boot_id": boot_id(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "entries": entries,
    }


def _check_change(c: Change) -> None:
    """Refuse, before anything is touched, a change hotloop could not write exactly."""
    file = c.file()                     # SystemSettingError for a bad kind or target
    if c.path and c.path != str(file):
        raise SystemSettingError(f"{c.label()}: {c.path} is not its file ({file})")
    problem = value_problem(c.value) if isinstance(c.value, str) else "value must be a string"
    if problem:
        raise SystemSettingError(f"{c.label()}: {problem}")


def apply(changes: Iterable[Change]) -> Applied:
    """Apply changes, journalling the originals first; returns the Applied handle.

    A stale journal (its owner died) is restored first, into `Applied.recovered`.
    If another live hotloop holds the journal, the state directory is not
    trusted, or any write fails, is not taken whole or does not read back as
    written, raises SystemSettingError with one line; everything already
    written is then restored before raising, and the journal is removed.
    """
    changes = list(changes)
    if not changes:
        return Applied([], None)
    for c in changes:
        _check_change(c)
    path = journal_path()
    problem = state_dir_problem(path.parent)
    if problem:
        raise SystemSettingError(problem)
    try:
        lock = RestoreLock(path.parent)
    except OSError as e:
        raise SystemSettingError(f"cannot create the restore journal in {path.parent}: "
                                 f"{e.strerror}") from None
    if not lock.try_acquire() or live_owner(path):
        owner = journal_owner(path)
        lock.release()
        raise SystemSettingError(f"another hotloop ({owner}) has system settings applied; wait for it to end")
    # A live run of another place (the real machine-wide one, for a moved one; root's, for a
    # user) holding one of these: its restore would undo this run's value half-way.
    owner, held = held_in({os.path.realpath(c.file()) for c in changes},
                          [d for d in holder_dirs() if d != path.parent])
    if held:
        lock.release()
        raise SystemSettingError(describe_held(owner, held))
    try:
        recovered = recover(force=True) if os.path.lexists(path) else []
        # Re-read originals now: the plan may be minutes old (a TUI confirmation).
        fresh: list[Change] = []
        for c in changes:
            try:
                current = read_setting(c.kind, c.target)
            except OSError as e:
                raise SystemSettingError(f"cannot read {c.label()}: {e.strerror}") from None
            except SystemSettingError as e:
                raise SystemSettingError(f"cannot read {c.label()}: {e}") from None
            fresh.append(Change(c.kind, c.target, c.value, current, str(c.file())))
        entries = [_entry(c) for c in fresh]
        try:
            write_journal(path, _journal_data(entries))
        except OSError as e:
            raise SystemSettingError(f"cannot write the restore journal {path}: {e.strerror}") from None
    except BaseException:
        lock.release()
        raise

    applied = Applied(fresh, path, recovered=recovered, _lock=lock)
    written: list[Change] = []
    try:
        for c in fresh:
            try:
                write_setting(c.kind, c.target, c.value)
            except SystemSettingError as e:
                if isinstance(e, NotAsWritten):
                    written.append(c)       # it did change: counted among the restored
                raise SystemSettingError(f"cannot set {c.label()} to {c.value!r}: {e}") from None
            written.append(c)
    except BaseException as failure:  # Ctrl-C mid-apply too
        # Roll back: restore every entry (unwritten ones are already equal, so a
        # no-op) and drop the journal.
        try:
            applied.restore()
        except SystemSettingError as e:
            if isinstance(failure, SystemSettingError):
                raise SystemSettingError(f"{failure}; and {e}") from None
        if isinstance(failure, SystemSettingError) and written:
            raise SystemSettingError(
                f"{failure} (restored {len(written)} value(s) already changed)"
            ) from None
        raise
    return applied
