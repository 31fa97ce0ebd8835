"""A series' life (hotloop.run.series_run.SeriesRun), driven with stand-in sessions that write
forged result files with known numbers (tests/forged_session.py): checked before anything is
made, each side resolved once, stopped, finished (the unfinished set aside, an empty directory
removed, a file deleted or changed since lost), its results kept as they came; and its design
in its headers, so that compare words the sides as the series did.  No process started."""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
from dataclasses import replace
from pathlib import Path

import forge
import pytest
from forged_session import Forged, with_vm_kernel

from hotloop import events as ev
from hotloop import results
from hotloop.analysis import compare
from hotloop.catalog import Catalog, ResolvedPlan
from hotloop.cli import series as series_cli
from hotloop.errors import HotloopError
from hotloop.record import Batch, Header
from hotloop.render import compare_formats
from hotloop.run import series, series_run
from hotloop.run.series_run import SeriesRequest, SeriesRun, SeriesSide
from hotloop.run.session import Session
from hotloop.run.vm import VmSession

STAMP = r"\d{8}-\d{6}"


@pytest.fixture
def cat(tmp_path: Path, isolated: Path) -> Catalog:
    return with_vm_kernel(tmp_path)


def request(cat: Catalog, *kernels: str, sessions: int = 2, **more) -> SeriesRequest:
    return SeriesRequest(cat.plan_for("zero_null"), kernels, sessions, **more)


def variants_request(cat: Catalog, sessions: int = 2, kernels=("default",),
                     **more) -> SeriesRequest:
    plan = cat.plan_for("zero_null")
    two = tuple(SeriesSide(f"block_size={b}", replace(plan, params={"block_size": b}))
                for b in (512, 4096))
    return SeriesRequest(plan, kernels, sessions, variants=two, **more)


def refused(call, *args) -> str:
    with pytest.raises(HotloopError) as e:
        call(*args)
    return str(e.value)


def started(cat: Catalog, req: SeriesRequest, ends: dict[tuple[str, int], str] | None = None,
            on_start=None) -> tuple[SeriesRun, list[Forged]]:
    made: list[Forged] = []

    def make(slot: series.Slot, rp: ResolvedPlan) -> Forged:
        made.append(Forged(slot, rp, (ends or {}).get((slot.variant, slot.session),
                                                      "finished"), on_start))
        return made[-1]
    run = SeriesRun(req, make)
    run.resolve(cat)
    run.start()
    return run, made


async def drive_async(run: SeriesRun) -> list[series.SeriesEvent]:
    return [e async for e in run.events()]


def drive(run: SeriesRun) -> list[series.SeriesEvent]:
    return asyncio.run(drive_async(run))


# --------------------------------------------------------------------------- checked, resolved

def test_a_series_runs_on_this_machine_only(cat):
    assert refused(SeriesRun, request(cat, "default", host="lab1")) == \
        "--sessions runs a series on this machine; --host runs one session on each host"
    SeriesRun(request(cat, "default"))


@pytest.mark.parametrize("kernels, sessions, says", [
    (("default", "default"), 3, "--kernel 'default' twice: each kernel of a series once"),
    (("default", "busy-poll"), 1, "--sessions 1: comparing kernels needs at least 2 sessions"),
    (("default",), 100, "--sessions 100: at most 99 a kernel"),
    (("..",), 3, "--kernel '..': not a name a directory can take"),
])
def test_a_series_is_checked_before_anything_is_made(cat, isolated, kernels, sessions, says):
    assert refused(SeriesRun, request(cat, *kernels, sessions=sessions)).startswith(says)
    assert not (isolated / "results").exists()


def test_kernels_and_variants_together_are_refused_saying_what_to_do(cat, isolated):
    says = refused(SeriesRun, variants_request(cat, kernels=("default", "busy-poll")))
    assert says == series_run.KERNELS_AND_VARIANTS and "\n" not in says
    assert "keep one --kernel" in says and "one value a --param" in says
    assert refused(SeriesRun, variants_request(cat, sessions=1)).startswith(
        "--sessions 1: comparing variants needs at least 2 sessions of each")
    assert not (isolated / "results").exists()


def test_a_batch_plan_is_refused_a_series(cat):
    run = SeriesRun(SeriesRequest(cat.plan_for("page-pool"), ("default",), 2))
    assert refused(run.resolve, cat) == (
        "--sessions runs a series of one variant; page-pool is a batch of 3 (its params hold "
        "lists): pick one value of each with --param")


