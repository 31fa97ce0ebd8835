"""The worker's CPU time, through the real command line and a real worker sharing its CPU with
a busy loop: every run carries the worker's CPU seconds, the run says how much of a CPU the
worker had, and --metric cpu judges the comparison on CPU time per op."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import hotloop, profile_dir

from hotloop import results

HOG = "import os; os.sched_setaffinity(0, {0}); print('spinning', flush=True)\nwhile True: pass"


def test_a_worker_sharing_its_cpu_says_so_and_cpu_time_can_be_judged(tmp_path, leftovers):
    d = profile_dir(tmp_path, "[cpu.cpu0]\ncpus = [0]\n")
    # the busy loop takes its half of CPU 0 (the fair scheduler's share), however busy the
    # machine is otherwise: the worker pinned there has at most about half a CPU
    hog = subprocess.Popen([sys.executable, "-c", HOG], stdout=subprocess.PIPE, text=True)
    try:
        # its start (an interpreter's, longer on a busy machine) would otherwise outlast the
        # few milliseconds of runs, which then had their CPU to themselves
        assert hog.stdout is not None and hog.stdout.readline() == "spinning\n"
        # runs of some 50 ms: over a few ms' runs the scheduler's slices (3-4 ms) may give
        # the worker whole runs to itself, and its share there is any number
        p = hotloop("run", "zero_null", "--profiles", str(d), "--cpu", "cpu0", "--aa",
                    "--interleave", "--runs", "6", "--param", "count=200000", "--no-perf",
                    "--metric", "cpu", "--format", "json")
    finally:
        hog.kill()
        hog.wait()
    assert p.returncode == 0, p.stderr
    said = [ln for ln in p.stderr.splitlines() if "of a CPU over its runs" in ln]
    assert said and "the worker had" in said[0] and "--metric cpu_ns/op" in said[0], p.stderr
    share = int(said[0].split("the worker had ")[1].split("%")[0])
    assert 0 < share < 80
    doc = json.loads(p.stdout)
    assert doc["comparison"]["metric"] == "cpu_ns/op"
    assert doc["comparison"]["comparisons"][0]["metric"] == "cpu_ns/op"
    # each side's file records its CPU time; the share is said in a file whose worker had
    # under 80% over its runs (the scheduler may give one side of the pair more: not both)
    files = [results.read(f) for f in (tmp_path / "results").glob("*.jsonl")]
    assert len(files) == 2
    for r in files:
        assert all(run.extra["worker_cpu_s"] > 0 for run in r.runs), r.path
    assert any("of a CPU over its runs" in w for r in files for w in r.warnings)
    assert not leftovers()
