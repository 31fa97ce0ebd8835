"""CPU and kernel profiles end to end: consent, restore on every path, pinning, saving."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from conftest import hotloop
from faulty import FAULTY_C, FAULTY_TOML
from faulty import start as _start
from faulty import wait_for_runs as _wait_for_runs

from hotloop import results
from hotloop.host.journal import journal_path
from hotloop.host.settings import read_sysctl, sysctl_path
from hotloop.paths import state_dir
from hotloop.record import SysctlState

SYSCTL = "net.core.busy_poll"


@pytest.fixture
def busy_poll():
    """The harmless sysctl the tests change; always put back, whatever happens."""
    original = read_sysctl(SYSCTL)
    assert original != "77", "a previous test left busy_poll changed"
    yield original
    sysctl_path(SYSCTL).write_text(original)


@pytest.fixture
def prof(tmp_path: Path) -> Path:
    d = tmp_path / "prof"
    d.mkdir()
    (d / "faulty.c").write_text(FAULTY_C)
    (d / "k.toml").write_text(FAULTY_TOML + f"""
[kernel.poll]
label = "stock + busy_poll 77"
sysctl = {{ "{SYSCTL}" = 77 }}

[kernel.bogus]
sysctl = {{ "net.core.no_such_knob" = 1 }}

[kernel.other-release]
expect = {{ release = "2.6.*" }}

[cpu.gov]
cpus = [0]
governor = "performance"

[cpu.big]
cpus = [0, 999]

[cpu.big-strict]
cpus = [0, 999]
strict = true

