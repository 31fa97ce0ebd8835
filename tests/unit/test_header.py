"""The result header as readers see it: typed, and whole for files that predate a field."""
from __future__ import annotations

from hotloop.results.header import Batch, Header, WorkloadInfo


def test_a_full_header_reads_into_its_fields():
    h = Header.of({
        "time": "2026-11-30T08:00:00+0000", "host": "vm", "kernel_release": "6.18", "label": "stock",
        "variant": "a", "workload": {"name": "zero_null", "metric": "bytes/s", "unit": "B/s",
                                     "higher_is_better": True},
        "params": {"block_size": 512}, "cpu": {"name": "split", "cpus": [0, 1]},
        "plan": {"runs": 20, "processes": 5, "perf": False},
        "batch": {"id": "abc", "interleaved": True, "variants": 2}, "sysctl": {}})
    assert h.workload == WorkloadInfo("zero_null", "bytes/s", "B/s", True)
    assert (h.cpu_name, h.cpus, h.runs, h.processes, h.perf) == ("split", (0, 1), 20, 5, False)
    assert h.batch == Batch("abc", True, 2) and h.fields["sysctl"] == {}


def test_missing_or_odd_fields_read_as_their_defaults():
    h = Header.of({"plan": {"runs": True, "processes": 0}, "batch": "x", "cpu": {"cpus": [0, "1"]}})
    assert h.workload == WorkloadInfo() and h.kernel_release == "?" and h.params == {}
    assert h.runs is None and h.processes == 1 and h.batch is None and h.cpus == (0,)
