"""A series of sessions end to end (run --kernel A --kernel B --sessions N): real workers, two
kernel profiles without images (they run here), the files, their headers, the order and the
comparison; --format events; Ctrl-C mid-series.  The verdicts themselves are unit tests on
forged series (tests/unit/test_series.py)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, hotloop

from hotloop import results

KERNELS = """
[kernel.k1]
label = "k one"
[kernel.k2]
label = "k two"
"""
FAST = ["--param", "count=20000", "--no-perf"]


@pytest.fixture
def kernels(tmp_path: Path) -> Path:
    d = tmp_path / "profiles"
    d.mkdir()
    (d / "k.toml").write_text(KERNELS)
    return d


def _series_dir(tmp_path: Path) -> Path:
    (d,) = list((tmp_path / "results").iterdir())
    return d


def test_two_kernels_alternate_and_are_compared(tmp_path, kernels, leftovers):
    p = hotloop("run", "zero_null", "--profiles", str(kernels), "--kernel", "k1", "--kernel",
                "k2", "--sessions", "2", "--runs", "3", *FAST, "--format", "json")
    assert p.returncode == 0, p.stderr
    d = _series_dir(tmp_path)
    assert d.name.endswith("-zero_null")
    files = {k: sorted((d / k).glob("*.jsonl")) for k in ("k1", "k2")}
    assert {k: [f.name for f in fs] for k, fs in files.items()} == {
        "k1": ["s01.jsonl", "s02.jsonl"], "k2": ["s01.jsonl", "s02.jsonl"]}
    heads = {(k, f.name): results.read(f).header for k, fs in files.items() for f in fs}
    ids = {h.batch.id for h in heads.values() if h.batch}
    assert len(ids) == 1
    for (k, name), h in heads.items():
        assert h.batch is not None and not h.batch.interleaved and h.batch.variants == 2
        assert h.batch.session == int(name[1:3]) and h.kernel.name == k
    # the order the sessions ran in: A B B A, as each said when it ended and as the json says
    ended = [ln.split(":")[0] for ln in p.stderr.splitlines() if ln.startswith(("k1 s", "k2 s"))]
    assert ended == ["k1 s01", "k2 s01", "k2 s02", "k1 s02"], p.stderr
    doc = json.loads(p.stdout)
    assert doc["series"]["order"] == ended and doc["series"]["failed"] == []
    assert [(x["kernel"], x["session"]) for x in doc["series"]["done"]] == [
        ("k1", 1), ("k2", 1), ("k2", 2), ("k1", 2)]
    assert all(x["runs"] == 3 for x in doc["series"]["done"])
    # the comparison is compare's of the two directories, sessions as replicates
    cmp = doc["comparison"]
    sides = [cmp["baseline"], *cmp["results"]]
    assert [s["name"] for s in sides] == ["k1", "k2"]
    assert [s["sessions"] for s in sides] == [2, 2]
    again = hotloop("compare", str(d / "k1"), str(d / "k2"), "--format", "json")
    assert again.returncode == 0, again.stderr
    row = next(r for r in json.loads(again.stdout)["comparisons"] if r["metric"] == "bytes/s")
    assert row["method"] == next(r for r in cmp["comparisons"]
                                 if r["metric"] == "bytes/s")["method"]
    assert not leftovers()


def test_the_events_of_a_series_say_which_kernel_and_session_they_are(tmp_path, kernels):
    # one kernel, two sessions (the order of two kernels is the test above's)
    p = hotloop("run", "zero_null", "--profiles", str(kernels), "--kernel", "k2",
                "--sessions", "2", "--runs", "3", *FAST, "--format", "events")
    assert p.returncode == 0, p.stderr
    lines = [json.loads(ln) for ln in p.stdout.splitlines()]
    current = None
    seen = []
    for row in lines:
        if row["type"] == "series_session":
            assert current is None
            current = (row["kernel"], row["session"])
            seen.append(current)
        elif row["type"] == "series_session_end":
            assert current == (row["kernel"], row["session"]) and row["status"] == "finished"
            current = None
        elif row["type"] == "started":
            assert current == (row["header"]["kernel"]["name"],
                               row["header"]["batch"]["session"])
        elif row["type"] != "series_end":
            assert current is not None, row      # every session's line is bracketed
    assert seen == [("k2", 1), ("k2", 2)]
    end = lines[-1]
    assert end["type"] == "series_end" and end["kernels"] == ["k2"]
    assert [x["session"] for x in end["done"]] == [1, 2] and end["comparison"] is None
    assert sorted(f.name for f in (_series_dir(tmp_path) / "k2").iterdir()) == [
        "s01.jsonl", "s02.jsonl"]


def test_ctrl_c_mid_series_keeps_the_sessions_done(tmp_path, kernels, leftovers):
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--profiles",
                             str(kernels), "--kernel", "k1", "--kernel", "k2", "--sessions", "3",
                             "--runs", "2000", "--param", "count=500", "--no-perf"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    try:
        second = None
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            found = list((tmp_path / "results").glob("*/k2/s01.jsonl"))
            if found and sum(1 for ln in found[0].read_text().splitlines()
                             if '"type":"run"' in ln) >= 3:
                second = found[0]
                break
            time.sleep(0.1)
        assert second is not None, "the second session never ran"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    d = _series_dir(tmp_path)
    assert f"1 session done, kept in {d.relative_to(tmp_path)}" in err
    done = results.read(d / "k1" / "s01.jsonl")
    assert done.finished is not None and len(done.runs) == 2000
    # the session running ends as a stopped one does, set aside from the kernel's sessions
    assert not second.exists()
    stopped = results.read(second.with_name("s01.jsonl.stopped"))
    assert stopped.failed is not None and stopped.failed.interrupted
    assert stopped.failed.signal == "SIGINT"
    assert sorted(p.name for p in (d / "k2").iterdir()) == ["s01.jsonl.stopped"]
    assert "sessions finished: k1 1, k2 0 (of 3 each)" in out
    assert not leftovers()


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_mid_series_exits_128_and_the_signal_as_the_manual_says(tmp_path, kernels,
                                                                         leftovers, sig, status):
    """SIGTERM (a kill) and SIGHUP (a dropped SSH connection) stop a series as Ctrl-C does,
    and it exits 128 + the signal, which docs/usage.md says with docs/formats.md."""
    usage = " ".join((ROOT / "docs" / "usage.md").read_text().split())
    assert ("stops the series" in usage and "hotloop exits 128 + the signal: 130 for Ctrl-C, "
            "143 for SIGTERM, 129 for SIGHUP") in usage
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--profiles",
                             str(kernels), "--kernel", "k1", "--kernel", "k2", "--sessions", "2",
                             "--runs", "2000", "--param", "count=500", "--no-perf"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 240
        first = None
        while time.monotonic() < deadline and proc.poll() is None:
            found = list((tmp_path / "results").glob("*/k1/s01.jsonl"))
            if found and sum(1 for ln in found[0].read_text().splitlines()
                             if '"type":"run"' in ln) >= 3:
                first = found[0]
                break
            time.sleep(0.1)
        assert first is not None, "the first session never ran"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == status, err
    stopped = results.read(first.with_name("s01.jsonl.stopped"))
    assert stopped.failed is not None and stopped.failed.signal == sig.name
    assert not leftovers()


# A workload whose Nth session (counted in a file across the series' fresh workers) fails.
NTH_C = r"""
#include "hotloop.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
struct st { int fail; };
void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t len)
{
    struct st *s = calloc(1, sizeof(*s));
    const char *path = hl_param_str(p, n, "counter", "");
    int k = 0;
    FILE *f = fopen(path, "r");
    if (f) { if (fscanf(f, "%d", &k) != 1) k = 0; fclose(f); }
    f = fopen(path, "w");
    if (f) { fprintf(f, "%d\n", ++k); fclose(f); }
    s->fail = k == (int)hl_param_int(p, n, "fail_session", 0);
    (void)env; (void)err; (void)len;
    return s;
}
int hl_run(void *state, struct hl_result *res, char *err, size_t len)
{
    struct st *s = state;
    struct hl_clock c;
    if (s->fail) return hl_fail(err, len, "the device went away");
    hl_clock_start(&c);
    usleep(1000);
    hl_clock_stop(&c, res);
    res->ops = 1000;
    return 0;
}
int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state) { free(state); }
"""


def test_a_failed_session_is_named_set_aside_and_the_others_run(tmp_path, kernels, leftovers):
    (kernels / "nth.c").write_text(NTH_C)
    (kernels / "nth.toml").write_text(
        '[workload.nth]\nsource = "nth.c"\nmetric = "ops/s"\n'
        f'params.counter = {{ default = "{tmp_path / "count"}" }}\n'
        'params.fail_session = { default = 2, min = 0 }\n')
    p = hotloop("run", "nth", "--profiles", str(kernels), "--kernel", "k1", "--kernel", "k2",
                "--sessions", "2", "--runs", "5", "--no-perf", "--format", "json")
    assert p.returncode == 1, p.stderr
    assert "k2 s01: failed: " in p.stderr and "the device went away" in p.stderr
    assert "the series' sessions that failed: k2 s01" in p.stderr
    doc = json.loads(p.stdout)
    assert [(x["kernel"], x["session"]) for x in doc["series"]["failed"]] == [("k2", 1)]
    assert [(x["kernel"], x["session"]) for x in doc["series"]["done"]] == [
        ("k1", 1), ("k2", 2), ("k1", 2)]
    d = _series_dir(tmp_path)
    assert sorted(f.name for f in (d / "k2").iterdir()) == ["s01.jsonl.failed", "s02.jsonl"]
    failed = results.read(d / "k2" / "s01.jsonl.failed")
    assert failed.failed is not None and "the device went away" in failed.failed.message
    # compared on the finished sessions: 2 of k1, 1 of k2
    assert [doc["comparison"]["baseline"]["sessions"],
            doc["comparison"]["results"][0]["sessions"]] == [2, 1]
    assert not leftovers()


@pytest.mark.parametrize("how", ["deleted", "a directory", "garbled"])
def test_a_finished_sessions_file_lost_mid_series_is_a_failed_session(tmp_path, kernels,
                                                                      leftovers, how):
    """k1 s01's file deleted, replaced by a directory or garbled while the later sessions
    run: that session is named as failed and set aside, and the rest are reported and
    compared."""
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--profiles",
                             str(kernels), "--kernel", "k1", "--kernel", "k2", "--sessions", "2",
                             "--runs", "400", "--param", "count=2000", "--no-perf",
                             "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    try:
        first = None
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            found = list((tmp_path / "results").glob("*/k1/s01.jsonl"))
            if found and '"type":"finished"' in found[0].read_text():
                first = found[0]
                break
            time.sleep(0.05)
        assert first is not None, "the first session never finished"
        first.unlink()
        if how == "a directory":
            first.mkdir()
        elif how == "garbled":
            first.write_text("not a result line\n")
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert "the series' sessions that failed: k1 s01" in err
    assert second_session_ran(err)
    doc = json.loads(out)
    assert [(x["kernel"], x["session"]) for x in doc["series"]["failed"]] == [("k1", 1)]
    assert [(x["kernel"], x["session"]) for x in doc["series"]["done"]] == [
        ("k2", 1), ("k2", 2), ("k1", 2)]
    d = _series_dir(tmp_path)
    left = ["s02.jsonl"] if how == "deleted" else ["s01.jsonl.failed", "s02.jsonl"]
    assert sorted(f.name for f in (d / "k1").iterdir()) == left
    # compared on what remains: 1 session of k1, 2 of k2
    cmp = doc["comparison"]
    assert [cmp["baseline"]["sessions"], cmp["results"][0]["sessions"]] == [1, 2]
    assert not leftovers()


def second_session_ran(err: str) -> bool:
    return any(ln.startswith("k2 s01: ") and "median" in ln for ln in err.splitlines())


def test_two_param_values_alternate_in_their_directories_and_are_compared_paired(tmp_path,
                                                                                 leftovers):
    # the zero-to-null dd test at block sizes 512 and 4096, five tiny sessions of each: as
    # many as the paired test needs (series_pairs.MIN_PAIRS)
    p = hotloop("run", "zero_null", "--param", "block_size=512,4096", "--param", "count=2000",
                "--no-perf", "--sessions", "5", "--runs", "3", "--format", "json")
    assert p.returncode == 0, p.stderr
    d = _series_dir(tmp_path)
    assert d.name.endswith("-zero_null")
    names = ("block_size=512", "block_size=4096")
    assert sorted(x.name for x in d.iterdir()) == sorted(names)
    for name, size in zip(names, (512, 4096)):
        files = sorted((d / name).iterdir())
        assert [f.name for f in files] == [f"s{i:02d}.jsonl" for i in range(1, 6)]
        for i, f in enumerate(files, 1):
            h = results.read(f).header
            assert h.variant == name and h.params["block_size"] == size
            assert h.batch is not None and h.batch.session == i and h.batch.variants == 2
            # the series' design, for compare of these directories to say what it said
            assert (h.batch.sides, h.batch.differs, h.batch.sessions) == (
                names, ("params.block_size",), 5)
    a, b = (f"{n} s{{:02d}}" for n in names)
    abba = [a.format(1), b.format(1), b.format(2), a.format(2), a.format(3), b.format(3),
            b.format(4), a.format(4), a.format(5), b.format(5)]
    ended = [ln.split(":")[0] for ln in p.stderr.splitlines() if ln.startswith("block_size=")]
    assert ended == abba, p.stderr
    doc = json.loads(p.stdout)
    assert doc["series"]["order"] == abba and doc["series"]["failed"] == []
    assert doc["series"]["variants"] == list(names) == doc["series"]["folders"]
    assert doc["series"]["kernels"] == ["default"]
    assert doc["series"]["differs"] == ["params.block_size"]
    # the report: the two directories compared, session i of each as a pair
    cmp = doc["comparison"]
    assert [s["name"] for s in [cmp["baseline"], *cmp["results"]]] == list(names)
    row = next(r for r in cmp["comparisons"] if r["metric"] == "bytes/s")
    assert row["method"] == "pairs"
    # the block size is what the series compares: said, not warned of
    assert not any("more than the kernel" in w["text"] for w in cmp["warnings"]), cmp["warnings"]
    assert [d["field"] for d in cmp["metadata_differences"]] == ["params.block_size"]
    again = hotloop("compare", str(d / names[0]), str(d / names[1]), "--format", "json")
    assert again.returncode == 0, again.stderr
    assert next(r for r in json.loads(again.stdout)["comparisons"]
                if r["metric"] == "bytes/s")["method"] == "pairs"
    assert not any("more than the kernel" in w for w in json.loads(again.stdout)["warnings"])
    # worded as the series worded it, from the headers alone
    text = hotloop("compare", str(d / names[0]), str(d / names[1]))
    assert "the variants differ in: params.block_size 512 -> 4096" in text.stdout, text.stdout
    assert "more than the kernel" not in text.stdout
    assert not leftovers()
