"""A user workload that misbehaves on demand, and helpers to drive hotloop with it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import ROOT

# A user workload that misbehaves on demand: `fault` picks how, `at` which run.
FAULTY_C = r"""
#include "hotloop.h"
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
struct st { int runs; int at; const char *fault; struct hl_env env; };
void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t len)
{
    struct st *s = calloc(1, sizeof(*s));
    s->env = *env;
    s->at = (int)hl_param_int(p, n, "at", 3);
    s->fault = hl_param_str(p, n, "fault", "none");
    if (!strcmp(s->fault, "badparam")) {
        hl_bad_param(err, len, "at", "cannot work with fault=badparam");
        free(s);
        return NULL;
    }
    if (!strcmp(s->fault, "setup")) {
        hl_fail(err, len, "no such device");
        free(s);
        return NULL;
    }
    /* helpers forked without hl_child_init: nothing makes them die with the worker,
       and they hold its pipes; alarm() ends them in the end should hotloop not */
    if (!strncmp(s->fault, "orphans", 7))
        for (int i = 0; i < 50; i++)
            if (fork() == 0) { alarm(120); for (;;) pause(); }
    return s;
}
int hl_run(void *state, struct hl_result *res, char *err, size_t len)
{
    struct st *s = state;
    struct hl_clock c;
    if (++s->runs == s->at) {
        if (!strcmp(s->fault, "segv") || !strcmp(s->fault, "orphans-segv"))
            *(volatile int *)0 = 1;
        if (!strcmp(s->fault, "hang")) for (;;) pause();
        if (!strcmp(s->fault, "error")) return hl_fail(err, len, "the device went away");
        if (!strcmp(s->fault, "bigline")) {     /* 2 MiB, no newline: the worker's stderr */
            for (int i = 0; i < 2 << 20; i++)
                putchar('x');
            fflush(stdout);
        }
    }
    if (!strcmp(s->fault, "child")) {          /* a helper process that must not survive */
        if (fork() == 0) { hl_child_init(&s->env, 1); for (;;) pause(); }
    }
    if (!strcmp(s->fault, "pin")) {            /* where does process 1 run? */
        int fds[2], cpu = -1;
        if (pipe(fds) < 0) return hl_fail_errno(err, len, "pipe");
        pid_t pid = fork();
        if (pid == 0) { hl_child_init(&s->env, 1); cpu = sched_getcpu();
                        if (write(fds[1], &cpu, sizeof(cpu))) {} _exit(0); }
        if (read(fds[0], &cpu, sizeof(cpu)) != sizeof(cpu)) cpu = -1;
        close(fds[0]); close(fds[1]); waitpid(pid, NULL, 0);
        hl_add_extra(res, "child_cpu", cpu);
    }
    hl_add_extra(res, "cpu", sched_getcpu());
    hl_clock_start(&c);
    usleep(20000);
    hl_clock_stop(&c, res);
    res->ops = strcmp(s->fault, "noops") ? 1000 : 0;
    return 0;
}
int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state)
{
    struct st *s = state;
    if (!strcmp(s->fault, "slow-teardown"))
        sleep(5);
    free(s);
}
"""

FAULTY_TOML = """
[workload.faulty]
source = "faulty.c"
metric = "ops/s"
params.fault = { default = "none", choices = ["none", "segv", "hang", "error", "setup", "badparam", "child", "pin", "noops", "orphans", "orphans-segv", "bigline", "slow-teardown"] }
params.at = { default = 3, min = 1 }
"""


def lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines()]


def start(args: list[str]) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "hotloop", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def wait_for_runs(path: Path, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count('"warmup":false') >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {n} runs after {timeout}s")


# Bounds and bad input: a workload of this C whose TOML each test writes.
BIG = "100_000_000_000_000_000_000_000_000"      # 10^26: TOML parses it, C cannot take it


def profiles(tmp_path: Path, toml: str) -> Path:
    """A --profiles directory: the faulty C as faulty.c and `toml` as w.toml."""
    d = tmp_path / "prof"
    d.mkdir(exist_ok=True)
    (d / "faulty.c").write_text(FAULTY_C)
    (d / "w.toml").write_text(textwrap.dedent(toml))
    return d


UNBOUNDED = """
[workload.w]
source = "faulty.c"
params.n = { default = 1, help = "no min, no max: only int64 bounds it" }
"""


def one_line_exit_2(p) -> str:
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "Traceback" not in p.stderr
    return p.stderr
