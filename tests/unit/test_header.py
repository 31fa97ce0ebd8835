"""The result record (hotloop.record) as readers see it: typed, checked by its own definitions,
whole for files of the format before, and a newer format refused in one line."""
from __future__ import annotations

import dataclasses
import json

import pytest

from hotloop import catalog, record
from hotloop import events as ev
from hotloop.record import (
    FORMAT,
    Batch,
    CpuInfo,
    Header,
    KernelInfo,
    NewerFormat,
    PlanInfo,
    Remote,
    SessionSummary,
    Stop,
    SysctlState,
    Vm,
    WorkloadInfo,
)
from hotloop.results.reader import decode_line
from hotloop.results.writer import encode_line

FULL = {
    "time": "2026-11-30T08:00:00+0000", "host": "vm", "kernel_release": "6.18", "label": "stock",
    "variant": "a", "workload": {"name": "zero_null", "metric": "bytes/s", "unit": "B/s",
                                 "higher_is_better": True},
    "params": {"block_size": 512}, "cpu": {"name": "split", "cpus": [0, 1]},
    "plan": {"runs": 20, "processes": 5, "perf": False},
    "batch": {"id": "abc", "interleaved": True, "variants": 2},
    "sysctl": {"net.core.busy_poll": {"before": "0", "during": "50"}}}


def test_a_header_of_the_format_before_reads_into_its_fields():
    h = Header.from_json(FULL)          # no "format": the files written before it existed
    assert h.workload == WorkloadInfo("zero_null", metric="bytes/s", unit="B/s")
    assert (h.cpu.name, h.cpu.cpus, h.runs, h.processes, h.perf) == ("split", (0, 1), 20, 5, False)
    assert h.batch == Batch("abc", True, 2)
    assert h.sysctl == {"net.core.busy_poll": SysctlState("0", "50")}
    assert h.remote is None and h.perf_data == "" and h.kernel_release == "6.18"
    assert h.format == 1 and Header().format == FORMAT


def test_a_header_is_its_json_and_back():
    h = Header(host="vm", workload=WorkloadInfo("zero_null", "/x.c", "", "bytes/s", "B/s", True, 1),
               plan=PlanInfo(name="quick", runs=3, params={"block_size": [512, 4096]}),
               cpu=CpuInfo(name="pinned", cpus=(1,), governor="performance"),
               kernel=KernelInfo(sysctl={"vm.x": 1}), cflags=("-O2",),
               batch=Batch("id", True, 2), remote=Remote("lab1", "10.0.0.1", "~/r.jsonl"),
               sysctl={"vm.x": SysctlState("0", None)})
    line = encode_line(ev.Started(h, "r.jsonl"))
    assert json.loads(line)["header"]["format"] == FORMAT
    back = decode_line(line)
    assert isinstance(back, ev.Started) and back.header == h and back.variant == ""


def test_format_3_keeps_the_boot_the_series_session_and_the_vm_and_format_2_reads_without():
    h = Header(boot_id="7f0c", batch=Batch("s1", False, 2, session=3),
               vm=Vm("tcg", 2, "2G", "/boot/vmlinuz", "ab12", "quiet", "7.2", "no usable KVM"))
    back = decode_line(encode_line(ev.Started(h, "r.jsonl")))
    assert isinstance(back, ev.Started) and back.header == h
    old = Header.from_json({**FULL, "format": 2})
    assert (old.format, old.boot_id, old.vm, old.batch) == (2, "", None, Batch("abc", True, 2))
    with pytest.raises(ValueError, match="header: batch: session: 0 is below 1"):
        decode_line(json.dumps({"type": "started", "header": {
            **FULL, "format": 3, "batch": {"id": "s", "session": 0}}}))


@pytest.mark.parametrize("edit, why", [
    (lambda h: h.update(workload="zero_null"), "header: workload: expected an object"),
    (lambda h: h.update(params=[1]), "header: params: expected an object"),
    (lambda h: h["workload"].update(unit=5), "header: workload: unit: expected a string, got 5"),
    (lambda h: h["cpu"].update(cpus=5), "header: cpu: cpus: expected a list, got 5"),
    (lambda h: h["cpu"].update(cpus=[0, "1"]), "header: cpu: cpus: item 1: expected an integer"),
    (lambda h: h["plan"].update(runs=True), "header: plan: runs: expected an integer, got True"),
    (lambda h: h["plan"].update(processes=0), "header: plan: processes: 0 is below 1"),
    (lambda h: h.update(batch="x"), "header: batch: expected an object, got 'x'"),
    (lambda h: h["sysctl"]["net.core.busy_poll"].update(during=50),
     "header: sysctl: net.core.busy_poll: during: expected a string"),
    (lambda h: h.update(format="2"), "header: format: expected an integer"),
    (lambda h: h.update(format=0), "header: format: 0 is below 1"),
    (lambda h: h.update(boot_id=7), "header: boot_id: expected a string, got 7"),
    (lambda h: h.update(vm={"accel": "kvm", "cpus": -1}), "header: vm: cpus: -1 is below 0"),
])
def test_a_header_field_of_the_wrong_type_is_named(edit, why):
    h = json.loads(json.dumps(FULL))
    edit(h)
    with pytest.raises(ValueError) as e:
        decode_line(json.dumps({"type": "started", "header": h}))
    assert why in str(e.value)


