"""Numbers as people read them: SI prefixes, one scale for a range or an axis, bucket labels,
per-cent changes, p-values and durations.  Every view (report, compare formats, console) formats
through here, so a number reads the same wherever it is shown.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from hotloop.analysis.symbols import pct3


class Span(Protocol):
    """A bucket: what a label needs of it."""
    @property
    def low(self) -> float: ...
    @property
    def high(self) -> float: ...

_PREFIXES = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"),
             (1e-6, "µ"), (1e-9, "n")]
# A per-op cost reads best as plain digits: "3694 ns/op", "12345 cycles/op", not "3.69 kns/op".
PER_OP_PLAIN_BELOW = 1e5


# A time counted in nanoseconds (an `extra` named *_ns, tcp_rr's lat_p50_ns) is shown in
# seconds with a prefix: 39.5e6 ns reads "39.5 ms", as a person says it, never "39.5 Mns".
# Per op it stays nanoseconds ("3694 ns/op": see PER_OP_PLAIN_BELOW).
_NANOSECONDS = "ns"


def _base(unit: str) -> tuple[float, str]:
    """(what a value in `unit` is divided by, the unit it then reads in)."""
    return (1e9, "s") if unit == _NANOSECONDS else (1.0, unit)


def _plain_per_op(top: float, unit: str) -> bool:
    return "/op" in unit and top < PER_OP_PLAIN_BELOW


def scale(top: float, unit: str = "") -> tuple[float, str]:
    """(divisor, prefix) that puts numbers up to `top` on one SI scale."""
    top = abs(top)
    if _plain_per_op(top, unit) or top == 0 or not math.isfinite(top):
        return 1.0, ""
    return next(((sc, p) for sc, p in _PREFIXES if top >= sc), (1e-9, "n"))


def axis_scale(top: float, unit: str) -> tuple[float, str]:
    """(divisor, label) so values on an axis read as e.g. '12.5' with 'MB/s'."""
    base, unit = _base(unit)
    divisor, prefix = scale(top / base, unit)
    return divisor * base, f"{prefix}{unit}"


def _decimals(value: float, digits: int) -> int:
    """Decimals that give `value` `digits` significant digits (none past the point for big ones)."""
    return max(0, digits - 1 - math.floor(math.log10(abs(value))))


def width_decimals(width: float) -> int:
    """Decimals that tell apart bucket edges `width` apart: 0.25 -> 1 (2 would be noise)."""
    return max(0, -math.floor(math.log10(width) + 1e-9)) if width > 0 else 0


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """12345678 B/s -> '12.3 MB/s'; per-op units stay plain digits: '3694 ns/op'."""
    base, unit = _base(unit)
    value /= base
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    divisor, prefix = scale(value, unit)
    scaled = value / divisor
    return f"{scaled:.{_decimals(scaled, digits)}f} {prefix}{unit}".strip()


def si_range(lo: float, hi: float, unit: str = "", digits: int = 3) -> str:
    """'15.6-22.7 MB/s': both ends on the scale of the larger, the unit once."""
    base, unit = _base(unit)
    lo, hi = lo / base, hi / base
    top = max(abs(lo), abs(hi))
    if not (math.isfinite(lo) and math.isfinite(hi)) or top == 0:
        return f"{si(lo, unit)} - {si(hi, unit)}"
    divisor, prefix = scale(top, unit)
    decimals = _decimals(top / divisor, digits)
    return f"{lo / divisor:.{decimals}f}-{hi / divisor:.{decimals}f} {prefix}{unit}".strip()


def bucket_labels(buckets: Sequence[Span], unit: str = "", with_unit: bool = True) -> list[str]:
    """'13-14 MB/s' style labels, one SI scale for all, as precise as the width needs."""
    if not buckets:
        return []
    base, unit = _base(unit)
    divisor, prefix = scale(max(abs(b.high) for b in buckets) / base or 1.0, unit)
    divisor *= base
    decimals = width_decimals((buckets[0].high - buckets[0].low) / divisor)
    suffix = f" {prefix}{unit}" if with_unit else ""
    return [f"{b.low / divisor:.{decimals}f}-{b.high / divisor:.{decimals}f}{suffix}".rstrip()
            for b in buckets]


def number(v: float | None, unit: str = "", signed: bool = False) -> str:
    """A table cell for people: SI prefixes, per-op costs with four significant digits."""
    if v is None:
        return "-"
    if _plain_per_op(abs(v), unit):
        s = f"{v:.0f} {unit}" if abs(v) >= 1000 else f"{v:.4g} {unit}"
    else:
        s = si(v, unit)
    return "+" + s if signed and v > 0 else s


def plain(v: float | None, signed: bool = False) -> str:
    """For tables a tool may compute on (org's TBLFM, csv): digits only, 5 significant."""
    if v is None:
        return ""
    if abs(v) >= 1e5:
        s = f"{v:.0f}"
    else:
        s = f"{v:.5g}"
        if "e" in s:
            s = f"{v:.3e}"
    return "+" + s if signed and v > 0 else s


def pct(v: float | None) -> str:
    """A signed % change at three significant digits, as the symbol rows' ("+530%",
    "+27.0%", "-3.46%"): a fourth digit claimed a precision no interval here has."""
    return pct3(v)


def p_value(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.4f}" if v >= 1e-4 else f"{v:.1e}"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s" if seconds >= 10 else f"{seconds:.1f}s"
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def figure(pct: float) -> str:
    """A percentage in two significant digits, never in exponent form ("1.2e+02%" for an
    assumed noise of 120% said nothing): 3.4, 34, 120, 4266."""
    return f"{pct:.2g}" if abs(pct) < 100 else f"{pct:.0f}"


def too_noisy(spread_pct: float | None = None, short: bool = False,
              sessions_pct: float | None = None, calibrated: bool = False) -> str:
    """No verdict because the interval is too wide for any change to be told (it, or the
    smallest change that could be found, beyond stats.TOO_NOISY_PCT): the words compare and
    the console both use, for a newcomer ("detect ≥432%" told nobody).  What made it wide:
    the runs' spread, or `sessions_pct`, the sessions' own offsets (a calibration's, when
    `calibrated`), which more runs do not narrow."""
    if sessions_pct is not None:
        what = (f"calibrated session noise {sessions_pct:.0f}%" if calibrated else
                f"sessions differ by {sessions_pct:.0f}%")
        fix = "run more sessions"
    elif spread_pct is not None:
        what, fix = f"runs spread {spread_pct:.0f}%", "calibrate or run more"
    else:
        return "too noisy to call"
    return f"too noisy: {what}" if short else f"too noisy to call: {what}; {fix}"
