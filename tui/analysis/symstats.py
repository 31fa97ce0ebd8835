"""The statistics of the differential profile, on arrays of sample counts (no files, no names):
a session factor removed from every symbol, each symbol's variance moderated by the others',
and a test a symbol.  analysis.symdiff makes rows and words of it.

* **The session factor.**  A session's total CPU time per op moves with the machine (its
  frequency, its caches, a boot), and every symbol's cost with it: tested on its own, each
  symbol carries the whole session-to-session spread.  So a symbol's count in a session is
  modelled as the session's scale times the symbol's part, c_ij ~ s_i x q_j, and the scale is
  estimated robustly across the symbols well sampled in every session: the median of the
  ratios of a session's counts to their geometric means over the sessions (DESeq2's size
  factors, Anders & Huber 2010).  A symbol's value a session is then y_ij = log((c_ij + 1/2) /
  s_i): its part with the scale removed, and the test is of how its part moved relative to the
  rest of the profile.  The worker's CPU time per op cancels out of y (every symbol of a
  session shares it): what moved the whole profile is the metric rows' to test.
* **Borrowing strength.**  A pair tests tens of symbols with 3-10 sessions each: one symbol's
  own variance, on 4-18 degrees of freedom, is a poor estimate.  Each is moderated with the
  others' help as limma's moderated t does (Smyth 2004): the symbols' variances s_j^2 are taken
  as scaled F draws around a prior f0 x e_j with d0 degrees of freedom, fitted by the method of
  moments on log s_j^2 (Smyth's fitFDist), and each symbol's posterior variance is
  (d0 f0 e_j + d s_j^2) / (d0 + d) with d0 + d degrees of freedom (d0 at most
  MAX_PRIOR_DF, f0 at least 1).  The prior's shape is a trend of variance on counts, as
  limma-trend's: e_j = a / (N_j + 1/2) + beta, 1 / (N + 1/2) a Poisson count's variance on
  the log scale (edgeR and DESeq2 model counts so), a >= 1 what the sessions add to it,
  beta what every symbol carries whatever its counts, both fitted by medians over the
  symbols of 10+ samples a session (`variance_trend`).  So a symbol with few samples is as
  uncertain as its count makes it, without a hard floor of samples.
* **Censored counts.**  An older file lists a session's top 100 symbols only: one not listed
  there had between 0 and the last listed one's samples.  Such a symbol is tested twice, the
  unlisted counts at 0 and at that bound, and called only where both call it the same way
  (its p the larger, its interval the union of the two).

The design: each side's units (its sessions, or a boot's sessions averaged into one across
boots, analysis.boots), or a series' sessions paired by round (analysis.series_pairs), each
round's difference the unit.  One unit a side (one pair) leaves nothing to measure a symbol's
session spread with: no test.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

# numpy and scipy as significance loads them, once it has checked they have room
from hotloop.analysis.significance import ALPHA, np, optimize, special, sps

WELL_SAMPLED = 10           # counts in every session for a symbol to set the session factor
MIN_FACTOR_SYMBOLS = 3      # fewer such symbols: the sessions' totals are the factors
MAX_PRIOR_DF = 20.0         # the prior's weight: at most 20 sessions' worth
POWER_Z = 0.8416            # the normal quantile of 80% power, for sessions_for


@dataclass(frozen=True)
class Design:
    """Which sessions (columns) are which: the baseline's and the new side's units (lists of
    column indices, a unit each), or `pairs` of (baseline column, new column)."""
    base: Sequence[Sequence[int]]
    new: Sequence[Sequence[int]]
    pairs: Sequence[tuple[int, int]] | None = None

    @property
    def df(self) -> int:
        if self.pairs:
            return len(self.pairs) - 1
        return len(self.base) + len(self.new) - 2

    @property
    def scale(self) -> float:
        """SE^2 of the change over one unit's variance."""
        if self.pairs:
            return 1 / len(self.pairs)
        return 1 / len(self.base) + 1 / len(self.new)