[cpu.gov-strict]
cpus = [0]
governor = "performance"
strict = true
""")
    # a sysctl outside the benchmarking set: a profile of the user's own config directory
    mine = Path(os.environ["XDG_CONFIG_HOME"]) / "hotloop"
    mine.mkdir(parents=True, exist_ok=True)
    (mine / "readonly.toml").write_text('[kernel.readonly]\nsysctl = { "kernel.osrelease" = "1.0" }\n')
    return d


def test_system_changes_need_consent_and_change_nothing_without_it(prof, busy_poll):
    p = hotloop("run", "faulty", "--profiles", str(prof), "--kernel", "poll")
    assert p.returncode == 2
    # each change with the profile file that asks for it
    assert f"would change: {SYSCTL} {busy_poll} -> 77 (from {prof / 'k.toml'}); pass " \
           "--apply-system" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert read_sysctl(SYSCTL) == busy_poll
    assert not Path("results").exists()


def test_applied_during_the_run_recorded_and_restored_after(prof, busy_poll, tmp_path):
    out = tmp_path / "r.jsonl"
    p = hotloop("run", "faulty", "--profiles", str(prof), "--kernel", "poll", "--runs", "3",
                "--apply-system", "--out", str(out), "--no-perf")
    assert p.returncode == 0, p.stderr
    assert read_sysctl(SYSCTL) == busy_poll
    res = results.read(out)
    assert res.header.sysctl == {SYSCTL: SysctlState(busy_poll, "77")}
    assert res.header.label == "stock + busy_poll 77"
    assert any("restored" in w for w in res.warnings)
    assert not any("changed during the run" in w for w in res.warnings)
    assert json.loads(out.read_text().splitlines()[-1])["type"] == "finished"
    assert not journal_path().exists()


def test_restored_after_a_worker_crash(prof, busy_poll):
    p = hotloop("run", "faulty", "--profiles", str(prof), "--kernel", "poll", "--apply-system",
                "--param", "fault=segv", "--no-perf")
    assert p.returncode == 1 and "SIGSEGV" in p.stderr
    assert read_sysctl(SYSCTL) == busy_poll


def test_restored_on_ctrl_c(prof, busy_poll, leftovers):
    out = Path("c.jsonl")
    proc = _start(["run", "faulty", "--profiles", str(prof), "--kernel", "poll",
                   "--apply-system", "--runs", "1000", "--out", str(out), "--no-perf"])
    _wait_for_runs(out, 2)
    assert read_sysctl(SYSCTL) == "77"
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert read_sysctl(SYSCTL) == busy_poll
    assert leftovers() == []


def test_after_sigkill_the_next_command_restores_and_says_so(prof, busy_poll, leftovers):
    out = Path("k.jsonl")
    proc = _start(["run", "faulty", "--profiles", str(prof), "--kernel", "poll",
                   "--apply-system", "--runs", "1000", "--out", str(out), "--no-perf"])
    _wait_for_runs(out, 2)
    proc.kill()
    proc.wait()
    assert leftovers(grace=5) == []
    assert read_sysctl(SYSCTL) == "77"          # nobody could restore it yet
    assert journal_path().exists()
    p = hotloop("list", "plans")
    assert p.returncode == 0
    assert f"restored {SYSCTL} to {busy_poll}" in p.stderr
    assert read_sysctl(SYSCTL) == busy_poll
    assert not journal_path().exists()


def test_hotloop_restore_by_hand(prof, busy_poll):
    proc = _start(["run", "faulty", "--profiles", str(prof), "--kernel", "poll",
                   "--apply-system", "--runs", "1000", "--out", "h.jsonl", "--no-perf"])
    _wait_for_runs(Path("h.jsonl"), 1)
    proc.kill()
    proc.wait()
    p = hotloop("restore")
    assert p.returncode == 0 and f"restored {SYSCTL}" in p.stdout
    assert read_sysctl(SYSCTL) == busy_poll
    assert hotloop("restore").stdout.strip() == "nothing to restore"


@pytest.mark.parametrize("value, says", [
    (r'"11\n22"', r"holds the control character '\n'"),
    (r'"11\t22"', r"holds the control character '\t'"),
    (r'"1\u00002"', r"holds the control character '\x00'"),
    ('""', "is empty"),
    ('"011"', "the kernel reads a number with a leading 0 as octal (011 is 9)"),
    ('"4096 087380 6291456"', "the kernel reads a number with a leading 0 as octal;"),
], ids=["newline", "tab", "nul", "empty", "octal", "octal-field"])
def test_a_sysctl_value_not_written_as_it_reads_is_refused_at_load(tmp_path, busy_poll, value,
                                                                   says, cli):
    d = tmp_path / "odd"
    d.mkdir()
    (d / "k.toml").write_text(f'[kernel.odd]\nlabel = "odd"\nsysctl = {{ "{SYSCTL}" = {value} }}\n')
    listed = cli("list", "kernel", "--profiles", str(d))   # left out, with a warning
    assert listed.returncode == 0 and "odd" not in listed.stdout
    assert listed.stderr.startswith(f"hotloop: warning: {d / 'k.toml'}:3: [kernel.odd] sysctl: ")
    assert says in listed.stderr and listed.stderr.strip().endswith("(file skipped)")
    for args in (["run", "zero_null", "--kernel", "odd", "--apply-system"],):   # needed: refused
        p = hotloop(*args, "--profiles", str(d))
        assert p.returncode == 2, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in p.stderr
        assert lines[0].startswith(f"hotloop: {d / 'k.toml'}:3: [kernel.odd] sysctl: {SYSCTL}: value ")
        assert says in lines[0]
    assert read_sysctl(SYSCTL) == busy_poll
    assert not journal_path().exists()


def test_a_run_does_not_ride_on_a_setting_another_run_holds(prof, busy_poll, leftovers):
    holder = _start(["run", "faulty", "--profiles", str(prof), "--kernel", "poll",
                     "--apply-system", "--runs", "1000", "--out", "a.jsonl", "--no-perf"])
    try:
        _wait_for_runs(Path("a.jsonl"), 2)
        assert read_sysctl(SYSCTL) == "77"
        refusal = (f"hotloop: {SYSCTL} = 77 is held by a running hotloop (pid {holder.pid}), "
                   f"which puts it back to {busy_poll} when it ends: this run depends on it; "
                   f"start it once that run is over")
        # Without consent it needs none (77 is in place); with it, the same answer.
        for consent in ([], ["--apply-system"]):
            p = hotloop("run", "faulty", "--profiles", str(prof), "--kernel", "poll", "--runs",
                        "2", "--out", "b.jsonl", "--no-perf", *consent)
            assert p.returncode == 2, p.stderr
            assert p.stderr.splitlines().count(refusal) == 1 and "Traceback" not in p.stderr
            assert not Path("b.jsonl").exists()
        # A run that does not depend on it goes ahead, and leaves it alone.
        p = hotloop("run", "faulty", "--profiles", str(prof), "--runs", "2", "--out", "c.jsonl",
                    "--no-perf")
        assert p.returncode == 0, p.stderr
        assert read_sysctl(SYSCTL) == "77"
    finally:
        holder.send_signal(signal.SIGINT)
        holder.communicate(timeout=30)
    assert holder.returncode == 130
    assert read_sysctl(SYSCTL) == busy_poll
    assert leftovers() == []


def test_a_setting_changed_under_a_run_is_a_warning_in_its_file(prof, busy_poll):
    out = Path("d.jsonl")
    proc = _start(["run", "faulty", "--profiles", str(prof), "--kernel", "poll",
                   "--apply-system", "--runs", "100", "--out", str(out), "--no-perf"])
    _wait_for_runs(out, 2)
    sysctl_path(SYSCTL).write_text("78")     # another program, mid-run
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    res = results.read(out)
    assert res.header.sysctl == {SYSCTL: SysctlState(busy_poll, "77")}
    changed = (f"sysctl {SYSCTL} changed during the run: 77 at its start, 78 at its end; "
               f"the header's \"during\" does not hold for every run")
    assert res.warnings.count(changed) == 1
    # Read before restoring: after it, every run would seem to have changed it.
    assert res.warnings.index(changed) < res.warnings.index(f"restored {SYSCTL} to {busy_poll}")
    assert read_sysctl(SYSCTL) == busy_poll


def test_a_state_dir_others_may_write_refuses_system_changes(prof, busy_poll):
    state_dir().mkdir(parents=True)
    state_dir().chmod(0o777)
    p = hotloop("run", "faulty", "--profiles", str(prof), "--kernel", "poll", "--apply-system",
                "--runs", "2", "--no-perf")
    assert p.returncode == 2
    assert p.stderr.strip() == (f"hotloop: refusing the state directory {state_dir()}: "
                                f"others may write to it (mode 0777); no setting is changed or "
                                f"restored from it until `chmod go-w {state_dir()}`")
    assert read_sysctl(SYSCTL) == busy_poll
    assert not list(Path().rglob("*.jsonl"))


@pytest.mark.parametrize("args, expected", [
    (["--kernel", "bogus", "--apply-system"], "net.core.no_such_knob"),
    (["--kernel", "readonly", "--apply-system"], "kernel.osrelease"),
    (["--kernel", "other-release"], "[kernel.other-release] expect"),
    (["--cpu", "gov-strict"], "cpufreq"),
    (["--cpu", "big-strict"], "k.toml:26: [cpu.big-strict] cpus: CPU 999 is beyond this machine"),
])
def test_profiles_that_cannot_run_here_exit_2_and_change_nothing(prof, busy_poll, args,
                                                                  expected):
    p = hotloop("run", "faulty", "--profiles", str(prof), *args)
    assert p.returncode == 2, p.stderr
    assert expected in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert not journal_path().exists()


def test_a_cpu_this_machine_lacks_is_skipped_with_a_warning_when_not_strict(prof, tmp_path, cli):
    assert cli("list", "cpu", "--profiles", str(prof)).returncode == 0
    out = tmp_path / "b.jsonl"
    p = hotloop("run", "faulty", "--profiles", str(prof), "--cpu", "big", "--runs", "2",
                "--param", "fault=pin", "--out", str(out), "--no-perf")
    assert p.returncode == 0, p.stderr
    assert "CPU 999 is beyond this machine (CPUs" in p.stderr and "skipped" in p.stderr
    res = results.read(out)
    assert res.header.cpu.cpus == (0,)        # what really ran is recorded
    assert {r.extra["child_cpu"] for r in res.runs} == {0}


def test_a_missing_feature_is_a_warning_when_not_strict(prof, tmp_path):
    out = tmp_path / "g.jsonl"
    p = hotloop("run", "faulty", "--profiles", str(prof), "--cpu", "gov", "--runs", "2",
                "--out", str(out), "--no-perf")
    assert p.returncode == 0, p.stderr
    assert "governor 'performance' skipped" in p.stderr
    assert any("skipped" in w for w in results.read(out).warnings)


@pytest.mark.parametrize("cpu, worker_cpu, child_cpu", [("same-core", 0, 0), ("split", 0, 1)])
def test_pinning_puts_the_processes_where_the_profile_says(prof, cpu, worker_cpu, child_cpu,
                                                          tmp_path):
    # The worker is process 0; the workload's forked child (hl_child_init) is process 1.
    out = tmp_path / "p.jsonl"
    p = hotloop("run", "faulty", "--profiles", str(prof), "--cpu", cpu, "--runs", "4",
                "--param", "fault=pin", "--out", str(out), "--no-perf")
    assert p.returncode == 0, p.stderr
    res = results.read(out)
    assert list(res.header.cpu.cpus) == sorted({worker_cpu, child_cpu})
    assert {r.extra["cpu"] for r in res.runs} == {worker_cpu}
    assert {r.extra["child_cpu"] for r in res.runs} == {child_cpu}


def test_fifo_profile_runs_with_sched_fifo(tmp_path):
    out = tmp_path / "f.jsonl"
    p = hotloop("run", "zero_null", "--cpu", "fifo", "--runs", "2", "--param", "count=2000",
                "--out", str(out), "--no-perf")
    assert p.returncode == 0, p.stderr
    assert results.read(out).header.cpu.sched == "fifo"


def test_save_command_writes_a_plan_that_runs(tmp_path, cli):
    p = hotloop("save", "tiny", "--workload", "zero_null", "--cpu", "same-core", "--runs", "2",
                "--param", "count=1000", "--no-perf")
    assert p.returncode == 0, p.stderr
    listed = cli("list", "plans").stdout
    assert "tiny" in listed
    run = hotloop("run", "tiny", "--format", "json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert len(doc["runs"]) == 2 and doc["params"]["count"] == 1000
    again = hotloop("save", "tiny", "--workload", "zero_null")
    assert again.returncode == 2 and "exists" in again.stderr
    bad = hotloop("save", "t2", "--workload", "zero_null", "--param", "count=0")
    assert bad.returncode == 2 and "below the minimum" in bad.stderr
    # a plan that would not load back is refused, and the catalogue stays loadable
    bad = hotloop("save", "t3", "--workload", "zero_null", "--runs", "0")
    assert bad.returncode == 2 and "plan t3:5: [plan.t3] runs: 0 is below" in bad.stderr
    assert cli("list", "plans").returncode == 0


def test_doctor_lists_each_capability():
    p = hotloop("doctor")
    assert p.returncode == 0
    for name in ("compiler", "cpus", "cpufreq", "smt", "sched_setscheduler", "tsc"):
        assert name in p.stdout


def test_every_bundled_plan_runs_here_as_bundled(tmp_path):
    # As bundled, but two recorded runs each and no perf (its start, tested on its own, is
    # most of a short run) to keep the suite short; batch plans (a list of values) run every
    # variant and end with their comparison.
    from hotloop import catalog
    cat = catalog.load()
    assert {"quick", "seqpacket-100", "tcp-rr-1000-flows", "page-pool",
            "dd-zero-null"} <= set(cat.plans)
    for name, plan in cat.plans.items():
        p = hotloop("run", name, "--runs", "2", "--warmup", "0", "--no-perf", "--format",
                    "json")
        assert p.returncode == 0, (name, p.stderr)
        doc = json.loads(p.stdout)
        docs = doc.get("results", [doc])
        assert len(docs) == len(cat.variants(plan))
        for d in docs:
            assert d["workload"] == plan.workload and len(d["runs"]) == 2
            assert d["summary"]["median"] > 0


def test_a_plan_with_a_list_of_values_is_a_batch_and_refuses_single_resolution():
    from hotloop import catalog
    from hotloop.errors import HotloopError
    cat = catalog.load()
    labels = [label for label, _ in cat.variants(cat.plans["page-pool"])]
    assert labels == ["mode=fast_path", "mode=ptr_ring", "mode=slow"]
    with pytest.raises(HotloopError, match="the plan is a batch"):
        cat.resolve(cat.plans["page-pool"])
