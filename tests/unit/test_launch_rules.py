"""Launching a run or a series (hotloop.run.launch), the one place their rules are for the
command line, calibrate and the console: a series runs here only, an image kernel never on a
host, one consent list, the default result path, a series' unfinished sessions set aside and
its directory removed when it holds nothing.  Real catalogues and series; no process started."""
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
from hotloop import events as ev
from hotloop.catalog import Catalog, Host
from hotloop.errors import HotloopError
from hotloop.record import Batch, Summary
from hotloop.run import launch, series, variants
from hotloop.run.session import Session
from hotloop.run.vm import VmSession

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


def request(cat: Catalog, *kernels: str, sessions: int = 3, **more) -> launch.SeriesRequest:
    return launch.SeriesRequest(cat.plan_for("zero_null"), kernels, sessions, **more)


def refused(call, *args) -> str:
    with pytest.raises(HotloopError) as e:
        call(*args)
    return str(e.value)


# --------------------------------------------------------------------------- where it runs

def test_a_series_runs_on_this_machine_only(cat):
    assert refused(launch.check_series, request(cat, "default", host="lab1")) == \
        "--sessions runs a series on this machine; --host runs one session on each host"
    launch.check_series(request(cat, "default"))


@pytest.mark.parametrize("kernels, sessions, says", [
    (("default", "default"), 3, "--kernel 'default' twice: each kernel of a series once"),
    (("default", "busy-poll"), 1, "--sessions 1: comparing kernels needs at least 2 sessions"),
    (("default",), 100, "--sessions 100: at most 99 a kernel"),
    (("..",), 3, "--kernel '..': not a name a directory can take"),
])
def test_a_series_is_checked_before_anything_is_made(cat, isolated, kernels, sessions, says):
    assert refused(launch.check_series, request(cat, *kernels, sessions=sessions)) \
        .startswith(says)
    assert not (isolated / "results").exists()


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


# --------------------------------------------------------------------------- a series

def test_a_batch_plan_is_refused_a_series(cat):
    req = launch.SeriesRequest(cat.plan_for("page-pool"), ("default",), 2)
    assert refused(launch.resolve_series, cat, req) == (
        "--sessions runs a series of one variant; page-pool is a batch of 3 (its params hold "
        "lists): pick one value of each with --param")


def test_a_series_gets_its_directory_and_each_session_its_kernel(cat, tmp_path):
    req = request(cat, "default", "patched", sessions=2, results=tmp_path)
    rps = launch.resolve_series(cat, req)
    assert [rp.kernel.name for rp in rps.values()] == ["default", "patched"]
    s = launch.start_series(req, rps)
    assert re.fullmatch(rf"{STAMP}-zero_null", s.schedule.directory.name)
    assert s.schedule.directory.parent == tmp_path
    assert sorted(p.name for p in s.schedule.directory.iterdir()) == ["default", "patched"]
    made = [s.make(slot) for slot in s.schedule.slots[:2]]
    assert [type(m) for m in made] == [Session, VmSession]
    assert [m.variant for m in made] == ["default", "patched"]
    assert all(m.result_file == slot.path for m, slot in zip(made, s.schedule.slots))


def test_a_calibration_names_its_directory_and_sessions_its_own_way(cat, tmp_path):
    req = request(cat, "default", results=tmp_path, stem="calibrate-zero_null",
                  variant=lambda slot: f"session {slot.session}")
    s = launch.start_series(req, launch.resolve_series(cat, req))
    assert re.fullmatch(rf"{STAMP}-calibrate-zero_null", s.schedule.directory.name)
    assert [s.make(slot).variant for slot in s.schedule.slots] == [f"session {i}"
                                                                for i in (1, 2, 3)]


def _started(cat: Catalog, tmp_path: Path) -> series.SeriesLoop:
    req = request(cat, "default", "busy-poll", sessions=2, results=tmp_path / "results")
    return launch.start_series(req, launch.resolve_series(cat, req))


def _wrote(slot: series.Slot) -> None:
    slot.path.write_text("{}\n")        # what a session that started leaves


