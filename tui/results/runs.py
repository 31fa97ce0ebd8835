"""A session's runs held as columns (one array of 8-byte numbers a field and an extra), not
one object a run: about 60 bytes a run where a `RunSample` with its dict took about 1 KB, so
`show` and `compare` of 300,000 runs hold megabytes, not hundreds.  A run read back is a
`RunSample` made as it is asked for; the values of one field come whole (`column`).
"""
from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from typing import overload

from hotloop import events as ev

_ABSENT = math.nan                      # an extra this run did not report (NaN is no value)


class Runs(Sequence[ev.RunSample]):
    """The measured runs of a session, in order; `append` each as it comes."""

    def __init__(self) -> None:
        self._index = array("q")
        self._value = array("d")
        self._counts = {k: array("Q") for k in ("ops", "bytes", "ns", "cycles")}
        self._extra: dict[str, array[float]] = {}
        self._variants: list[str] = []      # one entry per run, the same string object

    def append(self, run: ev.RunSample) -> None:
        n = len(self._value)
        self._index.append(run.index)
        self._value.append(run.value)
        for k, col in self._counts.items():
            col.append(getattr(run, k))
        for name in run.extra:
            if name not in self._extra:
                self._extra[name] = array("d", [_ABSENT] * n)
        for name, xs in self._extra.items():
            xs.append(float(run.extra.get(name, _ABSENT)))
        variant = run.variant
        if self._variants and self._variants[-1] == variant:
            variant = self._variants[-1]
        self._variants.append(variant)

    def __len__(self) -> int:
        return len(self._value)

    def _run(self, i: int) -> ev.RunSample:
        extra = {k: col[i] for k, col in self._extra.items() if not math.isnan(col[i])}
        c = self._counts
        return ev.RunSample(index=self._index[i], value=self._value[i], ops=c["ops"][i],
                            bytes=c["bytes"][i], ns=c["ns"][i], cycles=c["cycles"][i],
                            extra=extra, variant=self._variants[i])

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
        runs that reported it."""
        if name in self._counts:
            return self._counts[name]
        col = self._extra.get(name)
        return [] if col is None else [x for x in col if not math.isnan(x)]

    @property
    def extra_names(self) -> list[str]:
        return list(self._extra)
