"""A git repository of a workload for the bisect's tests (`hotloop bisect` and the
console's): a good revision, then revisions of which one makes the op about 25% slower, one
does not build and the later ones edit a comment."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

OP_C = r"""
#include "hotloop.h"
#include <stdint.h>
#include <stdlib.h>
/* CHAIN multiply-adds a turn, each waiting for the last: the op's cost is CHAIN's */
#define CHAIN @CHAIN@
struct st { uint64_t turns, x; };
void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t len)
{
    struct st *s = calloc(1, sizeof(*s));
    (void)env; (void)err; (void)len;
    s->turns = (uint64_t)hl_param_int(p, n, "turns", 20000);
    s->x = 1;
    return s;
}
int hl_run(void *state, struct hl_result *res, char *err, size_t len)
{
    struct st *s = state;
    struct hl_clock c;
    (void)err; (void)len;
    hl_clock_start(&c);
    for (uint64_t i = 0; i < s->turns; i++)
        for (int k = 0; k < CHAIN; k++)
            s->x = s->x * 6364136223846793005ULL + 1442695040888963407ULL;
    hl_clock_stop(&c, res);
    res->ops = s->turns;
    return 0;
}
int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state) { free(state); }
"""

OP_TOML = """\
[workload.chain]
source = "op.c"
summary = "a chain of dependent multiply-adds a turn"
metric = "ns/op"
higher_is_better = false
params.turns = { default = 20000, min = 1 }
"""

REVISIONS = 15              # after the good one
SLOWER = 11                 # the revision that lengthens the chain by a quarter
COMMENT = 10                # edits a comment only
BROKEN = 7                  # its build fails: the first one a bisect of 15 looks at
# cpu_ns/op: the worker's CPU time, which a busy machine's waits (the suite's other tests)
# leave out; the wall clock's noise there made steps unknown
RUN = ["--runs", "5", "--warmup", "1", "--param", "turns=20000", "--no-perf", "--metric", "cpu",
       "--profiles", "bench", "--build", "sh build.sh", "--confirm", "2"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=dict(os.environ, GIT_AUTHOR_NAME="t",
                                               GIT_AUTHOR_EMAIL="t@example.org",
                                               GIT_COMMITTER_NAME="t",
                                               GIT_COMMITTER_EMAIL="t@example.org"))
    return done.stdout.strip()


def commit(repo: Path, subject: str, chain: int, comment: str = "", broken: bool = False
           ) -> str:
    (repo / "bench" / "op.c").write_text(OP_C.replace("@CHAIN@", str(chain)) + comment)
    (repo / "build.sh").write_text("echo building\n" + ("echo 'no rule' >&2; exit 2\n"
                                                        if broken else "exit 0\n"))
    (repo / "NEWS").write_text(f"{subject}\n")     # every revision changes something
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def make_repo(r: Path, revisions: int = REVISIONS, slower: int = SLOWER,
              comment: int = COMMENT, broken: int = BROKEN) -> tuple[Path, list[str]]:
    """The workload's repository at `r`: the good revision, then `revisions` more, the
    `slower`th making the op slower, from the `comment`th on a comment edited, the
    `broken`th not building; its hashes."""
    (r / "bench").mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    (r / "bench" / "w.toml").write_text(OP_TOML)
    shas = [commit(r, "Add the chain benchmark", 40)]
    for i in range(1, revisions + 1):
        chain = 50 if i >= slower else 40
        shas.append(commit(r, f"Revision {i}" + (": a longer chain" if i == slower else ""),
                           chain, comment=f"/* revision {i} */\n" if i >= comment else "",
                           broken=(i == broken)))
    return r, shas