@dataclass(frozen=True)
class SymbolTest:
    """One symbol's test: the change of its part (log scale), its interval (alone, 95%), p,
    the moderated variance of one unit, its degrees of freedom and the design's scale."""
    change: float
    lo: float
    hi: float
    p: float
    var: float
    df: float
    scale: float
    paired: bool = False
    censored: bool = False

    def sessions_for(self, pct: float) -> int:
        """Units a side (pairs) that would find a change of `pct` % in 80% of pairs at
        alpha 0.05 alone, this symbol's unit variance unchanged."""
        z = _q(ALPHA, math.inf) + POWER_Z
        # SE^2 = var x 2 / k with k units a side, var / k with k pairs (var of a difference)
        need = (1 if self.paired else 2) * self.var * (z / math.log1p(pct / 100)) ** 2
        return max(2, math.ceil(need))


@functools.lru_cache(maxsize=256)
def _q(alpha: float, df: float) -> float:
    """The two-sided 1 - alpha quantile of t with df degrees of freedom (inf: the normal)."""
    return float(sps.norm.ppf(1 - alpha / 2) if math.isinf(df) else sps.t.ppf(1 - alpha / 2, df))


def size_factors(counts: np.ndarray, censored: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Each session's scale (columns), the median of ratios over the symbols with at least
    WELL_SAMPLED counts in every session and listed in every one; with fewer than
    MIN_FACTOR_SYMBOLS of those, the sessions' `totals` (their worker samples: the symbols'
    shares are then what is compared).  Geometric mean 1."""
    well = np.all(counts >= WELL_SAMPLED, axis=1) & ~np.any(censored, axis=1)
    if int(well.sum()) >= MIN_FACTOR_SYMBOLS:
        logs = np.log(counts[well])
        ratio = logs - logs.mean(axis=1, keepdims=True)
        # unweighted, as DESeq2: weighted by counts, the largest symbols pulled the
        # factor (a 20%-share symbol's +10% read as +9.3%) and its spread fell by a tenth
        f = np.median(ratio, axis=0)
    else:
        f = np.log(np.maximum(totals, 1.0))
    return np.asarray(np.exp(f - f.mean()))


def trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x, by Newton's method as limma's trigammaInverse."""
    if x > 1e7:
        return 1 / math.sqrt(x)
    if x < 1e-6:
        return 1 / x
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = float(special.polygamma(1, y))
        dif = tri * (1 - tri / x) / float(special.polygamma(2, y))
        y += dif
        if -dif / y < 1e-8:
            break
    return y


def fit_f(ratios: np.ndarray, df: float) -> tuple[float, float]:
    """(d0, f0): the prior degrees of freedom and scale of variances ratios x f0 ~ F(df, d0),
    Smyth's (2004) moments of log variances; d0 = inf where they spread no more than
    chi-square's alone would."""
    x = ratios[np.isfinite(ratios) & (ratios > 0)]
    if len(x) < 3:
        return 0.0, 1.0
    e = np.log(x) - float(special.digamma(df / 2)) + math.log(df / 2)
    emean = float(e.mean())
    evar = float(e.var(ddof=1)) - float(special.polygamma(1, df / 2))
    if evar <= 0:
        return math.inf, math.exp(emean)
    d0 = 2 * trigamma_inverse(evar)
    return d0, math.exp(emean + float(special.digamma(d0 / 2)) - math.log(d0 / 2))


def _solve(s2: np.ndarray, base: np.ndarray, df: int) -> float:
    """beta >= 0 with median(s2 / (base + beta)) chi-square's (over df) median."""
    target = float(sps.chi2.median(df)) / df

    def excess(beta: float) -> float:
        return float(np.median(s2 / (base + beta))) - target
    if excess(0.0) <= 0:
        return 0.0
    return float(optimize.brentq(excess, 0.0, float(np.max(s2)) + 1.0, xtol=1e-12))


def variance_trend(s2: np.ndarray, poisson: np.ndarray, df: int) -> tuple[float, float]:
    """(a, beta): a symbol's variance a unit as a x its counts' + beta, a >= 1 (never below
    what the counts give), fitted by medians as limma-trend fits a trend of variance on the
    mean: a from the half of fewer samples (where the counts' variance rules), beta from the
    half of more (where what every symbol shares shows)."""
    ok = np.isfinite(s2) & (s2 > 0)
    s2, poisson = s2[ok], poisson[ok]
    if len(s2) < 6:
        return 1.0, _solve(s2, poisson, df) if len(s2) >= 3 else 0.0
    few = poisson >= np.median(poisson)
    target = float(sps.chi2.median(df)) / df
    a = max(1.0, float(np.median(s2[few] / poisson[few])) / target)
    return a, _solve(s2[~few], a * poisson[~few], df)