def test_each_side_is_resolved_once(cat, monkeypatch):
    calls: list[str] = []
    real = cat.resolve
    monkeypatch.setattr(cat, "resolve", lambda plan, **kw: calls.append(plan.kernel) or
                        real(plan, **kw))
    plan = cat.plan_for("zero_null")
    given = real(replace(plan, params={"block_size": 4096}))
    req = SeriesRequest(plan, ("default",), 2, variants=(
        SeriesSide("block_size=512", replace(plan, params={"block_size": 512})),
        SeriesSide("block_size=4096", given.plan, given)))
    run = SeriesRun(req)
    rps = run.resolve(cat)
    assert rps["block_size=4096"] is given          # the caller's: not resolved again
    assert calls == ["default"]                     # the other side's, once
    assert run.resolve(cat) is rps and calls == ["default"]
    assert run.consent() == []


def test_a_series_gets_its_directory_and_each_session_its_kernel(cat, tmp_path):
    run = SeriesRun(request(cat, "default", "patched", results=tmp_path))
    assert [rp.kernel.name for rp in run.resolve(cat).values()] == ["default", "patched"]
    sch = run.start()
    assert re.fullmatch(rf"{STAMP}-zero_null", sch.directory.name)
    assert sorted(p.name for p in sch.directory.iterdir()) == ["default", "patched"]
    assert run.loop is not None
    made = [run.loop.make(slot) for slot in sch.slots[:2]]      # made, not started
    assert [type(m) for m in made] == [Session, VmSession]
    assert [m.variant for m in made] == ["default", "patched"]
    assert all(m.result_file == slot.path for m, slot in zip(made, sch.slots))


def test_a_calibration_names_its_directory_and_sessions_its_own_way(cat, tmp_path):
    run = SeriesRun(request(cat, "default", sessions=3, results=tmp_path,
                            stem="calibrate-zero_null",
                            session_name=lambda slot: f"session {slot.session}"))
    run.resolve(cat)
    sch = run.start()
    assert re.fullmatch(rf"{STAMP}-calibrate-zero_null", sch.directory.name)
    assert run.loop is not None
    assert [run.loop.make(slot).variant for slot in sch.slots] == [
        f"session {i}" for i in (1, 2, 3)]


def test_a_series_of_variants_alternates_them_each_in_its_directory(cat, tmp_path):
    run = SeriesRun(variants_request(cat, results=tmp_path))
    assert {k: rp.params["block_size"] for k, rp in run.resolve(cat).items()} == {
        "block_size=512": 512, "block_size=4096": 4096}
    sch = run.start()
    assert sorted(p.name for p in sch.directory.iterdir()) == [
        "block_size=4096", "block_size=512"]
    assert [(x.variant, x.session) for x in sch.slots] == [
        ("block_size=512", 1), ("block_size=4096", 1), ("block_size=4096", 2),
        ("block_size=512", 2)]
    assert {x.kernel for x in sch.slots} == {"default"}
    assert sch.batch(sch.slots[2]) == Batch(
        id=sch.id, interleaved=False, variants=2, session=2,
        sides=("block_size=512", "block_size=4096"), differs=("params.block_size",),
        sessions=2, position=3)


# --------------------------------------------------------------------------- driven, finished

def test_the_results_are_kept_as_they_came_and_are_what_the_files_hold(cat, tmp_path):
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path))
    kinds = [type(e).__name__ for e in drive(run)]
    assert kinds.count("Begins") == kinds.count("Ends") == 4
    over = run.finish()
    assert not over.failed and not over.moved and not over.removed and not over.interrupted
    assert over.counts() == {"default": 2, "busy-poll": 2}
    for slot, kept in over.results.items():
        read = results.read(slot.path)
        assert kept.path == slot.path and kept.digest == read.digest
        assert kept.header == read.header and kept.values == read.values
        assert kept.finished == read.finished and kept.warmups == read.warmups
    inputs = over.compared()
    assert inputs is not None and inputs.left_out == []
    assert inputs.given == [f"{run.schedule.folder(k)}/" for k in ("default", "busy-poll")]
    assert [[r.header.kernel.name for r in side] for side in inputs.sides] == [
        ["default", "default"], ["busy-poll", "busy-poll"]]


def test_the_unfinished_are_set_aside_and_a_side_without_any_left_out(cat, tmp_path):
    ends = {("busy-poll", 1): "failed", ("busy-poll", 2): "failed"}
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path), ends)
    drive(run)
    over = run.finish()
    assert [(s.variant, s.session) for s in over.failed] == [("busy-poll", 1),
                                                             ("busy-poll", 2)]
    assert all(p.name.endswith(".jsonl.failed") and p.exists() for p in over.moved.values())
    inputs = over.compared()
    assert inputs is not None and len(inputs.sides) == 1 and inputs.left_out == ["busy-poll"]


