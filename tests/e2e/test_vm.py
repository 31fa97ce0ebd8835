"""A session in a VM, for real: virtme-ng boots a distribution kernel (linux-image-*-amd64,
installed by .ci/run) with this machine's root under qemu, emulated (TCG) where KVM is not
usable, and this hotloop runs inside it.  A session of these tests' tiny runs costs about 30 s
here, most of it the emulated boot: two kernels run a session each and are compared, one
session samples with perf in its guest, one is SIGKILLed mid-boot, and the rest (virtme-ng
or qemu absent, --host with an image, a series stopped or refused: test_vm_series_ends.py)
stop before any boot ends.  Three boots in all: what a longer series of them would prove (the
A B B A order, sessions and boots as replicates) the unit tests prove on forged VM result
files (tests/unit/test_series_rules.py, test_boots.py).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
import venv
from pathlib import Path

import pytest
from conftest import ROOT, path_without, profile_dir

from hotloop import paths, results
from hotloop.host import kimage
from hotloop.run import guest, pinning, vm

pytestmark = pytest.mark.xdist_group("vm")

IMAGES = {"deb47": Path("/boot/vmlinuz-6.1.0-47-amd64"),
          "deb50": Path("/boot/vmlinuz-6.1.0-50-amd64")}    # two Debian point releases
IMAGE = IMAGES["deb47"]
RELEASE = "6.1.0-47-amd64"
VENV_BIN = str(Path(sys.executable).parent)      # virtme-run, installed by the vm extra
BOOT_S = 900                                     # emulated, on a busy 2-core machine
# The modules udev loaded in an emulated guest for qemu's devices (KVM, crypto, AHCI, the
# CD-ROM, the watchdog, the mouse) took 8 of the 19 s a bare boot took to its first command;
# a session's guest runs no udev now (run/guest.py's INIT), so none loads.  Refused through
# `append` still: the kernel profile's command line, which the A/B test finds in the headers.
APPEND = ("module_blacklist=kvm_amd,kvm_intel,kvm,ccp,irqbypass,crct10dif_pclmul,"
          "crc32_pclmul,crc32c_intel,ghash_clmulni_intel,sha512_ssse3,sha256_ssse3,"
          "sha1_ssse3,aesni_intel,sr_mod,cdrom,sg,ahci,libahci,libata,iTCO_wdt,intel_pmc_bxt,"
          "i6300esb,lpc_ich,i2c_i801,evdev,psmouse,serio_raw,pcspkr,button")


def vm_profiles(tmp_path: Path) -> Path:
    return profile_dir(tmp_path, f"""
        [kernel.deb47]
        label = "6.1.0-47"
        image = "{IMAGE}"
        cpus = 1
        append = "{APPEND}"
        sysctl = {{ "net.core.busy_poll" = 50 }}    # the guest's own: applied there, unasked
        [kernel.deb50]
        label = "6.1.0-50"
        image = "{IMAGES['deb50']}"
        cpus = 1
        append = "{APPEND}"
        [cpu.one]
        cpus = [1]
        [host.lab]
        address = "127.0.0.1"
        """)


def release(image: Path) -> str:
    return image.name.removeprefix("vmlinuz-")


def vm_env(path: str | None = None) -> dict[str, str]:
    """The test's environment, with virtme-run on the PATH (or the PATH given)."""
    env = dict(os.environ)
    env["PATH"] = path if path is not None else VENV_BIN + os.pathsep + env["PATH"]
    env["PYTHONPATH"] = str(ROOT)
    return env


