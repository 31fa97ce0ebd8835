"""Recovery: what a killed hotloop left changed, restored at the start of every command from
the journal it left (never a live run's, never one of an earlier boot's: the reboot reset its
settings), and reported one message a value.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hotloop.host.journal import (
    JOURNAL_NAME,
    RestoreLock,
    aside_path,
    boot_id,
    finish_journal,
    journal_dir,
    journal_owner,
    journal_path,
    journal_pid,
    load_journal,
    owner_alive,
    restore_entries,
    sweep_temps,
    write_journal,
)
from hotloop.paths import state_dir, state_dir_problem

EARLIER_BOOT = "earlier-boot"


def _earlier_boot(path: Path, header: Mapping[str, Any], entries: int) -> str:
    """A journal a hotloop of an earlier boot left: what it changed (sysctls, cpufreq) went
    back to its boot value with the reboot, and writing its originals now would undo what
    this boot set (sysctl.conf, a tuned profile, the user).  Set aside, never restored."""
    aside = aside_path(path, EARLIER_BOOT)
    try:
        os.replace(path, aside)
    except OSError as e:
        return (f"restore journal {path} is from an earlier boot and was not restored, but "
                f"cannot be moved aside ({e.strerror}): remove it by hand")
    pid = journal_pid(header)
    return (f"restore journal of {f'pid {pid}' if pid else 'a hotloop'} from an earlier boot "
            f"not restored ({entries} setting{'' if entries == 1 else 's'}: the reboot reset "
            f"them, and its originals would undo what this boot set); kept in {aside}")


def left_behind() -> set[Path]:
    """The journal and the copies set aside beside it for a look by hand: what a restore has
    not put back (not a journal of an earlier boot: its settings went with that boot)."""
    path = journal_path()
    try:
        return {p for p in path.parent.iterdir() if p.name.startswith(path.name)
                and not p.name.startswith(f"{path.name}.{EARLIER_BOOT}-")}
    except OSError:
        return set()


def recover(force: bool = False) -> list[str]:
    """Restore what a killed hotloop left changed; call at the start of every command.

    Returns one message per restored value (empty when there was nothing to do,
    the common case, which costs one stat()). A journal whose owner is still
    running is left alone (message says so) unless `force` (apply: the caller holds
    its lock; a live owner is still left alone). Never raises: the
    messages carry any failure, and the journal keeps what could not be
    restored. An entry that fails the checks (`_entry_problem`) is set aside in
    a file beside the journal, one message each, and the others are restored.
    """
    sweep_temps(journal_dir())          # what a journal write killed half-way left
    msgs = _recover(journal_path(), force)
    # Root's journal before it was the machine's, in its state directory: restored only while
    # no run holds the machine's (whose settings it might name).
    legacy = state_dir() / JOURNAL_NAME
    if os.geteuid() == 0 and legacy != journal_path() and os.path.lexists(legacy):
        try:
            machine = RestoreLock(journal_dir())
        except OSError:
            return msgs
        try:
            if machine.try_acquire() or force:
                msgs += _recover(legacy, force=False)
        finally:
            machine.release()
    return msgs


def _recover(path: Path, force: bool) -> list[str]:
    """recover() of the journal at `path`; `force`: the caller holds its lock."""
    if not os.path.lexists(path):
        return []
    problem = state_dir_problem(path.parent)
    if problem:
        return [problem]
    try:
        lock = RestoreLock(path.parent)
    except OSError as e:
        return [f"could not open the restore lock in {path.parent}: {e.strerror}"]
    try:
        if not lock.try_acquire() and not force:
            return [
                f"system settings changed by a running hotloop ({journal_owner(path)}) "
                f"left in place; they are restored when it ends"
            ]
        try:
            header, entries, bad = load_journal(path)
        except FileNotFoundError:
            return []  # its owner finished between our stat() and the lock
        except ValueError as e:
            aside = aside_path(path, "corrupt")
            try:
                os.replace(path, aside)
            except OSError:
                aside = path
            return [f"restore journal {path} unreadable ({e}); moved to {aside}: "
                    f"check its values by hand"]
        if owner_alive(header):   # its lock file replaced under it: still its own
            pid = journal_pid(header)
            return [f"system settings changed by a running hotloop "
                    f"({f'pid {pid}' if pid else 'another process'}) left in place; they are "
                    f"restored when it ends"]
        then, now = header.get("boot_id"), boot_id()
        if isinstance(then, str) and then and now and then != now:
            return [_earlier_boot(path, header, len(entries) + len(bad))]
        msgs: list[str] = []
        kept: list[Any] = []
        if bad:
            aside = aside_path(path, "rejected")
            try:
                write_journal(aside, {**header, "entries": [e for _, e, _ in bad]})
                where = f"kept in {aside}"
            except OSError as e:
                kept = [e for _, e, _ in bad]       # nothing dropped: it stays in the journal
                where = f"left in {path} ({aside}: {e.strerror})"
            msgs += [f"restore journal entry {i} set aside, not restored: {why}; {where}"
                     for i, _, why in bad]
        done, left, errors = restore_entries(entries)
        try:
            finish_journal(path, header, left + kept)
        except OSError as e:
            errors.append(f"could not update {path}: {e.strerror}")
        pid = journal_pid(header)
        prefix = f"hotloop ({f'pid {pid}' if pid else 'a previous hotloop'}) did not finish: "
        msgs += [prefix + m for m in done] + errors
        if left:
            msgs.append(f"kept {len(left)} unrestored value(s) in {path}; `hotloop restore` retries")
        return msgs
    except Exception as e:  # noqa: BLE001 - runs before every command: never block them
        return [f"restore journal {path} not restored ({type(e).__name__}: "
                f"{' '.join(str(e).split())[:200]}); `hotloop restore` retries"]
    finally:
        lock.release()