def test_a_stopped_series_starts_no_other_session_and_keeps_what_ran(cat, tmp_path):
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path),
                        on_start=lambda s: s.slot.position == 1 and run.stop())
    drive(run)
    assert len(made) == 2 and made[1].stopped      # the running one asked to stop, no third
    over = run.finish(interrupted=True)
    assert over.interrupted and [s.variant for s in over.done] == ["default", "busy-poll"]
    assert not over.removed and over.schedule.directory.is_dir()


def test_a_stopped_session_is_set_aside_and_stops_the_series(cat, tmp_path):
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path),
                        {("busy-poll", 1): "stopped"})
    drive(run)
    over = run.finish()
    assert len(made) == 2 and over.interrupted
    (slot,) = over.stopped
    assert over.moved[slot].name == "s01.jsonl.stopped" and over.moved[slot].exists()
    assert not over.removed


def test_a_series_refused_as_bad_input_leaves_no_directory(cat, tmp_path):
    run, made = started(cat, request(cat, "default", "busy-poll",
                                     results=tmp_path / "results"), {("default", 1): "refused"})
    drive(run)
    over = run.finish()
    assert len(made) == 1 and over.refused == "param x: no" and over.removed
    assert list((tmp_path / "results").iterdir()) == []


def test_a_refused_plan_with_a_session_done_keeps_its_directory(cat, tmp_path):
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path),
                        {("busy-poll", 1): "refused"})
    drive(run)
    over = run.finish()
    first = run.schedule.slots[0]
    assert len(made) == 2 and over.refused is None and not over.removed
    assert list(over.results) == [first] and first.path.exists()


def test_a_series_stopped_before_anything_was_written_leaves_no_directory(cat, tmp_path):
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path))
    over = run.finish(interrupted=True)         # stopped while its first session built
    assert over.removed and not over.schedule.directory.exists() and not made


def test_a_file_deleted_or_changed_since_its_session_finished_is_lost(cat, tmp_path):
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path))
    drive(run)
    first, second, third = run.schedule.slots[:3]
    first.path.unlink()
    forge.zero_null(second.path, 1_000_000)         # replaced by another session's file
    third.path.unlink()
    third.path.mkdir()
    over = run.finish()
    why = {s: over.ends[s].message for s in over.failed}
    assert list(why) == [first, second, third]
    assert why[first].startswith(f"{first.path}: gone since the session finished")
    assert why[second] == f"{second.path}: replaced or changed since the session finished"
    assert why[third] == f"{third.path}: no longer a file since the session finished"
    assert list(over.results) == [run.schedule.slots[3]]


def test_a_file_replaced_as_its_session_ends_is_lost(cat, tmp_path):
    """Replaced between its last line and the series' look at it (its Ends): the file under
    the name is another (a new inode since its header), so the session is lost, not judged
    on what the other file holds."""
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path))
    first = run.schedule.slots[0]

    async def replacing() -> None:
        async for e in run.events():
            if isinstance(e, ev.Finished) and run.current is made[0]:
                first.path.unlink()
                first.path.write_text("not a result line\n")
    asyncio.run(replacing())
    over = run.finish()
    assert over.failed == [first]
    assert over.ends[first].message == \
        f"{first.path}: replaced or changed since the session finished"


class HeldHash:
    """hashlib for series_run whose first sha256 waits, once it has begun, until the test lets
    it go: a cancel that lands while a finished session's file is being hashed."""

    def __init__(self) -> None:
        self.begun, self.go = threading.Event(), threading.Event()

    def sha256(self):
        real = hashlib.sha256()
        if self.begun.is_set():
            return real
        held = self

        class Held:
            def update(self, chunk: bytes) -> None:
                held.begun.set()
                held.go.wait(timeout=60)
                real.update(chunk)

            def hexdigest(self) -> str:
                return real.hexdigest()
        return Held()


def test_a_session_finished_as_the_series_is_cancelled_is_kept(cat, tmp_path, monkeypatch):
    held = HeldHash()
    monkeypatch.setattr(series_run, "hashlib", held)
    run, made = started(cat, request(cat, "default", "busy-poll", results=tmp_path))

    async def go() -> None:
        task = asyncio.ensure_future(drive_async(run))
        await asyncio.to_thread(held.begun.wait, 60)    # the first session's file hashing
        task.cancel()                                   # Ctrl-C
        with pytest.raises(asyncio.CancelledError):
            await task
        held.go.set()
    asyncio.run(go())
    over = run.finish(interrupted=True)
    first = run.schedule.slots[0]
    assert len(made) == 1 and not over.failed and over.interrupted
    assert list(over.results) == [first] and over.moved == {}
    assert first.path.exists() and over.results[first].digest == results.read(first.path).digest