def hotloop(*args: str, env: dict[str, str], timeout: float = 300,
            python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "hotloop", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def python_without_virtme(tmp_path: Path) -> str:
    """A venv's Python with no virtme-run beside it (hotloop looks there before PATH) that
    imports what this one does: its site-packages names this venv's."""
    d = tmp_path / "bare-venv"
    venv.create(d, with_pip=False)
    python = d / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    real = sysconfig.get_paths()["purelib"]
    Path(site.stdout.strip(), "hotloop-env.pth").write_text(
        f"import site; site.addsitedir({real!r})\n")
    return str(python)


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for kid in pinning._children(p):
            out.append(kid)
            todo.append(kid)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def guest_qemu(roots: list[int], pinned_to: set[int] | None = None) -> int | None:
    """The guest's qemu under `roots`: the one with a vCPU thread (virtme-run starts others
    first, `qemu --version`), that thread on `pinned_to` when given."""
    for p in (d for r in roots for d in descendants(r)):
        for tid, name in pinning._threads(p).items():
            try:
                if pinning.VCPU_THREAD.fullmatch(name) and \
                        (pinned_to is None or os.sched_getaffinity(tid) == pinned_to):
                    return p
            except OSError:
                pass
    return None


def test_two_kernels_booted_in_vms_come_home_as_files_and_are_compared(tmp_path, leftovers):
    """The kernel A/B hotloop is for, at its cheapest: both images booted in turn, a session
    each (the header the guest's), its result file here, and the compare of the kernels,
    across boots, that says it cannot call one session a side.  A series (--sessions 2, the
    least for two kernels) booted four times, 3 min of the suite's: the series' order and
    its boots as replicates are tested on forged VM files (tests/unit), its directory and
    ends with VMs in test_vm_series_ends.py and the console's series tests."""
    d = vm_profiles(tmp_path)
    # 5 runs, the fewest a verdict looks at (the runs are tiny: the boots are the time)
    r = hotloop("run", "syscall", "--kernel", "deb47", "--kernel", "deb50",
                "--cpu", "one", "--runs", "5", "--warmup", "0", "--no-perf", "--param",
                "calls=1000", "--format", "json", "--profiles", str(d), env=vm_env(),
                timeout=2 * BOOT_S)
    assert r.returncode == 0, r.stderr
    assert "hotloop: warning: one session a kernel, compared as a batch" in r.stderr
    doc = json.loads(r.stdout)
    boots = set()
    assert [x["result_file"] for x in doc["results"]] and len(doc["results"]) == 2
    for (name, image), got in zip(IMAGES.items(), doc["results"]):
        res = results.read(tmp_path / got["result_file"])
        h = res.header
        assert res.finished is not None and len(res.runs) == 5
        assert h.kernel_release == release(image)       # the guest's, not this machine's
        assert h.kernel.name == name and h.kernel.image == str(image)
        assert h.vm is not None and h.vm.image == str(image) and h.vm.cpus == 1
        assert h.vm.image_sha256 == kimage.sha256(image) and h.vm.append == APPEND
        # the guest booted through the session's own init (udev kept out: test_vm_kcore.py)
        assert re.search(r" hotloop_init=\S+/virtme-ng-init init=\S+/s-[^ /]+/"
                         + guest.INIT_FILE + "$", h.cmdline), h.cmdline
        boots.add(h.boot_id)
        # a kernel profile's sysctl is set in its own guests, without asking
        during = h.sysctl.get("net.core.busy_poll")
        assert (during.during if during else None) == ("50" if name == "deb47" else None)
        # the guest's own warnings say where they come from
        assert all(w.startswith(("no usable KVM (", "in the VM: ")) for w in res.warnings)
        if h.vm.accel == "tcg":             # this machine: nested KVM does not work
            tcg = [w for w in res.warnings if w.startswith("no usable KVM (")]
            assert tcg and tcg[0].endswith("guests are emulated; their numbers do not "
                                           "measure this CPU")
    # each session a boot of its own, neither of them this machine's
    assert len(boots) == 2 and "" not in boots
    assert Path("/proc/sys/kernel/random/boot_id").read_text().strip() not in boots
    cmp = doc["comparison"]
    assert cmp["baseline"]["kernel"] == release(IMAGES["deb47"])
    (new,) = cmp["results"]
    assert new["kernel"] == release(IMAGES["deb50"])
    # a boot a side, compared across boots: with nothing that measured what a reboot moves,
    # only a change beyond the largest offset a boot may have is called (whichever the
    # emulated guests measured: either outcome is asserted)
    first = cmp["comparisons"][0]
    assert first["boots"] == "across boots"
    assert (first["boots_baseline"], first["boots_new"]) == (1, 1)
    if first["significant"]:
        assert first["ci_low"] > 0 or first["ci_high"] < 0, first
    else:
        assert first["verdict"] == "cannot call: one session a side, from different boots"
    if "no usable KVM (" in r.stderr:       # text: as it came, on stderr; and in compare's
        assert any(w["code"] == "emulated" and w["text"].startswith("no usable KVM (")
                   and "the sessions ran in emulated guests" in w["text"]
                   for w in cmp["warnings"])
    assert list((Path(paths.cache_dir()) / "vm").glob("s-*")) == []   # swept at its end
    assert leftovers() == []


def _cut_profiles(tmp_path: Path, *others: str) -> tuple[Path, Path]:
    """A copy of a real kernel image, whole for the profiles' load, and profiles naming it
    `cut` beside kernels without an image (`others`): (the image, the profiles' directory)."""
    cut = tmp_path / "bzImage"
    cut.write_bytes(IMAGE.read_bytes())
    tables = "".join(f'[kernel.{k}]\nlabel = "{k}"\n' for k in others)
    return cut, profile_dir(tmp_path, textwrap.dedent(f"""
        [kernel.cut]
        label = "cut short"
        image = "{cut}"
        cpus = 1
        """) + tables)


def _cut_short(image: Path) -> None:
    """What a copied kernel image becomes once the load has checked it: its first 1000 bytes
    (qemu would say "invalid kernel header"; the session's own check says it first)."""
    image.write_bytes(image.read_bytes()[:1000])


def test_a_vm_that_does_not_boot_fails_its_sessions_and_the_series_goes_on(tmp_path,
                                                                         leftovers):
    """An image cut short after the profiles were loaded (a load refuses it at once): each of
    its sessions is a failed session, named at the end, and the other kernels' sessions (here,
    no boot) run and are compared."""
    cut, d = _cut_profiles(tmp_path, "k1", "k2")
    # the order is k1 k2 cut k2 cut k1: the image is cut while k1's first session runs
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--kernel",
                             "k1", "--kernel", "k2", "--kernel", "cut", "--sessions", "2",
                             "--runs", "20", "--param", "count=20000", "--no-perf",
                             "--format", "json", "--profiles", str(d)],
                            env=vm_env(), cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not list(tmp_path.glob("results/*/k1/s01.jsonl")) and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        _cut_short(cut)
        out, err = proc.communicate(timeout=BOOT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert f"cut s01: failed: [kernel.cut] image: {cut} is truncated: 1000 bytes" in err
    assert "the series' sessions that failed: cut s01, cut s02" in err
    doc = json.loads(out)
    series = doc["series"]
    assert [(x["kernel"], x["session"], x["file"]) for x in series["failed"]] == [
        ("cut", 1, None), ("cut", 2, None)]                 # nothing ran: no file
    assert series["failed"][0]["message"].startswith(f"[kernel.cut] image: {cut} is truncated")
    assert sorted((x["kernel"], x["session"]) for x in series["done"]) == [
        ("k1", 1), ("k1", 2), ("k2", 1), ("k2", 2)]
    # the kernels that ran, compared
    cmp = doc["comparison"]
    assert [s["name"] for s in [cmp["baseline"], *cmp["results"]]] == ["k1", "k2"]
    assert "no finished session of cut: compared without it" in err
    top = tmp_path / series["directory"]
    assert list((top / "cut").iterdir()) == []
    assert list((Path(paths.cache_dir()) / "vm").glob("s-*")) == []
    assert leftovers() == []


def test_the_console_goes_on_past_a_vm_that_does_not_boot(tmp_path, monkeypatch, leftovers):
    from forms import fill_form
    from test_app import SIZE, log_text, picked, wait_for

    from hotloop.console.app import HotloopApp
    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ["PATH"])
    cut, d = _cut_profiles(tmp_path, "k1")

    async def go() -> None:
        app = HotloopApp(profiles=[d], results_dir=tmp_path / "results")
        async with app.run_test(size=SIZE) as pilot:
            await picked(pilot, app, "syscall")
            await fill_form(pilot, app, kernel="cut", kernel2="k1", sessions="2",
                            param_calls="1000", runs="2", perf="off")
            _cut_short(cut)                     # loaded whole, cut before its boots
            await pilot.press("r")
            await wait_for(pilot, lambda: "series done" in log_text(app), BOOT_S, "its end")
            text = log_text(app)
            assert f"cut s01: failed: [kernel.cut] image: {cut} is truncated" in text, text
            assert "series done: sessions finished: cut 0, k1 2" in text, text
            assert "failed: cut s01, cut s02 (set aside)" in text, text
    asyncio.run(go())
    assert leftovers() == []


