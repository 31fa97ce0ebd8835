"""A series of sessions (run --sessions N): the balanced order, the numbering, the names it
refuses, the loop's handling of a failed or stopped session, and compare's paired test on a
series' sessions, on forged files with known numbers (no process started)."""
from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import forge
import pytest

from hotloop import events as ev
from hotloop import results
from hotloop.analysis import compare, comparison, series_pairs
from hotloop.analysis.comparison import Verdict
from hotloop.errors import HotloopError
from hotloop.record import Batch, Header, SessionSummary
from hotloop.render.warning_words import words
from hotloop.run import series


def test_two_kernels_alternate_a_b_b_a():
    assert "".join("AB"[k] for k in series.order(2, 4)) == "ABBAABBA"
    assert "".join("AB"[k] for k in series.order(2, 3)) == "ABBAAB"


@pytest.mark.parametrize("kernels", [3, 4, 5])
def test_three_or_more_kernels_run_in_every_position_equally_often(kernels):
    rows = 2 * kernels if kernels % 2 else kernels      # a Williams cycle
    seq = series.order(kernels, rows)
    assert Counter(seq) == dict.fromkeys(range(kernels), rows)
    rounds = [seq[i:i + kernels] for i in range(0, len(seq), kernels)]
    for position in range(kernels):
        assert Counter(r[position] for r in rounds) == dict.fromkeys(range(kernels),
                                                                     rows // kernels)


def test_one_kernel_repeats_its_session():
    assert series.order(1, 5) == [0] * 5


def test_sessions_are_numbered_within_their_kernel_in_its_directory(tmp_path):
    p = series.schedule(["stock", "patched"], 3, tmp_path)
    assert [(s.variant, s.session, s.position) for s in p.slots] == [
        ("stock", 1, 0), ("patched", 1, 1), ("patched", 2, 2), ("stock", 2, 3),
        ("stock", 3, 4), ("patched", 3, 5)]
    assert [s.path.relative_to(tmp_path).as_posix() for s in p.slots[:3]] == [
        "stock/s01.jsonl", "patched/s01.jsonl", "patched/s02.jsonl"]
    assert (tmp_path / "stock").is_dir() and (tmp_path / "patched").is_dir()
    b = p.batch(p.slots[2])
    # and the design, its sides and its length, for compare to say what the series did
    assert b == Batch(id=p.id, interleaved=False, variants=2, session=2,
                      sides=("stock", "patched"), sessions=3, position=3)


@pytest.mark.parametrize("kernels, says", [
    (["stock", "stock"], "'stock' twice"),
    (["x y", "x_y"], "one directory (x_y)"),
    (["Stock", "stock"], "one directory (stock)"),
    (["..", "stock"], "not a name a directory can take"),
    (["stock", "-x"], "not a name a directory can take"),
])
def test_kernels_that_would_share_a_directory_are_refused(kernels, says):
    with pytest.raises(HotloopError, match=None) as e:
        series.directory_names(kernels)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_a_kernel_name_with_a_slash_becomes_one_directory():
    assert series.directory_names(["a/b", "c"]) == ["a_b", "c"]


@pytest.mark.parametrize("n, kernels, says", [
    (1, 2, "at least 2 sessions of each"),
    (0, 1, "at least 1"),
    (100, 2, "at most 99"),
])
def test_sessions_out_of_bounds_say_why(n, kernels, says):
    with pytest.raises(HotloopError) as e:
        series.check_sessions(n, kernels)
    assert says in str(e.value)


def test_a_single_session_of_one_kernel_is_allowed():
    series.check_sessions(1, 1)


# --------------------------------------------------------------------------- a variant's directory

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
    with pytest.raises(HotloopError) as e:
        series.variant_directories(labels)
    message = str(e.value)
    assert says in message and "\n" not in message


# --------------------------------------------------------------------------- the loop

class Scripted:
    """A session that yields the end it is given: the loop's control flow, not a run."""
    def __init__(self, slot: series.Slot, end: ev.Event):
        self.slot, self.end = slot, end
        self.gate = None
        self.batch: Batch | None = None
        self.variant = slot.variant
        self.interrupted_by = ""
        self.stopped = False

    title = property(lambda self: self.variant)
    machine = property(lambda self: "")
    until_ci = property(lambda self: None)

    async def events(self) -> AsyncIterator[ev.Event]:
        yield ev.Started(Header(variant=self.variant, batch=self.batch), str(self.slot.path))
        yield self.end

    def stop(self) -> None:
        self.stopped = True


def _drive(tmp_path: Path, ends: dict[tuple[str, int], ev.Event]) -> tuple[series.SeriesLoop, list]:
    p = series.schedule(["A", "B"], 3, tmp_path)
    fine = ev.Finished(SessionSummary(n=5, median=1.0))
    made: list[Scripted] = []

    def make(slot: series.Slot) -> Scripted:
        made.append(Scripted(slot, ends.get((slot.variant, slot.session), fine)))
        return made[-1]
    s = series.SeriesLoop(p, make)

    async def run() -> list[series.SeriesEvent]:
        return [e async for e in s.events()]
    return s, asyncio.run(run()) and made


def test_a_failed_session_does_not_stop_the_others(tmp_path):
    s, made = _drive(tmp_path, {("B", 2): ev.Failed("the worker died", run=3)})
    assert len(made) == 6
    assert [(x.kernel, x.session) for x in s.failed] == [("B", 2)]
    assert len(s.done) == 5
    # each session's header numbers it within its kernel, one id for the series
    assert [m.batch.session for m in made if m.batch] == [1, 1, 2, 2, 3, 3]
    assert len({m.batch.id for m in made if m.batch}) == 1


def test_a_stopped_session_stops_the_series_and_keeps_the_ones_done(tmp_path):
    s, made = _drive(tmp_path, {("B", 2): ev.Failed("interrupted", run=1, interrupted=True)})
    assert len(made) == 3 and [(x.kernel, x.session) for x in s.done] == [("A", 1), ("B", 1)]
    assert not s.failed and s.stopped


def test_a_plan_refused_as_bad_input_stops_the_series(tmp_path):
    s, made = _drive(tmp_path, {("A", 1): ev.Failed("param x: no", bad_input=True)})
    assert len(made) == 1 and not s.done


# --------------------------------------------------------------------------- the pairs test

# The sitting's drift, session by session (round i's level), and B's change in each round:
# the drift is far larger than the change, the change steady within a round.
DRIFT = (1.00, 1.10, 0.92, 1.05, 0.97, 1.08)
FASTER = (1.020, 1.021, 1.019, 1.020, 1.022, 1.018)


def _series(home: Path, sessions: int = 6, batch_id: str = "ser1",
            skip: tuple[int, ...] = ()) -> list[Path]:
    """A and B of one series: session i of each at round i's drift level, B faster."""
    dirs = [home / "A", home / "B"]
    for i in range(1, sessions + 1):
        for side, d in enumerate(dirs):
            if side == 1 and i in skip:
                continue                # that session failed: set aside, not in the dir
            ns = round(forge.NS_512 * DRIFT[i - 1] / (FASTER[i - 1] if side else 1.0))
            head = forge.header(label="AB"[side], variant="AB"[side],
                                batch={"id": batch_id, "interleaved": False, "variants": 2,
                                       "session": i})
            forge.zero_null(d / f"s{i:02d}.jsonl", ns, head=head)
    return dirs


def _primary(comp: comparison.Comparison) -> comparison.Test:
    return next(m.test for m in comp.pairs[0].metrics if m.primary)


def test_a_series_is_tested_on_its_pairs_of_sessions(tmp_path):
    a, b = _series(tmp_path)
    comp = compare.load_and_compare([a, b])
    t = _primary(comp)
    assert comp.pairs[0].method == "pairs" and t.method == "pairs"
    # the change is the mean of the rounds' log ratios of session medians (bytes/s: the
    # same work in less time is B's bytes/s up by FASTER)
    expected = 100 * math.expm1(sum(math.log(f) for f in FASTER) / len(FASTER))
    assert t.change_pct == pytest.approx(expected, abs=0.01)
    assert t.verdict is Verdict.GOOD and t.ci_low is not None and t.ci_low > 1.5
    assert t.sessions_baseline == t.sessions_new == 6
    # unpaired, the drift is session noise and the same 2% is not told from it
    apart = _primary(compare.load_and_compare([a, b], pair_sessions=False))
    assert apart.method == "sessions" and apart.verdict is Verdict.WITHIN_NOISE
    assert apart.change_pct == pytest.approx(expected, abs=0.01)


def test_a_missing_session_leaves_its_pair_out_and_says_so(tmp_path):
    a, b = _series(tmp_path, skip=(3,))
    comp = compare.load_and_compare([a, b])
    t = _primary(comp)
    assert t.method == "pairs" and t.sessions_baseline == 5
    kept = [f for i, f in enumerate(FASTER) if i != 2]
    expected = 100 * math.expm1(sum(math.log(f) for f in kept) / len(kept))
    assert t.change_pct == pytest.approx(expected, abs=0.01)
    assert any("paired on 5 complete pairs" in w and "s03 without its pair" in w
               for w in map(words, comp.warnings)), comp.warnings


def test_too_few_complete_pairs_fall_back_to_the_unpaired_test(tmp_path):
    a, b = _series(tmp_path, sessions=4, skip=(2, 3))
    comp = compare.load_and_compare([a, b])
    assert _primary(comp).method == "sessions"
    assert any("2 complete pairs" in w and "compared unpaired" in w for w in map(words, comp.warnings))


def test_sessions_of_different_series_are_not_paired(tmp_path):
    a, _ = _series(tmp_path / "one", batch_id="ser1")
    _, b = _series(tmp_path / "two", batch_id="ser2")
    assert _primary(compare.load_and_compare([a, b])).method == "sessions"
    ra = [results.read(p) for p in sorted(a.glob("*.jsonl"))]
    rb = [results.read(p) for p in sorted(b.glob("*.jsonl"))]
    assert series_pairs.pairs(ra, rb) is None


def test_a_side_against_itself_is_not_paired_with_itself(tmp_path):
    a, _ = _series(tmp_path)
    t = _primary(compare.load_and_compare([a, a]))
    assert t.method == "exact" and t.verdict is Verdict.NO_CHANGE


def test_the_pairs_test_on_known_numbers():
    # d = log(2) - log(1) in every pair but one: mean and interval are t's on those four
    base = [[1.0] * 5, [2.0] * 5, [4.0] * 5, [8.0] * 5]
    new = [[1.1] * 5, [2.2] * 5, [4.4] * 5, [8.0 * 1.12] * 5]
    o = series_pairs.pairs_test(base, new)
    d = [math.log(1.1)] * 3 + [math.log(1.12)]
    mean = sum(d) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / 3)
    assert o.change_pct == pytest.approx(100 * math.expm1(mean))
    half = 3.182446305284263 * sd / 2          # t(0.975, 3) * sd / sqrt(4)
    assert o.ci_low == pytest.approx(100 * math.expm1(mean - half))
    assert o.ci_high == pytest.approx(100 * math.expm1(mean + half))
    assert o.significant and o.rounds == 4