def _units(y: np.ndarray, pois: np.ndarray, d: Design
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each symbol's change (log), the sample variance of one unit and the variance its counts
    alone give a unit."""
    if d.pairs:
        bi = [i for i, _ in d.pairs]
        ni = [j for _, j in d.pairs]
        z = y[:, ni] - y[:, bi]
        change = z.mean(axis=1)
        s2 = z.var(axis=1, ddof=1) if len(d.pairs) > 1 else np.zeros(len(y))
        p = (pois[:, ni] + pois[:, bi]).mean(axis=1)
        return change, s2, p

    def side(groups: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        vals = np.stack([y[:, list(g)].mean(axis=1) for g in groups], axis=1)
        pv = np.stack([pois[:, list(g)].mean(axis=1) / len(g) for g in groups], axis=1)
        return vals, pv
    vb, pb = side(d.base)
    vn, pn = side(d.new)
    change = vn.mean(axis=1) - vb.mean(axis=1)
    ss = ((vb - vb.mean(axis=1, keepdims=True)) ** 2).sum(axis=1) \
        + ((vn - vn.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    s2 = ss / d.df if d.df > 0 else np.zeros(len(y))
    p = (pb.sum(axis=1) + pn.sum(axis=1)) / (pb.shape[1] + pn.shape[1])
    return change, s2, p


def _expected(counts: np.ndarray, factors: np.ndarray, d: Design) -> np.ndarray:
    """A count's variance on the log scale, 1 / (count + 1/2), from the symbol's mean
    scaled count on each side (one session's zero says little of its expected count)."""
    scaled = counts / factors
    cols_b = [i for g in d.base for i in g] if not d.pairs else [i for i, _ in d.pairs]
    cols_n = [i for g in d.new for i in g] if not d.pairs else [j for _, j in d.pairs]
    out = np.empty_like(scaled)
    for cols in (cols_b, cols_n):
        mean = scaled[:, cols].mean(axis=1, keepdims=True)
        out[:, cols] = 1 / (mean * factors[cols] + 0.5)
    return np.asarray(out)


def _moderated(counts: np.ndarray, factors: np.ndarray, d: Design,
               prior: tuple[float, float, float, float] | None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float,
                          tuple[float, float, float, float]]:
    y = np.log((counts + 0.5) / factors)
    change, s2, p = _units(y, _expected(counts, factors, d), d)
    df = d.df
    if prior is None:
        # fitted on the symbols of 10+ samples a session: below, the log of a count strays
        # from 1 / (N + 1/2) (at 3-10 samples its variance is 12% above it)
        well = counts.mean(axis=1) >= WELL_SAMPLED
        a, beta = variance_trend(s2[well], p[well], df) if well.sum() >= 3 else (1.0, 0.0)
        d0, f0 = fit_f(s2 / (a * p + beta), df)
        # Never below what the counts alone give (sessions as steady as a timer's ticks
        # would make every variance tiny, one symbol's real spread with them), and never so
        # sure of the prior that a symbol's own spread is ignored (limma lets d0 be
        # infinite; one symbol far out then is called on the others' quiet)
        prior = (a, beta, min(d0, MAX_PRIOR_DF), max(f0, 1.0))
    a, beta, d0, f0 = prior
    e = f0 * (a * p + beta)
    var, df_post = (d0 * e + df * s2) / (d0 + df), d0 + df
    if d0 == 0:
        # too few symbols for a prior: never below the counts' own variance, else sessions
        # alike by chance have none, and a 1% difference a p of 0
        var = np.maximum(var, p)
    return change, var, s2, df_post, prior


def test_symbols(counts: np.ndarray, censored: np.ndarray, bounds: np.ndarray,
                 totals: np.ndarray, d: Design) -> list[SymbolTest] | None:
    """Every symbol's (rows) test across sessions (columns); `censored` marks a count that is
    only known to be at most its session's `bounds` (an older file's cut); `totals` are the
    sessions' samples of every symbol.  None: the design leaves no degrees of freedom (one
    unit a side)."""
    if d.df <= 0 or not len(counts):
        return None
    low = np.where(censored, 0.0, counts).astype(float)
    high = np.where(censored, bounds[None, :], counts).astype(float)
    factors = size_factors(low, censored, totals)
    clean = ~np.any(censored, axis=1)
    # the prior from the symbols whose counts are known (all of them, if none is)
    _, _, _, _, prior = _moderated(low[clean] if clean.sum() >= 3 else low,
                                            factors, d, None)
    ch_l, var_l, _, df_l, _ = _moderated(low, factors, d, prior)
    ch_h, var_h, _, _, _ = _moderated(high, factors, d, prior)
    q = _q(ALPHA, df_l)

    def p_of(c: np.ndarray, v: np.ndarray) -> np.ndarray:
        t = np.abs(c) / np.sqrt(np.maximum(v, 1e-300) * d.scale)
        return np.asarray(2 * (sps.norm.sf(t) if math.isinf(df_l) else sps.t.sf(t, df_l)))
    p_l, p_h = p_of(ch_l, var_l), p_of(ch_h, var_h)
    out = []
    for k in range(len(counts)):
        tests = []
        for c, v, pv in ((ch_l[k], var_l[k], p_l[k]), (ch_h[k], var_h[k], p_h[k])) \
                if not clean[k] else ((ch_l[k], var_l[k], p_l[k]),):
            se = math.sqrt(max(float(v), 1e-300) * d.scale)
            tests.append((float(c), float(c) - q * se, float(c) + q * se, float(pv), float(v)))
        same_way = len({math.copysign(1, x[0]) for x in tests}) == 1
        out.append(SymbolTest(
            sum(x[0] for x in tests) / len(tests), min(x[1] for x in tests),
            max(x[2] for x in tests), max(x[3] for x in tests) if same_way else 1.0,
            max(x[4] for x in tests), df_l, d.scale, bool(d.pairs), censored=not bool(clean[k])))
    return out


def interval_at(t: SymbolTest, level_alpha: float) -> tuple[float, float]:
    """The symbol's interval (log scale) at 1 - level_alpha (two-sided)."""
    q, q95 = _q(level_alpha, t.df), _q(ALPHA, t.df)
    half_lo, half_hi = t.change - t.lo, t.hi - t.change     # unequal when censored
    return t.change - half_lo * q / q95, t.change + half_hi * q / q95


# What benchmarks/symbol_power.py measured (2026-12-03, seed 1, 40 pairs a cell, 5,000 samples
# a session, symbol jitter 2%): the share of pairs finding a 5%-share symbol made 30% costlier,
# by the sessions' drift and sessions a side.  docs/differential.md quotes the whole table;
# `hotloop calibrate` reads it for the drift it measured.
FOUND_5PCT_30PCT: dict[float, dict[int, float]] = {
    0.00: {3: 0.52, 5: 0.98, 10: 1.00},
    0.05: {3: 0.82, 5: 1.00, 10: 1.00},
    0.20: {3: 0.78, 5: 1.00, 10: 1.00},
}


def sessions_for_symbol_change(drift: float, power: float = 0.8) -> tuple[int, float, float] | None:
    """(sessions a side, the share of pairs found, the first drift of the table at or above
    this one) for a 5%-share symbol 30% costlier at this drift between sessions (a fraction):
    the fewest sessions whose worst share over the drifts at or above it reaches `power` (40
    pairs a cell scatter by some 7 points: drift itself changes little, as the session's
    scale is removed); None beyond the table."""
    rows = [d for d in sorted(FOUND_5PCT_30PCT) if d >= drift - 1e-12]
    if not rows:
        return None
    worst = {k: min(FOUND_5PCT_30PCT[d][k] for d in rows) for k in FOUND_5PCT_30PCT[rows[0]]}
    k = next((k for k in sorted(worst) if worst[k] >= power), None)
    return (k, worst[k], rows[0]) if k is not None else None
