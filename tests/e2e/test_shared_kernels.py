"""A kernel profile from a shared --profiles directory, through the real command line: it sets
only benchmarking sysctls, and `list kernel` shows what each profile sets and from which file,
whatever its label says."""
from __future__ import annotations

from pathlib import Path

from conftest import hotloop

CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")


def test_a_shared_profile_cannot_set_core_pattern_behind_apply_system(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "k.toml").write_text(f'[kernel.stock]\nlabel = "stock"\n'
                                   f'sysctl = {{ "kernel.core_pattern" = "|{tmp_path}/x %p" }}\n')
    before = CORE_PATTERN.read_text()
    done = hotloop("--profiles", str(shared), "run", "quick", "--kernel", "stock",
                   "--apply-system", "--runs", "1", "--warmup", "0", "--no-perf")
    assert CORE_PATTERN.read_text() == before
    assert done.returncode == 2, done
    said = (f"hotloop: {shared / 'k.toml'}:3: [kernel.stock] sysctl: kernel.core_pattern: "
            f"outside the sysctls a shared profile may set (net.*, vm.*, kernel.sched_*")
    assert done.stderr.splitlines()[-1].startswith(said), done.stderr
    assert "Traceback" not in done.stderr and not Path("results").exists()
    listed = hotloop("--profiles", str(shared), "list", "kernel")
    assert listed.returncode == 0 and "\n  stock " not in listed.stdout
    assert listed.stderr.startswith(said.replace("hotloop: ", "hotloop: warning: ")), listed


def test_list_kernel_shows_what_each_profile_sets_and_its_file(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "k.toml").write_text('[kernel.calm]\nlabel = "stock"\nsummary = "nothing much"\n'
                                   'sysctl = { "vm.swappiness" = 10, "net.core.busy_poll" = 5 }\n')
    listed = hotloop("--profiles", str(shared), "list", "kernel")
    assert listed.returncode == 0, listed
    lines = listed.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("  calm "))
    assert lines[at + 1] == (f"      sets vm.swappiness = 10, net.core.busy_poll = 5 "
                             f"(from {shared / 'k.toml'})")
    bundled = next(i for i, ln in enumerate(lines) if ln.startswith("  busy-poll "))
    assert lines[bundled + 1].startswith("      sets net.core.busy_poll = 50, "
                                         "net.core.busy_read = 50 (from ")
