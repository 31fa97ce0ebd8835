"""The hot symbols a stopped session gets from the windows it has (perf/tally.py)."""
from __future__ import annotations

from hotloop.events import HotSymbol
from hotloop.perf.tally import Tally


def sym(name: str, samples: int, kernel: bool = False) -> HotSymbol:
    return HotSymbol(name, "[kernel.kallsyms]" if kernel else "a.so", 0.0, kernel, samples)


def test_windows_sum_per_run_and_for_the_session_percent_of_all_samples():
    t = Tally(run_top=1)
    t.add(0, [sym("hl_run", 60), sym("do_syscall_64", 30, kernel=True)], 100)
    t.add(0, [sym("hl_run", 40)], 50)
    t.add(1, [sym("do_syscall_64", 70, kernel=True), sym("hl_run", 20)], 100)
    t.add(2, [sym("hl_run", 5)], 0)         # an empty sliver: not a window of samples
    runs = t.runs()
    assert list(runs) == [0, 1]
    assert runs[0] == ([HotSymbol("hl_run", "a.so", 66.6667, False, 100)], 150)   # top 1
    assert runs[1][0][0].symbol == "do_syscall_64" and runs[1][1] == 100
    top = t.session.top(10)
    assert [(s.symbol, s.samples, s.percent) for s in top] == \
        [("hl_run", 120, 48.0), ("do_syscall_64", 100, 40.0)]
    assert t.session.total == 250
    t.clear()
    assert t.runs() == {} and t.session.total == 0