# --------------------------------------------------------------------------- the command line

@pytest.mark.parametrize("args, says", [
    (["--kernel", "default", "--kernel", "default", "--sessions", "3"], "'default' twice"),
    (["--kernel", "default", "--kernel", "busy-poll", "--sessions", "1"],
     "at least 2 sessions of each"),
    (["--kernel", "default", "--kernel", "busy-poll", "--sessions", "100"], "at most 99"),
    (["--kernel", "default", "--kernel", "nope", "--sessions", "3"], "--kernel nope"),
    (["--sessions", "3", "--host", "lab1"], "--sessions runs a series on this machine"),
    (["--sessions", "3", "--interleave"], "one or the other"),
    (["--sessions", "3", "--out", "x.jsonl"], "--out names one file"),
    (["--sessions", "3", "--param", "count=1,2", "--kernel", "default", "--kernel",
      "busy-poll"], "--sessions alternates kernels or variants, not both"),
    (["--sessions", "3", "--aa", "--kernel", "default", "--kernel", "busy-poll"],
     "--sessions alternates kernels or variants, not both"),
    (["--sessions", "1", "--param", "count=1,2"], "comparing variants needs at least 2"),
    (["--sessions", "3", "--param", "count=1,1"], "the batch names the same variant twice"),
    (["--sessions", "3", "--param", "count=1,2", "--host", "lab1"],
     "--sessions runs a series on this machine"),
    (["--sessions", "3", "--cpu", "default", "--cpu", "nope"], "--cpu nope"),
])
def test_a_series_refused_is_one_line_and_leaves_nothing(isolated, cli, args, says):
    p = cli("run", "zero_null", *args)
    assert p.returncode == 2 and says in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (isolated / "results").exists()


