"""Result files written by hand, with known numbers: what the unit tests read, compare, render
and edit instead of measuring (no process started, nothing this machine's load can change).

The lines are the file format itself (JSON Lines: a `started` header, warmups, runs, perf
windows, warnings, a `finished` summary), not hotloop's writer, so a test of the reader reads
what a file holds.  A run's value is what its counters give (bytes * 1e9 / ns for bytes/s, ns /
ops for ns/op...), as the reader checks.  `zero_null` makes files like `hotloop run zero_null
--param block_size=N` writes: COUNT ops of N bytes each, taking the given nanoseconds.
"""
from __future__ import annotations

import copy
import json
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

# Fixed factors around a centre: a session's runs scatter by about +-1%, always the same way.
JITTER = (1.000, 1.013, 0.988, 1.006, 0.994, 1.009, 0.991, 1.003, 0.997, 1.011, 0.985, 1.002)

ZERO_NULL = {"name": "zero_null", "source": "/forged/csrc/zero_null.c",
             "summary": "read() /dev/zero, write() /dev/null", "metric": "bytes/s",
             "unit": "B/s", "higher_is_better": True, "procs": 1}
SYSCALL = {"name": "syscall", "source": "/forged/csrc/syscall.c",
           "summary": "one system call a repetition, in a loop", "metric": "ns/op",
           "unit": "ns/op", "higher_is_better": False, "procs": 1}


# The boot forged sessions ran in unless a test says otherwise: one boot, so that sessions
# are the replicates and one a side is judged (analysis.boots); a test of boots sets its own.
BOOT = "f0f0f0f0-0000-4000-8000-00000000b001"


def header(workload: dict[str, Any] = ZERO_NULL, params: dict[str, Any] | None = None,
           runs: int = 6, **changes: Any) -> dict[str, Any]:
    """A header as `hotloop run` writes it (run/preflight.py), on a made-up host; `changes`
    replace or add top-level keys (boot_id="" or None: a file that does not say its boot)."""
    params = dict({"block_size": 512, "count": 20000, "spin": 0} if params is None else params)
    h: dict[str, Any] = {
        "hotloop": "0.1.0", "time": "2026-11-30T08:00:00+0000", "host": "forge",
        "kernel_release": "6.1.0-forged", "kernel_version": "#1 SMP PREEMPT_DYNAMIC",
        "arch": "x86_64", "cmdline": "quiet", "cpu_model": "Forged CPU", "cpus": 2,
        "mitigations": "on", "vulnerabilities": {"meltdown": "Not affected"}, "sysctl": {},
        "python": "3.11.7",
        "plan": {"name": workload["name"], "workload": workload["name"], "cpu": "default",
                 "kernel": "default", "runs": runs, "warmup": 1, "perf": False,
                 "perf_freq": 999, "call_graph": "none", "timeout": 300.0, "processes": 1,
                 "until_ci": None, "params": {}, "summary": "", "origin": ""},
        "workload": dict(workload), "params": params,
        "cpu": {"name": "default", "summary": "no pinning, normal scheduling", "cpus": [],
                "sched": "other", "priority": 0, "nice": 0, "governor": None, "boost": None,
                "cflags": ["-O2"], "isolated": False, "strict": False, "origin": ""},
        "kernel": {"name": "default", "summary": "the running kernel as it is",
                   "label": "stock", "sysctl": {}, "expect": {}, "origin": ""},
        "label": "stock", "variant": "", "compiler": "cc (forged) 12.2.0", "cflags": ["-O2"],
        "source_sha256": "0" * 64, "batch": None, "boot_id": BOOT,
    }
    h.update(changes)
    if not h["boot_id"]:
        del h["boot_id"]
    return h


def value_of(metric: str, ops: int, bytes_: int, ns: int, cycles: int,
             extra: dict[str, float]) -> float:
    """A run's value from its counters, as hotloop records it."""
    return {"bytes/s": lambda: bytes_ * 1e9 / ns, "ops/s": lambda: ops * 1e9 / ns,
            "ns/op": lambda: ns / ops, "cycles/op": lambda: cycles / ops}.get(
        metric, lambda: float(extra[metric]))()


def run(index: int, metric: str, *, ops: int, bytes: int = 0, ns: int, cycles: int = 0,
        extra: dict[str, float] | None = None, warmup: bool = False,
        variant: str = "") -> dict[str, Any]:
    extra = dict(extra or {})
    return {"type": "run", "index": index,
            "value": value_of(metric, ops, bytes, ns, cycles, extra), "ops": ops,
            "bytes": bytes, "ns": ns, "cycles": cycles, "extra": extra, "warmup": warmup,
            "variant": variant}


def symbols(pcts: Iterable[float], scope: str = "session", window: int = 0,
            kernel: bool = True, names: Sequence[str] = ()) -> dict[str, Any]:
    """A hot_symbols line: sym0, sym1... (or `names`, in order) with these percents."""
    syms = [{"symbol": names[i] if i < len(names) else f"sym{i}",
             "dso": "[kernel.kallsyms]" if kernel else "libc.so.6",
             "percent": p, "kernel": kernel, "samples": int(p * 10)}
            for i, p in enumerate(pcts)]
    return {"type": "hot_symbols", "symbols": syms, "scope": scope, "window": window,
            "samples": sum(s["samples"] for s in syms), "variant": ""}


