"""The sides of a comparison: the session files one side names, each session once, checked
to be of one benchmark, named apart, summarised; and what is read of a side's sessions
together (their distribution on shared buckets, their hot symbols, their interleaved rounds).
"""
from __future__ import annotations

import json
import math
import os
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hotloop import results
from hotloop.analysis.compare_warnings import Build, Copies, CpuShareLow, MixedBuilds
from hotloop.analysis.comparison import SharedBucket, SharedHistogram, Side, SideText
from hotloop.analysis.metrics import CPU_PER_OP, metric_values
from hotloop.catalog import process_shares
from hotloop.errors import HotloopError
from hotloop.events import HotSymbol
from hotloop.perf.parse import aggregate
from hotloop.record import Header
from hotloop.results import Result
from hotloop.results.liveness import partial_reason
from hotloop.stats import Bucket, edges, summarize
from hotloop.visible import visible


def expand(arg: str) -> list[Path]:
    """The session files one side names: a file, a directory of them, or files joined by ",";
    HotloopError for one file named twice (by one path, a symbolic or a hard link)."""
    whole = Path(arg)
    parts = [whole] if whole.exists() or "," not in arg else \
        [Path(p) for p in arg.split(",") if p.strip()]
    if not parts:
        raise HotloopError(f"compare: {arg!r} names no result file")
    out: list[Path] = []
    for p in parts:
        if p.is_dir():
            # a series of variants keeps a directory a variant: read one level down
            found = sorted(f for f in p.glob("*.jsonl") if f.is_file()) or \
                sorted(f for f in p.glob("*/*.jsonl") if f.is_file())
            if not found:
                raise HotloopError(f"{p}: no result files (*.jsonl) in this directory")
            out += found
        else:
            out.append(p)
    # One file named twice, whichever way (the same path, a symbolic link or a hard link to
    # it: the same inode): a slip in a list of paths, refused.  A copy (another inode, the
    # same content) may be deliberate, gathered from elsewhere: `distinct` warns of it.
    seen: dict[tuple[int, int] | Path, Path] = {}
    for p in out:
        try:
            st = os.stat(p)
            key: tuple[int, int] | Path = (st.st_dev, st.st_ino)
        except OSError:
            key = p.resolve()           # unreadable: results.read says why
        if key in seen:
            also = "" if seen[key] == p else f" (as {seen[key]})"
            raise HotloopError(f"{p}: named twice in one side{also} ({arg})")
        seen[key] = p
    return out


def distinct(rs: Sequence[Result], given: str) -> tuple[list[Result], Copies | None]:
    """A side's sessions, each content once (a result's sha256: a copy of a file is the same
    session, not another one), and a warning naming the copies; HotloopError when the side
    is nothing but copies of one session.  Two copies a side once gave "+3.35% [+3.35%,
    +3.35%] p=0 faster": copies agree exactly, so they look like sessions without noise."""
    kept: list[Result] = []
    first: dict[str, Result] = {}
    copies: list[tuple[Result, Result]] = []
    for r in rs:
        key = r.digest or str(r.path.resolve())
        if key in first:
            copies.append((r, first[key]))
        else:
            first[key] = r
            kept.append(r)
    if not copies:
        return kept, None
    if len(kept) == 1:
        raise HotloopError(f"{given}: its {len(rs)} files are copies of one session "
                           f"({kept[0].path}): a side of copies is one session; give it once, "
                           f"or distinct sessions")
    dup, orig = copies[0]
    return kept, Copies(given=given, copy=str(dup.path), original=str(orig.path),
                        more=len(copies) - 1, sessions=len(kept))


def identity(r: Result) -> tuple[str, str, str]:
    return (r.workload.name, r.workload.metric,
            json.dumps(r.header.params, sort_keys=True, default=str))


def check_side(rs: Sequence[Result], given: str) -> None:
    """A side's sessions must be of one benchmark: same workload, metric and params."""
    first = rs[0]
    w0, m0, p0 = identity(first)
    for r in rs[1:]:
        w, m, p = identity(r)
        what = "workload" if w != w0 else "metric" if m != m0 else "params" if p != p0 else ""
        if what:
            mine, theirs = {"workload": (w, w0), "metric": (m, m0), "params": (p, p0)}[what]
            raise HotloopError(f"{r.path}: {what} {mine} differs from {first.path}'s {theirs}; "
                               f"the sessions of one side ({given}) must be of one benchmark")


def _label(rs: Sequence[Result]) -> str:
    labels = {r.header.variant or r.header.label for r in rs}
    return labels.pop() if len(labels) == 1 else ""


