"""A series' builds: each workload compiled once, for the series' first session that runs it,
and that build run by every session after.

Why: the build cache is keyed by the source's content, so a source edited mid-series (an
editor's save, a `git checkout`) was rebuilt by the next session, silently: its sessions
then ran two programs, pooled as one side.  A series measures one build; a session whose
source no longer reads as it did says so in its result file, and runs the series' build.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.run.build import Built, build

Key = tuple[str, tuple[str, ...], str]      # the source, its flags, the workload's name


@dataclass
class Pinned:
    """The builds of one series, by workload, source and flags."""
    builds: dict[Key, Built] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def get(self, source: Path, cflags: tuple[str, ...], name: str) -> tuple[Built, str | None]:
        """The series' build of `source` (made now if none is yet), and a warning when the
        source has changed since it was made.  HotloopError when the build has gone from
        the cache meanwhile and the source no longer is what it was built from: the series
        cannot run its build again."""
        key: Key = (str(source), tuple(cflags), name)
        with self._lock:                    # sessions run one after another; a thread each
            got = self.builds.get(key)
            if got is None:
                got = self.builds[key] = build(source, cflags, name)
                return got, None
            now = _digest(source)
            if not got.path.exists():
                if now != got.source_sha256:
                    raise HotloopError(
                        f"{source}: the series' build ({got.path.name}) is gone from the "
                        f"build cache and the source has changed since it was built "
                        f"({got.source_sha256[:12]}, now {now[:12] if now else 'unreadable'}): "
                        f"the series cannot run the same code again")
                got = self.builds[key] = build(source, cflags, name)    # the same code
                return got, None
            if now == got.source_sha256:
                return got, None
            what = f"now {now[:12]}" if now else "now unreadable"
            return got, (f"{source} changed since the series built it ({got.source_sha256[:12]}"
                         f", {what}): this session runs the series' build, as its first "
                         f"did; run a new series to measure the edited code")


def _digest(source: Path) -> str:
    try:
        return hashlib.sha256(source.read_bytes()).hexdigest()
    except OSError:
        return ""
