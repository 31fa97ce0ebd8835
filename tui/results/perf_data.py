"""The perf data kept beside a result file: NAME.perf beside NAME.jsonl, claimed for a run
(`claim_perf_dir`) and pruned to a budget (`prune_perf_data`).  Only what hotloop provably
wrote there is ever removed, and no symlink is followed on the way.
"""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from hotloop.results.liveness import being_written
from hotloop.results.reader import Result


def perf_dir(path: Path) -> Path:
    """Where a result file's perf data is kept: NAME.perf beside NAME.jsonl."""
    return path.with_suffix(".perf")


PERF_MARK = ".hotloop-perf"             # in each perf directory hotloop made: its result's name
# what perf and hotloop write there: perf.data.<time> windows, gzipped once the run is over,
# and the session's tally of samples by address (perf/addrs.py), and its next version
_PERF_FILE = re.compile(r"perf\.data(\.[0-9]+)?(\.old)?(\.gz)?|addrs\.json\.gz(\.tmp)?")
_HEADER_READ = 1 << 20                  # a header line is a few KB; more is not a header


def _perf_files(dfd: int) -> dict[str, int] | None:
    """{name: size} of an open perf directory's files, or None when it holds anything that is
    not a regular file of hotloop's names (another's file, a subdirectory, a symlink)."""
    files: dict[str, int] = {}
    try:
        with os.scandir(dfd) as entries:
            for e in entries:
                st = e.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or not (
                        e.name == PERF_MARK or _PERF_FILE.fullmatch(e.name)):
                    return None
                files[e.name] = st.st_size
    except OSError:
        return None
    return files


def _open_dir(d: Path, parent: int | None = None) -> int:
    """A directory opened without following a symlink (OSError otherwise)."""
    return os.open(d.name if parent is not None else d,
                   os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)


def claim_perf_dir(result: Path, create: bool = True) -> str | None:
    """Make the perf directory beside `result` hotloop's: created with its mark, or one that
    already holds only hotloop's files (an earlier run's, --force) marked again; or why not
    (one line), when the data is not to be kept there.  Not `create`: only whether it could
    be (nothing made yet for a run that may never start)."""
    d = perf_dir(result)
    if not create and not os.path.lexists(d):
        return None
    try:
        os.mkdir(d, 0o755)
    except FileExistsError:
        pass
    except OSError as e:
        return f"{d}: {e.strerror}"
    try:
        dfd = _open_dir(d)
    except OSError:
        return f"{d} is there and is not a directory hotloop made"
    try:
        if _perf_files(dfd) is None:
            return f"{d} holds files that are not hotloop's"
        if not create:
            return None
        fd = os.open(PERF_MARK, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o644, dir_fd=dfd)
        try:
            os.write(fd, (result.name + "\n").encode())
        finally:
            os.close(fd)
    except OSError as e:
        return f"{d}: {e.strerror}"
    finally:
        os.close(dfd)
    return None


def _names_perf_dir(path: Path) -> bool:
    """Whether `path` is a result file (a regular one, not through a symlink) whose header
    names the perf directory beside it: the first of what makes that directory hotloop's."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        with os.fdopen(os.dup(fd), "rb") as f:
            line = f.readline(_HEADER_READ)
        obj = json.loads(line)
        return (isinstance(obj, dict) and obj.get("type") == "started"
                and isinstance(obj.get("header"), dict)
                and obj["header"].get("perf_data") == perf_dir(path).name)
    except (OSError, ValueError, RecursionError):
        return False
    finally:
        os.close(fd)


def _marked(dfd: int, result: str) -> bool:
    """Whether the open perf directory holds hotloop's mark naming `result`."""
    try:
        fd = os.open(PERF_MARK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=dfd)
    except OSError:
        return False
    try:
        return os.read(fd, 4096) == (result + "\n").encode()
    except OSError:
        return False
    finally:
        os.close(fd)


def _remove_perf_dir(d: Path, parent: int) -> bool:
    """Remove a perf directory hotloop made, file by file, all through the directory's fd (a
    name swapped for a symlink meanwhile is not followed); True once it is gone.  Anything of
    another's found in it now: left whole."""
    try:
        dfd = _open_dir(d, parent)
    except OSError:
        return False
    try:
        files = _perf_files(dfd)
        if files is None:
            return False
        for name in sorted(files, key=lambda n: n == PERF_MARK):     # the mark last
            os.unlink(name, dir_fd=dfd)
        os.rmdir(d.name, dir_fd=parent)     # fails if anything came in meanwhile
        return True
    except OSError:
        return False
    finally:
        os.close(dfd)