def test_a_newer_format_is_refused_naming_both_numbers():
    with pytest.raises(NewerFormat, match=f"result format {FORMAT + 1}, and this hotloop reads up "
                                          f"to format {FORMAT}"):
        decode_line(json.dumps({"type": "started", "header": {**FULL, "format": FORMAT + 1}}))


def test_the_summary_and_its_stop_are_typed_and_format_1_counters_move_out():
    line = {"type": "finished", "summary": {"n": 3, "median": 2.0, "mean": 2.0, "stdev": 0.5,
                                            "cv": 0.25, "min": 1.5, "max": 2.5,
                                            "stop": {"reason": "until_ci", "target_pct": 3,
                                                     "ci_pct": None, "runs": 3},
                                            "counters": {"cycles": 1.0, "instructions": None}}}
    f = decode_line(json.dumps(line))
    assert isinstance(f, ev.Finished)
    assert f.summary == SessionSummary(3, 2.0, 2.0, 0.5, 0.25, 1.5, 2.5, Stop("until_ci", 3.0, None, 3))
    assert f.counters == {"cycles": 1.0, "instructions": None}
    assert decode_line(encode_line(f)) == f
    with pytest.raises(ValueError, match="summary: stop: runs: expected an integer"):
        line["summary"]["stop"]["runs"] = "3"
        decode_line(json.dumps(line))


@pytest.mark.parametrize("record_cls, model", [
    (PlanInfo, catalog.Plan), (CpuInfo, catalog.CpuProfile), (KernelInfo, catalog.KernelProfile)])
def test_the_record_keeps_every_field_of_the_profiles_it_records(record_cls, model):
    # a field the catalogue gains must be recorded (or knowingly left out here)
    assert [f.name for f in dataclasses.fields(record_cls)] == \
        [f.name for f in dataclasses.fields(model)]


def test_every_header_field_compare_holds_equal_is_in_the_record():
    for _, path in record.compared_fields(within_side=True):
        node = record.to_json(Header())
        for key in path:
            assert key in node, path
            node = node[key]


def test_compare_lists_the_header_fields_it_holds_equal_in_its_order():
    # the order of compare's "differs in more than the kernel" line
    assert [label for label, _ in record.compared_fields()] == [
        "cpu", "cpu.cpus", "cpu.sched", "cpu.priority", "cpu.nice", "cpu.governor", "cpu.boost",
        "host", "cpu_model", "arch", "compiler", "cflags", "params", "hotloop", "source_sha256",
        "perf", "perf_freq"]
    assert record.compared_fields(within_side=True)[-2:] == (
        ("kernel", ("kernel_release",)), ("label", ("label",)))


def test_every_header_field_is_compared_or_knowingly_not():
    # a field the header gains must say whether compare holds it equal (record.compared)
    not_compared = {"format", "hotloop_source", "time", "kernel_version", "cmdline", "cpus",
                    "mitigations", "vulnerabilities", "sysctl", "python", "boot_id",
                    "workload", "kernel", "variant", "batch", "perf_data", "remote", "vm"}
    compared = {path[0] for _, path in record.compared_fields(within_side=True)}
    assert not compared & not_compared
    assert {f.name for f in dataclasses.fields(Header)} == compared | not_compared


def test_a_forged_huge_label_reads_as_a_bounded_one(tmp_path):
    # a 30 MB label made compare print 346 MB: every string a file holds is bounded
    from hotloop import results
    from hotloop.analysis.compare import load_and_compare
    from hotloop.render.compare_formats import render
    huge = "x" * 3_000_000
    run = {"type": "run", "index": 0, "value": 1e9, "ops": 1, "bytes": 1, "ns": 1,
           "cycles": 0, "extra": {huge: 1.0}}
    paths = []
    for name in ("a", "b"):
        head = {**FULL, "label": huge, "cmdline": "quiet " * 500, "workload": {
            "name": "zero_null", "metric": "bytes/s", "unit": "B/s"}}
        lines = [{"type": "started", "header": head}, {"type": "warning", "message": huge},
                 *({**run, "index": i} for i in range(6)),
                 {"type": "failed", "message": huge, "run": 6, "variant": huge}]
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        paths.append(path)
    r = results.read(paths[0])
    assert len(r.header.label) == 200 and r.header.label.endswith("…")
    assert r.header.cmdline == "quiet " * 500          # a long command line is whole
    assert len(r.warnings[0]) == 1000 and r.failed is not None and len(r.failed.message) == 1000
    assert all(len(k) <= 200 for k in r.runs[0].extra)
    out = render(load_and_compare(paths), "text")
    assert len(out) < 50_000


def test_a_huge_key_with_a_bad_value_is_quoted_short():
    # the one line that names what is wrong must not carry the forged key whole
    huge = "k" * 100_000
    for line in ({"type": "run", "index": 0, "value": 1.0, "ops": 1, "bytes": 0, "ns": 1,
                  "cycles": 0, "extra": {huge: "fast"}},
                 {"type": "started", "header": {**FULL, "vulnerabilities": {huge: 5}}}):
        with pytest.raises(ValueError) as e:
            decode_line(json.dumps(line))
        assert len(str(e.value)) < 200 and "expected" in str(e.value)
