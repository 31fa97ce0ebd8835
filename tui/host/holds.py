"""Holds: the settings a live hotloop has changed and will put back when it ends, read from its
journal (this user's, and the machine's, root's), so that another run neither rides on them
nor reverts them.  Reads only.
"""
from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hotloop.host.cpus import online_cpus
from hotloop.host.journal import (
    JOURNAL_NAME,
    LOCK_NAME,
    holder_dirs,
    journal_dir,
    journal_pid,
    load_journal,
    owner_alive,
)
from hotloop.host.settings import (
    Change,
    boost_control,
    cpufreq_dir,
    setting_file,
    show_original,
    show_value,
    sysctl_path,
)
from hotloop.host.sysfs import SystemSettingError
from hotloop.paths import state_dir_problem


def _dir_problem(d: Path, owners: frozenset[int]) -> str | None:
    """Why a directory may not be read for a journal: this user's own place must be as a state
    directory is; another (the machine's, read by a user) may also be root's."""
    if not owners:
        return state_dir_problem(d)
    try:
        st = os.stat(d)
    except OSError as e:
        return e.strerror
    if not stat.S_ISDIR(st.st_mode) or st.st_mode & 0o022 \
            or st.st_uid not in owners | {os.geteuid()}:
        return "not a directory of this user's or root's alone"
    return None


def _live_journal(d: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The header and entries of the journal in `d` when a live run other than this one owns
    it (its lock held, or its pid and start time running), else None.  Reads only: the lock
    is probed shared, and not at all where this user may not open it (root's, for a user)."""
    path = d / JOURNAL_NAME
    owners = frozenset() if d == journal_dir() else frozenset({0})
    if not os.path.lexists(path) or _dir_problem(d, owners):
        return None
    try:
        fd = os.open(d / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        fd = -1
    try:
        held = False
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                held = True
            except OSError:
                pass
        header, entries, _ = load_journal(path, owners)
    except (OSError, ValueError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    return (header, entries) if held or owner_alive(header) else None


def held_in(files: set[str], dirs: Iterable[Path]) -> tuple[str, list[Change]]:
    """The first live run, of the journals in `dirs`, holding any of these setting files (real
    paths): ("pid N", its changes of them), or ("", [])."""
    for d in dirs:
        found = _live_journal(d)
        if found is None:
            continue
        header, entries = found
        held = [Change(e["kind"], e["target"], e.get("value", ""), e["original"])
                for e in entries
                if os.path.realpath(setting_file(e["kind"], e["target"])[0]) in files]
        if held:
            pid = journal_pid(header)
            return (f"pid {pid}" if pid else "another process"), held
    return "", []


def held_elsewhere(sysctls: Iterable[str] = (), governor: bool = False, boost: bool = False,
                   cpus: Iterable[int] = ()) -> tuple[str, list[Change]]:
    """Which of these settings a running hotloop has changed and will put back when it ends.

    Returns (its owner, "pid N"; its changes as its journal holds them), or
    ("", []) when none: no journal, its owner dead (recover's business), or a
    directory not trusted. A run that merely finds such a value in place
    would otherwise ride on it and see it restored half-way. Reads only; the
    lock is probed only when a journal exists.  Every place a holder may be is
    read: this user's, and the machine's (root's, whatever its HOME).
    """
    if not any(os.path.lexists(d / JOURNAL_NAME) for d in holder_dirs()):
        return "", []
    files: set[str] = set()
    for name in sysctls:
        try:
            files.add(os.path.realpath(sysctl_path(name)))
        except SystemSettingError:
            pass
    if governor:
        files.update(os.path.realpath(cpufreq_dir(c) / "scaling_governor")
                     for c in (list(cpus) or online_cpus()))
    control = boost_control() if boost else None
    if control is not None:
        files.add(os.path.realpath(control[0]))
    return held_in(files, holder_dirs())


def describe_held(owner: str, held: list[Change]) -> str:
    """One line refusing a run that depends on settings `held_elsewhere` found."""
    values = ", ".join(f"{c.label()} = {show_value(c.value)}" for c in held)
    originals = ", ".join(show_original(c.original) for c in held)
    one = len(held) == 1
    return (f"{values} {'is' if one else 'are'} held by a running hotloop ({owner}), which "
            f"puts {'it' if one else 'them'} back to {originals} when it ends: this run "
            f"depends on {'it' if one else 'them'}; start it once that run is over")
