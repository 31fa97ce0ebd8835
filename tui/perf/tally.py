"""Hot symbols summed as a session's windows come: per run and for the whole session, so a
session stopped before its recorders could sum their windows (Ctrl-C, the console's `x`
cancelled after its grace) still has them, from the windows it has.  Memory is the distinct
symbols, not the windows: a run's sum is cut to its top once the next run's windows come.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hotloop.events import HotSymbol


@dataclass
class Sum:
    """Samples of each (symbol, DSO) over some windows, and of every symbol (the windows'
    totals, so a percent is of all the samples, not of the symbols kept)."""
    samples: dict[tuple[str, str], int] = field(default_factory=dict)
    kernel: dict[tuple[str, str], bool] = field(default_factory=dict)
    total: int = 0

    def add(self, symbols: Iterable[HotSymbol], total: int) -> None:
        got = 0
        for s in symbols:
            key = (s.symbol, s.dso)
            self.samples[key] = self.samples.get(key, 0) + s.samples
            self.kernel[key] = self.kernel.get(key, False) or s.kernel
            got += s.samples
        self.total += max(total, got)

    def top(self, n: int | None) -> list[HotSymbol]:
        """The hottest `n` symbols (None: every one sampled)."""
        total = self.total or 1
        out = [HotSymbol(symbol=k[0], dso=k[1], kernel=self.kernel[k], samples=v,
                         percent=round(100.0 * v / total, 4))
               for k, v in self.samples.items() if v]
        out.sort(key=lambda s: (-s.samples, s.symbol, s.dso))
        return out[:n]


class Tally:
    """The windows of a session as they are summarised: `add` each, then `runs` and
    `session`."""

    def __init__(self, run_top: int) -> None:
        self.run_top = run_top
        self.clear()

    def clear(self) -> None:
        self.session = Sum()
        self._done: dict[int, tuple[list[HotSymbol], int]] = {}  # runs whose windows are in
        self._open: dict[int, Sum] = {}

    def add(self, run: int, symbols: Iterable[HotSymbol], samples: int) -> None:
        """One window of `run` (the session's number), `samples` in all."""
        if not samples:                 # the sliver after the last cut is usually empty
            return
        symbols = list(symbols)
        self.session.add(symbols, samples)
        # windows come in order within a worker: an earlier run's are all in
        for r in [r for r in self._open if r < run]:
            done = self._open.pop(r)
            self._done[r] = (done.top(self.run_top), done.total)
        self._open.setdefault(run, Sum()).add(symbols, samples)

    def runs(self) -> dict[int, tuple[list[HotSymbol], int]]:
        """{run: (its hottest symbols, its samples)}."""
        out = dict(self._done)
        out.update((r, (s.top(self.run_top), s.total)) for r, s in self._open.items())
        return dict(sorted(out.items()))