def finished(values: Sequence[float], counters: dict[str, float | None] | None = None,
             variant: str = "") -> dict[str, Any]:
    summary: dict[str, Any] = {}
    if values:
        mean = statistics.fmean(values)
        stdev = statistics.stdev(values) if len(values) > 1 else 0.0
        summary = {"n": len(values), "median": statistics.median(values), "mean": mean,
                   "stdev": stdev, "cv": stdev / mean if mean else 0.0, "min": min(values),
                   "max": max(values)}
    return {"type": "finished", "summary": summary, "variant": variant,
            "counters": dict(counters or {})}


def write(path: Path, head: dict[str, Any], runs: Sequence[dict[str, Any]], *,
          warmups: Sequence[dict[str, Any]] = (), more: Sequence[dict[str, Any]] = (),
          end: dict[str, Any] | None | str = "finished",
          counters: dict[str, float | None] | None = None) -> Path:
    """The file: header, warmups, runs, then `more` (hot symbols, warnings) and the last line
    (`end`: "finished" for the summary of the runs, a line of your own, or None: a crash's
    file, cut after the runs)."""
    lines: list[dict[str, Any]] = [{"type": "started", "header": head,
                                    "result_file": str(path)}]
    lines += [*warmups, *runs, *more]
    if end == "finished":
        end = finished([r["value"] for r in runs], counters)
    if isinstance(end, dict):
        lines.append(end)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def zero_null(path: Path, ns: int | Sequence[int], *, block_size: int = 512, count: int = 20000,
              n: int = 6, warmup: int = 1, head: dict[str, Any] | None = None,
              variant: str = "", **kw: Any) -> Path:
    """A zero_null session: `count` reads and writes of `block_size` bytes a run, each run
    taking `ns` (one number: that centre with JITTER's scatter over `n` runs), with user_s and
    sys_s as hl_run's rusage gives them."""
    times = [round(ns * JITTER[i % len(JITTER)]) for i in range(n)] \
        if isinstance(ns, int) else list(ns)

    def one(i: int, t: int, warm: bool) -> dict[str, Any]:
        return run(i, "bytes/s", ops=count, bytes=count * block_size, ns=t,
                   cycles=3 * t, extra={"user_s": round(t * 2e-10, 6),
                                        "sys_s": round(t * 8e-10, 6)},
                   warmup=warm, variant=variant)
    if head is None:
        head = header(params={"block_size": block_size, "count": count, "spin": 0},
                      runs=len(times), variant=variant)
    return write(path, head, [one(i, t, False) for i, t in enumerate(times)],
                 warmups=[one(-1 - i, times[0], True) for i in range(warmup)], **kw)


# Fixed session offsets of A/A sessions: about 0.5% apart, always the same way.
OFFSETS = (1.000, 1.006, 0.995, 1.003, 0.997, 1.008, 0.993, 1.002)


def aa_sessions(directory: Path, ns: int, **kw: Any) -> Path:
    """A directory of 8 A/A zero_null sessions (`hotloop calibrate DIR` takes it) around
    `ns`, their centres OFFSETS apart: what a calibration on the forged host would find."""
    for i, f in enumerate(OFFSETS):
        zero_null(directory / f"aa{i}.jsonl", round(ns * f), **kw)
    return directory


# What `hotloop run zero_null --param count=20000` takes here, near enough: 512-byte blocks
# about 2.3 GB/s, 64 KiB blocks about 13 GB/s (each op moves 128 times the bytes in 22 times
# the time).
NS_512 = 4_350_000
NS_64K = 96_000_000


# --------------------------------------------------------------------------- editing a file

Rows = list[Any]


def rows_of(path: Path) -> Rows:
    return [json.loads(line) for line in path.read_text().splitlines()]


def first_run(rows: Rows) -> int:
    return next(i for i, r in enumerate(rows) if r["type"] == "run" and not r["warmup"])


def edited(good: Path, dest: Path, change: Callable[[Rows], Any]) -> Path:
    """`good` with its lines changed by hand (a row left as a str is written as that text)."""
    rows = copy.deepcopy(rows_of(good))
    change(rows)
    dest.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in rows))
    return dest


def set_run(key: str, value: Any) -> Callable[[Rows], None]:
    def change(rows: Rows) -> None:
        rows[first_run(rows)][key] = value
    return change


def raw_run(old: str, new: str) -> Callable[[Rows], None]:
    """The first recorded run's line as text, with `old` replaced: tokens json.dumps
    would never write (NaN) or would write differently."""
    def change(rows: Rows) -> None:
        i = first_run(rows)
        text = json.dumps(rows[i])
        assert old in text
        rows[i] = text.replace(old, new, 1)
    return change


def insert(row: Any) -> Callable[[Rows], None]:
    return lambda rows: rows.insert(first_run(rows), row)


def delete_key(key: str) -> Callable[[Rows], None]:
    return lambda rows: rows[first_run(rows)].pop(key)


def header_key(key: str, value: Any) -> Callable[[Rows], None]:
    return lambda rows: rows[0]["header"].__setitem__(key, value)