def side_names(sides: Sequence[Sequence[Result]], given: Sequence[str]) -> list[str]:
    """Each side's name: its label or variant where those tell the sides apart, else what was
    given (a directory's name, the files' names) with as much of the path as tells them apart:
    A/s1 and A2/s1, not s1 and s1#2."""
    def where(rs: Sequence[Result], arg: str) -> Path:
        p = Path(arg.rstrip("/"))
        return p if p.is_dir() else rs[0].path.with_suffix("")

    def fallback(rs: Sequence[Result], arg: str, depth: int) -> str:
        p = where(rs, arg)
        name = "/".join(p.parts[-depth:])
        if len(rs) > 1 and not Path(arg.rstrip("/")).is_dir():
            name += "".join(f",{r.path.stem}" for r in rs[1:3]) + (
                f",+{len(rs) - 3}" if len(rs) > 3 else "")
        return name

    names = [_label(rs) for rs in sides]
    if not all(names) or len(set(names)) < len(names):
        for depth in range(1, 1 + max(len(where(rs, g).parts) for rs, g in zip(sides, given))):
            names = [fallback(rs, g, depth) for rs, g in zip(sides, given)]
            if len(set(names)) == len(names):
                break
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def side_of(i: int, name: str, rs: Sequence[Result], given: str,
            metric: str | None = None) -> Side:
    """A side as tables show it, its summary of `metric` (the comparison's primary: the
    workload's unless --metric chose another)."""
    partial = [r for r in rs if r.partial]
    why = "; ".join(f"{r.path.name if len(rs) > 1 else ''}{': ' if len(rs) > 1 else ''}"
                    f"{partial_reason(r)}"
                    for r in partial)
    # from the files' headers: shown in tables and titles, so one line each, whatever a
    # forged file holds; JSON carries them as they are (`text`)
    text = SideText(name, ",".join(sorted({r.header.label for r in rs})),
                    ",".join(sorted({r.header.kernel_release for r in rs})),
                    rs[0].header.variant)
    values = _pooled(rs, metric)
    return Side(i, visible(name), ",".join(sorted({visible(r.header.label) for r in rs})),
                ",".join(sorted({visible(r.header.kernel_release) for r in rs})), given,
                visible(text.variant), len(values), bool(partial), why,
                summarize(values), tuple(str(r.path) for r in rs), len(rs), text)


def _pooled(rs: Sequence[Result], metric: str | None = None) -> Sequence[float]:
    """The runs' values of a side's sessions in `metric` (default: each one's primary), one
    array (8 bytes a run, not a list's 32)."""
    def of(r: Result) -> Sequence[float]:
        return r.runs.values if metric in (None, r.workload.metric) else \
            metric_values(r)[metric].values
    if len(rs) == 1:
        return of(rs[0])
    out = array("d")
    for r in rs:
        out.extend(of(r))
    return out


def process_blocks(header: Header) -> list[int]:
    """How many runs each worker process of a session ran, in turn (as the session split
    its plan's runs)."""
    if header.runs is None or header.runs < 1:
        return []
    return process_shares(header.runs, header.processes)


def interleaved_pair(a: Sequence[Result], b: Sequence[Result]) -> list[int] | None:
    """Both sides one session of the same interleaved batch: their runs pair up by round,
    in blocks of the worker processes that ran them (empty when those do not line up)."""
    if len(a) != 1 or len(b) != 1 or a[0].path.resolve() == b[0].path.resolve():
        return None
    ba, bb = a[0].header.batch, b[0].header.batch
    if not (ba and bb and ba.interleaved and ba.id is not None and ba.id == bb.id):
        return None
    blocks = process_blocks(a[0].header)
    return blocks if blocks == process_blocks(b[0].header) else []


METRIC_ALIASES = {"cpu": CPU_PER_OP}    # compare --metric cpu: the worker's CPU time per op


def primary_metric(sides: Sequence[Sequence[Result]],
                   metric: str | None) -> tuple[str, str, bool]:
    """The comparison's primary metric, (name, unit, higher is better): the workload's, or
    `metric` (compare --metric) where every session recorded it in every run.  HotloopError
    for one they did not (naming those they did), one a session (a perf counter) or one
    without a direction."""
    w = sides[0][0].workload
    name = METRIC_ALIASES.get(metric or "", metric or w.metric)
    if name == w.metric:
        return w.metric, w.unit, w.higher_is_better
    found = [metric_values(r) for rs in sides for r in rs]
    got = found[0].get(name)
    if got is None or not all(name in f for f in found):
        have = [n for n in found[0] if all(n in f and not f[n].per_session for f in found)]
        raise HotloopError(f"--metric {visible(metric or '')}: not a metric every session "
                           f"recorded (they have: {', '.join(have)})")
    if got.per_session or got.higher_is_better is None:
        why = "one value a session, not a run" if got.per_session else "no direction"
        raise HotloopError(f"--metric {name}: {why}; a primary metric is one a run with a "
                           f"better way (ns/op, {CPU_PER_OP}, a workload's _s or _ns extra)")
    return name, got.unit, got.higher_is_better


