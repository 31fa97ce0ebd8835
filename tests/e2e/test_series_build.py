"""A workload's source edited while a series runs: the series runs the build it made first,
every session's header says that one source, and the sessions after the edit say the source
changed; sessions of two builds pooled as one side are flagged by compare and show.  The
edit is the workload's own: its setup appends a line to its source file (__FILE__), so the
next session would build other code, with no race against the test."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import hotloop

from hotloop import results

EDITS_ITSELF = r"""
#include "hotloop.h"
#include <stdio.h>
static int state;
void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t len)
{
    (void)p; (void)n; (void)env; (void)err; (void)len;
    FILE *f = fopen(__FILE__, "a");         /* the edit: a line more, other code */
    if (f) { fputs("/* edited */\n", f); fclose(f); }
    return &state;
}
int hl_run(void *s, struct hl_result *res, char *err, size_t len)
{
    (void)s; (void)err; (void)len;
    struct hl_clock c;
    hl_clock_start(&c);
    for (volatile int i = 0; i < 1000; i++) ;
    hl_clock_stop(&c, res);
    res->ops = 1000;
    return 0;
}
int hl_pids(void *s, int *pids, int max) { (void)s; (void)pids; (void)max; return 0; }
void hl_teardown(void *s) { (void)s; }
"""
TOML = """
[workload.editme]
source = "editme.c"
metric = "ns/op"
params.size = { default = 1, min = 1 }
"""
FAST = ["--runs", "3", "--no-perf"]


@pytest.fixture
def editing(tmp_path: Path) -> Path:
    d = tmp_path / "prof"
    d.mkdir()
    # its own content: a build cached by another test (keyed by content) has that test's
    # __FILE__ in it, and would edit that test's copy
    (d / "editme.c").write_text(EDITS_ITSELF + f"/* {d} */\n")
    (d / "w.toml").write_text(TOML)
    return d


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_series_runs_the_build_it_made_first(tmp_path, editing, leftovers):
    first = sha(editing / "editme.c")
    p = hotloop("run", "editme", "--profiles", str(editing), "--param", "size=1,2",
                "--sessions", "2", *FAST)
    assert p.returncode == 0, p.stderr
    assert sha(editing / "editme.c") != first       # edited by every session
    (d,) = list((tmp_path / "results").iterdir())
    files = sorted(d.glob("*/s*.jsonl"))
    assert len(files) == 4
    heads = {f: results.read(f) for f in files}
    assert {r.header.source_sha256 for r in heads.values()} == {first}, p.stderr
    # the sessions after the first say the source changed, in their files and on stderr
    said = [f for f, r in heads.items()
            if any("changed since the series built it" in w for w in r.warnings)]
    assert len(said) == 3, said
    assert "changed since the series built it" in p.stderr
    assert "ran 2 builds" not in p.stdout + p.stderr    # one build: nothing mixed
    assert not leftovers()


def test_a_side_of_two_builds_is_flagged_by_compare_and_show(tmp_path, editing):
    # two runs, one after another: the second builds the source the first's setup edited
    for out in ("a.jsonl", "b.jsonl", "c.jsonl"):
        p = hotloop("run", "editme", "--profiles", str(editing), *FAST, "--out", out)
        assert p.returncode == 0, p.stderr
    shas = [results.read(Path(f)).header.source_sha256 for f in ("a.jsonl", "b.jsonl")]
    assert shas[0] != shas[1]
    c = hotloop("compare", "a.jsonl,b.jsonl", "c.jsonl", "--format", "json")
    assert c.returncode == 0, c.stderr
    warns = [w["text"] for w in json.loads(c.stdout)["warnings"]]
    (flag,) = [w for w in warns if "ran 2 builds of the workload" in w]
    assert "source_sha256" in flag and shas[0][:12] in flag and shas[1][:12] in flag
    assert not any("differ among themselves in source_sha256" in w for w in warns)
    side = tmp_path / "side"
    side.mkdir()
    for f in ("a.jsonl", "b.jsonl"):
        Path(f).rename(side / f)
    s = hotloop("show", str(side))
    assert s.returncode == 0, s.stderr
    assert "ran 2 builds of the workload" in " ".join(s.stdout.split()), s.stdout
    j = hotloop("show", str(side), "--format", "json")
    assert any("ran 2 builds" in w["text"] for w in json.loads(j.stdout)["warnings"])
    # the mail says it in what is pasted: before its reproduce line, in 72 columns
    m = hotloop("show", str(side), "--format", "mail")
    body, _, tail = m.stdout.partition("\nreproduce:")
    assert "ran 2 builds of the workload" in " ".join(body.split()) and tail, m.stdout
    assert max(map(len, m.stdout.splitlines())) <= 72


# Its setup also deletes its own module from the build cache (dladdr names the file)
GONE = EDITS_ITSELF.replace(
    "#include <stdio.h>", "#include <dlfcn.h>\n#include <stdio.h>\n#include <unistd.h>").replace(
    "    return &state;",
    "    Dl_info info;\n"
    "    if (dladdr((void *)hl_setup, &info) && info.dli_fname) unlink(info.dli_fname);\n"
    "    return &state;")


def test_a_series_whose_build_is_gone_and_source_changed_stops_in_one_line(tmp_path, editing,
                                                                          leftovers):
    (editing / "editme.c").write_text(GONE + f"/* {editing} */\n")
    p = hotloop("run", "editme", "--profiles", str(editing), "--sessions", "2", *FAST)
    assert p.returncode == 2, p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert "the series' build" in last and "is gone from the build cache and the source has " \
        "changed since it was built" in last and "cannot run the same code again" in last, last
    assert "Traceback" not in p.stderr
    (d,) = list((tmp_path / "results").iterdir())
    assert [f.name for f in sorted(d.glob("*/*.jsonl"))] == ["s01.jsonl"]    # the one it ran
    assert not leftovers()
