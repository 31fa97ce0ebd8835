"""Launching a run (hotloop.run.launch), the one place its rules are for the command line and
the console: an image kernel never on a host, one consent list, the default result path; and
the console's vs.  Real catalogues; no process started.  A series: test_series_run.py."""
from __future__ import annotations

import fcntl
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import POLL, READ, SYSCTL_LOCK, needs_root_sysctl, profile_dir
from test_vm_rules import fake_bzimage

from hotloop import catalog, paths
from hotloop.catalog import Catalog, Host
from hotloop.errors import HotloopError
from hotloop.run import launch, variants
from hotloop.run.session import Session

STAMP = r"\d{8}-\d{6}"


@pytest.fixture
def cat(tmp_path: Path, isolated: Path) -> Catalog:
    """The bundled catalogue and two kernel profiles more: one booted in a VM (with a sysctl
    this machine has not: its guest's), one that sets the same sysctls as busy-poll."""
    image = fake_bzimage(tmp_path / "bzImage")
    return catalog.load([profile_dir(tmp_path, f"""
        [kernel.patched]
        image = "{image}"
        sysctl = {{ "net.core.no_such_thing" = 1 }}

        [kernel.polling]
        sysctl = {{ "{POLL}" = 50, "{READ}" = 50 }}
        """)])


def refused(call, *args) -> str:
    with pytest.raises(HotloopError) as e:
        call(*args)
    return str(e.value)


# --------------------------------------------------------------------------- where it runs

def test_an_image_kernel_never_runs_on_a_host(cat, tmp_path):
    k = cat.kernels["patched"]
    assert refused(launch.check_host, k, "lab1") == (
        f"--host with kernel profile patched: it boots {tmp_path / 'bzImage'} in a VM on this "
        f"machine, and a host would run its own kernel instead (drop --host, or choose a "
        f"kernel profile without an image)")
    launch.check_host(k, None)
    launch.check_host(cat.kernels["default"], "lab1")
    # starting the run says so too, before any file is named
    rp = cat.resolve(replace(cat.plan_for("zero_null"), kernel="patched"), here=False)
    assert "a host would run its own kernel" in refused(
        launch.start_run, launch.RunRequest(rp, host=Host("lab1", "lab1.example")))


# --------------------------------------------------------------------------- consent

def test_an_image_kernel_asks_no_consent_and_is_not_preflighted_here(cat):
    # its sysctl is the guest's: this machine has none of that name, and is not asked
    plan = cat.plan_for("zero_null")
    rps = [cat.resolve(replace(plan, kernel=k)) for k in ("default", "patched")]
    assert launch.consent(rps) == []
    assert launch.consent(rps, host="lab1") == []


def test_on_a_host_consent_is_what_the_profiles_would_set_there_each_once(cat):
    plan = cat.plan_for("zero_null")
    rps = [cat.resolve(replace(plan, kernel=k), here=False)
           for k in ("busy-poll", "patched", "polling")]
    assert launch.consent(rps, host="lab1") == [f"sysctl {POLL} = 50 on lab1",
                                                f"sysctl {READ} = 50 on lab1"]


@pytest.fixture
def sysctls_held() -> Iterator[None]:
    """The sysctls other tests set (conftest.SYSCTL_LOCK) left alone while these read them."""
    with open(SYSCTL_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@needs_root_sysctl
def test_here_consent_is_each_change_once_in_the_kernels_order(cat, sysctls_held, tmp_path):
    now = {name: Path("/proc/sys", *name.split(".")).read_text().strip()
           for name in (POLL, READ)}
    plan = cat.plan_for("zero_null")
    rps = [cat.resolve(replace(plan, kernel=k)) for k in ("busy-poll", "patched", "polling")]
    # each change once, with every profile file that asks for it
    files = f"{paths.BUNDLED_PROFILES / 'kernel.toml'}, {tmp_path / 'prof' / 'p.toml'}"
    changes = [f"{name} {now[name]} -> 50 (from {files})" for name in (POLL, READ)
               if now[name] != "50"]
    assert launch.consent(rps) == changes
    assert launch.consent(rps[1:2]) == []


# --------------------------------------------------------------------------- result files

def test_the_default_result_path_names_the_plan_and_the_host(tmp_path):
    assert re.fullmatch(rf"results/{STAMP}-quick\.jsonl", str(launch.result_path("quick")))
    assert re.fullmatch(rf"{tmp_path}/{STAMP}-quick-lab1\.jsonl",
                        str(launch.result_path("quick", "lab1", tmp_path)))


def test_a_run_without_an_output_gets_the_default_path(cat, tmp_path):
    rp = cat.resolve(cat.plan_for("zero_null"))
    s = launch.start_run(launch.RunRequest(rp, results=tmp_path, variant="x"))
    assert isinstance(s, Session) and s.variant == "x"
    assert re.fullmatch(rf"{tmp_path}/{STAMP}-zero_null\.jsonl", str(s.result_file))
    named = launch.start_run(launch.RunRequest(rp, output=tmp_path / "mine.jsonl"))
    assert named.result_file == tmp_path / "mine.jsonl"


# --------------------------------------------------------------------------- the console's vs

def test_vs_names_the_baseline_and_each_variant_by_the_keys_it_changes(cat):
    plan = replace(cat.plan_for("zero_null"), params={"block_size": 512})
    sides = variants.versus(cat, plan, "block_size=4096")
    assert [(name, p.params.get("block_size"), p.cpu) for name, p in sides] == [
        ("block_size=512", 512, "default"), ("block_size=4096", 4096, "default")]
    assert sides[0][1] is plan
    sides = variants.versus(cat, plan, " cpu=split  block_size=1024,4096 ")
    assert [name for name, _ in sides] == [
        "cpu=default block_size=512", "cpu=split block_size=1024",
        "cpu=split block_size=4096"]
    assert [(p.cpu, p.params["block_size"]) for _, p in sides[1:]] == [
        ("split", 1024), ("split", 4096)]
    assert variants.versus(cat, plan, "  ") == ()