def shared_histogram(sides: Sequence[Sequence[Result]], metric: str, unit: str,
                     target: int = 10) -> SharedHistogram | None:
    """Every side's distribution (its sessions pooled) on the edges of the union."""
    values = [np.asarray(_pooled(rs, metric), dtype=float) for rs in sides]
    if not any(len(vs) for vs in values):
        return None
    # the edges of the union: its least and largest values are all they take
    start, width = edges([min(float(vs.min()) for vs in values if len(vs)),
                          max(float(vs.max()) for vs in values if len(vs))], target)
    # each value's bucket, a side at a time, as numbers in an array (no object a run)
    index = [np.floor((vs - start) / width + 1e-9).astype(np.int64) for vs in values]
    lo = min(int(ix.min()) for ix in index if len(ix))
    hi = max(int(ix.max()) for ix in index if len(ix))
    plain = [Bucket(start + i * width, start + (i + 1) * width, 0, 0.0) for i in range(lo, hi + 1)]
    counts_of = [dict(zip(range(lo, hi + 1),
                          np.bincount(ix - lo, minlength=hi - lo + 1).tolist()))
                 if len(ix) else dict.fromkeys(range(lo, hi + 1), 0) for ix in index]
    buckets = []
    for k, i in enumerate(range(lo, hi + 1)):
        row = tuple(c[i] for c in counts_of)
        pcts = tuple(100.0 * c / len(ix) if len(ix) else 0.0 for c, ix in zip(row, index))
        buckets.append(SharedBucket(plain[k].low, plain[k].high, row, pcts))
    return SharedHistogram(metric, unit, start, width, buckets)


def hot_symbols(rs: Sequence[Result]) -> Sequence[HotSymbol] | None:
    found = [r.session_symbols.symbols for r in rs
             if r.session_symbols and r.session_symbols.symbols]
    if len(found) != len(rs):
        return None
    return found[0] if len(found) == 1 else aggregate(found)



def _accel(r: Result) -> str:
    vm = r.header.vm
    return "on this machine" if vm is None else \
        "emulated in a VM (TCG)" if vm.accel == "tcg" else f"in a VM under {vm.accel.upper()}"


def check_accel(rs: Sequence[Result]) -> None:
    """Emulated sessions measure qemu's translation, not the CPU: never beside others."""
    tcg = next((r for r in rs if r.header.vm is not None and r.header.vm.accel == "tcg"), None)
    other = next((r for r in rs if r.header.vm is None or r.header.vm.accel != "tcg"), None)
    if tcg is not None and other is not None:
        raise HotloopError(f"{tcg.path}: ran {_accel(tcg)}, {other.path} {_accel(other)}: "
                           f"emulated numbers cannot be compared with measured ones")

def load_sides(args: Sequence[str | Path]) -> list[list[Result]]:
    """Read every side's files (one-line HotloopError for what is not a result)."""
    return [[results.read(p) for p in expand(str(a))] for a in args]




BUILD_FIELDS = ("source_sha256", "compiler", "cflags")     # what a session's build was made of


def build_of(r: Result) -> tuple[str, ...]:
    """A session's build of its workload: the source's digest, the compiler and its flags
    (the header's), and where perf saw it, the module's ELF build id (which also tells a
    build from another of the same source: hotloop.h, cffi)."""
    h = r.header
    syms = r.session_symbols
    module = sorted(i for p, i in (syms.binaries if syms else {}).items()
                    if os.path.basename(p).startswith("_hl_"))
    return (h.source_sha256, h.compiler, " ".join(h.cflags), ",".join(module))


def mixed_builds(rs: Sequence[Result], name: str) -> MixedBuilds | None:
    """A warning when a side's sessions ran more than one build of its workload (its source
    edited between them): pooled as one side they measure two programs.  None when one."""
    seen: dict[tuple[str, ...], list[Result]] = {}
    for r in rs:
        seen.setdefault(build_of(r), []).append(r)
    if len(seen) < 2:
        return None
    first = next(iter(seen))

    def differs(b: tuple[str, ...]) -> str:
        what = [f for f, x, y in zip((*BUILD_FIELDS, "build id"), b, first) if x != y]
        return ", ".join(what)
    return MixedBuilds(side=name, kinds=tuple(sorted({differs(b) for b in list(seen)[1:]})),
                       builds=tuple(Build(b[0], tuple(r.path.name for r in got))
                                    for b, got in seen.items()))


LOW_CPU_SHARE = 0.8                     # the worker's CPU time over its wall time, said below


def cpu_shares(sides: Sequence[Sequence[Result]], out: Sequence[Side]) -> list[CpuShareLow]:
    """Each side whose worker had well under a CPU over its runs (its CPU time per op against
    its wall time per op; a workload of one process: one of several waits on its helpers by
    design): what its wall-clock metrics hold besides the code, and the metric that does not."""
    said = []
    for rs, s in zip(sides, out):
        if any(r.workload.procs > 1 for r in rs):
            continue
        got = [(metric_values(r).get(CPU_PER_OP), metric_values(r).get("ns/op")) for r in rs]
        cpu = [x for c, _ in got if c is not None for x in c.values]
        wall = [x for _, w in got if w is not None for x in w.values]
        if not cpu or len(cpu) != len(wall) or not math.fsum(wall):
            continue
        share = math.fsum(cpu) / math.fsum(wall)
        if share < LOW_CPU_SHARE:
            said.append(CpuShareLow(side=s.name, share_pct=100 * share,
                                    cpu_ns=math.fsum(cpu) / len(cpu),
                                    wall_ns=math.fsum(wall) / len(wall), metric=CPU_PER_OP))
    return said