def test_two_kernels_without_sessions_are_a_batch_of_one_session_each(isolated):
    from hotloop import catalog
    from hotloop.cli.parser import parser
    from hotloop.cli.run import variants
    args = parser().parse_args(["run", "zero_null", "--kernel", "default", "--kernel",
                                "busy-poll"])
    todo = variants(catalog.load(), args)
    assert [v.label for v in todo] == ["kernel=default", "kernel=busy-poll"]
    assert [v.rp.kernel.name for v in todo] == ["default", "busy-poll"]


@pytest.mark.parametrize("sessions, method", [(4, "sessions"), (5, "pairs")])
def test_the_paired_test_starts_at_five_complete_pairs(tmp_path, sessions, method):
    a, b = _series(tmp_path, sessions=sessions)
    assert series_pairs.MIN_PAIRS == 5
    assert _primary(compare.load_and_compare([a, b])).method == method


def test_a_batch_plan_with_two_kernels_is_refused_a_series(isolated, cli):
    # its variants alternate as --param K=V1,V2's do; with two kernels too, refused
    p = cli("run", "page-pool", "--sessions", "2", "--kernel", "default", "--kernel",
            "busy-poll")
    assert p.returncode == 2 and "kernels or variants, not both" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (isolated / "results").exists()


def test_a_param_given_picks_one_value_of_a_batch_plan(isolated, cli):
    # page-pool's mode holds a list: --param mode=slow runs slow once, not once a listed mode
    from hotloop import catalog
    from hotloop.cli.parser import parser
    from hotloop.cli.run import variants
    cat = catalog.load()
    one = variants(cat, parser().parse_args(["run", "page-pool", "--param", "mode=slow"]))
    assert [(v.label, v.rp.params["mode"]) for v in one] == [("", "slow")]
    two = variants(cat, parser().parse_args(["run", "page-pool", "--param",
                                             "mode=slow,ptr_ring"]))
    assert [(v.label, v.rp.params["mode"]) for v in two] == [("mode=slow", "slow"),
                                                             ("mode=ptr_ring", "ptr_ring")]
    # so a series of it is one variant: its kernels are what it compares
    p = cli("run", "page-pool", "--param", "mode=slow", "--kernel", "default", "--kernel",
            "busy-poll", "--sessions", "1")
    assert p.returncode == 2 and "comparing kernels needs at least 2" in p.stderr, p.stderr
    assert not (isolated / "results").exists()


def test_a_series_may_give_its_rounds_orders_in_turn():
    """A bisect's step: the revision between GOOD and BAD in every round, GOOD and BAD
    swapping ends; an order that misses a side or names one twice is refused."""
    from hotloop.run.series import order
    assert order(3, 4, ((0, 1, 2), (2, 1, 0))) == [0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0]
    assert order(2, 3) == [0, 1, 1, 0, 0, 1]                # the default: A B B A A B
    for bad in (((0, 1),), ((0, 1, 1),), ((0, 1, 3),)):
        with pytest.raises(ValueError):
            order(3, 2, bad)