def prune_perf_data(directory: Path, budget: int, keep: Path) -> list[Path]:
    """Remove the oldest kept perf data of `directory` until all of it fits in `budget` bytes,
    never `keep` (this run's) and never a result file; the directories removed.  Only what
    hotloop provably wrote: NAME.perf named by the header of the result file NAME.jsonl beside
    it (not a run still writing), holding hotloop's mark and nothing but hotloop's files, no
    symlink followed on the way."""
    try:                                # the results directory may be a symlink: the user's
        parent = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        found: list[tuple[float, Path, int]] = []
        with os.scandir(parent) as entries:
            names = [e.name for e in entries if e.name.endswith(".jsonl")]
        for name in names:
            result = directory / name
            d = perf_dir(result)
            if not _names_perf_dir(result) or (being_written(result) is True and d.name != keep.name):
                continue
            try:
                dfd = _open_dir(d, parent)
            except OSError:             # none, or a symlink
                continue
            try:
                files = _perf_files(dfd)
                if files is not None and _marked(dfd, name):
                    found.append((os.fstat(dfd).st_mtime, d, sum(files.values())))
            except OSError:
                pass
            finally:
                os.close(dfd)
        total = sum(size for _, _, size in found)       # this run's counts, and stays
        removed = []
        for _, d, size in sorted(found):
            if total <= budget:
                break
            if d.name != keep.name and _remove_perf_dir(d, parent):
                total -= size
                removed.append(d)
        return removed
    finally:
        os.close(parent)


def finish(result: Path, budget_mb: int) -> str | None:
    """The perf data beside `result` as a session's end leaves it, for one that did not get
    there (SIGKILL, a crash): its windows compressed and within the budget, older runs' data
    pruned as the session would have; what was done, in a line (None: nothing, or not a
    directory of hotloop's, which is left alone)."""
    from hotloop.perf.keep import finish_dir
    d = perf_dir(result)
    try:
        dfd = _open_dir(d)
    except OSError:
        return None
    try:
        if _perf_files(dfd) is None or not _marked(dfd, result.name):
            return None
    finally:
        os.close(dfd)
    kept = finish_dir(str(d), budget_mb * 1_000_000, budget_mb)
    gone = prune_perf_data(d.parent, budget_mb * 1_000_000, d)
    if not (kept.unfinished or kept.compressed or kept.dropped or gone):
        return None
    return (f"perf data of a session that did not end finished: {d} ("
            + ("the window perf was writing removed, " if kept.unfinished else "")
            + f"{kept.compressed} window{'s' * (kept.compressed != 1)} compressed, "
            f"{kept.dropped} thinned out"
            + (f", {len(gone)} older run{'s' * (len(gone) != 1)}' removed" if gone else "")
            + f"; within {budget_mb} MB, plan key perf_keep_mb)")


def finish_unended(result: Result) -> str | None:
    """The perf data of the session of `result` when it did not reach its end and nothing
    writes it now (killed, whatever state directory its entry went to: another user's, another
    HOME): finished as `finish` does; what was done, in a line (None: nothing to do)."""
    if result.finished is not None or result.failed is not None \
            or not result.header.perf_data or being_written(result.path) is not False:
        return None
    return finish(result.path, result.header.plan.perf_keep_mb)


def finish_left() -> list[str]:
    """What killed sessions left of their perf data (hotloop.perf.opened), finished: one line
    each.  A session still running, or one another hotloop is finishing, is left to it."""
    from hotloop.perf import opened
    said = []
    for entry in opened.left():
        try:
            line = finish(entry.result, entry.budget_mb)
        finally:
            entry.release()
        if line:
            said.append(line)
    return said


if __name__ == "__main__":      # a quit's detached finisher (perf/opened.py detach)
    import sys

    from hotloop.perf import opened
    held = opened.from_fd(int(sys.argv[1]))
    if held is not None:
        try:
            finish(held.result, held.budget_mb)
        finally:
            held.release()