def test_sessions_that_did_not_finish_are_set_aside(cat, tmp_path):
    s = _started(cat, tmp_path)
    fine, failed, stopped = s.schedule.slots[:3]
    for slot in (fine, failed, stopped):
        _wrote(slot)
    s.ends[fine] = ev.Finished(Summary(n=5, median=1.0))
    s.ends[failed] = ev.Failed("the worker died", run=3)
    s.ends[stopped] = ev.Failed("interrupted", run=1, interrupted=True)
    over = launch.finish(s, interrupted=True)
    assert over.moved == {failed: failed.path.with_name(failed.path.name + ".failed"),
                          stopped: stopped.path.with_name(stopped.path.name + ".stopped")}
    assert over.refused is None and not over.removed
    assert fine.path.exists() and all(p.exists() for p in over.moved.values())


def test_a_series_refused_as_bad_input_leaves_no_directory(cat, tmp_path):
    s = _started(cat, tmp_path)
    s.ends[s.schedule.slots[0]] = ev.Failed("param x: no", bad_input=True)
    over = launch.finish(s)
    assert over.refused == "param x: no" and over.removed
    assert list((tmp_path / "results").iterdir()) == []


def test_a_series_where_nothing_was_written_leaves_no_directory_even_stopped(cat, tmp_path):
    """Stopped while its first session built or booted, a series has nothing to keep; a
    stopped session's file is kept, and its directory with it."""
    empty = _started(cat, tmp_path)
    assert launch.finish(empty, interrupted=True).removed
    assert not empty.schedule.directory.exists()
    kept = _started(cat, tmp_path)
    first = kept.schedule.slots[0]
    _wrote(first)
    kept.ends[first] = ev.Failed("interrupted", interrupted=True)
    assert not launch.finish(kept, interrupted=True).removed
    assert first.path.with_name("s01.jsonl.stopped").exists()
    gone = _started(cat, tmp_path)
    assert launch.finish(gone).removed and not gone.schedule.directory.exists()


def test_a_refused_plan_with_a_session_done_keeps_its_directory(cat, tmp_path):
    s = _started(cat, tmp_path)
    first, second = s.schedule.slots[:2]
    _wrote(first)
    s.ends[first] = ev.Finished(Summary(n=5, median=1.0))
    s.ends[second] = ev.Failed("param x: no", bad_input=True)
    over = launch.finish(s)
    assert over.refused is None and not over.removed and first.path.exists()


# --------------------------------------------------------------------------- a series of variants

@pytest.mark.parametrize("label, folder", [
    ("block_size=4096", "block_size=4096"),
    ("cpu=split", "cpu=split"),
    ("plan-a", "plan-a"),
    ("cpu=split block_size=4096", "cpu=split_block_size=4096"),     # a space: no shell word
    ("name=a/b", "name=a_b"),                   # no directory inside another
    ("..", "_."),                               # neither the parent nor hidden
    (".hidden", "_hidden"),
    ("-x=1", "_x=1"),                           # no option to the commands it is given to
    ("name=a\nb", "name=a_b"),                  # one line in every listing
    ("name=a,b", "name=a_b"),                   # compare reads a,b as two files
])
def test_a_variant_becomes_a_directory_name_safely(label, folder):
    assert series.variant_directories([label, "other"]) == [folder, "other"]


def test_a_long_variant_name_is_cut_and_ends_with_its_digest():
    long = "name=" + "x" * 120
    (cut,) = series.variant_directories([long])
    assert len(cut) == series.MAX_DIRECTORY and cut.startswith("name=xxx")
    assert re.fullmatch(r"name=x+-[0-9a-f]{8}", cut)
    assert series.variant_directories([long[:-1] + "y"]) != [cut]     # not one directory


@pytest.mark.parametrize("labels", [["name=a/b", "name=a_b"], ["cpu=Split", "cpu=split"]])
def test_two_variants_that_would_share_a_directory_each_get_their_own(labels):
    # (on a case-insensitive file system Split and split are one directory too)
    names = series.variant_directories(labels)
    assert len({n.casefold() for n in names}) == 2
    assert all(re.fullmatch(r"[A-Za-z0-9_.+=-]+-[0-9a-f]{8}", n) for n in names)
    assert series.variant_directories(labels) == names      # the same names every time


@pytest.mark.parametrize("labels, says", [
    (["block_size=512", "block_size=512"], "variant 'block_size=512' twice"),
    (["", "a"], "a variant of the series has no name"),
    (["x=" + "y" * 200, "a"], "a name of 202 characters (at most 200)"),
])
def test_variants_a_series_cannot_name_are_refused_in_one_line(labels, says):
    message = refused(series.variant_directories, labels)
    assert says in message and "\n" not in message


