"""A bisect's revisions with the real git, in repositories made here: the range of a
first-parent line (a merge in it, a shallow clone), worktrees of hotloop's that leave the
user's checkout exactly as it was (a dirty index, untracked files, a stash, hooks that would
write into it), and builds in them (their exits, a time out, Ctrl-C, hotloop SIGKILLed,
megabytes of output), all in paths with spaces."""
from __future__ import annotations

import _thread
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

from hotloop.errors import HotloopError
from hotloop.run.revisions import PREFIX, Revision, Worktrees, build_differences, repository, revision_range

ENV = {"GIT_AUTHOR_NAME": "A U Thor", "GIT_AUTHOR_EMAIL": "a@example.org",
       "GIT_COMMITTER_NAME": "A U Thor", "GIT_COMMITTER_EMAIL": "a@example.org",
       "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "GIT_OPTIONAL_LOCKS": "0"}


def g(repo: Path, *args: str) -> str:
    """git as the user runs it (the test's own: hotloop's git is the one under test)."""
    env = {**os.environ, **ENV}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def commit(repo: Path, subject: str, name: str = "a.txt") -> str:
    with open(repo / name, "a") as f:
        f.write(subject + "\n")
    g(repo, "add", "--", name)
    g(repo, "commit", "-q", "-m", subject)
    return g(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """c0 - c1 - c2 - m - c3 - c4 on main, m merging the side branch s1 - s2 (off c1)."""
    r = tmp_path / "my repo"
    r.mkdir()
    g(r, "init", "-q", "-b", "main")
    c: dict[str, str] = {}
    c["c0"] = commit(r, "the first")
    c["c1"] = commit(r, "the second")
    g(r, "checkout", "-q", "-b", "side")
    c["s1"] = commit(r, "side one", "side.txt")
    c["s2"] = commit(r, "side two", "side.txt")
    g(r, "checkout", "-q", "main")
    c["c2"] = commit(r, "the third")
    g(r, "merge", "-q", "--no-ff", "-m", "Merge the side", "side")
    c["m"] = g(r, "rev-parse", "HEAD")
    c["c3"] = commit(r, "the fourth")
    c["c4"] = commit(r, "a subject with \x1b[31m an escape")
    return r, c


def test_a_range_is_the_first_parent_line_oldest_first(repo):
    r, c = repo
    revs = revision_range(r, "main~5..main")
    assert [x.sha for x in revs] == [c["c0"], c["c1"], c["c2"], c["m"], c["c3"], c["c4"]]
    assert revs[3].subject == "Merge the side" and revs[0].subject == "the first"
    assert revs[-1].subject == "a subject with \\x1b[31m an escape"
    assert revs[1].short == c["c1"][:12]
    assert [x.sha for x in revision_range(r, f"{c['c3']}..{c['c4'][:7]}")] == [c["c3"], c["c4"]]


@pytest.mark.parametrize("spec, said", [
    ("nope..main", "revision range 'nope..main': unknown revision or not a commit: 'nope'"),
    ("main..main~1", "'main..main~1': main is not an ancestor of main~1"),
    ("main~1..main~1", "GOOD and BAD are the same commit"),
    ("side~1..main", "side~1 is not on main's first-parent line (a side branch merged into it)"),
    ("main^{tree}..main", "unknown revision or not a commit: 'main^{tree}'"),
])
def test_a_range_git_cannot_make_is_one_line_naming_the_text(repo, spec, said):
    with pytest.raises(HotloopError) as e:
        revision_range(repo[0], spec)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_git_reads_the_repository_given_whatever_the_environment_points_at(repo, tmp_path,
                                                                          monkeypatch):
    r, c = repo
    other = tmp_path / "other"
    other.mkdir()
    g(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))          # as in a hook of another repo
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_TRACE", "1")                        # would write to stderr
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    assert [x.sha for x in revision_range(r, "main~2..main")] == [c["m"], c["c3"], c["c4"]]
    with pytest.raises(HotloopError, match=r"^revision range 'nope\.\.main': unknown revision "
                                           r"or not a commit: 'nope'$"):
        revision_range(r, "nope..main")
    assert repository(r / ".") == r


def test_the_repository_is_the_work_trees_top_or_one_line_why_not(repo, tmp_path, monkeypatch):
    r, _ = repo
    (r / "sub dir").mkdir()
    assert repository(r / "sub dir") == r
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    with pytest.raises(HotloopError, match=r"plain: fatal: not a git repository"):
        repository(plain)
    with pytest.raises(HotloopError, match=r"must be run in a work tree|not in a git work tree"):
        repository(r / ".git")
    empty = tmp_path / "no git here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(HotloopError, match=r"^git is not installed \(a bisect needs it"):
        repository(r)


def test_a_shallow_clone_has_the_range_it_holds_and_says_why_not_more(repo, tmp_path):
    r, c = repo
    shallow = tmp_path / "shallow clone"
    subprocess.run(["git", "clone", "-q", "--depth", "2", "-b", "main", f"file://{r}",
                    str(shallow)], check=True, env={**os.environ, **ENV})
    assert [x.sha for x in revision_range(shallow, "HEAD~1..HEAD")] == [c["c3"], c["c4"]]
    with pytest.raises(HotloopError, match=r"unknown revision or not a commit: 'HEAD~4'.*"
                                           r"shallow: `git fetch --unshallow`"):
        revision_range(shallow, "HEAD~4..HEAD")
    wt = Worktrees(shallow, tmp_path / "state" / "wt")
    rev = revision_range(shallow, "HEAD~1..HEAD")[0]
    assert (wt.checkout(rev) / "a.txt").read_text().endswith("the fourth\n")
    wt.remove_all()


def snapshot(r: Path) -> dict[str, object]:
    """What the user has in a checkout: HEAD, the index's bytes, the status, every file's
    bytes outside .git (untracked ones too), the refs, the stash, the worktree list, and the
    bytes of every file of the repository but its objects and worktrees (config, reflogs)."""
    files = {str(p.relative_to(r)): p.read_bytes() for p in sorted(r.rglob("*"))
             if p.is_file() and ".git" not in p.relative_to(r).parts}
    index = r / g(r, "rev-parse", "--git-path", "index")
    common = r / g(r, "rev-parse", "--git-common-dir")
    repository_files = {str(p.relative_to(common)): p.read_bytes() for p in sorted(common.rglob("*"))
                        if p.is_file() and p.relative_to(common).parts[0] not in ("objects", "worktrees")}
    return {"head": g(r, "rev-parse", "HEAD"),
            "symbolic": g(r, "rev-parse", "--symbolic-full-name", "HEAD"),
            "index": hashlib.sha256(index.read_bytes()).hexdigest(),
            "status": g(r, "status", "--porcelain=v1", "-z", "--untracked-files=all"),
            "files": files, "refs": g(r, "for-each-ref"), "stash": g(r, "stash", "list"),
            "worktrees": g(r, "worktree", "list", "--porcelain"), "git": repository_files,
            "hooks_ran": sorted(str(p) for p in r.parent.rglob("HOOK RAN*"))}


def test_checkout_build_and_remove_leave_the_users_checkout_as_it_was(repo, tmp_path):
    r, c = repo
    # a stash, a staged change, an unstaged one, untracked files (one binary, one with a
    # space), and hooks that would write into the checkout: .git/hooks and core.hooksPath
    (r / "a.txt").write_text("stashed\n")
    g(r, "stash", "-q")
    (r / "side.txt").write_text("staged\n")
    g(r, "add", "side.txt")
    (r / "a.txt").write_text("unstaged\n")
    (r / "untracked file.bin").write_bytes(bytes(range(256)))
    (r / "notes").mkdir()
    (r / "notes" / "todo").write_text("x\n")
    hook = f'#!/bin/sh\necho "$@" > "{r}/HOOK RAN $(basename "$0")"\n'
    for d in (r / ".git" / "hooks", tmp_path / "my hooks"):
        d.mkdir(exist_ok=True)
        for name in ("post-checkout", "reference-transaction", "post-index-change"):
            (d / name).write_text(hook)
            (d / name).chmod(0o755)
    g(r, "config", "core.hooksPath", str(tmp_path / "my hooks"))
    before = snapshot(r)
    assert before["hooks_ran"] == [] and "untracked file.bin" in before["status"]

    wt = Worktrees(r, tmp_path / "state dir" / "bisect")
    revs = revision_range(r, f"{c['c1']}..main")
    paths = [wt.checkout(x) for x in revs[:3]]
    assert len(set(paths)) == 3 and all(p.name.startswith(PREFIX) for p in paths)
    assert (paths[1] / "a.txt").read_text() == "the first\nthe second\nthe third\n"
    assert g(paths[1], "rev-parse", "HEAD") == revs[1].sha and g(paths[1], "status",
                                                                "--porcelain") == ""
    assert wt.build(revs[1], 'echo built > "out file"; git status --porcelain > st', tmp_path /
                    "log dir" / "the build.log") is None
    assert (paths[1] / "out file").read_text() == "built\n"
    during = snapshot(r)                                # hotloop's worktrees are listed
    assert during.pop("worktrees") != before["worktrees"]
    assert during == {k: v for k, v in before.items() if k != "worktrees"}
    wt.remove_all()
    assert snapshot(r) == before
    assert not any(p.exists() for p in paths) and not (r / ".git" / "worktrees").exists()
    assert sorted(x.name for x in wt.root.iterdir()) == [".lock"]
    # the hooks were there to run: git's own worktree add runs them
    g(r, "worktree", "add", "-q", "--detach", str(tmp_path / "control"), "HEAD")
    assert "HOOK RAN post-checkout" in [p.name for p in r.glob("HOOK RAN*")]


def test_a_worktree_deleted_by_hand_is_made_again_and_its_entry_removed(repo, tmp_path):
    r, c = repo
    wt = Worktrees(r, tmp_path / "wt")
    rev = revision_range(r, "main~1..main")[1]
    path = wt.checkout(rev)
    shutil.rmtree(path)
    assert wt.checkout(rev) == path and (path / "a.txt").is_file()
    shutil.rmtree(path)
    wt.remove(rev)
    assert not (r / ".git" / "worktrees").exists() and not path.exists()
    other = revision_range(r, "main~2..main")[0]
    wt.checkout(other)
    wt.checkout(rev)
    shutil.rmtree(wt.path(other))                       # one gone by hand, one not
    wt.remove_all()
    assert not (r / ".git" / "worktrees").exists() and g(r, "worktree", "list").count("\n") == 0


def test_a_worktree_left_by_a_previous_hotloop_is_kept_with_its_build_and_reset(repo, tmp_path):
    r, _ = repo
    rev = revision_range(r, "main~1..main")[1]
    with Worktrees(r, tmp_path / "wt") as first:
        path = first.checkout(rev)
        (path / "built.o").write_text("object\n")
        (path / "a.txt").write_text("edited by a build\n")
    half = tmp_path / "wt" / f"{PREFIX}{'0' * 12}"      # a stray directory of hotloop's name
    half.mkdir()
    second = Worktrees(r, tmp_path / "wt")
    assert second.checkout(rev) == path
    assert (path / "built.o").read_text() == "object\n"
    assert (path / "a.txt").read_text().endswith("an escape\n")
    second.remove_all()
    assert not half.exists() and not path.exists()


def test_two_hotloops_on_one_root_the_second_is_refused_until_the_first_ends(repo, tmp_path):
    r, _ = repo
    first = Worktrees(r, tmp_path / "wt")
    with pytest.raises(HotloopError, match=rf"wt: another hotloop \(pid {os.getpid()}\) is "
                                           r"using these worktrees"):
        Worktrees(r, tmp_path / "wt")
    first.close()
    Worktrees(r, tmp_path / "wt").close()


def test_a_forged_revision_is_refused(repo, tmp_path):
    wt = Worktrees(repo[0], tmp_path / "wt")
    for sha in ("../../etc", "HEAD", "--orphan=x", "a" * 39):
        with pytest.raises(HotloopError, match="not a full commit hash"):
            wt.checkout(Revision(sha, "forged"))


@pytest.fixture
def built(repo, tmp_path) -> tuple[Worktrees, Revision, Path]:
    r, _ = repo
    return Worktrees(r, tmp_path / "state dir" / "wt"), revision_range(r, "main~1..main")[1], \
        tmp_path / "logs" / "b.log"


@pytest.mark.parametrize("cmd, why", [
    ("echo to stdout; echo to stderr >&2; exit 2", "build exited 2"),
    ("kill -9 $$", "build killed by signal 9 (SIGKILL)"),
])
def test_a_failed_build_says_why_and_where_its_log_is(built, cmd, why, leftovers):
    wt, rev, log = built
    assert wt.build(rev, cmd, log) == f"{why} (log: {log})"
    text = log.read_text()
    assert text.startswith(f"hotloop: building {rev.sha} ") and text.endswith(f"hotloop: {why}\n")
    if "stdout" in cmd:
        assert "to stdout\nto stderr\n" in text
    assert leftovers() == []


def test_a_build_past_its_time_is_stopped_with_all_it_started(built, leftovers):
    wt, rev, log = built
    why = wt.build(rev, "sleep 300 & sleep 300", log, timeout=0.5)
    assert why == f"build timed out after 0.5 s (log: {log})"
    assert leftovers() == []


def test_a_build_that_prints_megabytes_writes_them_to_its_log(built, leftovers):
    wt, rev, log = built
    assert wt.build(rev, "head -c 20000000 /dev/zero | tr '\\0' x; echo", log) is None
    assert log.stat().st_size > 20_000_000 and leftovers() == []


def test_a_build_leaves_nothing_running_after_it_exits(built, tmp_path, leftovers):
    wt, rev, log = built
    assert wt.build(rev, "sleep 300 > /dev/null 2>&1 & echo $! > bg.pid", log) is None
    pid = int((wt.path(rev) / "bg.pid").read_text())
    assert leftovers() == []            # killed: gone once the kernel has ended it
    assert not Path(f"/proc/{pid}").exists() or ") Z " in Path(f"/proc/{pid}/stat").read_text()


def wait_for(path: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never came"
        time.sleep(0.02)


TRAPPED = "trap 'echo term > got-term; exit 1' TERM; sleep 300 & echo started > started; wait"


def test_ctrl_c_during_a_build_stops_its_process_group_then_raises(built, leftovers):
    wt, rev, log = built
    started = wt.path(rev) / "started"
    wt.checkout(rev)
    # a Ctrl-C as a terminal's: a suite started in the background (`.ci/run &`) inherits
    # SIGINT ignored, and interrupt_main() then does nothing
    was = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        poke = threading.Thread(target=lambda: (wait_for(started), _thread.interrupt_main()))
        poke.start()
        with pytest.raises(KeyboardInterrupt):
            wt.build(rev, TRAPPED, log)
        poke.join()
    finally:
        signal.signal(signal.SIGINT, was)
    assert (wt.path(rev) / "got-term").read_text() == "term\n"     # SIGTERM first: make's
    assert leftovers() == []                                        # cleanup runs


def test_hotloop_killed_during_a_build_takes_the_build_with_it(built, tmp_path, leftovers):
    wt, rev, log = built
    wt.checkout(rev)
    wt.close()
    script = textwrap.dedent(f"""\
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's, not inherited
        from pathlib import Path
        from hotloop.run.revisions import Revision, Worktrees, repository
        wt = Worktrees(repository(Path({str(wt.repo)!r})), Path({str(wt.root)!r}))
        wt.build(Revision({rev.sha!r}, ""), {TRAPPED!r}, Path({str(log)!r}))
        """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for sig in (signal.SIGKILL, signal.SIGINT):
        for name in ("started", "got-term"):
            (wt.path(rev) / name).unlink(missing_ok=True)
        child = subprocess.Popen([sys.executable, "-c", script], env=env,
                                 stderr=subprocess.PIPE, text=True)
        wait_for(wt.path(rev) / "started")
        os.kill(child.pid, sig)
        _, err = child.communicate(timeout=60)
        assert leftovers(5) == [], sig
        assert (wt.path(rev) / "got-term").read_text() == "term\n"   # stopped, not just killed
        if sig == signal.SIGINT:
            assert "KeyboardInterrupt" in err


def test_cancel_stops_a_build_as_a_signal_does(built, leftovers):
    from hotloop.run import build
    wt, rev, log = built
    started = wt.path(rev) / "started"
    wt.checkout(rev)
    poke = threading.Thread(target=lambda: (wait_for(started), build.CANCEL.set()))
    poke.start()
    try:
        with pytest.raises(HotloopError, match="^build interrupted$"):
            wt.build(rev, TRAPPED, log)
    finally:
        poke.join()
        build.CANCEL.clear()
    assert leftovers() == []


def test_a_root_shared_by_two_clones_leaves_each_the_others_worktrees(repo, tmp_path):
    r, c = repo
    clone = tmp_path / "a clone"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(r), str(clone)], check=True,
                   env={**os.environ, **ENV})
    rev = revision_range(r, "main~1..main")[1]
    with Worktrees(r, tmp_path / "wt") as theirs:
        path = theirs.checkout(rev)
    with Worktrees(clone, tmp_path / "wt") as mine:
        with pytest.raises(HotloopError, match=r"a worktree of another repository \(.*my repo"
                                               r"/\.git\): each repository needs a root"):
            mine.checkout(rev)
        mine.remove_all()
    assert g(path, "rev-parse", "HEAD") == rev.sha
    with Worktrees(r, tmp_path / "wt") as theirs:
        theirs.remove_all()
    assert not path.exists()


def test_the_users_own_worktrees_stay_even_one_whose_disk_is_gone(repo, tmp_path):
    r, c = repo
    # the user works in a linked worktree of theirs, and has another on a disk not mounted
    mine, away = tmp_path / "my worktree", tmp_path / "usb disk" / "wt"
    g(r, "worktree", "add", "-q", "--detach", str(mine), c["c3"])
    g(r, "worktree", "add", "-q", "--detach", str(away), c["c2"])
    shutil.rmtree(tmp_path / "usb disk")
    (mine / "untracked").write_text("mine\n")
    before, listed = snapshot(mine), g(r, "worktree", "list", "--porcelain")
    wt = Worktrees(repository(mine), tmp_path / "state" / "wt")
    revs = revision_range(mine, "HEAD~2..HEAD")
    for rev in revs:
        assert wt.build(rev, "echo $PWD > where", tmp_path / "b.log") is None
    wt.remove_all()
    assert snapshot(mine) == before and g(r, "worktree", "list", "--porcelain") == listed
    assert "prunable" in listed and str(away) in listed      # what a prune would have dropped


def test_cancel_starts_no_more_git(built):
    from hotloop.run import build
    wt, rev, log = built
    build.CANCEL.set()
    try:
        with pytest.raises(HotloopError, match=r"^git worktree remove: interrupted$"):
            wt.checkout(rev)
    finally:
        build.CANCEL.clear()
    assert not wt.path(rev).exists()
    assert wt.build(rev, "true", log) is None


def test_the_config_lines_two_built_revisions_differ_in(repo, tmp_path):
    r, _ = repo
    wt = Worktrees(r, tmp_path / "wt")
    good, bad = revision_range(r, "main~1..main")
    build = ("if grep -q escape a.txt; then echo CONFIG_PREEMPT=y; else "
             "echo '# CONFIG_PREEMPT is not set'; fi > .config; echo CONFIG_HZ=250 >> .config")
    assert wt.build(good, build, tmp_path / "good.log") is None
    assert wt.build(bad, build, tmp_path / "bad.log") is None
    assert build_differences(wt.checkout(good), wt.checkout(bad)) == [
        "-# CONFIG_PREEMPT is not set", "+CONFIG_PREEMPT=y"]


def test_a_log_that_cannot_be_written_is_one_line_and_no_build_runs(built, tmp_path):
    wt, rev, _ = built
    with pytest.raises(HotloopError, match=r"^/dev/full: cannot write the build's log: No "
                                           r"space left on device$"):
        wt.build(rev, "touch ran", Path("/dev/full"))
    (tmp_path / "real").write_text("x\n")
    (tmp_path / "planted").symlink_to(tmp_path / "real")
    with pytest.raises(HotloopError, match=r"planted: cannot write the build's log: Too many"):
        wt.build(rev, "touch ran", tmp_path / "planted")
    with pytest.raises(HotloopError, match="^the build command holds a NUL character$"):
        wt.build(rev, "touch ran\0", tmp_path / "b.log")
    assert not (wt.path(rev) / "ran").exists() and (tmp_path / "real").read_text() == "x\n"


def test_a_root_inside_the_work_tree_is_refused(repo):
    r, _ = repo
    for root in (r / "bisect", r / ".git" / "hotloop", r / "sub" / ".." / "x"):
        with pytest.raises(HotloopError, match=r"inside the repository's work tree .*: its "
                                               r"worktrees would be the user's untracked files"):
            Worktrees(r, root)
        assert not root.exists()
