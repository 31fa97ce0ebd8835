"""A result's kept perf data and one of its hot symbols annotated from it: what `hotloop
annotate` and the console's compare screen both do with a result file (the live console
annotates its running session's windows itself, screens/annotation)."""
from __future__ import annotations

from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.perf.annotate import Annotation, NoSamples, annotate, nothing_to_annotate, perf_data_files
from hotloop.perf.spread import MOST_WINDOWS
from hotloop.results.perf_data import perf_dir
from hotloop.results.reader import Result, windows_holding


def perf_files(res: Result) -> list[Path]:
    """The result's kept perf data (RESULT.perf/, --keep-perf); one line saying why not."""
    if not res.header.perf:
        raise HotloopError(f"{res.path}: perf was off for this run: nothing to annotate")
    named = res.header.perf_data
    # where the run kept it (a name beside the file, nothing else: an edited header points
    # nowhere else), or beside the file under its own name (both renamed together)
    places = [res.path.parent / named] if "/" not in named and named not in ("", ".", "..") \
        else []
    places.append(perf_dir(res.path))
    files: list[Path] = next((found for d in places
                              if d.is_dir() and (found := perf_data_files(d))), [])
    remote = res.header.remote
    if not files and remote and remote.perf_data:
        raise HotloopError(f"{res.path}: ran on {remote.host}, and its perf data is "
                           f"there ({remote.perf_data}): annotate it there, "
                           f"hotloop annotate {remote.result_file} SYMBOL")
    if not files:
        raise HotloopError(f"{res.path}: no perf data kept beside it ({places[0]}): it was "
                           f"run with --no-keep-perf, or removed (beyond perf_keep_mb)")
    return files


def annotate_symbol(res: Result, files: list[Path], symbol: str,
                    vmlinux: str | None = None) -> Annotation:
    """`symbol` of the result's hot symbols annotated from `files` (perf_files), with the
    build ids, binaries and workers the run recorded; HotloopError, one line, when not."""
    hot = next((s for s in res.session_symbols.symbols if s.symbol == symbol), None) \
        if res.session_symbols else None
    if hot is not None and nothing_to_annotate(hot):
        raise HotloopError(f"{res.path}: {nothing_to_annotate(hot)}")
    try:
        return annotate(files, symbol, vmlinux, dso=hot.dso if hot else "",
                        kernel=hot.kernel if hot else None,
                        build_ids=res.session_symbols.build_ids if res.session_symbols
                        else None,
                        binaries=res.session_symbols.binaries if res.session_symbols else None,
                        pids=res.session_symbols.pids if res.session_symbols else (),
                        comms=res.session_symbols.comms if res.session_symbols else (),
                        holding=(lambda: windows_holding(res.path, symbol))
                        if len(files) > MOST_WINDOWS else None)
    except NoSamples:
        # the run sampled it (its hot symbols say so): perf cannot place the samples
        where = f"{hot.dso} ({hot.percent:.1f}% of the run)" if hot else "its binary"
        raise HotloopError(f"{res.path}: perf finds no sample of {symbol} in its perf data, "
                           f"though the run sampled it in {where}: that binary is not here "
                           f"as it was (another machine, a build cache cleaned); annotate "
                           f"where the run ran") from None
