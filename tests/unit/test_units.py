"""Numbers as people read them, one rule each: SI prefixes, per-op costs, bucket labels; and the
running statistics the console keeps agree with the ones the reports compute."""
from __future__ import annotations

import random

import pytest

from hotloop.analysis.symbols import sig3
from hotloop.render import units
from hotloop.render.units import pct
from hotloop.stats import Bucket, RunningStats, histogram, summarize


@pytest.mark.parametrize("value, unit, text", [
    (12_345_678, "B/s", "12.3 MB/s"),
    (3694.2, "ns/op", "3694 ns/op"),
    (87.654, "ns/op", "87.7 ns/op"),
    (12_345, "cycles/op", "12345 cycles/op"),       # per-op stays plain below 1e5
    (123_456, "cycles/op", "123 kcycles/op"),
    (0, "B/s", "0 B/s"),
    (float("nan"), "B/s", "nan B/s"),
])
def test_si(value, unit, text):
    assert units.si(value, unit) == text


@pytest.mark.parametrize("pct, text", [(3.0, "3"), (3.44, "3.4"), (34.4, "34"), (120.4, "120"),
                                       (4266.0, "4266")])
def test_a_percentage_figure_never_reads_in_exponent_form(pct, text):
    # an assumed noise of 120% read "1.2e+02%" in compare's verdict and header
    assert units.figure(pct) == text


def test_a_range_an_axis_and_bucket_labels_share_one_scale():
    assert units.si_range(15.6e6, 22.7e6, "B/s") == "15.6-22.7 MB/s"
    assert units.axis_scale(22.7e6, "B/s") == (1e6, "MB/s")
    assert units.axis_scale(3694, "ns/op") == (1.0, "ns/op")
    buckets = [Bucket(13e6, 13.5e6, 1, 50.0), Bucket(13.5e6, 14e6, 1, 50.0)]
    assert units.bucket_labels(buckets, "B/s") == ["13.0-13.5 MB/s", "13.5-14.0 MB/s"]
    assert units.bucket_labels(buckets, "B/s", with_unit=False) == ["13.0-13.5", "13.5-14.0"]
    assert units.width_decimals(0.25) == 1 and units.width_decimals(5) == 0


def test_table_cells():
    assert units.number(None) == "-" and units.number(1234.4, "ns/op") == "1234 ns/op"
    assert units.number(2e6, "B/s", signed=True) == "+2.00 MB/s"
    assert units.pct(1.234) == "+1.23%" and units.pct(None) == "-"
    assert units.p_value(0.5) == "0.5000" and units.p_value(1e-7) == "1.0e-07"
    assert units.plain(123456.7) == "123457" and units.plain(1.5, signed=True) == "+1.5"
    assert units.duration(5) == "5.0s" and units.duration(3700) == "1h01m"


def test_running_statistics_match_the_reports_on_any_values():
    rng = random.Random(7)
    for _ in range(200):
        values = [rng.choice([rng.gauss(100, 10), rng.uniform(0, 1e6), 5.0])
                  for _ in range(rng.randint(1, 300))]
        live = RunningStats()
        for v in values:
            live.add(v)
        got, want = live.summary(), summarize(values)
        assert got is not None and want is not None
        assert got.median == want.median and got.n == want.n
        assert got.mean == pytest.approx(want.mean) and got.stdev == pytest.approx(want.stdev)
        assert [(b.low, b.count) for b in live.histogram()] == \
            [(b.low, b.count) for b in histogram(values)]


def test_a_time_in_nanoseconds_reads_in_seconds_everywhere() -> None:
    """lat_p50_ns (tcp_rr) is nanoseconds: 39.5e6 of them is 39.5 ms wherever it is shown
    (compare's tables, the console, `hotloop show`), never "39.5 Mns"; per op it stays ns."""
    from hotloop.render.report import extra_si
    from hotloop.render.units import axis_scale, number, si, si_range
    assert si(39.5e6, "ns") == number(39.5e6, "ns") == extra_si("lat_p50_ns", 39.5e6) == "39.5 ms"
    assert si(812.0, "ns") == "812 ns" and number(-1.2e6, "ns", signed=True) == "-1.20 ms"
    assert si_range(39.2e6, 46.9e6, "ns") == "39.2-46.9 ms"
    assert axis_scale(46.9e6, "ns") == (1e6, "ms")
    assert number(3694, "ns/op") == "3694 ns/op"


@pytest.mark.parametrize("v, said", [
    (529.75, "+530%"), (9.999, "+10.0%"), (-3.0211, "-3.02%"), (0.09999, "+0.100%"),
    (41.94, "+41.9%"), (-1.78e-13, "+0%"), (float("nan"), "-"), (float("inf"), "-"),
    (None, "-"), (1234.5, "+1234%")])
def test_a_change_is_said_at_three_significant_digits(v, said):
    """Every format's % change: three digits however it rounds, rounding's dust no change,
    and nothing that is not a number printed as one."""
    assert pct(v) == said


def test_three_digits_never_spell_a_tiny_number_in_full():
    assert sig3(1e-300) == "1e-300" and sig3(0.000123456) == "0.000123"
