"""Kernel profiles with an image and what a VM's session is made of, without booting one:
the profile's checks, the guest's catalogue and program, the KVM probe's cache, the sweep of
dead sessions' directories, and compare's refusal to mix emulated sessions with others."""
from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import forge
import pytest
import tomli_w
from conftest import profile_dir

from hotloop import catalog, paths, results
from hotloop.catalog import Catalog
from hotloop.errors import HotloopError
from hotloop.host import kimage, kvm
from hotloop.host.procs import TIME_SCALE_ENV
from hotloop.perf.control import HIDE_MODULES_ENV, perf_argv
from hotloop.render.warning_words import words
from hotloop.run import start, vm
from hotloop.run.guest import guest_cpus, guest_profiles, guest_program, init_sed, sweep


def fake_bzimage(path: Path, release: str = "6.9.0-test") -> Path:
    """A file with the x86 boot header's magic and a version string where it points, as
    long as the header says: one setup sector after the boot sector, no kernel after them."""
    data = bytearray(0x400)
    data[0x1F1] = 1
    data[0x202:0x206] = b"HdrS"
    data[0x20E:0x210] = (0x300 - 0x200).to_bytes(2, "little")
    text = f"{release} (builder@host) #1 SMP".encode()
    data[0x300:0x300 + len(text)] = text
    path.write_bytes(bytes(data))
    return path


def load_error(tmp_path: Path, toml: str) -> str:
    d = profile_dir(tmp_path, toml)
    with pytest.raises(HotloopError) as e:
        catalog.load([d])
    return str(e.value)


def test_an_image_kernel_loads_with_its_keys_and_home_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    fake_bzimage(tmp_path / "bzImage")
    d = profile_dir(tmp_path, """
        [kernel.patched]
        label = "6.9 + fix"
        image = "~/bzImage"
        append = "mitigations=off quiet"
        cpus = 2
        memory = "2G"
        """)
    k = catalog.load([d]).kernels["patched"]
    assert (k.image, k.append, k.cpus, k.memory) == (str(tmp_path / "bzImage"),
                                                     "mitigations=off quiet", 2, "2G")
    assert k.vm and not catalog.load([d]).kernels["default"].vm
    assert kimage.image_release(Path(k.image)) == "6.9.0-test"


@pytest.mark.parametrize("image, expected", [
    ('"/nonexistent/bzImage"', "p.toml:3: [kernel.k] image: no such file: /nonexistent/bzImage"),
    ('"/"', "[kernel.k] image: / is a directory, not a kernel image"),
    ('"/etc/passwd"', "[kernel.k] image: /etc/passwd is not a kernel image (no bzImage header"),
    ('"/bin/ls"', "[kernel.k] image: /bin/ls is an ELF file, not a bootable kernel image"),
    ("3", "[kernel.k] image: expected a string, got an integer"),
])
def test_an_image_that_is_no_kernel_is_refused_at_load(tmp_path, image, expected):
    assert expected in load_error(tmp_path, f"[kernel.k]\nlabel = 'x'\nimage = {image}\n")


@pytest.mark.parametrize("extra, expected", [
    ("append = \"console='ttyS0\"", "[kernel.k] append: \"console='ttyS0\": No closing quotation"),
    ('append = "a\\nb"', "[kernel.k] append: 'a\\nb' holds a control character"),
    ("cpus = 0", "[kernel.k] cpus: 0 is below the minimum 1"),
    ("memory = \"lots\"", "[kernel.k] memory: 'lots': expected a size like \"2G\""),
    # virtme-run appends M to what has no M, G or K: "-m 1TM", "-m 2gM"
    ("memory = \"1T\"", "p.toml:3: [kernel.k] memory: '1T': expected a size like \"2G\" or "
                        "\"512M\" (a number with M or G, or alone for MiB) from 256M to 1024G"),
    ("memory = \"2g\"", "[kernel.k] memory: '2g': expected a size like"),
    ("memory = \"512K\"", "[kernel.k] memory: '512K': expected a size like"),
    ("memory = \"64\"", "[kernel.k] memory: '64': expected a size like"),
    ("memory = \"2048G\"", "[kernel.k] memory: '2048G': expected a size like"),
    ("memory = 2048", "[kernel.k] memory: expected a string, got an integer"),
])
def test_the_vm_keys_are_checked_one_line_each(tmp_path, extra, expected):
    fake_bzimage(tmp_path / "bz")
    error = load_error(tmp_path, f"[kernel.k]\nimage = '{tmp_path / 'bz'}'\n{extra}\n")
    assert expected in error and "\n" not in error


@pytest.mark.parametrize("memory", ["2048", "512M", "1G", "1024G"])
def test_memory_is_what_virtme_run_passes_to_qemu(tmp_path, memory):
    fake_bzimage(tmp_path / "bz")
    d = profile_dir(tmp_path, f"[kernel.k]\nimage = '{tmp_path / 'bz'}'\nmemory = '{memory}'\n")
    assert catalog.load([d]).kernels["k"].memory == memory      # a bare number: MiB


