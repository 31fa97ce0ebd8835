"""A bisect's life on disk and its revisions made runnable: `hotloop bisect GOOD..BAD PLAN`.

The decision (which revision next, when a step is decided, the path's error bound) is
analysis.bisection's; the git side (the range, a worktree a revision, its build) is
run.revisions'; the command line drives the steps as series (cli.bisect).  Here:

  BisectDir   STATE/bisect/<repository's key>/: the state file (what was asked, the revisions,
              the decision so far, the time spent), the worktrees, the build logs, each
              step's sessions (a series directory a step); locked (flock) while a bisect runs,
              so two hotloops never bisect one repository at once.
  prepare()   a revision ready to measure: its worktree, its build (--build), its catalogue
              (--profiles read from the worktree), the plan resolved there, its kernel image
              (--kernel-image, from the worktree); or why it cannot be (a skip's reason).
  value()     a finished session's number for the decision: the median of its runs.

The state file is rewritten (atomically) after every round, so that a bisect stopped or
killed resumes (`hotloop bisect --resume`) with every finished round kept.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hotloop import catalog
from hotloop.catalog import Catalog, Plan, ResolvedPlan
from hotloop.errors import HotloopError
from hotloop.paths import state_dir
from hotloop.results import Result
from hotloop.run.revisions import Revision, Worktrees

FORMAT = 1
STATE = "state.json"
MAX_STATE = 4 << 20             # bytes: a state file larger than this is not one of ours


def key(repo: Path) -> str:
    """The repository's directory name under STATE/bisect: its real path's digest."""
    return hashlib.sha256(os.fsencode(os.path.realpath(repo))).hexdigest()[:16]


@dataclass
class BisectState:
    """What the state file holds: what was asked (the command line's words, to resume with
    the same options), the revisions, the decision so far (analysis.bisection's document),
    the time spent, each step's series directories, and whether it is over."""
    repo: str
    argv: list[str]
    revisions: list[Revision]
    decision: dict[str, Any]
    seconds: float = 0.0
    series: dict[str, list[str]] = field(default_factory=dict)     # step number -> dirs
    over: bool = False

    @property
    def rounds(self) -> int:
        """The rounds kept, every step's."""
        steps = self.decision.get("steps", [])
        return sum(len(s.get("rounds", [])) for s in steps if isinstance(s, dict)) \
            if isinstance(steps, list) else 0

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "repo": self.repo, "argv": self.argv,
                "revisions": [{"sha": r.sha, "subject": r.subject} for r in self.revisions],
                "decision": self.decision, "seconds": self.seconds, "series": self.series,
                "over": self.over}

    @classmethod
    def from_json(cls, doc: Any, where: Path) -> BisectState:
        """A state file's document, checked: a forged or cut one is refused in one line."""
        def bad(why: str) -> HotloopError:
            return HotloopError(f"{where}: not a bisect state hotloop wrote ({why}); --fresh "
                                f"starts afresh")
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise bad("unknown format")
        try:
            revs = [Revision(str(r["sha"]), str(r["subject"])) for r in doc["revisions"]]
            argv, series = doc["argv"], doc["series"]
            if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)):
                raise TypeError("argv")
            if not (isinstance(series, dict) and all(
                    isinstance(v, list) and all(isinstance(s, str) for s in v)
                    for v in series.values())):
                raise TypeError("series")
            seconds = float(doc["seconds"])
            if not math.isfinite(seconds) or seconds < 0:
                raise ValueError("seconds")
            out = cls(str(doc["repo"]), argv, revs, doc["decision"], seconds, series,
                      bool(doc["over"]))
        except (KeyError, TypeError, ValueError) as e:
            raise bad(f"{type(e).__name__}: {e}") from None
        if len(revs) < 2 or any(len(r.sha) != 40 or any(c not in "0123456789abcdef"
                                                         for c in r.sha) for r in revs):
            raise bad("GOOD and BAD, full hashes, are not there")
        from hotloop.analysis.bisection import Bisection
        try:                            # replayed round by round: a forged one is refused
            decided = Bisection.from_dict(out.decision)
        except ValueError as e:
            raise bad(str(e)) from None
        if list(decided.to_dict()["revisions"]) != [r.sha for r in revs]:
            raise bad("its decision is of other revisions")
        return out


