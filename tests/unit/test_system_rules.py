"""Reading settings, planning changes and their consent lines, on this machine's /proc and on fake trees."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import POLL, POLL_FILE, needs_root_sysctl

from hotloop.host.changes import Change, describe_changes, plan_changes
from hotloop.host.cpus import (
    format_cpu_list,
    online_cpus,
    parse_cpu_list,
    present_cpus,
    validate_cpus,
)
from hotloop.host.facts import (
    check_expect,
    mitigations_state,
    release_matches,
)
from hotloop.host.procs import validate_priority
from hotloop.host.settings import (
    boost_control,
    has_cpufreq,
    read_sysctl,
    sysctl_writable,
)
from hotloop.host.sysfs import SystemSettingError
from hotloop.paths import state_dir


def cur(name: str) -> str:
    return read_sysctl(name)


def other_value(name: str) -> str:
    return "50" if cur(name) != "50" else "51"


# --------------------------------------------------------------------------- planning


# --------------------------------------------------------------------------- scheduling helpers


def test_read_sysctl_and_errors():
    assert cur(POLL) == POLL_FILE.read_text().strip()
    assert read_sysctl("net/core/busy_poll") == cur(POLL)
    with pytest.raises(SystemSettingError, match=r"unknown sysctl 'net.core.no_such_thing'"):
        read_sysctl("net.core.no_such_thing")
    for bad in ("", "../etc/passwd", "net..core", "/etc/passwd"):
        with pytest.raises(SystemSettingError):
            read_sysctl(bad)
    with pytest.raises(SystemSettingError, match="directory"):
        read_sysctl("net.core")


def test_errors_are_one_line():
    try:
        read_sysctl("net.core.no_such_thing")
    except SystemSettingError as e:
        assert "\n" not in str(e)


def test_sysctl_writable():
    w = sysctl_writable("kernel.osrelease")  # 0444 even for root
    assert not w and "kernel.osrelease" in w.reason
    assert not sysctl_writable("net.core.no_such_thing")
    if os.geteuid() == 0:
        assert sysctl_writable(POLL)


@needs_root_sysctl
def test_plan_sysctl_change_and_consent_line():
    value = other_value(POLL)
    changes, warnings = plan_changes({POLL: int(value)}, None, None, [])
    assert warnings == []
    assert changes == [Change("sysctl", POLL, value, cur(POLL), str(POLL_FILE))]
    line = describe_changes(changes)
    assert line == f"would change: {POLL} {cur(POLL)} -> {value}; pass --apply-system"
    assert cur(POLL) != value  # planning touched nothing


def test_plan_value_already_in_place_is_no_change():
    changes, warnings = plan_changes({POLL: cur(POLL)}, None, None, [])
    assert changes == [] and warnings == []
    assert describe_changes([]) == "no system changes needed"


def test_plan_bad_sysctls():
    with pytest.raises(SystemSettingError, match="unknown sysctl 'net.core.nope'"):
        plan_changes({"net.core.nope": 1}, None, None, [])
    with pytest.raises(SystemSettingError, match="kernel.osrelease"):
        plan_changes({"kernel.osrelease": "9.9"}, None, None, [])
    with pytest.raises(SystemSettingError, match="must be an integer"):
        plan_changes({POLL: {"a": 1}}, None, None, [])


@pytest.mark.skipif(has_cpufreq(), reason="machine has cpufreq")
def test_governor_without_cpufreq_is_a_warning_or_strict_error():
    changes, warnings = plan_changes({}, "performance", None, [0])
    assert changes == []
    assert warnings == ["governor 'performance' skipped: no cpufreq on this machine"]
    with pytest.raises(SystemSettingError, match="governor 'performance': no cpufreq on this machine"):
        plan_changes({}, "performance", None, [0], strict=True)


@pytest.mark.skipif(boost_control() is not None, reason="machine has a boost switch")
def test_boost_without_control_is_a_warning_or_strict_error():
    changes, warnings = plan_changes({}, None, False, [])
    assert changes == [] and len(warnings) == 1 and warnings[0].startswith("boost 'off' skipped")
    with pytest.raises(SystemSettingError):
        plan_changes({}, None, False, [], strict=True)


def test_governor_not_offered(fake_cpufreq):
    changes, warnings = plan_changes({}, "ondemand", None, [2])
    assert changes == [] and "not offered" in warnings[0]
    with pytest.raises(SystemSettingError, match="not offered"):
        plan_changes({}, "ondemand", None, [2], strict=True)


def test_consent_shows_values_exactly_as_they_will_be_written():
    def line(value: str, original: str = "0") -> str:
        return Change("sysctl", POLL, value, original).describe()
    assert line("50") == f"{POLL} 0 -> 50"
    assert line("4096 131072 6291456", "4096\t87380\t6291456") == \
        f"{POLL} 4096 87380 6291456 -> 4096 131072 6291456"
    assert line("011") == f"{POLL} 0 -> '011'"
    assert line("") == f"{POLL} 0 -> ''"
    assert line("11\n22") == f"{POLL} 0 -> '11\\n22'"
    assert line("11\t22") == f"{POLL} 0 -> '11\\t22'"
    assert line("1  2") == f"{POLL} 0 -> '1  2'"
    assert line(" 5") == f"{POLL} 0 -> ' 5'"
    assert line("bbr", "") == f"{POLL} '' -> bbr"
    assert describe_changes([Change("sysctl", POLL, "011", "0")]) == \
        f"would change: {POLL} 0 -> '011'; pass --apply-system"


def test_state_dir_default(monkeypatch):
    monkeypatch.delenv("XDG_STATE_HOME")
    assert state_dir() == Path.home() / ".local/state/hotloop"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/dir")  # XDG: ignore relative paths
    assert state_dir() == Path.home() / ".local/state/hotloop"


def test_mitigations_state_rules():
    assert mitigations_state({"a": "Mitigation: x"}, "quiet mitigations=off") == "off"
    assert mitigations_state({"a": "Mitigation: x", "b": "Vulnerable"}, "") == "on"
    assert mitigations_state({"a": "Vulnerable", "b": "Not affected"}, "") == "off"
    assert mitigations_state({"a": "Not affected"}, "") == "not affected"
    assert mitigations_state({}, "") == "unknown"


def test_release_glob_is_not_a_regex():
    # As a regex, "4.3*" would match "6.18.44" through "44".
    assert not release_matches("4.3*", "6.18.44-fc")
    assert release_matches("6.18*", "6.18.44-fc")
    assert release_matches(r"^6\.1[0-9]\.", "6.18.44-fc")


def test_check_expect_bad_input():
    with pytest.raises(SystemSettingError, match="expect.kernel: unknown key"):
        check_expect({"kernel": "x"})
    with pytest.raises(SystemSettingError, match="expect.mitigations"):
        check_expect({"mitigations": "auto"})
    with pytest.raises(SystemSettingError, match="bad regular expression"):
        check_expect({"release": "(6"})
    with pytest.raises(SystemSettingError, match="list of strings"):
        check_expect({"cmdline_contains": [1]})


def test_validate_cpus():
    n = len(online_cpus())
    assert validate_cpus([]) is None
    assert validate_cpus(sorted(os.sched_getaffinity(0))) is None
    beyond = max(present_cpus()) + 1
    assert validate_cpus([0, beyond]) == (
        f"CPU {beyond} is beyond this machine (CPUs {format_cpu_list(present_cpus())})")
    assert validate_cpus([-1]) == "CPU -1 is not a CPU number"
    assert n >= 1


def test_validate_cpus_offline(fake_cpufreq):
    (fake_cpufreq / "online").write_text("0\n")
    assert validate_cpus([1]) == "CPU 1 is offline (online: 0)"


def test_validate_priority():
    assert validate_priority("fifo", 50) is None
    assert validate_priority("other", 0) is None
    assert validate_priority("fifo", 100) == "priority 100 out of range for sched fifo (1-99)"
    assert validate_priority("fifo", 0) == "priority 0 out of range for sched fifo (1-99)"
    assert validate_priority("batch", 5) == "priority 5 out of range for sched batch (only 0)"
    assert validate_priority("deadline", 1).startswith("unknown sched policy 'deadline'")


def test_cpu_list_round_trip():
    assert parse_cpu_list("0-2,5,7-8\n") == [0, 1, 2, 5, 7, 8]
    assert format_cpu_list([8, 0, 1, 2, 5, 7]) == "0-2,5,7-8"
    assert parse_cpu_list("") == []
