"""hotloop compare on what real runs wrote: interleaved variants, and compare's memory.

The statistics, formats, sides and faults are tested on result files with known numbers in
tests/unit/test_compare_files.py; here, the real command line runs an interleaved batch (the
pairing of its rounds comes from what the run records), and compare runs as its own process on
20,000 runs a side (its peak memory).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, hotloop

from hotloop import results
from hotloop.analysis import compare
from hotloop.render.compare_formats.shared import PAIRED_NOTE


def test_interleaved_variants_are_compared_round_by_round(tmp_path):
    """A real interleaved batch: its files share a batch id, compare pairs their rounds, and
    says what the variants differ in.  The verdict on known numbers is a unit test
    (test_compare_files); here it is checked only when this run measured spin=1000 below
    spin=0 in every run, a change beyond anything the machine's load did to it."""
    p = hotloop("run", "zero_null", "--param", "count=5000", "--param", "spin=0,1000",
                "--interleave", "--runs", "15", "--no-perf", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    files = [r["result_file"] for r in doc["results"]]
    read = [results.read(Path(f)) for f in files]
    batch = [r.header.batch for r in read]
    assert batch[0] is not None and batch[0].interleaved and batch[0] == batch[1]
    row_ = next(r for r in doc["comparison"]["comparisons"] if r["metric"] == "bytes/s")
    assert row_["method"] == "paired" and row_["noise_source"] is None, row_
    assert (row_["n_baseline"], row_["n_new"]) == (15, 15), row_
    if max(read[1].values) < min(read[0].values):
        assert row_["verdict"] == "slower" and row_["significant"], row_
    # a paired change comes from the rounds: its diff says the same, whatever the medians do
    for r in doc["comparison"]["comparisons"]:
        if r["change_pct"] and r["method"] == "paired":
            assert (r["diff"] > 0) == (r["change_pct"] > 0), r
    text = hotloop("compare", *files).stdout
    assert " ".join(PAIRED_NOTE.split()) in " ".join(text.split())     # wrapped to COLUMNS
    # what the variants differ in is what the batch asked for: said, not warned about
    assert not any("differs" in w["text"] for w in doc["comparison"]["warnings"])
    assert "the variants differ in: params.spin 0 -> 1000" in text
    assert "differs in more than the kernel" not in text
    # five worker processes a variant by default: the paired test's blocks
    assert read[0].header.plan.processes == 5
    # two separate (not interleaved) sessions of the same settings are not paired
    comp = compare.load_and_compare([files[0], files[0]])
    assert comp.pairs[0].method == "exact"


def test_compare_memory_does_not_grow_with_resamples_times_runs(tmp_path):
    """20,000 runs a side: a bootstrap holding resamples x runs took 1.6 GB here; the
    order-statistic methods hold the runs.  benchmarks/compare_memory.py measures 100,000."""
    import numpy as np

    from hotloop import events as ev
    from hotloop.record import Header, SessionSummary, WorkloadInfo
    from hotloop.results import Writer
    rng = np.random.default_rng(3)
    paths = []
    for name, shift in (("a", 0.0), ("b", 0.01)):
        path = tmp_path / f"{name}.jsonl"
        w = Writer(path)
        w.write(ev.Started(Header(host="h", workload=WorkloadInfo(
            "synthetic", metric="ns/op", unit="ns/op", higher_is_better=False))))
        for i, v in enumerate(np.exp(rng.normal(np.log(100) + shift, 0.02, 20000))):
            ns = int(v * 1000)              # the value is what its counters say
            w.write(ev.RunSample(index=i, value=ns / 1000, ops=1000, bytes=0, ns=ns, cycles=0))
        w.write(ev.Finished(SessionSummary()))
        w.close()
        paths.append(str(path))
    probe = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', 'hotloop', "
             f"'compare', {paths[0]!r}, {paths[1]!r}, '--format', 'json'], check=True, "
             "stdout=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) < 300 * 1024, f"{int(p.stdout) / 1024:.0f} MB"
