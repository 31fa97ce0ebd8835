"""The revisions of a bisect: a range of a git repository's first-parent line, each revision
checked out in a worktree of hotloop's (under its state directory) and built there.

git runs with one fixed environment (`_env`, `OPTIONS`): the C locale, no prompt, no pager,
no hook, no fsmonitor, no colour, and none of the variables that point git at another
repository (GIT_DIR, GIT_INDEX_FILE...: set when hotloop runs from a hook); revisions are
checked with `rev-parse --verify --end-of-options REV^{commit}`, so a text never becomes an
option.  The user's checkout is never touched: a worktree is made from a commit, detached,
with its hooks off, and only its own entry in .git/worktrees is written or removed (never a
`git worktree prune`, which would also drop the user's own worktrees on a disk not mounted).

A build is `sh -c CMD` in the revision's worktree (run/shell: its own process group, its
output to a log, stopped with all it started, even when hotloop is killed), its own git
running no hook either.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.host.procs import child_setup
from hotloop.run.build import CANCEL
from hotloop.run.build_facts import build_differences, kernel_image_facts
from hotloop.run.shell import run_logged
from hotloop.visible import visible

__all__ = ["Revision", "Worktrees", "build_differences", "kernel_image_facts", "repository",
           "revision_range"]

FULL_HASH = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")      # SHA-1 or SHA-256 repositories
PREFIX = "hotloop-"                     # a worktree of hotloop's: ROOT/hotloop-SHORT
# Given to every git: hooks off (a post-checkout hook would run in `worktree add`), output
# no configuration changes, no automatic gc or maintenance in the user's repository
OPTIONS = ("--no-pager", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
           "-c", "color.ui=never", "-c", "core.quotePath=false", "-c", "log.showSignature=false",
           "-c", "i18n.logOutputEncoding=UTF-8", "-c", "advice.detachedHead=false",
           "-c", "submodule.recurse=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false")
# The git variables kept: which configuration files the user trusts (safe.directory...), and
# where discovery stops.  Every other GIT_* goes: GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE and
# GIT_CONFIG_PARAMETERS point git elsewhere, GIT_TRACE writes to the stderr we quote.
KEPT = {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
        "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"}
# What a build must not inherit: the variables that would make its own git (the kernel's
# setlocalversion runs it) read another repository than its worktree
ELSEWHERE = {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
             "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
             "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"}
POLL = 0.05


@dataclass(frozen=True)
class Revision:
    sha: str                            # the full hash
    subject: str                        # the commit's subject, made visible

    @property
    def short(self) -> str:
        return self.sha[:12]


# --------------------------------------------------------------------------- git

def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in KEPT}
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat",
               GIT_OPTIONAL_LOCKS="0", GIT_ASKPASS="", SSH_ASKPASS="")
    return env


def git_line(stderr: bytes) -> str:
    """git's first error line ("fatal: ...", "error: ..."), or its first line, made visible."""
    lines = [ln.strip() for ln in stderr.decode(errors="replace").splitlines() if ln.strip()]
    first = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), "") or \
        (lines[0] if lines else "git failed without a message")
    return visible(first[:300])


