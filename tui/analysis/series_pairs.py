"""The paired test of a series' sessions: session i of one kernel against session i of another.

A series (`run --sessions N`, run.series) runs its kernels' sessions in rounds, A B, B A, A B...:
session i of A and session i of B ran side by side and share the drift of their moment (the
machine warming, the page cache, a neighbour).  The sessions test (significance.sessions_test)
treats every session as independent, so that drift is noise to it; the difference of the two
sessions of a round removes what they share.  Here, one number per round:
d_i = log(median of B's session i) - log(median of A's session i), and a Student t interval on
the mean of the d_i (df = pairs - 1).  It needs no calibration and takes none: what a
calibration measures is the noise of one session, and the noise of a round's difference is
what remains of it after the drift both shared.

What it costs and gains was measured on synthetic series (benchmarks/series_pairs.py,
docs/statistics.md, "Why a series' sessions are paired from 5"): with no drift it loses 4-9
points of power to the unpaired test (it has half the degrees of freedom); with drift across
the sitting it keeps much of its power where the unpaired test loses most of it (10 a kernel,
a drift step as large as the session noise: 67% against 31%); its false alarms stay at 5%
either way, where the unpaired test's fall to 1-2% (the drift widens its interval). So compare
pairs a series' sessions by default from MIN_PAIRS complete pairs (`compare --unpaired` does
not).

Pairs whose other half failed are left out (the test is on the complete ones, and compare says
how many); with fewer than MIN_PAIRS complete pairs, compare tests the sessions unpaired.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# numpy and scipy as significance loads them, once it has checked they have room
from hotloop.analysis.compare_warnings import PairsIncomplete, PairsTooFew
from hotloop.analysis.significance import ALPHA, Outcome, _half, _pct, np, positive, sps, within_spread
from hotloop.results import Result

# Complete pairs for the paired test.  Measured (benchmarks/series_pairs.py, docs/statistics.md): with
# fewer, its df (pairs - 1) against the unpaired test's (2 x sessions - 2) costs more power
# without drift than pairing wins with it (4 a kernel: -9 points without drift, +4 with a
# drift step as large as the session noise); from 5 pairing wins with drift (+8 at 5, +15
# at 6, +36 at 10) and costs 4-9 points without.
MIN_PAIRS = 5


@dataclass(frozen=True)
class SeriesPairs:
    """Two sides that are one series' kernels: which of their sessions ran side by side."""
    index: tuple[tuple[int, int], ...]      # (i in the baseline, j in the new side), by number
    numbers: tuple[int, ...]                # the session numbers of those pairs
    unmatched: tuple[int, ...]              # numbers on one side only (the other failed)

    @property
    def usable(self) -> bool:
        return len(self.index) >= MIN_PAIRS

    def warning(self, base: str, new: str) -> PairsTooFew | PairsIncomplete:
        """What the test was made on, when not every session found its pair."""
        if not self.usable:
            return PairsTooFew(side=new, baseline=base, pairs=len(self.index),
                               needed=MIN_PAIRS, unmatched=self.unmatched)
        return PairsIncomplete(side=new, baseline=base, pairs=len(self.index),
                               unmatched=self.unmatched)


def pairs(base: Sequence[Result], new: Sequence[Result]) -> SeriesPairs | None:
    """The sessions of two sides that are kernels of one series (every header's batch the
    same id, not interleaved, each session numbered once a side), paired by number; None
    when they are not."""
    def numbered(rs: Sequence[Result]) -> dict[int, int] | None:
        out: dict[int, int] = {}
        for i, r in enumerate(rs):
            b = r.header.batch
            if b is None or b.interleaved or b.id is None or b.session is None \
                    or b.session in out:
                return None
            out[b.session] = i
        return out
    nb, nn = numbered(base), numbered(new)
    if nb is None or nn is None:
        return None
    ids = {r.header.batch.id for r in [*base, *new] if r.header.batch is not None}
    if len(ids) != 1:
        return None
    if {r.path.resolve() for r in base} & {r.path.resolve() for r in new}:
        return None                     # a side against itself: no pairs to speak of
    common = sorted(nb.keys() & nn.keys())
    return SeriesPairs(tuple((nb[k], nn[k]) for k in common), tuple(common),
                       tuple(sorted(nb.keys() ^ nn.keys())))


def pairs_test(base: Sequence[Sequence[float]], new: Sequence[Sequence[float]]) -> Outcome:
    """Session i of `base` against session i of `new` (each a list of runs), i over the
    complete pairs: a t interval on the per-pair differences of session log-medians."""
    k = min(len(base), len(new))
    if k == 0 or not all(len(s) for s in [*base, *new]):
        raise ValueError("pairs_test needs a run in every session of at least one pair")
    base, new = base[:k], new[:k]
    log = positive(*base, *new)
    ma = np.array([float(np.median(s)) for s in base])
    mb = np.array([float(np.median(s)) for s in new])
    ya, yb = (np.log(ma), np.log(mb)) if log else (ma, mb)
    d = yb - ya
    ca, cb = float(np.mean(ya)), float(np.mean(yb))
    centre_a = math.exp(ca) if log else ca
    centre_b = math.exp(cb) if log else cb
    base_centre = 0.0 if log else ca
    if not d.any():
        zero = 0.0 if log or ca else None
        return Outcome("exact", log, centre_a, centre_b, zero, zero, zero, 1.0, False,
                       rounds=k)
    scale = 1.0 if log else max(abs(ca), abs(cb))
    mean = float(np.mean(d))
    change = _pct(mean, base_centre, log)
    if k < 2 or not scale:
        return Outcome("pairs", log, centre_a, centre_b, change, None, None, None, False,
                       rounds=k)
    sd = float(np.std(d, ddof=1))
    se = sd / math.sqrt(k)
    q = float(sps.t.ppf(1 - ALPHA / 2, k - 1))
    p = float(2 * sps.t.sf(abs(mean) / se, k - 1)) if se else (0.0 if mean else 1.0)
    lo, hi = mean - q * se, mean + q * se
    ci_low, ci_high = _pct(lo, base_centre, log), _pct(hi, base_centre, log)
    significant = bool(p < ALPHA and (lo > 0 or hi < 0))
    # a round's difference holds two sessions' own noise: one session's, net of the drift
    # they shared, is sd / sqrt(2)
    return Outcome("pairs", log, centre_a, centre_b, change, ci_low, ci_high, p, significant,
                   noise_pct=100 * sd / math.sqrt(2) / scale, noise_source="pairs",
                   half_width_pct=_half(ci_low, ci_high),
                   spread_pct=100 * within_spread([*base, *new], log) / scale, rounds=k)
