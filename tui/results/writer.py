"""Writing result files: JSON Lines, one event a line, appended as events arrive.

The first line is the `started` event with the header, then one line per
repetition, per hot-symbol window and per warning, and a `finished` (with
the summary) or `failed` line at the end.  A file without that last line is
what a crash leaves: it reads back as partial, with every run it holds.
"""
from __future__ import annotations

import dataclasses
import errno
import fcntl
import json
import math
import os
import re
import secrets
import stat
import time
from pathlib import Path
from typing import Any

from hotloop import events as ev
from hotloop.errors import HotloopError, RunFailed
from hotloop.host.journal import process_start
from hotloop.host.procs import pid_gone
from hotloop.paths import RESULTS
from hotloop.results import gone
from hotloop.results.perf_data import perf_dir
from hotloop.results.room import Room


def default_path(plan_name: str, directory: Path = RESULTS) -> Path:
    """results/TIME-PLAN.jsonl.  Taken (two sessions in the same second), the Writer numbers
    it as it creates the file (-2, -3...): numbered here too, it would read NAME-2-2."""
    return directory / f"{time.strftime('%Y%m%d-%H%M%S')}-{plan_name}.jsonl"


def _finite(obj: Any) -> Any:
    """`obj` with every NaN or infinity replaced by null (not counted)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _line(obj: dict[str, Any]) -> str:
    """One result line.  NaN and Infinity are not JSON: a run's figures are checked
    before they get here (preflight.metric_value), and a perf counter that is NaN was
    not counted, so it is written as null."""
    try:
        text = json.dumps(obj, separators=(",", ":"), default=str, allow_nan=False)
    except ValueError:
        text = json.dumps(_finite(obj), separators=(",", ":"), default=str, allow_nan=False)
    return text + "\n"


def encode_line(event: ev.Event) -> str:
    """An event as its result line, newline included."""
    return _line(ev.to_json(event))


class WriteFailed(RunFailed):
    """The result file cannot take another line (a full disk, a removed directory):
    the session stops the run and the command exits 1 with this one line."""


ON_EXISTS = ("rename", "refuse", "replace")
_MAX_NAMES = 10_000
# A Writer's hidden file: .NAME.PID.XXXXXXXX.tmp (8 characters of _TEMP_CHARS)
_TEMP = re.compile(r"\.(?P<target>.+)\.(?P<pid>[0-9]{1,9})\.[a-z0-9_]{8}\.tmp")
_TEMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"


def sweep_temps(directory: Path) -> set[str]:
    """Remove what hotloop runs killed before their first line or their first run (--force)
    left in `directory`: only hotloop's hidden files (their naming, their writer gone, no
    lock on them, a regular file of this user's holding nothing or a result's first line),
    never through a symlink.  The names the remaining ones (live runs') are to take."""
    return _sweep(directory)[0]


def sweep_below(root: Path) -> None:
    """The series and calibrations under `root` (root/TIME-PLAN/KERNEL/, root/TIME-PLAN/):
    the hidden files their killed writers left removed, and a directory that held nothing
    else with them.  A run sweeps its own directory as it starts; a series' directory is
    never written again, so each run and series sweeps these too (a scan of two levels)."""
    for top in (root, *_subdirs(root)):
        swept = _sweep(top)[1]
        for d in _subdirs(top) if top != root else ():
            if _sweep(d)[1]:
                swept = True
                _rmdir(d)
        if swept and top != root:
            _rmdir(top)


def _subdirs(directory: Path) -> list[Path]:
    try:
        with os.scandir(directory) as entries:
            return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _rmdir(d: Path) -> None:
    try:
        d.rmdir()                       # only an empty one
    except OSError:
        pass


def _boot_time() -> float | None:
    try:
        with open("/proc/stat", "rb") as f:
            return float(next(ln.split()[1] for ln in f if ln.startswith(b"btime ")))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


# Seconds of doubt between a process's start and a file's time: btime is whole seconds
_CLOCKS_DOUBT = 2.0


def _writer_gone(pid: int, written: float) -> bool:
    """Whether the process a hidden file is named after is not its writer any more: no such
    process, or a later one given the pid (it started after the file was last written, so
    it did not make it).  A pid's process that started before stays its writer: in the
    moment between its file's creation and its lock, unlocked is not proof of death."""
    if pid_gone(pid):
        return True
    start, booted = process_start(pid), _boot_time()
    if start is None or booted is None:     # a zombie, or /proc unreadable: keep the file
        return False
    return booted + start / os.sysconf("SC_CLK_TCK") > written + _CLOCKS_DOUBT


def _sweep(directory: Path) -> tuple[set[str], bool]:
    """sweep_temps(), and whether it removed anything."""
    try:
        with os.scandir(directory) as entries:
            found = [e.name for e in entries if e.name.startswith(".")]
    except OSError:
        return set(), False
    reserved: set[str] = set()
    removed = False
    for name in found:
        m = _TEMP.fullmatch(name)
        if m is None:
            continue
        path = directory / name
        try:
            written = os.lstat(path).st_mtime
        except OSError:
            continue
        if not _writer_gone(int(m["pid"]), written):
            reserved.add(m["target"])
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:                 # a symlink (ELOOP), gone meanwhile
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                continue
            if not _lock(fd):           # held: a live hotloop writer has it after all
                reserved.add(m["target"])
                continue
            head = os.read(fd, 64)
            if head and not head.startswith(b'{"type":"started"'):
                continue
            if os.path.samestat(st, os.lstat(path)):     # still the file looked at
                path.unlink()
                removed = True
        except OSError:
            pass
        finally:
            os.close(fd)
    return reserved, removed


def _lock(fd: int) -> bool:
    """Hold `fd` locked for the session; False if another hotloop run holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:                     # a file system without flock: O_EXCL still holds
        pass
    return True


def _hidden(target: Path, mode: int | None = None) -> tuple[int, Path]:
    """A new hidden file beside `target`, of this process (the pid in its name: a later run
    there removes it once this process is gone), locked, opened for writing."""
    for _ in range(100):
        token = "".join(secrets.choice(_TEMP_CHARS) for _ in range(8))
        temp = target.with_name(f".{target.name}.{os.getpid()}.{token}.tmp")
        try:
            fd = os.open(temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o644 if mode is None else 0o600)
        except FileExistsError:
            continue
        if mode is not None:
            os.fchmod(fd, mode)
        _lock(fd)
        return fd, temp
    raise HotloopError(f"{target}: no free name for a hidden file beside it")


class Writer:
    """Appends events to a result file, each line written through as it comes.

    A result file is never seen without its header: the Writer writes a hidden file
    (.NAME.PID.XXXXXXXX.tmp) and gives it its name with its first line (os.link, which
    fails on a taken name, so no two runs share one), so a process killed before that
    leaves at most a hidden file that the next run there removes.  The file is held
    locked (flock) for the session.  When the name is taken (by a file, or by a live
    run's hidden file), `on_exists` decides: "rename" takes the next free NAME-2.jsonl,
    NAME-3.jsonl... (default paths; taken between the choice and the first line, the
    next free one then, the line saying so); "refuse" is a one-line error (an explicit
    --out); "replace" (--out --force) keeps the hidden file until the run has measured
    something, and only then replaces the old one, so a run that fails before (bad
    input) leaves the old file as it was, and a crash mid-run leaves the runs at the
    path.  An existing device or pipe (/dev/null) is written as it is: there is
    nothing to lose.

    The first line that cannot be written raises WriteFailed; the file removed
    during the run (its directory deleted) counts as that too, since every line
    after would be lost.  Later writes do nothing: the session is stopping.  A full disk
    is known before a line is cut: the file keeps room allocated beyond its end
    (results/room.py), and once no more can be had, its last line, written in that room,
    says the disk is full."""

    def __init__(self, path: Path, on_exists: str = "rename"):
        assert on_exists in ON_EXISTS
        self.path = path
        self.error: WriteFailed | None = None
        self.on_exists = on_exists
        self._regular = True
        self._temp: Path | None = None          # the hidden file, until it is at `path`
        self._named = True                      # False: the first line gives it its name
        self._old = -1                          # "replace": the old file, locked meanwhile
        self._room: Room | None = None          # kept for the last line (a regular file)
        self._runs = 0                          # measured runs written
        self._variant = ""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = self._create(path, sweep_temps(path.parent))
        except (OSError, HotloopError) as e:
            if self._old >= 0:              # --force half way: the old file as it was
                os.close(self._old)
            if self._temp is not None:
                self._temp.unlink(missing_ok=True)
            if isinstance(e, HotloopError):
                raise
            why = gone.cannot_make(self.path) if isinstance(
                e, (FileExistsError, NotADirectoryError)) else None
            raise HotloopError(f"{self.path}: cannot write the result file: "
                               f"{why or e.strerror or e}") from None

    @property
    def regular(self) -> bool:
        """Whether the result file is a regular file (not a device or pipe written as it is)."""
        return self._regular

    def _names(self, path: Path) -> Any:
        for n in range(1, _MAX_NAMES):
            yield path if n == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")
        raise HotloopError(f"{path}: {_MAX_NAMES} result files of that name already")

    def _create(self, path: Path, reserved: set[str]) -> int:
        on_exists = self.on_exists
        for name in self._names(path):
            self.path = name
            try:
                st: os.stat_result | None = os.stat(name)
            except FileNotFoundError:
                st = None
            if st is not None and stat.S_ISDIR(st.st_mode):
                if on_exists == "rename":
                    continue
                raise HotloopError(f"{name}: is a directory, not a result file")
            if st is not None and not stat.S_ISREG(st.st_mode) and on_exists != "rename":
                # O_NONBLOCK: a FIFO nobody reads is an error (ENXIO), not a hang
                fd = os.open(name, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                os.set_blocking(fd, True)
                self._regular = False
                return fd
            if os.path.lexists(name):
                if on_exists == "rename":
                    continue
                if on_exists == "refuse":
                    raise HotloopError(f"{name}: exists (pass --force to replace it)")
                return self._replacing(name)
            if name.name in reserved:       # a live run's hidden file is to take it
                if on_exists == "rename":
                    continue
                raise HotloopError(f"{name}: in use by another hotloop run")
            fd, self._temp = _hidden(name)
            self._named = False
            return fd
        raise AssertionError("unreachable: _names raises")

    def _lock_old(self, target: Path) -> bool:
        """--force: lock the old file, so no second run replaces it meanwhile; False when
        there is none after all (a dangling symlink: nothing to keep)."""
        for _ in range(10):
            try:
                old = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except FileNotFoundError:
                return False
            if not _lock(old):
                os.close(old)
                raise HotloopError(f"{target}: in use by another hotloop run")
            try:
                same = os.path.samestat(os.fstat(old), os.stat(target))
            except FileNotFoundError:
                same = False
            if same:
                self._old = old
                return True
            os.close(old)               # another run replaced it meanwhile: look again
        raise HotloopError(f"{target}: in use by another hotloop run")

    def _replacing(self, target: Path) -> int:
        """--force: lock the old file, write a hidden new one beside it (of the old
        one's permissions) that replaces it once the run has measured something."""
        old = self._lock_old(target)
        fd, self._temp = _hidden(target, stat.S_IMODE(os.fstat(self._old).st_mode)
                                 if old else 0o644)
        return fd

    def _name_it(self, event: ev.Started) -> ev.Started:
        """The first line, written to the hidden file, which then takes its name: the
        chosen one, or (taken meanwhile) the next free one, or the old file's place once a
        run is measured (--force).  The line as written (its name, its perf directory's)."""
        assert self._temp is not None
        first = self.path
        for name in self._names(first):
            if name != self.path:
                if os.path.lexists(name) or name.name in sweep_temps(name.parent):
                    continue
                self.path = name
                header = event.header
                if header.perf_data == perf_dir(first).name:
                    header = dataclasses.replace(header, perf_data=perf_dir(name).name)
                event = dataclasses.replace(event, header=header, result_file=str(name))
            data = encode_line(event).encode()
            os.ftruncate(self._fd, 0)
            if os.pwrite(self._fd, data, 0) != len(data):
                raise OSError(28, os.strerror(28))
            os.lseek(self._fd, len(data), os.SEEK_SET)
            self._room = Room(self._fd, len(data))
            if not self._room.make(0):  # full already: no name, no file without room
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fdatasync(self._fd)      # the name never comes before the line, even on a crash
            try:
                os.link(self._temp, self.path)
            except FileExistsError:
                if self.on_exists == "rename":
                    continue
                if self.on_exists == "refuse":
                    raise HotloopError(f"{self.path}: created meanwhile by another "
                                       "(pass --force to replace it)") from None
                if self._lock_old(self.path):
                    self._named = True  # "replace": it takes the old one's place later
                    return event
                continue                # a dangling symlink there: nothing to keep
            self._temp.unlink()
            self._temp = None
            self._named = True
            return event
        raise AssertionError("unreachable: _names raises")

    def _commit(self) -> None:
        """--force: the new file takes the old one's place."""
        assert self._temp is not None
        try:
            os.replace(self._temp, self.path)
        except OSError as e:
            raise self._failed(e.strerror or str(e)) from None
        self._temp = None
        if self._old >= 0:
            os.close(self._old)
            self._old = -1

    def _failed(self, why: str) -> WriteFailed:
        if self.error is None:
            self.error = WriteFailed(f"{self.path}: cannot write the result file: {why}")
        if self._temp is not None:      # --force: the old file stays as it was
            self._temp.unlink(missing_ok=True)
            self._temp = None
        return self.error

    def write(self, event: ev.Event) -> ev.Event:
        """Append one line; WriteFailed the first time one cannot be.  The event as
        written: the first line (Started) may name another file than the one chosen."""
        if self.error is not None or self._fd < 0:
            return event
        try:
            if not self._named:
                assert isinstance(event, ev.Started), "a result file starts with its header"
                try:
                    return self._name_it(event)
                except HotloopError as e:       # the name taken meanwhile, an --out
                    self.error = WriteFailed(str(e))
                    raise self._failed("") from None
            line = encode_line(event).encode()
            if self._room is not None and not self._room.make(len(line)):
                raise self._full(os.strerror(errno.ENOSPC))
            data = memoryview(line)
            while data:
                data = data[os.write(self._fd, data):]
            if self._room is not None:
                self._room.wrote(len(line))
            if self._regular and os.fstat(self._fd).st_nlink == 0:
                raise self._failed(f"{gone.since(self.path)} during the run")
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT) and self._room is not None:
                raise self._full(e.strerror or str(e)) from None     # no room was kept
            raise self._failed(e.strerror or str(e)) from None
        if isinstance(event, ev.Started):
            self._variant = event.variant
        if isinstance(event, ev.RunSample) and not event.warmup:
            self._runs += 1
        if self._temp is not None and isinstance(event, ev.RunSample):
            self._commit()
        return event

    def _full(self, why: str) -> WriteFailed:
        """The disk is full: the last line, saying so, written where the next was to go (in
        the room kept for it; without one, over what the disk cut, when it fits), and any
        cut line taken back, so the file ends whole."""
        assert self._room is not None
        said = self._temp is None and self._room.last(encode_line(ev.Failed(   # else --force
            f"the disk is full ({why}): the result file could take no more lines, and the "
            f"session stopped after {self._runs} run{'s' * (self._runs != 1)}",
            run=self._runs, variant=self._variant)).encode())
        return self._failed(f"{why}: the disk is full" + (
            " (the file's last line says so)" if said else ""))

    def try_write(self, event: ev.Event) -> None:
        """Append one line if the file still takes it (on the way out: a cancel or a
        failure is already being reported, and `error` keeps this one)."""
        try:
            self.write(event)
        except WriteFailed:
            pass

    def close(self) -> None:
        """Sync and close; a failure here (a delayed ENOSPC) is kept in `error`.  Closed
        before its first line, nothing is left: no file is without its header."""
        if self._fd < 0:
            return
        if not self._named:
            self.discard()
            return
        try:
            if self._room is not None:
                self._room.release()
            if self._regular:
                os.fsync(self._fd)
            if self._temp is not None and self.error is None:
                self._commit()
        except OSError as e:
            self._failed(e.strerror or str(e))
        except WriteFailed:
            pass
        finally:
            os.close(self._fd)
            self._fd = -1
            if self._old >= 0:
                os.close(self._old)
                self._old = -1

    def discard(self) -> None:
        """Nothing ran (bad input): remove what this session created, keep the rest."""
        if self._fd < 0:
            return
        if self._temp is not None:
            self._temp.unlink(missing_ok=True)
            self._temp = None
        elif self._regular and self.path.exists():
            try:
                if os.path.samestat(os.fstat(self._fd), os.stat(self.path)):
                    self.path.unlink()
            except OSError:
                pass
        self._named = True
        self.close()