def test_hotloop_killed_mid_boot_leaves_no_qemu(tmp_path, leftovers):
    d = vm_profiles(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "syscall", "--kernel",
                             "deb47", "--cpu", "one", "--runs", "2", "--warmup", "0", "--no-perf",
                             "--out", str(tmp_path / "k.jsonl"), "--profiles", str(d)],
                            env=vm_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        qemu = None
        deadline = time.monotonic() + 300
        while qemu is None and time.monotonic() < deadline and proc.poll() is None:
            qemu = guest_qemu([proc.pid], pinned_to={1})
            time.sleep(0.2)
        assert qemu is not None, proc.stderr.read() if proc.poll() is not None else "no qemu"
        # booting: the vCPU thread on the CPU profile's CPU, qemu's main thread elsewhere
        assert 1 not in os.sched_getaffinity(qemu)
    finally:
        proc.send_signal(signal.SIGKILL)       # hotloop SIGKILLed mid-boot
        proc.wait()
    deadline = time.monotonic() + 30
    while alive(qemu) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(qemu)
    assert leftovers() == []
    # the next session sweeps the directory the dead one left
    assert list((Path(paths.cache_dir()) / "vm").glob("s-*"))
    guest.sweep(Path(paths.cache_dir()) / "vm")
    assert list((Path(paths.cache_dir()) / "vm").glob("s-*")) == []


