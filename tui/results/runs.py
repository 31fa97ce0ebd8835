"""A session's runs held as columns (one array of 8-byte numbers a field and an extra), not
one object a run: at most 40 bytes a run and 8 an extra, where a `RunSample` with its dict took
about 1 KB, so `show` and `compare` of 300,000 runs hold megabytes, not hundreds.  A run's
number is its place (the reader checks it is), kept apart only where it is not; its variant is
kept once for each stretch of runs of one; a count every run has the same of (the ops of a
fixed count, the bytes of a fixed size, no cycles where nothing counts them) is kept once.  A
run read back is a `RunSample` made as it is asked for; the values of one field come whole
(`column`).
"""
from __future__ import annotations

import bisect
import itertools
import math
from array import array
from collections.abc import Iterator, Sequence
from typing import overload

from hotloop import events as ev

_ABSENT = math.nan                      # an extra this run did not report (NaN is no value)


class Counts(Sequence[int]):
    """One count of every run: the one value while every run has the same, else an array."""

    def __init__(self) -> None:
        self._same = 0
        self._n = 0
        self._col: array[int] | None = None

    def append(self, v: int) -> None:
        if self._col is not None:
            self._col.append(v)
        elif not self._n or v == self._same:
            self._same = v
            self._n += 1
        else:
            self._col = array("Q", [self._same]) * self._n
            self._col.append(v)

    def __len__(self) -> int:
        return len(self._col) if self._col is not None else self._n

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[int]: ...

    def __getitem__(self, i: int | slice) -> int | Sequence[int]:
        if self._col is not None:
            return self._col[i]
        if isinstance(i, slice):
            return [self._same] * len(range(*i.indices(self._n)))
        if not -self._n <= i < self._n:
            raise IndexError("run index out of range")
        return self._same

    def __iter__(self) -> Iterator[int]:
        return iter(self._col) if self._col is not None else itertools.repeat(self._same,
                                                                              self._n)


class Runs(Sequence[ev.RunSample]):
    """The measured runs of a session, in order; `append` each as it comes."""

    def __init__(self) -> None:
        self._index: dict[int, int] = {}    # {place: number} where a run's is not its place
        self._value = array("d")
        self._counts = {k: Counts() for k in ("ops", "bytes", "ns", "cycles")}
        self._extra: dict[str, array[float]] = {}
        self._starts: list[int] = []        # where each stretch of one variant starts
        self._variants: list[str] = []      # and its variant

    def append(self, run: ev.RunSample) -> None:
        n = len(self._value)
        if run.index != n:
            self._index[n] = run.index
        self._value.append(run.value)
        for k, col in self._counts.items():
            col.append(getattr(run, k))
        for name in run.extra:
            if name not in self._extra:
                self._extra[name] = array("d", [_ABSENT] * n)
        for name, xs in self._extra.items():
            xs.append(float(run.extra.get(name, _ABSENT)))
        if not self._variants or self._variants[-1] != run.variant:
            self._starts.append(n)
            self._variants.append(run.variant)

    def __len__(self) -> int:
        return len(self._value)

    def _run(self, i: int) -> ev.RunSample:
        extra = {k: col[i] for k, col in self._extra.items() if not math.isnan(col[i])}
        c = self._counts
        return ev.RunSample(index=self._index.get(i, i), value=self._value[i],
                            ops=c["ops"][i], bytes=c["bytes"][i], ns=c["ns"][i],
                            cycles=c["cycles"][i], extra=extra,
                            variant=self._variants[bisect.bisect_right(self._starts, i) - 1])

    @overload
    def __getitem__(self, i: int) -> ev.RunSample: ...
    @overload
    def __getitem__(self, i: slice) -> list[ev.RunSample]: ...

    def __getitem__(self, i: int | slice) -> ev.RunSample | list[ev.RunSample]:
        if isinstance(i, slice):
            return [self._run(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("run index out of range")
        return self._run(i)

    def __iter__(self) -> Iterator[ev.RunSample]:
        return (self._run(i) for i in range(len(self)))

    @property
    def values(self) -> array[float]:
        """Every run's value, in order (the array itself: do not change it)."""
        return self._value

    def column(self, name: str) -> Sequence[float]:
        """One field's (ops, bytes, ns, cycles) values of every run, or one extra's of the
        runs that reported it (the array itself where every run did: do not change it)."""
        if name in self._counts:
            return self._counts[name]
        col = self._extra.get(name)
        if col is None:
            return array("d")
        return col if not any(map(math.isnan, col)) else array(
            "d", (x for x in col if not math.isnan(x)))

    @property
    def extra_names(self) -> list[str]:
        return list(self._extra)