def test_a_truncated_bzimage_is_refused_at_load(tmp_path):
    image = fake_bzimage(tmp_path / "bz")
    data = bytearray(image.read_bytes())
    data[0x1F1] = 0                                 # 0: four setup sectors, 2560 bytes
    data[0x206:0x208] = (0x20F).to_bytes(2, "little")
    data[0x1F4:0x1F8] = (0x10000).to_bytes(4, "little")     # then 1 MiB of kernel
    image.write_bytes(bytes(data) + bytes(2560 + (1 << 20) - len(data)))
    assert kimage.image_problem(image) is None
    image.write_bytes(image.read_bytes()[:-1])      # HdrS intact, the kernel's end cut off
    error = load_error(tmp_path, f"[kernel.k]\nlabel = 'x'\nimage = '{image}'\n")
    assert error.endswith(f"p.toml:3: [kernel.k] image: {image} is truncated: 1051135 bytes, "
                          f"where its boot header says 1051136 (setup_sects and syssize)")
    image.write_bytes(image.read_bytes() + b"\0" * 1473)       # a signature after it: fine
    assert kimage.image_problem(image) is None


@pytest.mark.parametrize("key", ["append = 'quiet'", "cpus = 2", "memory = '1G'"])
def test_the_vm_keys_without_an_image_are_refused(tmp_path, key):
    error = load_error(tmp_path, f"[kernel.k]\nlabel = 'x'\n{key}\n")
    assert error.endswith(f"p.toml:3: [kernel.k] {key.split()[0]}: applies to a kernel "
                          f"booted in a VM: give its image too (image = \"/boot/vmlinuz-...\")")


def test_9p_support_is_read_from_the_modules_or_the_config(tmp_path):
    mods, boot = tmp_path / "modules", tmp_path / "boot"
    (mods / "6.9-a" / "kernel" / "fs" / "9p").mkdir(parents=True)
    (mods / "6.9-a" / "kernel" / "fs" / "9p" / "9p.ko.xz").write_bytes(b"")
    boot.mkdir()
    (boot / "config-6.9-a").write_text("CONFIG_NET_9P=y\nCONFIG_NET_9P_VIRTIO=y\n")
    assert kimage.ninep_problem("6.9-a", mods, boot) is None
    (boot / "config-6.9-b").write_text("CONFIG_NET_9P=y\n")
    problem = kimage.ninep_problem("6.9-b", mods, boot)
    assert problem is not None and "lacks 9p, 9pnet_virtio" in problem


def image_plan(tmp_path: Path, cpus: str = "[1]", workload: bool = False) -> catalog.ResolvedPlan:
    fake_bzimage(tmp_path / "bz")
    d = profile_dir(tmp_path, f"""
        [cpu.one]
        cpus = {cpus}
        governor = "performance"
        [kernel.vmk]
        label = "in a vm"
        image = "{tmp_path / 'bz'}"
        sysctl = {{ "net.core.busy_poll" = 50 }}
        [workload.mine]
        source = "mine.c"
        params.n = {{ default = 3, min = 1, max = 9, help = "n" }}
        """)
    cat = catalog.load([d])
    plan = catalog.Plan(name="p", workload="mine" if workload else "syscall", cpu="one",
                        kernel="vmk", runs=3)
    return cat.resolve(plan, here=False)


def test_a_plan_with_an_image_kernel_starts_a_vm_session(tmp_path):
    rp = image_plan(tmp_path)
    s = start.here(rp, tmp_path / "r.jsonl", start.Choices())
    assert isinstance(s, vm.VmSession) and s.vcpus == 1 and s.memory == vm.DEFAULT_MEMORY
    # the guest's own: its sysctls applied there, its perf data not kept
    assert "--apply-system" in s.argv and "--no-keep-perf" in s.argv
    assert s.argv[-2:] == ["--", "syscall"] and "--kernel=vmk" in s.argv