def variants_request(cat: Catalog, sessions: int = 2, kernels: tuple[str, ...] = ("default",),
                     **more) -> launch.SeriesRequest:
    plan = cat.plan_for("zero_null")
    two = tuple((f"block_size={b}", replace(plan, params={"block_size": b}))
                for b in (512, 4096))
    return launch.SeriesRequest(plan, kernels, sessions, variants=two, **more)


def test_kernels_and_variants_together_are_refused_saying_what_to_do(cat, isolated):
    says = refused(launch.check_series, variants_request(cat, kernels=("default", "busy-poll")))
    assert says == launch.KERNELS_AND_VARIANTS and "\n" not in says
    assert "keep one --kernel" in says and "one value a --param" in says
    assert refused(launch.check_series, variants_request(cat, sessions=1)).startswith(
        "--sessions 1: comparing variants needs at least 2 sessions of each")
    assert not (isolated / "results").exists()


def test_a_series_of_variants_alternates_them_each_in_its_directory(cat, tmp_path):
    req = variants_request(cat, sessions=2, results=tmp_path)
    launch.check_series(req)
    rps = launch.resolve_series(cat, req)
    assert {k: rp.params["block_size"] for k, rp in rps.items()} == {
        "block_size=512": 512, "block_size=4096": 4096}
    s = launch.start_series(req, rps)
    assert re.fullmatch(rf"{STAMP}-zero_null", s.schedule.directory.name)
    assert sorted(p.name for p in s.schedule.directory.iterdir()) == [
        "block_size=4096", "block_size=512"]
    assert [(x.variant, x.session) for x in s.schedule.slots] == [
        ("block_size=512", 1), ("block_size=4096", 1), ("block_size=4096", 2),
        ("block_size=512", 2)]
    assert [x.path.relative_to(s.schedule.directory).as_posix() for x in s.schedule.slots[:2]] == [
        "block_size=512/s01.jsonl", "block_size=4096/s01.jsonl"]
    assert {x.kernel for x in s.schedule.slots} == {"default"}
    made = [s.make(slot) for slot in s.schedule.slots[:2]]      # made, not started
    assert [m.variant for m in made] == ["block_size=512", "block_size=4096"]
    assert [m.rp.params["block_size"] for m in made] == [512, 4096]
    assert s.schedule.batch(s.schedule.slots[2]) == Batch(id=s.schedule.id, interleaved=False, variants=2,
                                                   session=2)


def test_a_series_of_variants_says_each_sessions_variant_and_kernel(cat, tmp_path):
    from hotloop.cli.series import bracket, document
    req = variants_request(cat, sessions=2, results=tmp_path)
    s = launch.start_series(req, launch.resolve_series(cat, req))
    first = s.schedule.slots[0]
    line = bracket(s.schedule, first, "series_session")
    assert (line["variant"], line["kernel"], line["session"]) == ("block_size=512", "default", 1)
    _wrote(first)
    s.ends[first] = ev.Finished(Summary(n=3, median=1.0))
    doc = document(s, {}, False)
    assert doc["variants"] == ["block_size=512", "block_size=4096"] == doc["folders"]
    assert doc["kernels"] == ["default"]
    assert doc["order"] == ["block_size=512 s01", "block_size=4096 s01", "block_size=4096 s02",
                            "block_size=512 s02"]
    assert [(x["variant"], x["kernel"], x["session"]) for x in doc["done"]] == [
        ("block_size=512", "default", 1)]


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


@pytest.mark.parametrize("text, says", [
    ("block_size", "vs 'block_size': expected KEY=VALUE (a workload param, or cpu)"),
    ("blok_size=1", "vs 'blok_size=1': workload zero_null has no param 'blok_size'"),
    ("block_size=abc", "vs 'block_size=abc': "),
    ("cpu=nope", "vs cpu nope: "),
    ("kernel=busy-poll", "vs 'kernel=busy-poll': the vs kernel field compares kernels"),
    ("block_size=512", "vs block_size=512: the form's own settings (the baseline)"),
    ("block_size=1 block_size=2", "vs 'block_size=2': block_size twice"),
])
def test_vs_refuses_what_it_cannot_run_in_one_line(cat, text, says):
    plan = replace(cat.plan_for("zero_null"), params={"block_size": 512})
    message = refused(variants.versus, cat, plan, text)
    assert message.startswith(says) and "\n" not in message, message