def test_without_virtme_ng_or_qemu_a_vm_session_says_so_in_one_line(tmp_path):
    d = vm_profiles(tmp_path)
    no_virtme = path_without(tmp_path, "virtme-run")        # PATH as it is: no venv bin
    python = python_without_virtme(tmp_path)                # nor one beside the Python
    r = hotloop("run", "syscall", "--kernel", "deb47", "--runs", "2", "--profiles", str(d),
                env=vm_env(no_virtme), python=python)
    assert r.returncode != 0
    assert r.stderr.strip() == (f"hotloop: a kernel profile with an image boots a VM: no "
                                f"`virtme-run` beside {python} nor on PATH (pip install "
                                f"'hotloop[vm]': virtme-ng, beside hotloop's Python)")
    assert not list(tmp_path.glob("results/*.jsonl"))      # nothing ran: no file
    doctor = hotloop("doctor", "--profiles", str(d), env=vm_env(no_virtme), python=python)
    assert "no   virtme-ng            no virtme-run beside this Python nor on PATH" \
        in doctor.stdout
    # the venv's own, its bin/ not on PATH (`.venv/bin/hotloop` run without activating it)
    doctor = hotloop("doctor", "--profiles", str(d), env=vm_env(no_virtme))
    assert f"yes  virtme-ng            {VENV_BIN}/virtme-run" in doctor.stdout
    assert f"yes  vm kernel deb47      {IMAGE}: {RELEASE}, mounts the root over 9p" \
        in doctor.stdout
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "virtme-run").symlink_to(Path(VENV_BIN) / "virtme-run")
    (tmp_path / "b").mkdir()
    no_qemu = path_without(tmp_path / "b", "qemu-system-x86_64") + os.pathsep \
        + str(tmp_path / "only")
    r = hotloop("run", "syscall", "--kernel", "deb47", "--runs", "2", "--profiles", str(d),
                env=vm_env(no_qemu))
    assert r.stderr.strip().endswith("no `qemu-system-x86_64` on PATH (Debian: apt-get "
                                     "install qemu-system-x86)")
    doctor = hotloop("doctor", "--profiles", str(d), env=vm_env(no_qemu))
    assert "no   qemu                 no qemu-system-x86_64 on PATH" in doctor.stdout


def test_doctor_says_whether_kvm_is_usable_and_why_not(tmp_path):
    r = hotloop("doctor", "--profiles", str(vm_profiles(tmp_path)), env=vm_env())
    row = next(ln for ln in r.stdout.splitlines() if " kvm " in f" {ln} ")
    if not os.path.exists("/dev/kvm"):
        assert "no /dev/kvm" in row
    elif row.startswith("  no "):
        # nested KVM: on some machines qemu aborts with its own error line, on others the guest
        # hangs and prints nothing; each outcome, the working one too, is driven on every
        # machine by a stand-in qemu in test_kvm_probe.py
        assert re.search(r"/dev/kvm present, not usable: no usable KVM \((qemu: .+|a guest "
                         r"under KVM printed nothing within 20 s)\): guests are emulated", row)
    else:
        assert "/dev/kvm present and usable" in row


def test_host_with_an_image_kernel_is_refused(tmp_path):
    # on a host it would run that host's own kernel, silently
    d = vm_profiles(tmp_path)
    for args in (["run", "syscall"], ["calibrate", "syscall", "--sessions", "8"]):
        r = hotloop(*args, "--kernel", "deb47", "--host", "lab", "--profiles", str(d),
                    env=vm_env())
        assert r.returncode != 0
        assert r.stderr.strip() == (
            f"hotloop: --host with kernel profile deb47: it boots {IMAGE} in a VM on this "
            f"machine, and a host would run its own kernel instead (drop --host, or choose "
            f"a kernel profile without an image)")