class BisectDir:
    """STATE/bisect/<key>/ of one repository, held (flock) while open."""

    def __init__(self, repo: Path, root: Path | None = None) -> None:
        self.repo = repo
        self.path = (root or state_dir() / "bisect") / key(repo)
        self._fd: int | None = None
        self._trees: Worktrees | None = None

    @property
    def state_file(self) -> Path:
        return self.path / STATE

    @property
    def sessions(self) -> Path:
        return self.path / "sessions"

    @property
    def logs(self) -> Path:
        return self.path / "builds"

    def worktrees(self) -> Worktrees:
        """The repository's worktrees of hotloop's (one holder a process: it locks them)."""
        if self._trees is None:
            self._trees = Worktrees(self.repo, self.path / "worktrees")
        return self._trees

    def hold(self) -> None:
        """Made and locked; HotloopError when another hotloop bisects this repository."""
        try:
            os.makedirs(self.path, 0o700, exist_ok=True)
            for d in (self.sessions, self.logs):
                d.mkdir(mode=0o700, exist_ok=True)
            fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
                         | os.O_NOFOLLOW, 0o600)
        except OSError as e:
            raise HotloopError(f"{self.path}: cannot keep a bisect's state there: "
                               f"{e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise HotloopError(f"another hotloop is bisecting {self.repo} (its state: "
                                   f"{self.path}); one bisect a repository at a time") from None
            raise HotloopError(f"{self.path}/lock: {e.strerror or e}") from None
        self._fd = fd

    def release(self) -> None:
        if self._trees is not None:
            self._trees.close()
            self._trees = None
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def discard(self) -> None:
        """The state gone (a bisect refused before its first round: nothing to resume)."""
        with contextlib.suppress(OSError):
            os.unlink(self.state_file)
        with contextlib.suppress(HotloopError):
            self.worktrees().remove_all()

    def load(self) -> BisectState | None:
        """The state kept, None when there is none."""
        try:
            fd = os.open(self.state_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise HotloopError(f"{self.state_file}: {e.strerror or e}") from None
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_STATE + 1)
        if len(data) > MAX_STATE:
            raise HotloopError(f"{self.state_file}: not a bisect state hotloop wrote (over "
                               f"{MAX_STATE >> 20} MB); --fresh starts afresh")
        try:
            doc = json.loads(data)
        except ValueError:
            doc = None
        return BisectState.from_json(doc, self.state_file)

    def save(self, st: BisectState) -> None:
        """Written whole or not at all (a full disk leaves the last state as it was)."""
        tmp = self.state_file.with_suffix(".tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(st.to_json(), f, allow_nan=False)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.state_file)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise HotloopError(f"{self.state_file}: cannot save the bisect's state: "
                               f"{e.strerror or e}") from None


@dataclass(frozen=True)
class Ready:
    """A revision ready to measure: its worktree and its plan resolved there."""
    rev: Revision
    worktree: Path
    rp: ResolvedPlan


def own(rp: ResolvedPlan, where: Path) -> frozenset[str]:
    """Which of the plan and its workload the revision's worktree defines (a profile there,
    a source there), not hotloop's own nor the user's: for GOOD, what every revision must."""
    def inside(path: str | Path) -> bool:
        try:
            return Path(path).resolve().is_relative_to(where.resolve())
        except (OSError, ValueError):
            return False
    return frozenset(k for k, path in (("plan", rp.plan.origin),
                                       ("workload", rp.workload.source))
                     if path and inside(path))


def prepare(rev: Revision, trees: Worktrees, logs: Path, plan_of: Callable[[Catalog], Plan],
            profiles: Sequence[Path] = (), build: str | None = None,
            kernel_image: str | None = None, timeout: float | None = None,
            ours: frozenset[str] = frozenset()) -> Ready | str:
    """`rev` checked out, built, its catalogue read (the --profiles directories relative to
    the repository from its worktree, absolute ones as they are) and the plan resolved
    there; with `kernel_image` (a path in the worktree) its kernel the image built there.
    `ours`: what GOOD's worktree defined (own()), which this one must define too, or a
    plan of hotloop's own of the same name would be measured in its place.  `timeout`: the
    build's, in seconds.  Its workload compiled here, so that one that does not is skipped.
    A string: why it cannot be measured (the revision is skipped, as `git bisect skip`)."""
    where = trees.checkout(rev)
    if build:
        why = trees.build(rev, build, logs / f"{rev.short}.log", timeout)
        if why is not None:
            return f"its build failed: {why}"
    # a relative directory is the revision's (its worktree's); an absolute one is read as it
    # is for every revision (the user's own plans beside the repository)
    dirs = [p if p.is_absolute() else where / p for p in profiles]
    missing = [str(p) for p, d in zip(profiles, dirs) if not d.is_dir()]
    if missing:
        return f"no {', '.join(missing)} in this revision"
    try:
        cat = catalog.load(dirs)
        rp = cat.resolve(plan_of(cat))
    except HotloopError as e:
        return f"its profiles: {e}"
    lost = sorted(set(ours) - own(rp, where))
    if lost:
        return (f"its {' and '.join(lost)} {rp.plan.name if 'plan' in lost else rp.workload.name}"
                f" not in this revision (GOOD's was; here it would come from "
                f"{rp.plan.origin if 'plan' in lost else rp.workload.source})")
    from hotloop.run.build import build as compile_workload
    try:                                # here, not in its first session: a skip, not a stop
        compile_workload(rp.workload.source, rp.cpu.cflags, rp.workload.name)
    except HotloopError as e:
        return f"its workload does not compile: {e}"
    if kernel_image:
        from hotloop.host.kimage import image_problem
        image = where / kernel_image
        if not image.is_file():
            return f"no kernel image {kernel_image} in this revision"
        problem = image_problem(image)
        if problem:
            return f"its kernel image {kernel_image}: {problem}"
        # a kernel of its own name, the plan's too (a VM's guest looks the plan's up)
        name = f"{rp.kernel.name}-{rev.short}"
        rp = replace(rp, plan=replace(rp.plan, kernel=name),
                     kernel=replace(rp.kernel, name=name, image=str(image)))
    return Ready(rev, where, rp)


def value(result: Result, metric: str | None = None) -> float | None:
    """A finished session's number for the decision: its runs' median of the workload's
    metric, or of `metric` (--metric: cpu_ns/op, an extra); None when it has none a ratio
    can take (no runs, the metric not recorded, zero, not finite)."""
    from hotloop.analysis.metrics import metric_values
    from hotloop.analysis.sides import METRIC_ALIASES
    name = METRIC_ALIASES.get(metric or "", metric or result.workload.metric)
    got = metric_values(result).get(name)
    if got is None or got.per_session or not len(got.values):
        return None
    v = float(statistics.median(got.values))
    return v if math.isfinite(v) and v > 0 else None

