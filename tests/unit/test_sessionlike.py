"""What every session answers its callers (hotloop.run.sessionlike.SessionLike) in place of
their asking its class: where its perf data is, what its stop waits on, which CPUs here its
workload holds.  Sessions made as the command line and the console make them; none started.
The series' tests' stand-in (tests/forged_session.py) is held to the same face."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from forged_session import Forged, with_vm_kernel

from hotloop.catalog import Catalog, Host
from hotloop.run import series, start
from hotloop.run.session import Session
from hotloop.run.sessionlike import SessionLike
from hotloop.run.vm import VmSession


@pytest.fixture
def cat(tmp_path: Path, isolated: Path) -> Catalog:
    return with_vm_kernel(tmp_path)


def test_each_session_says_what_its_callers_asked_its_class(cat, tmp_path):
    plan = replace(cat.plan_for("zero_null"), cpu="split")
    split = cat.resolve(plan).cpu.cpus
    here = start.here(cat.resolve(plan), tmp_path / "a.jsonl", start.Choices())
    vm = start.here(cat.resolve(replace(plan, kernel="patched")), tmp_path / "b.jsonl",
                    start.Choices())
    host = Host("lab1", "lab1.example", stop_wait=45.0)
    there = start.there(host, plan, tmp_path / "c.jsonl", start.Choices())
    assert isinstance(here, Session) and isinstance(vm, VmSession)
    # the stop: this machine's (here; a VM killed at once), or the host's to end and restore
    assert (here.stop_elsewhere, vm.stop_elsewhere, there.stop_elsewhere) == (0.0, 0.0, 45.0)
    # the perf data: annotated here, or there
    assert (here.perf_elsewhere, vm.perf_elsewhere, there.perf_elsewhere) == ("", "", "lab1")
    # the CPUs kept free of the console and of perf annotate while it runs: a VM's vCPUs'
    assert split and here.cpus_here == split == vm.cpus_here and there.cpus_here == ()
    # nothing started: no process, no stop reason
    for s in (here, vm, there):
        assert s.pids == [] and s.stopped_because == "" and s.interrupted_by == ""
        s.stop(quick=True)              # before it starts: nothing to end, and no error


def members(protocol: type) -> set[str]:
    """What a Protocol asks of its classes: its attributes and its methods and properties."""
    return set(protocol.__annotations__) | {
        k for k, v in vars(protocol).items()
        if not k.startswith("_") and (callable(v) or isinstance(v, property))}


def test_the_series_tests_stand_in_answers_all_a_session_does(cat, tmp_path):
    asked = members(SessionLike)
    assert {"gate", "result_file", "pids", "cpus_here", "events", "stop", "abandon"} <= asked
    slot = series.schedule(["default"], 1, tmp_path).slots[0]
    forged = Forged(slot, cat.resolve(cat.plan_for("zero_null")))
    assert sorted(m for m in asked if not hasattr(forged, m)) == []
    real = start.here(cat.resolve(cat.plan_for("zero_null")), tmp_path / "a.jsonl",
                      start.Choices())
    assert sorted(m for m in asked if not hasattr(real, m)) == []
