"""`hotloop bisect` in a real git repository of a workload: 15 revisions after the good one,
one of which makes the op about 25% slower, one whose build fails and one that edits only a
comment; real git worktrees, real builds, real sessions, the user's checkout left as it was."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bisect_repo import BROKEN, OP_C, OP_TOML, RUN, SLOWER, git, make_repo
from conftest import ROOT


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """The workload's repository: the good revision, then REVISIONS more."""
    return make_repo(tmp_path / "work")


def bisect(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hotloop", "bisect", *args],
                          capture_output=True, text=True, cwd=repo, timeout=900,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def checkout_state(repo: Path) -> tuple[str, ...]:
    """What a user's checkout is: HEAD, the index's bytes, the status, an untracked file."""
    index = hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest()
    return (git(repo, "rev-parse", "HEAD"), git(repo, "symbolic-ref", "HEAD"), index,
            git(repo, "status", "--porcelain", "--untracked-files=all"),
            (repo / "notes.txt").read_text(), (repo / "bench" / "op.c").read_text())


def test_bisect_names_the_slower_revision_skips_the_broken_one_and_leaves_the_checkout(
        repo: tuple[Path, list[str]], leftovers) -> None:
    r, shas = repo
    (r / "notes.txt").write_text("mine, untracked\n")
    with open(r / "bench" / "op.c", "a") as f:
        f.write("/* an edit of mine, not committed */\n")
    git(r, "add", "bench/op.c")                 # staged, and then one more unstaged edit
    with open(r / "bench" / "op.c", "a") as f:
        f.write("/* and another */\n")
    before = checkout_state(r)
    done = bisect(r, f"{shas[0]}..{shas[-1]}", "chain", *RUN, "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "found", doc
    assert doc["first_bad"] == shas[SLOWER], (doc, done.stderr)
    assert doc["first_bad_subject"] == f"Revision {SLOWER}: a longer chain"
    # a quarter more work an op: measured, on a busy machine too, somewhere near it
    assert 10 < doc["change_pct"] < 60 and doc["ci_low"] > 0, doc
    assert doc["ci_low"] <= doc["change_pct"] <= doc["ci_high"]
    verdicts = {s["rev"]: s for s in doc["steps"]}
    broken = verdicts[shas[BROKEN]]
    assert broken["verdict"] == "skipped" and "build" in broken["reason"], broken
    assert doc["skipped"] == [] or doc["skipped"] == [shas[BROKEN]]
    assert doc["alpha"] == 0.05
    assert all(s["verdict"] in ("differ", "good", "bad", "skipped", "unknown")
               for s in doc["steps"])
    # the build's log kept, the sessions kept, the worktrees gone
    state = Path(doc["state"])
    assert "no rule" in (state / "builds" / f"{shas[BROKEN][:12]}.log").read_text()
    assert list((state / "sessions").rglob("s01.jsonl"))
    assert not [p for p in (state / "worktrees").iterdir() if p.is_dir()]
    assert git(r, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert checkout_state(r) == before
    assert "bisect: step" in done.stderr and "candidates left" in done.stderr
    assert leftovers() == []


def test_a_range_with_no_change_says_so_names_nothing_and_exits_non_zero(
        repo: tuple[Path, list[str]]) -> None:
    r, shas = repo
    done = bisect(r, f"{shas[0]}..{shas[SLOWER - 1]}", "chain", *RUN, "--max-rounds", "3")
    assert done.returncode == 3, done.stderr
    assert "nothing to bisect" in done.stdout, done.stdout
    assert "first bad" not in done.stdout
    # a state file it cannot read: refused in one line, --fresh discards it
    kept = next((r.parent / "state" / "hotloop" / "bisect").glob("*/state.json"))
    kept.write_text("{not json")
    refused = bisect(r, f"{shas[0]}..{shas[1]}", "chain", *RUN)
    assert refused.returncode == 2 and "--fresh" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    js = bisect(r, "--fresh", f"{shas[0]}..{shas[1]}", "chain", *RUN, "--max-rounds", "2",
                "--format", "json")
    assert js.returncode == 3, js.stderr
    doc = json.loads(js.stdout)
    assert doc["status"] == "no change" and doc["first_bad"] is None


def test_bad_input_is_one_line(repo: tuple[Path, list[str]], tmp_path: Path) -> None:
    r, shas = repo
    for args, said in [
        ([f"{shas[0]}..nope", "chain"], "nope"),
        ([f"{shas[-1]}..{shas[0]}", "chain"], ""),
        ([f"{shas[0]}..{shas[-1]}", "chain", "--alpha", "nan"], "--alpha"),
        ([f"{shas[0]}..{shas[-1]}", "chain", "--kernel-image", "/boot/x"], "--kernel-image"),
        (["--resume"], "no interrupted bisect"),
        (["--resume", "--runs", "3"], "as it was started"),
        ([f"{shas[0]}..{shas[-1]}", "chain", "--max-rounds", "1"], "--max-rounds 1"),
        ([f"{shas[0]}..{shas[-1]}", "chain", "--build-timeout", "0"], "--build-timeout"),
        ([f"{shas[0]}..{shas[-1]}"], "give GOOD..BAD and the plan"),
    ]:
        done = bisect(r, *args)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("hotloop: ") and said in lines[0], \
            (args, done.stderr)
    # a state directory inside the repository: refused before anything is made there
    inside = subprocess.run([sys.executable, "-m", "hotloop", "bisect", f"{shas[0]}..{shas[-1]}",
                             "chain"], capture_output=True, text=True, cwd=r,
                            env=dict(os.environ, PYTHONPATH=str(ROOT),
                                     XDG_STATE_HOME=str(r / ".local" / "state")))
    assert inside.returncode == 2 and "XDG_STATE_HOME" in inside.stderr, inside.stderr
    assert not (r / ".local").exists()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    done = subprocess.run([sys.executable, "-m", "hotloop", "bisect", "a..b", "chain"],
                          capture_output=True, text=True, cwd=outside,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), GIT_CEILING_DIRECTORIES=str(tmp_path)))
    assert done.returncode == 2 and "git" in done.stderr, done.stderr


def test_an_interrupted_bisect_resumes_with_its_rounds_kept(repo: tuple[Path, list[str]],
                                                            tmp_path: Path) -> None:
    """Stopped by a Ctrl-C in its first candidate's build, held there by the test (a quiet
    machine ran the whole bisect before a Ctrl-C timed by its output came)."""
    import signal
    r, shas = repo
    hold = tmp_path / "hold"
    hold.touch()
    gate = (f'case $(git rev-parse HEAD) in {shas[0]}|{shas[-1]}) ;; *) '
            f'while [ -e {hold} ]; do sleep 0.05; done;; esac; sh build.sh')
    run = [gate if w == "sh build.sh" else w for w in RUN]
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "bisect",
                             f"{shas[0]}..{shas[-1]}", "chain", *run, "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=r, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stderr is not None
    said = []
    for line in proc.stderr:            # the endpoints done, the first candidate's build held
        said.append(line)
        if "checking out and building" in line and "Revision 15" not in line \
                and "Add the chain" not in line:
            break
    # meanwhile a second bisect of this repository is refused, in one line
    other = bisect(r, f"{shas[0]}..{shas[-1]}", "chain", *RUN)
    if other.returncode != 2:           # the first one let its lock go: say how it ended
        first_ended = proc.poll()
        proc.kill()
        _, rest = proc.communicate(timeout=60)
        raise AssertionError(f"a second bisect was not refused (exit {other.returncode}); "
                             f"the first, held in a build, had "
                             f"{'exited ' + str(first_ended) if first_ended is not None else 'not ended'}"
                             f":\n{''.join(said)}{rest}\nthe second:\n{other.stderr}")
    assert "another hotloop is bisecting" in other.stderr, other.stderr
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, "".join(said) + err
    assert "--resume goes on" in err, err
    hold.unlink()
    # a new one is refused while this one is kept
    again = bisect(r, f"{shas[0]}..{shas[-1]}", "chain", *RUN)
    assert again.returncode == 2 and "--resume" in again.stderr, again.stderr
    done = bisect(r, "--resume")
    assert done.returncode == 0, done.stderr
    assert "resuming" in done.stderr and "rounds kept" in done.stderr
    doc = json.loads(done.stdout)         # as it was started: --format json
    assert doc["first_bad"] == shas[SLOWER], doc
    assert doc["steps"][0]["rounds"] >= 2


def test_a_revision_without_the_workload_or_whose_c_does_not_compile_is_skipped(
        tmp_path: Path) -> None:
    """The workload is named as one hotloop ships (syscall): a revision that drops its TOML
    must not measure hotloop's own in its place, and one whose C does not compile is
    skipped, not the end of the bisect."""
    r = tmp_path / "work"
    (r / "bench").mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    toml = OP_TOML.replace("[workload.chain]", "[workload.syscall]")

    def rev(subject: str, chain: int | None, c: str | None = None) -> str:
        w = r / "bench" / "w.toml"
        if chain is None:
            w.unlink(missing_ok=True)
        else:
            w.write_text(toml)
            (r / "bench" / "op.c").write_text(c or OP_C.replace("@CHAIN@", str(chain)))
        (r / "NEWS").write_text(subject)
        git(r, "add", "-A")
        git(r, "commit", "-q", "-m", subject)
        return git(r, "rev-parse", "HEAD")
    shas = [rev("The chain, as syscall", 40), rev("Drop the workload", None),
            rev("Broken C", 40, OP_C.replace("@CHAIN@", "40") + "this is not C;\n"),
            rev("A longer chain", 50), rev("Notes", 50)]
    # no --param turns: hotloop's own syscall has none, and would be refused for it
    run = [w for w in RUN if w not in ("--build", "sh build.sh", "--param", "turns=20000")]
    done = bisect(r, f"{shas[0]}..{shas[-1]}", "syscall", *run, "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["first_bad"] == shas[3], doc
    steps = {s["rev"]: s for s in doc["steps"]}
    assert steps[shas[1]]["verdict"] == "skipped" and "not in this revision" in \
        steps[shas[1]]["reason"], steps[shas[1]]
    assert steps[shas[2]]["verdict"] == "skipped" and "does not compile" in \
        steps[shas[2]]["reason"], steps[shas[2]]
    assert doc["skipped"] == [shas[1], shas[2]]
    assert doc["candidates"] == [shas[1], shas[2], shas[3]]