def test_a_series_of_variants_says_each_sessions_variant_and_kernel(cat, tmp_path):
    run, _ = started(cat, variants_request(cat, results=tmp_path),
                     {("block_size=4096", 2): "failed"})
    first = run.schedule.slots[0]
    line = series_cli.bracket(run.schedule, first, "series_session")
    assert (line["variant"], line["kernel"], line["session"]) == ("block_size=512", "default", 1)
    drive(run)
    doc = series_cli.document(run.finish(), False)
    assert doc["variants"] == ["block_size=512", "block_size=4096"] == doc["folders"]
    assert doc["kernels"] == ["default"] and doc["differs"] == ["params.block_size"]
    assert doc["order"] == ["block_size=512 s01", "block_size=4096 s01", "block_size=4096 s02",
                            "block_size=512 s02"]
    assert [(x["variant"], x["kernel"], x["session"]) for x in doc["done"]] == [
        ("block_size=512", "default", 1), ("block_size=4096", "default", 1),
        ("block_size=512", "default", 2)]
    assert [(x["variant"], x["session"], x["message"]) for x in doc["failed"]] == [
        ("block_size=4096", 2, "the worker died")]


# --------------------------------------------------------------------------- the design

def test_the_design_is_what_the_sides_differ_in(cat):
    plan = cat.plan_for("zero_null")
    rps = [cat.resolve(replace(plan, kernel=k)) for k in ("default", "busy-poll")]
    assert series_run.design(rps) == ("kernel",)
    rps = [cat.resolve(replace(plan, params={"block_size": b}, cpu=c))
           for b, c in ((512, "default"), (4096, "split"))]
    assert series_run.design(rps) == ("cpu", "params.block_size")
    assert series_run.design(rps[:1]) == ()


def test_compare_of_a_series_directories_words_its_design_as_the_series_did(cat, tmp_path):
    run, _ = started(cat, variants_request(cat, results=tmp_path))
    drive(run)
    over = run.finish()
    inputs = over.compared()
    assert inputs is not None
    header = Header.from_json(json.loads(over.schedule.slots[0].path.read_text()
                                         .splitlines()[0])["header"])
    assert header.batch is not None and header.batch.differs == ("params.block_size",)
    assert header.batch.sides == ("block_size=512", "block_size=4096")
    assert (header.batch.sessions, header.batch.position) == (2, 1)
    said = compare.compare_sides(inputs.sides, inputs.given)            # the series'
    again = compare.load_and_compare(inputs.given)                       # compare DIR/A/ DIR/B/
    for comp in (said, again):
        text = compare_formats.render(comp, "text")
        assert comp.batch and "the variants differ in: " in text
        assert "differs in more than the kernel" not in text


def test_files_without_the_design_read_and_compare_as_before(tmp_path):
    dirs = []
    for side, bs in (("A", 512), ("B", 4096)):
        for i in (1, 2):
            head = forge.header(params={"block_size": bs, "count": 20000, "spin": 0},
                                batch={"id": "old1", "interleaved": False, "variants": 2,
                                       "session": i}, format=4)
            forge.zero_null(tmp_path / side / f"s{i:02d}.jsonl", 2_000_000, block_size=bs,
                            head=head)
        dirs.append(tmp_path / side)
    comp = compare.load_and_compare(dirs)
    assert results.read(dirs[0] / "s01.jsonl").header.batch.differs == ()
    assert not comp.batch
    assert "differs in more than the kernel" in compare_formats.render(comp, "text")


@pytest.mark.parametrize("sides, differs, designed", [
    (["A", "B"], ["params.block_size"], True),
    (["A", "B"], ["cpu", "params.block_size"], True),
    (["A", "B"], ["plan", "kernel"], True),         # two plans, each its own kernel
    (["A", "A'"], [], True),                        # an A/A series' twins
    (["stock", "patched"], ["kernel"], False),      # a series of kernels: the usual report
    ([], [], False),                                # no design said: as before
])
def test_designed_variants_are_a_series_of_variants_not_of_its_kernels(tmp_path, sides,
                                                                        differs, designed):
    batch = {"id": "ser1", "interleaved": False, "variants": 2, "session": 1, "sides": sides,
             "differs": differs}
    read = [[results.read(forge.zero_null(tmp_path / f"{side}.jsonl", 2_000_000,
                                          head=forge.header(batch=batch)))]
            for side in ("a", "b")]
    assert compare.designed(read) is designed
