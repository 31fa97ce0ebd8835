"""What the differential profile finds, and what it calls that did not change: the power
table docs/differential.md quotes.

Every comparison goes through the function `hotloop compare` calls for its symbol rows
(`hotloop.analysis.symdiff.differential`) on result files read back through the real reader
(a forged zero_null session, tests/forge.py, its session symbols and task-clock replaced).
The sessions are synthetic, with known truth, built as perf and perf stat would report them:

* a profile of SYMBOLS kernel symbols whose true shares fall off as 1/rank (Zipf), one of
  them (the target) set to the share asked, the worker's true CPU time 1000 ns/op;
* session drift: a session's worker CPU time per op scaled by exp(N(0, drift)), every symbol
  with it (the machine's frequency, caches, a boot);
* symbol jitter: each symbol's share scaled by exp(N(0, SYMBOL_CV)) and renormalised;
* perf's sampling: SAMPLES a session, multinomial over the shares; the session lists every
  symbol sampled (HotSymbols.floor 1), or with --cut as an older file did, its top 100 only;
* task-clock: exactly the session's worker CPU time.

A/A (nothing changed): the share of pairs in which any symbol is called, and in which a new
or gone row is called.  Power: the target's cost up by the change (the worker's CPU time with
it), the share of pairs that call it costlier, and the false discovery proportion: of all the
symbols called, the share that did not change, averaged over the pairs.

    python benchmarks/symbol_power.py [--trials 40] [--aa-trials 200] [--seed 1] [--markdown]
                                      [--only aa|power] [--quick]
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import forge  # noqa: E402 - the tests' forged result files
from symbol_fdr import table  # noqa: E402 - the same table, beside this file

from hotloop import events as ev  # noqa: E402
from hotloop import results  # noqa: E402
from hotloop.analysis.symbols import SymbolVerdict  # noqa: E402
from hotloop.analysis.symdiff import differential  # noqa: E402

SYMBOLS = 150
OLD_TOP = 100
SAMPLES = 5000
SYMBOL_CV = 0.02
WORKER_NS = 1000.0
TARGET = "sym_target"
NAMES = [TARGET] + [f"sym_{k:03d}" for k in range(1, SYMBOLS)]


def profile(share: float) -> np.ndarray:
    """True shares, 1/rank, the target (index 0 here, named apart) at `share`."""
    w = 1 / np.arange(1, SYMBOLS + 1)
    w[0] = 0
    w *= (1 - share) / w.sum()
    w[0] = share
    return w


def template() -> results.Result:
    with tempfile.TemporaryDirectory() as d:
        return results.read(forge.zero_null(Path(d) / "t.jsonl", forge.NS_512,
                                            counters={"task-clock": 1.0}))


def session(t: results.Result, shares: np.ndarray, worker_ns: float, samples: int,
            rng: np.random.Generator, drift: float, cut: bool, i: int) -> results.Result:
    s = shares * np.exp(rng.normal(0, SYMBOL_CV, len(shares)))
    s = s / s.sum()
    counts = rng.multinomial(samples, s)
    order = np.argsort(-counts, kind="stable")
    if cut:
        order = order[:OLD_TOP]
    pct = np.round(100 * counts / samples, 4).tolist()
    syms = tuple(ev.HotSymbol(NAMES[k], "[kernel.kallsyms]", pct[k], True, int(counts[k]))
                 for k in order if counts[k])
    ops = sum(x.ops for x in t.runs)
    ns = worker_ns * np.exp(rng.normal(0, drift))
    assert t.finished is not None
    fin = dataclasses.replace(t.finished, counters={"task-clock": ns * ops / 1e6})
    return dataclasses.replace(t, path=Path(f"s{i}.jsonl"), finished=fin,
                               session_symbols=ev.HotSymbols(syms, "session", 0, samples,
                                                             floor=0 if cut else 1),
                               digest=f"{i}")


@dataclasses.dataclass
class Trial:
    called: int             # symbols called
    new_gone: int           # of them, new or gone
    hit: bool               # the target called costlier
    false: int              # called, other than the target
    same_wide: int          # "same" beside an interval wider than +-10% (must stay 0)


def trial(t: results.Result, k: int, share: float, change: float, drift: float,
          rng: np.random.Generator, samples: int = SAMPLES, cut: bool = False,
          paired: bool = False) -> Trial:
    base = profile(share)
    new = base.copy()
    new[0] *= 1 + change
    grow = new.sum()
    a = [session(t, base, WORKER_NS, samples, rng, drift, cut, i) for i in range(k)]
    b = [session(t, new / grow, WORKER_NS * grow, samples, rng, drift, cut, k + i)
         for i in range(k)]
    rows = differential(a, b, pairs=[(i, i) for i in range(k)] if paired else None).rows
    called = [r for r in rows if r.verdict is not None and r.verdict.called]
    wide = sum(r.verdict is SymbolVerdict.SAME and r.ci_low is not None
               and r.ci_high is not None and max(-r.ci_low, r.ci_high) > 10 for r in rows)
    return Trial(len(called),
                 sum(r.verdict in (SymbolVerdict.NEW, SymbolVerdict.GONE) for r in called),
                 any(r.symbol == TARGET and r.verdict is SymbolVerdict.COSTLIER
                     for r in called),
                 sum(r.symbol != TARGET for r in called), wide)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=40, help="pairs a power cell")
    ap.add_argument("--aa-trials", type=int, default=200, help="pairs an A/A row")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--quick", action="store_true", help="the done-when cells only")
    ap.add_argument("--only", choices=("aa", "power"), help="one of the two tables")
    ap.add_argument("--shares", default="1,5,20", help="the target's shares, %% (power)")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    t = template()
    t0 = time.monotonic()
    wide = 0
    aa_rows = []
    aa_cells = [(5, 0.10, SAMPLES, False, False), (5, 0.10, SAMPLES, True, False),
                (5, 0.10, 50000, False, False), (5, 0.10, 50000, True, False),
                (3, 0.05, SAMPLES, False, False), (10, 0.20, SAMPLES, False, False),
                (5, 0.10, SAMPLES, False, True)]
    for k, drift, samples, cut, paired in aa_cells if a.only != "power" else ():
        got = [trial(t, k, 0.05, 0.0, drift, rng, samples, cut, paired)
               for _ in range(a.aa_trials)]
        wide += sum(x.same_wide for x in got)
        aa_rows.append([f"{k} v {k}" + (" paired" if paired else ""), f"{drift:.0%}",
                        f"{samples:,}", "top 100 (older file)" if cut else "every symbol",
                        f"{sum(x.called > 0 for x in got) / len(got):.1%}",
                        f"{sum(x.new_gone > 0 for x in got) / len(got):.1%}"])
    cells = [(3, 0.05, 0.05, 0.5), (5, 0.20, 0.05, 0.3)] if a.quick else [
        (k, drift, share, change) for share in (float(x) / 100 for x in a.shares.split(","))
        for change in (0.10, 0.30, 0.50) for k in (3, 5, 10) for drift in (0.0, 0.05, 0.20)]
    if a.only == "aa":
        cells = []
    got_by: dict[tuple[int, float, float, float], list[Trial]] = {}
    for k, drift, share, change in cells:
        got_by[k, drift, share, change] = [trial(t, k, share, change, drift, rng)
                                           for _ in range(a.trials)]
        wide += sum(x.same_wide for x in got_by[k, drift, share, change])
    drifts = sorted({c[1] for c in cells})
    pw_rows = []
    for share, change, k in dict.fromkeys((c[2], c[3], c[0]) for c in cells):
        row = [f"{share:.0%}", f"+{change:.0%}", f"{k} v {k}"]
        fdp = 0.0
        for drift in drifts:
            got = got_by.get((k, drift, share, change))
            if got is None:
                row.append("")
                continue
            row.append(f"{sum(x.hit for x in got) / len(got):.0%}")
            fdp = max(fdp, sum(x.false / x.called for x in got if x.called) / len(got))
        pw_rows.append([*row, f"{fdp:.1%}"])
    took = time.monotonic() - t0
    print(f"# the differential profile, simulated through symdiff.differential: {SYMBOLS} "
          f"symbols (1/rank), {SAMPLES:,} samples a session unless said, symbol jitter "
          f"{SYMBOL_CV:.0%}, seed {a.seed}, {took:.0f} s")
    if aa_rows:
        print(f"\n## A/A: nothing changed, {a.aa_trials} pairs a row")
        table(["sessions", "drift", "samples a session", "session list",
               "pairs calling any symbol", "pairs calling new/gone"], aa_rows, a.markdown)
    if pw_rows:
        print(f"\n## power: the target symbol's cost up, {a.trials} pairs a row")
        table(["share", "change", "sessions", *(f"found at {d:.0%} drift" for d in drifts),
               "false discovery proportion (worst)"], pw_rows, a.markdown)
    print(f"\nrows saying \"same\" beside an interval wider than ±10%: {wide}")


if __name__ == "__main__":
    main()