def git(cwd: Path, *args: str, what: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[bytes]:
    """git ARGS in `cwd`; HotloopError "WHAT: git's line" on an exit status not in `ok`,
    and "WHAT: interrupted" once build.CANCEL is set (a signal came)."""
    if CANCEL.is_set():
        raise HotloopError(f"{what}: interrupted")
    try:
        proc = subprocess.Popen(["git", *OPTIONS, "-C", str(cwd), *args], env=_env(),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=child_setup(os.getpid()))
    except FileNotFoundError:
        raise HotloopError("git is not installed (a bisect needs it: install git)") from None
    except OSError as e:
        raise HotloopError(f"cannot run git: {e.strerror}") from None
    with proc:
        while True:                     # a kernel tree's worktree add takes a while
            try:
                out, err = proc.communicate(timeout=POLL)   # retrying loses no output
                break
            except subprocess.TimeoutExpired:
                if CANCEL.is_set():
                    proc.kill()
                    raise HotloopError(f"{what}: interrupted") from None
            except BaseException:       # Ctrl-C: git is ours to end too
                proc.kill()
                raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    if done.returncode not in ok:
        raise HotloopError(f"{what}: {git_line(done.stderr)}")
    return done


def _text(out: bytes) -> str:
    """One value git printed (a path, a hash): its last newline off, nothing else."""
    return os.fsdecode(out.removesuffix(b"\n"))


def repository(start: Path) -> Path:
    """The top of the work tree `start` is in."""
    done = git(start, "rev-parse", "--show-toplevel", what=visible(str(start)))
    top = _text(done.stdout)
    if not top:
        raise HotloopError(f"{visible(str(start))}: not in a git work tree (inside .git?)")
    return Path(top)


def revision_range(repo: Path, spec: str) -> list[Revision]:
    """"GOOD..BAD": GOOD, then every commit of BAD's first-parent line after it, BAD last.

    GOOD must be an ancestor of BAD on that line (not a side branch merged into it: the
    commits between would not hold its changes).  Two adjacent commits are a range of two:
    whether BAD alone changed things is still a question the endpoints answer."""
    def bad(why: str) -> HotloopError:
        return HotloopError(f"revision range '{visible(spec)}': {why}")
    if visible(spec) != spec:
        raise bad("it holds a control character (a newline?)")
    if "..." in spec:
        raise bad("A...B is a symmetric difference, not a range: give GOOD..BAD")
    good, sep, last = spec.partition("..")
    if not sep:
        raise bad("not a range: give GOOD..BAD")
    if not good or not last:
        raise bad("give both ends: GOOD..BAD")
    for side in (good, last):
        if side.startswith("-"):
            raise bad(f"'{side}' looks like an option, not a revision")
    old, new = _commit(repo, good, bad), _commit(repo, last, bad)
    if old == new:
        raise bad(f"GOOD and BAD are the same commit ({old[:12]}): nothing between them")
    if git(repo, "merge-base", "--is-ancestor", old, new, what=f"revision range '{spec}'",
           ok=(0, 1)).returncode == 1:
        raise bad(f"{good} is not an ancestor of {last}")
    line = _log(repo, "--first-parent", "--reverse", f"{old}..{new}")
    first = _log(repo, "-1", old)
    if not line or not line[0][1] or line[0][1][0] != old:
        raise bad(f"{good} is not on {last}'s first-parent line (a side branch merged into "
                  f"it): give a GOOD on that line, such as the merge's first parent")
    return [Revision(sha, subject) for sha, _, subject in first + line]


def _commit(repo: Path, rev: str, bad: Callable[[str], HotloopError]) -> str:
    done = git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
               what=f"revision '{visible(rev)}'", ok=(0, 1, 128))
    sha = _text(done.stdout)
    if done.returncode == 0 and FULL_HASH.fullmatch(sha):
        return sha
    shallow = _text(git(repo, "rev-parse", "--is-shallow-repository", what="git",
                        ok=(0, 128)).stdout) == "true"
    hint = (" (this clone is shallow: `git fetch --unshallow` brings the older commits)"
            if shallow else "")
    said = f" ({git_line(done.stderr)})" if done.stderr.strip() else ""
    raise bad(f"unknown revision or not a commit: '{visible(rev)}'{said}{hint}")


def _log(repo: Path, *args: str) -> list[tuple[str, list[str], str]]:
    """(hash, parents, subject) of each commit `git log ARGS` lists."""
    done = git(repo, "log", "-z", "--no-decorate", "--no-color", "--encoding=UTF-8",
               "--format=%H %P%x00%s", *args, "--", what="git log")
    fields = done.stdout.split(b"\0")
    if fields and not fields[-1]:
        fields.pop()
    commits = []
    for head, subject in zip(fields[0::2], fields[1::2]):
        sha, *parents = head.decode(errors="replace").split()
        commits.append((sha, parents, visible(subject.decode(errors="replace"))))
    return commits


def _full_hash(rev: Revision) -> str:
    if not isinstance(rev.sha, str) or not FULL_HASH.fullmatch(rev.sha):
        raise HotloopError(f"revision '{visible(str(rev.sha))}': not a full commit hash")
    return rev.sha


# --------------------------------------------------------------------------- worktrees