def test_the_guests_catalogue_is_its_own_and_loads(tmp_path):
    rp = image_plan(tmp_path, cpus="[1, 0]", workload=True)
    profiles = guest_profiles(rp, vcpus=2)
    assert profiles["cpu"]["one"]["cpus"] == [0, 1]         # process i on vCPU i
    assert "governor" not in profiles["cpu"]["one"]         # this machine's, not the guest's
    assert "image" not in profiles["kernel"]["vmk"]         # it runs there: no VM in the VM
    # the profile's own, and what perf needs to name the guest kernel's symbols there
    assert profiles["kernel"]["vmk"]["sysctl"] == {
        "net.core.busy_poll": 50, "kernel.kptr_restrict": 0, "kernel.perf_event_paranoid": -1}
    # where the guest reads it: its own config directory (run/guest.py), which may set any
    # sysctl (kernel.* for perf there)
    guest = paths.config_dir()
    guest.mkdir(parents=True)
    (guest / "vm.toml").write_text(tomli_w.dumps(profiles))
    cat = Catalog()
    cat.load_file(guest / "vm.toml")
    assert cat.workloads["mine"].source == rp.workload.source
    assert cat.workloads["mine"].params["n"].max == 9
    assert not cat.kernels["vmk"].image and cat.kernels["vmk"].label == "in a vm"
    assert cat.kernels["vmk"].sysctl["kernel.perf_event_paranoid"] == -1


def test_perf_in_the_guest_gets_the_settings_it_needs_unless_the_profile_says(tmp_path):
    rp = image_plan(tmp_path)
    no_perf = dataclasses.replace(rp, plan=dataclasses.replace(rp.plan, perf=False))
    assert guest_profiles(no_perf, vcpus=1)["kernel"]["vmk"]["sysctl"] == {
        "net.core.busy_poll": 50}                           # nothing perf needs: as given
    mine = dataclasses.replace(rp, kernel=dataclasses.replace(
        rp.kernel, sysctl={"kernel.kptr_restrict": 1}))
    assert guest_profiles(mine, vcpus=1)["kernel"]["vmk"]["sysctl"] == {
        "kernel.kptr_restrict": 1, "kernel.perf_event_paranoid": -1}
    # and perf there starts without walking the modules over 9p (perf/control.py)
    assert f"export {HIDE_MODULES_ENV}=1" in guest_program(tmp_path / "s-1", ["run"], 20)


def test_perf_hides_the_modules_only_where_asked_and_as_root(monkeypatch):
    argv = ["perf", "record", "-p", "1"]
    monkeypatch.delenv(HIDE_MODULES_ENV, raising=False)
    assert perf_argv(argv) == argv                          # here: as it is
    monkeypatch.setenv(HIDE_MODULES_ENV, "1")
    wrapped = perf_argv(argv)
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        assert wrapped == argv                              # cannot mount: as it is
        return
    assert wrapped[1:5] == ["--mount", "--propagation", "private", "sh"]
    assert wrapped[-4:] == argv and wrapped[-5] == "sh"     # "$@": perf's words untouched
    assert 'tmpfs' in wrapped[6] and '"/lib/modules/$(uname -r)"' in wrapped[6]
    assert wrapped[6].endswith('exec "$@"')                 # the same pid: its group killed


def test_a_bundled_workload_is_not_written_for_the_guest(tmp_path):
    assert "workload" not in guest_profiles(image_plan(tmp_path), vcpus=1)


def test_the_guests_program_is_a_file_and_its_command_line_stays_short(tmp_path):
    # a long plan once pushed virtme's init= past x86's 2048-byte command line: the guest
    # hung.  The program is a file; the command line carries `sh FILE`.
    argv = ["run", "--format=events", *[f"--param=k{i}={'x' * 50}" for i in range(100)],
            "--", "syscall"]
    d = tmp_path / "s-1"
    text = guest_program(d, argv, 20)
    assert len(text) > 5000
    words = shlex.split(text.splitlines()[-1])
    assert words[:3] == ["exec", words[1], "-m"] and words[3:5] == ["hotloop", "run"]
    assert f"export {TIME_SCALE_ENV}=20" in text
    assert f"export XDG_CONFIG_HOME={d / 'config'}" in text     # none of the user's profiles


@pytest.mark.parametrize("path", ["/home/my cache/init", "/a|b/init", "/a&b/init", "/a'b/init",
                                  "/a\\b/init", "/a\nb/init", "relative/init"])
def test_a_path_the_command_line_cannot_carry_leaves_virtme_ngs_init_alone(path):
    # a space splits the kernel's command line; | & \ and a quote are sed's or the shell's:
    # virtme-ng's init then runs as it was, udev and all (slower, not wrong)
    assert init_sed(Path(path)) == ""


def test_qemus_own_error_line_is_what_is_said():
    lines = ["boot noise", "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69",
             "qemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: Assertion failed."]
    assert kvm.qemu_said(lines) == "qemu: failed to set MSR 0x10a to 0x69"
    assert kvm.qemu_said(["nothing of qemu's"]) == ""
    assert kvm.tcg_warning("qemu: failed to set MSR 0x10a to 0x69") == (
        "no usable KVM (qemu: failed to set MSR 0x10a to 0x69): guests are emulated; their "
        "numbers do not measure this CPU")