@pytest.mark.parametrize("series", [False, True], ids=["one session", "a series of two"])
def test_the_console_says_booting_and_x_ends_the_guest_at_once(tmp_path, monkeypatch,
                                                               leftovers, series):
    from forms import fill_form
    from test_app import SIZE, log_text, picked, wait_for

    from hotloop.console.app import HotloopApp
    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ["PATH"])
    d = vm_profiles(tmp_path)

    async def go() -> None:
        app = HotloopApp(profiles=[d], results_dir=tmp_path / "results")
        async with app.run_test(size=SIZE) as pilot:
            await picked(pilot, app, "syscall")
            # a series: deb47 and deb50 in turn, each session a boot
            two = {"kernel2": "deb50", "sessions": "2"} if series else {}
            await fill_form(pilot, app, kernel="deb47", **two, runs="2")
            assert app.main_screen.form.series == ((["deb47", "deb50"], 2) if series else None)
            await pilot.press("r")
            await wait_for(pilot, lambda: app.main_screen.controller.live is not None and app.main_screen.controller.live.state == "booting",
                           30, "booting")
            status = str(app.query_one("#status").render())
            assert "booting" in status
            assert f"in a VM booting {IMAGE}" in log_text(app)
            if series:
                assert "deb47 · session 1 of 2" in status
                assert f"deb47 · session 1 of 2, in a VM booting {IMAGE}" in log_text(app)
            else:
                assert isinstance(app.main_screen.controller.session, vm.VmSession)
            await wait_for(pilot, lambda: guest_qemu([os.getpid()]) is not None, 120, "qemu")
            qemu = guest_qemu([os.getpid()])
            assert qemu is not None
            await pilot.press("x")
            await wait_for(pilot, lambda: not app.main_screen.controller.running, 20, "stopped")
            assert app.main_screen.controller.live.state == "stopped"
            assert not alive(qemu)
            text = log_text(app)
            assert "stopped" in text
            if series:
                assert "series stopped: sessions finished: deb47 0, deb50 0" in text, text
                assert "deb50 · session" not in text        # no session after the stop
    asyncio.run(go())
    assert leftovers() == []
    assert not list((tmp_path / "results").glob("**/*.jsonl"))     # nothing ran: nothing kept


def test_interleaving_a_kernel_booted_in_a_vm_is_refused(tmp_path):
    d = vm_profiles(tmp_path)
    r = hotloop("run", "syscall", "zero_null", "--interleave", "--kernel", "deb47",
                "--profiles", str(d), env=vm_env())
    assert r.returncode != 0
    assert r.stderr.strip() == ("hotloop: --interleave cannot run a kernel booted in a VM: "
                                "each session boots its own; run the kernels' sessions in turn")


def test_perf_in_an_emulated_guest_starts_and_names_the_guest_kernels_symbols(tmp_path,
                                                                            leftovers):
    """One boot with perf on.  Emulated, perf record's start once took 200 s, past its 100 s
    bound (a walk of the guest kernel's /lib/modules over 9p): the session ran without hot
    symbols.  The file says whether perf started and in how long; the guest had what perf
    needs to name its own kernel's code, and its symbols came home."""
    d = vm_profiles(tmp_path)
    out = tmp_path / "perf.jsonl"
    r = hotloop("run", "syscall", "--kernel", "deb47", "--cpu", "one", "--runs", "3",
                "--warmup", "0", "--perf", "--param", "calls=20000", "--out", str(out),
                "--profiles", str(d), env=vm_env(), timeout=2 * BOOT_S)
    assert r.returncode == 0, r.stderr
    res = results.read(out)
    h = res.header
    assert h.kernel_release == RELEASE and h.perf
    # set in the guest for perf, whoever runs it there (Debian's paranoid default is 3)
    assert h.sysctl["kernel.kptr_restrict"].during == "0"
    assert h.sysctl["kernel.perf_event_paranoid"].during == "-1"
    (start,) = res.perf_starts
    assert start.started, (start, res.warnings)
    assert res.perf_not_started is None
    # the guest kernel's own symbols, by name (kallsyms read inside the guest)
    kernel = [s for s in res.session_symbols.symbols if s.kernel] if res.session_symbols else []
    assert kernel and all(s.named for s in kernel), (kernel, res.warnings)
    assert leftovers() == []