class Worktrees:
    """The worktrees of one repository's revisions under `root` (a directory of hotloop's),
    held by one hotloop at a time (a lock, ROOT/.lock, released when it ends however)."""

    def __init__(self, repo: Path, root: Path) -> None:
        self.repo = repo
        common = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir",
                     what=visible(str(repo)))
        self._admin = Path(_text(common.stdout)).resolve() / "worktrees"
        top = repository(repo).resolve()
        if root.resolve().is_relative_to(top):
            raise HotloopError(f"{visible(str(root))}: inside the repository's work tree "
                               f"({visible(str(top))}): its worktrees would be the user's "
                               f"untracked files; keep them elsewhere")
        try:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.root = root.resolve()
            fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as e:
            raise HotloopError(f"{visible(str(root))}: cannot keep worktrees there: "
                               f"{e.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            who = f" (pid {holder})" if holder.isdigit() else ""
            raise HotloopError(f"{visible(str(root))}: another hotloop{who} is using these "
                               f"worktrees: wait for it to end") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._lock: int | None = fd
        self._made: set[str] = set()       # checked out (or checked) by this hotloop

    def close(self) -> None:
        """Let another hotloop use the root (the worktrees stay: remove_all removes them)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def __enter__(self) -> Worktrees:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def path(self, rev: Revision) -> Path:
        """Where `rev`'s worktree is (or will be)."""
        return self.root / f"{PREFIX}{_full_hash(rev)[:12]}"

    def checkout(self, rev: Revision) -> Path:
        """`rev` checked out, detached, in its own worktree (made once; one a previous
        hotloop left is kept, its build's output with it, its tracked files reset)."""
        sha, path = _full_hash(rev), self.path(rev)
        if sha in self._made and (path / ".git").is_file():
            return path
        what = f"revision {rev.short}: cannot check it out"
        if self._ours_at(path, sha):
            git(path, "reset", "--quiet", "--hard", sha, what=what)
        else:
            other = self._foreign(path)
            if other:
                raise HotloopError(f"{visible(str(path))}: a worktree of another repository "
                                   f"({visible(other)}): each repository needs a root of its "
                                   f"own")
            self._discard(path)         # half made (interrupted), or removed by hand
            git(self.repo, "worktree", "add", "--detach", "--", str(path), sha, what=what)
        self._made.add(sha)
        return path

    def _ours_at(self, path: Path, sha: str) -> bool:
        """Whether `path` is a worktree of this repository with `sha` checked out."""
        if not (path / ".git").is_file():
            return False
        with contextlib.suppress(HotloopError):
            done = git(path, "rev-parse", "--path-format=absolute", "--git-common-dir", "HEAD",
                       what="worktree")
            common, head = _text(done.stdout).split("\n")[-2:]
            return Path(common).resolve() / "worktrees" == self._admin and head == sha
        return False

    def build(self, rev: Revision, cmd: str, log: Path, timeout: float | None = None) -> str | None:
        """`sh -c CMD` in `rev`'s worktree, its output (stdout and stderr) to `log`: None
        when it exited 0, else why not in a line naming the log."""
        path = self.checkout(rev)
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            raise HotloopError(f"{visible(str(log))}: cannot write the build's log: "
                               f"{e.strerror}") from None
        try:
            try:                        # what ran where, first: a full disk says so here
                os.write(out, f"hotloop: building {rev.sha} {rev.subject}\nhotloop: in "
                              f"{path}: sh -c {cmd!r}\n".encode(errors="replace"))
            except OSError as e:
                raise HotloopError(f"{visible(str(log))}: cannot write the build's log: "
                                   f"{e.strerror}") from None
            why = run_logged(cmd, path, _build_env(path), out, timeout)
            with contextlib.suppress(OSError):
                os.write(out, f"hotloop: {why or 'build exited 0'}\n".encode())
        finally:
            os.close(out)
        return f"{why} (log: {visible(str(log))})" if why else None

    def remove(self, rev: Revision) -> None:
        """`rev`'s worktree and its entry in .git/worktrees gone."""
        self._discard(self.path(rev))
        self._made.discard(rev.sha)

    def remove_all(self) -> None:
        """Every worktree of hotloop's under the root gone, with its .git/worktrees entry,
        those a previous hotloop left and those deleted by hand included."""
        places = set(self._entries()) | {p for p in self.root.glob(f"{PREFIX}*")
                                          if not self._foreign(p)}
        for path in sorted(places):
            self._discard(path)
        self._made.clear()

    def _foreign(self, path: Path) -> str | None:
        """The repository `path` is a worktree of, when it is another's (a root shared)."""
        try:
            text = (path / ".git").read_text()
        except (OSError, UnicodeDecodeError):
            return None
        entry = Path(text.removeprefix("gitdir: ").strip())
        if not text.startswith("gitdir: ") or entry.parent.resolve() == self._admin \
                or not (entry / "gitdir").is_file():
            return None
        return str(entry.parent.parent)

    def _entries(self) -> dict[Path, Path]:
        """This repository's worktree entries (.git/worktrees/NAME) that are hotloop's under
        this root, by the worktree's path."""
        found = {}
        with contextlib.suppress(OSError):
            for entry in self._admin.iterdir():
                with contextlib.suppress(OSError):
                    where = Path((entry / "gitdir").read_text().strip()).parent
                    if where.parent.resolve() == self.root and where.name.startswith(PREFIX):
                        found[self.root / where.name] = entry
        return found

    def _discard(self, path: Path) -> None:
        git(self.repo, "worktree", "remove", "--force", "--force", "--", str(path),
            what="git worktree remove", ok=(0, 128))      # 128: not (or no longer) one
        entry = self._entries().get(path)
        if entry is not None:           # its directory gone by hand: the entry alone (prune)
            shutil.rmtree(entry, ignore_errors=True)
        with contextlib.suppress(OSError):
            self._admin.rmdir()         # as git leaves it once the last one goes
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_symlink() or path.exists():
            path.unlink(missing_ok=True)
        if path.exists() or path.is_symlink():
            raise HotloopError(f"{visible(str(path))}: cannot remove hotloop's worktree")


# --------------------------------------------------------------------------- builds

def _build_env(path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ELSEWHERE and not k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))}
    env["PWD"] = str(path)
    # the build's own git (the kernel's setlocalversion refreshes the index) runs no hook
    # either: the repository's hooks are the user's checkout's, and may write into it
    env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="core.hooksPath",
               GIT_CONFIG_VALUE_0="/dev/null")
    return env
