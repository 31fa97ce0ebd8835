"""How often does the differential profile call a symbol that did not change, and how often
does it find one that did?

Every comparison goes through the code `hotloop compare` uses for its symbol rows
(`hotloop.analysis.symdiff.differential`: each symbol's cost per op a session, tested between
sides, Benjamini-Hochberg across the symbols of the pair).  The sessions are synthetic, with
known truth, built as perf and perf stat would report them:

* a profile of SYMBOLS kernel symbols whose true shares of the worker's CPU time fall off as
  1/rank (Zipf), one of them at TARGET_SHARE (2%), the worker's true CPU time 1000 ns/op;
* a session's offset: its worker CPU time per op scaled by exp(N(0, session CV)) (what a
  session's placement, its cache state, a boot do to the whole profile);
* a session's symbol jitter: each symbol's share scaled by exp(N(0, symbol CV)) and the shares
  renormalised (what moves one symbol's share and not the others);
* perf's sampling: the session's samples multinomial over the shares, listed as an older
  file did, its top 100 only (no floor: a symbol below the cut is censored there, as
  analysis.symcost reads such a file);
* task-clock: exactly the session's worker CPU time (perf stat counts it, it is not sampled).

A/A (all symbols unchanged): the fraction of comparisons in which any symbol is called,
new and gone rows counted (with every symbol unchanged, the false discovery rate is that
fraction; target at most 5%).  benchmarks/symbol_power.py has the power table the docs quote.
Power: the TARGET_SHARE symbol's cost up 10% (the worker's CPU time with it), the fraction of
comparisons that call it costlier, how many other symbols were called with it, and the false
discovery rate (the mean share of unchanged symbols among those called): a session's offset
moves every symbol of it, so false calls come in clusters, and a mean count of them can be
well above 5% where the rate that Benjamini-Hochberg controls is not.

    python benchmarks/symbol_fdr.py [--trials 300] [--power-trials 100] [--seed 1] [--markdown]
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

from hotloop import events as ev  # noqa: E402
from hotloop import results  # noqa: E402
from hotloop.analysis.symbols import SymbolVerdict  # noqa: E402
from hotloop.analysis.symdiff import differential  # noqa: E402

SYMBOLS = 150
LISTED = 100                            # perf report's rows a session keeps
TARGET_SHARE = 0.02
TARGET_RANK = 10                        # where a 2% symbol falls in a 1/rank profile of 150
WORKER_NS = 1000.0


def profile() -> np.ndarray:
    """True shares: 1/rank, the TARGET_RANK-th set to TARGET_SHARE, summing to 1."""
    w = 1 / np.arange(1, SYMBOLS + 1)
    w[TARGET_RANK] = 0
    w *= (1 - TARGET_SHARE) / w.sum()
    w[TARGET_RANK] = TARGET_SHARE
    return w


def template() -> results.Result:
    """One forged zero_null session, read back: its header and runs (6 x 20000 ops)."""
    with tempfile.TemporaryDirectory() as d:
        return results.read(forge.zero_null(Path(d) / "t.jsonl", forge.NS_512,
                                            counters={"task-clock": 1.0}))


def session(t: results.Result, shares: np.ndarray, worker_ns: float, samples: int,
            rng: np.random.Generator, session_cv: float, symbol_cv: float,
            i: int) -> results.Result:
    """A session around these true shares and worker CPU time per op."""
    s = shares * np.exp(rng.normal(0, symbol_cv, len(shares))) if symbol_cv else shares
    s = s / s.sum()
    counts = rng.multinomial(samples, s)
    top = np.argsort(-counts, kind="stable")[:LISTED]
    syms = tuple(ev.HotSymbol(f"sym_{k:03d}", "[kernel.kallsyms]",
                              round(100 * counts[k] / samples, 4), True, int(counts[k]))
                 for k in top if counts[k])
    ops = sum(x.ops for x in t.runs)
    ns = worker_ns * np.exp(rng.normal(0, session_cv)) if session_cv else worker_ns
    assert t.finished is not None
    fin = dataclasses.replace(t.finished, counters={"task-clock": ns * ops / 1e6})
    return dataclasses.replace(t, path=Path(f"s{i}.jsonl"), finished=fin,
                               session_symbols=ev.HotSymbols(syms, "session", 0, samples),
                               digest=f"{i}")


def trial(t: results.Result, k: int, samples: int, session_cv: float, symbol_cv: float,
          change: float, rng: np.random.Generator) -> tuple[int, bool, int]:
    """(symbols called, the target called costlier, symbols called other than it)."""
    base = profile()
    new = base.copy()
    new[TARGET_RANK] *= 1 + change
    grow = new.sum()
    a = [session(t, base, WORKER_NS, samples, rng, session_cv, symbol_cv, i) for i in range(k)]
    b = [session(t, new / grow, WORKER_NS * grow, samples, rng, session_cv, symbol_cv, k + i)
         for i in range(k)]
    rows = differential(a, b).rows
    called = [r for r in rows if r.verdict is not None and r.verdict.called]   # new, gone too
    target = f"sym_{TARGET_RANK:03d}"
    hit = any(r.symbol == target and r.verdict is SymbolVerdict.COSTLIER for r in called)
    return len(called), hit, sum(r.symbol != target for r in called)


def table(head: list[str], rows: list[list[str]], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
        return
    w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    print("  ".join(h.rjust(w[i]) for i, h in enumerate(head)))
    for r in rows:
        print("  ".join(c.rjust(w[i]) for i, c in enumerate(r)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=300, help="A/A comparisons a cell")
    ap.add_argument("--power-trials", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    t = template()
    t0 = time.monotonic()
    # A/A: 3 a side (the usual), noise from none to more than a quiet machine shows
    aa_rows = []
    for k, samples, scv, ycv in [(3, 2000, 0.0, 0.0), (3, 10000, 0.0, 0.0),
                                 (3, 10000, 0.02, 0.02), (3, 10000, 0.05, 0.05),
                                 (3, 50000, 0.02, 0.02), (3, 200000, 0.05, 0.05),
                                 (5, 10000, 0.02, 0.02), (10, 10000, 0.02, 0.02)]:
        aa = [trial(t, k, samples, scv, ycv, 0.0, rng) for _ in range(a.trials)]
        aa_rows.append([f"{k} v {k}", f"{samples:,}", f"{scv:.0%}", f"{ycv:.0%}",
                        f"{sum(x[0] > 0 for x in aa) / a.trials:.1%}",
                        f"{sum(x[0] for x in aa) / a.trials:.3f}"])
    # power: what it takes to find a 10% change in a symbol of 2% share
    pw_rows = []
    for k in (3, 5, 10):
        for samples in (50000, 200000, 1000000):
            pw = [trial(t, k, samples, 0.02, 0.02, 0.10, rng) for _ in range(a.power_trials)]
            # the false discovery rate: of the symbols called, the share that did not change
            fdr = sum(x[2] / x[0] for x in pw if x[0]) / a.power_trials
            pw_rows.append([f"{k} v {k}", f"{samples:,}",
                            f"{sum(x[1] for x in pw) / a.power_trials:.0%}",
                            f"{sum(x[2] for x in pw) / a.power_trials:.2f}", f"{fdr:.1%}"])
    took = time.monotonic() - t0
    print(f"# the differential profile's symbol rows, simulated: {SYMBOLS} symbols "
          f"(top {LISTED} listed a session), seed {a.seed}, {took:.0f} s")
    print(f"\n## A/A: every symbol unchanged, {a.trials} comparisons a row")
    table(["sessions", "samples a session", "session CV", "symbol CV",
           "comparisons calling any symbol", "symbols called a comparison"], aa_rows,
          a.markdown)
    print(f"\n## power: one symbol of {TARGET_SHARE:.0%} share 10% costlier, session and "
          f"symbol CV 2%, {a.power_trials} comparisons a row")
    table(["sessions", "samples a session", "found costlier", "others called with it",
           "false discovery rate"],
          pw_rows, a.markdown)


if __name__ == "__main__":
    main()