def test_a_forged_or_shared_kvm_cache_is_not_trusted(tmp_path):
    f = tmp_path / "kvm.json"
    kvm._write_cache(f, "k1", False, "qemu: no")
    assert kvm._read_cache(f) == {"k1": {"usable": False, "why": "qemu: no"}}
    f.chmod(0o666)                      # anyone could have written it: probed again
    assert kvm._read_cache(f) == {}
    f.chmod(0o600)
    f.write_text(json.dumps({"k1": {"usable": "yes"}, "k2": [], "k3": {"usable": True}}))
    assert kvm._read_cache(f) == {"k3": {"usable": True}}
    f.write_text("{not json")
    assert kvm._read_cache(f) == {}
    kvm._write_cache(f, "k4", True, "")  # a broken file is replaced whole, atomically
    assert kvm._read_cache(f) == {"k4": {"usable": True, "why": ""}}
    assert [p.name for p in tmp_path.iterdir()] == ["kvm.json"]


def test_the_sweep_removes_dead_sessions_directories_and_keeps_live_ones(tmp_path):
    dead, live, other = tmp_path / "s-1-dead", tmp_path / "s-2-live", tmp_path / "kvm.json"
    dead.mkdir()
    (dead / "lock").write_text("")
    live.mkdir()
    other.write_text("{}")
    fd = os.open(live / "lock", os.O_WRONLY | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        sweep(tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["kvm.json", "s-2-live"]
    finally:
        os.close(fd)
    sweep(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["kvm.json"]


def test_the_vcpus_are_pinned_one_each_when_the_profile_has_cpus_enough():
    cpu = catalog.CpuProfile("c", cpus=(3, 5))
    assert guest_cpus(cpu, 2) == (0, 1)
    assert guest_cpus(cpu, 1) == (0, 0)
    assert guest_cpus(catalog.CpuProfile("d"), 4) == ()


def session(path: Path, ns: int, accel: str | None) -> Path:
    head = forge.header(params={"block_size": 512, "count": 20000, "spin": 0}, runs=6)
    if accel is not None:
        head["vm"] = {"accel": accel, "cpus": 1, "image": "/boot/vmlinuz-x"}
    return forge.zero_null(path, ns, head=head)


def test_compare_refuses_emulated_sessions_beside_measured_ones(tmp_path):
    tcg = session(tmp_path / "tcg.jsonl", forge.NS_512, "tcg")
    here = session(tmp_path / "here.jsonl", forge.NS_512, None)
    tcg2 = session(tmp_path / "tcg2.jsonl", forge.NS_512 + 1000, "tcg")
    from hotloop.analysis import compare
    with pytest.raises(HotloopError) as e:
        compare.load_and_compare([tcg, here])
    assert str(e.value) == (f"{tcg}: ran emulated in a VM (TCG), {here} on this machine: "
                            f"emulated numbers cannot be compared with measured ones")
    assert results.read(tcg).header.vm.accel == "tcg"
    both = compare.load_and_compare([tcg, tcg2])    # emulated beside emulated: compared,
    assert [w for w in map(words, both.warnings) if "emulated" in w] == [   # and every format says so
        "no usable KVM (KVM not used): the sessions ran in emulated guests; their numbers do "
        "not measure this CPU"]
    from hotloop.render import compare_formats
    for fmt in compare_formats.FORMATS:
        if fmt != "csv":                            # csv carries rows, not warnings
            assert "emulated guests" in compare_formats.render(both, fmt), fmt


def test_virtme_run_is_found_beside_this_python_without_it_on_path(monkeypatch):
    # `.venv/bin/hotloop` run without activating the venv: its bin/ is not on PATH, and the
    # vm extra put virtme-run there
    beside = Path(sys.executable).parent / "virtme-run"
    assert beside.exists()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert kvm.find_virtme() == str(beside)
    if shutil.which(kvm.QEMU):              # tools() takes qemu from PATH, as before
        assert kvm.tools()[0] == str(beside)


def test_a_shared_vm_kernel_profile_may_set_any_sysctl_of_its_guest(tmp_path, monkeypatch):
    """A kernel booted in a VM sets its guest's sysctls, never this machine's: from a shared
    directory too (the benchmarking set binds the profiles that run here)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    image = fake_bzimage(tmp_path / "bzImage")
    d = profile_dir(tmp_path, f'[kernel.vm]\nimage = "{image}"\n'
                              f'sysctl = {{ "kernel.kptr_restrict" = 0 }}\n'
                              f'[kernel.here]\nsysctl = {{ "kernel.kptr_restrict" = 0 }}\n')
    with pytest.raises(HotloopError, match=r"p.toml:5: \[kernel.here\] sysctl: kernel.kptr_"):
        catalog.load([d])
    (d / "p.toml").write_text(f'[kernel.vm]\nimage = "{image}"\n'
                              f'sysctl = {{ "kernel.kptr_restrict" = 0 }}\n')
    assert catalog.load([d]).kernels["vm"].sysctl == {"kernel.kptr_restrict": 0}
