"""`hotloop annotate` on real perf data: a loop whose hl_run does its own arithmetic between
getppid() calls, so its user-space code is sampled every run (the syscall workload's loop is a
few instructions around the call, which a sample may miss in a whole run); kernel symbols
need /proc/kcore or a vmlinux, which this kind of machine lacks (then the one line with the
fixes is what is tested)."""
from __future__ import annotations

import asyncio
import bisect
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, hotloop, tagged_pids
from test_perf_start import noting_perf

from hotloop import results
from hotloop.perf.annotate import kernel_code, perf_data_files
from hotloop.perf.probe import system_wide_allowed

needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")

SPIN_C = r"""
#include "hotloop.h"
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
struct st { uint64_t turns, x; };
void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t len)
{
    struct st *s = calloc(1, sizeof(*s));
    (void)env; (void)err; (void)len;
    s->turns = (uint64_t)hl_param_int(p, n, "turns", 300000);
    s->x = 1;
    return s;
}
int hl_run(void *state, struct hl_result *res, char *err, size_t len)
{
    struct st *s = state;
    struct hl_clock c;
    (void)err; (void)len;
    hl_clock_start(&c);
    for (uint64_t i = 0; i < s->turns; i++) {
        for (int k = 0; k < 64; k++)        /* a dependent chain: about 100 ns a turn */
            s->x = s->x * 6364136223846793005ULL + 1442695040888963407ULL;
        (void)getppid();
    }
    hl_clock_stop(&c, res);
    res->ops = s->turns;
    return 0;
}
int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state) { free(state); }
"""

SPIN_TOML = """
[workload.spin]
source = "spin.c"
summary = "arithmetic in hl_run itself, then getppid(), a turn at a time"
metric = "ns/op"
higher_is_better = false
params.turns = { default = 300000, min = 1 }
"""

RUN = ["--runs", "3", "--warmup", "0", "--keep-perf"]


@pytest.fixture(scope="module")
def spin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The profiles directory of the spin workload."""
    d = tmp_path_factory.mktemp("spin")
    (d / "spin.c").write_text(SPIN_C)
    (d / "w.toml").write_text(SPIN_TOML)
    return d


def run_spin(spin: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return hotloop("run", "spin", "--profiles", str(spin), *args, "--out", str(out))


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory, cache_home: Path, spin: Path) -> Path:
    """A spin run with its perf data kept (before the tests' own isolation is set up: a
    module's fixture comes first, so it brings its own directories)."""
    d = tmp_path_factory.mktemp("annotate")
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(cache_home),
               XDG_CONFIG_HOME=str(d / "config"), XDG_STATE_HOME=str(d / "state"))
    out = d / "r.jsonl"
    done = subprocess.run([sys.executable, "-m", "hotloop", "run", "spin", "--profiles",
                           str(spin), *RUN, "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return out


@needs_perf
def test_the_loops_symbol_annotates_with_its_hottest_instruction_marked(kept):
    done = hotloop("annotate", str(kept), "hl_run", "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["symbol"] == "hl_run" and doc["dso"].startswith("_hl_spin_")
    sampled = [i for i in doc["instructions"] if i["samples"]]
    assert sampled and abs(sum(i["share"] for i in sampled) - 100) < 0.01
    assert doc["samples"] == sum(i["samples"] for i in sampled) and doc["windows"] >= 1
    # the hottest instruction of hl_run is marked
    text = hotloop("annotate", str(kept), "hl_run").stdout.splitlines()
    hottest = max(sampled, key=lambda i: i["samples"])
    marked = [ln for ln in text if ln.endswith("◀")]
    assert any(f"{hottest['offset']:x}" in ln for ln in marked)
    by_share = hotloop("annotate", str(kept), "hl_run", "--sort", "share").stdout.splitlines()
    assert f"{hottest['offset']:x}" in by_share[2]
    assert hotloop("annotate", str(kept), "hl_run", "--sort", "percent").stdout == \
        "\n".join(by_share) + "\n"


@needs_perf
def test_top_annotates_the_hottest_and_says_once_why_kernel_ones_cannot(kept):
    done = hotloop("annotate", str(kept), "--top", "5", "--format", "json")
    assert done.returncode == 0, done.stderr
    docs = json.loads(done.stdout)
    assert docs and all(d["samples"] > 0 for d in docs)
    if not kernel_code().available:
        line, = done.stderr.splitlines()
        assert line.startswith("hotloop: kernel symbols not annotated (")
        assert "--vmlinux PATH" in line


@needs_perf
def test_a_kernel_symbol_without_the_kernels_code_is_one_line(kept, cli):
    kernel = json.loads(cli("show", str(kept), "--format", "json").stdout)["hot_symbols"]
    name = next(s["symbol"] for s in kernel if s["kernel"])
    done = hotloop("annotate", str(kept), name)
    if kernel_code().available:
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert line.startswith(f"hotloop: {name} is a kernel symbol: the kernel's code is not here")
    assert "perf buildid-cache" in line and "--vmlinux PATH" in line
    # what of /proc/kcore is missing: the file (this kind of VM's kernel), or root's right
    if not os.path.exists("/proc/kcore"):
        assert "this kernel has no /proc/kcore (CONFIG_PROC_KCORE)" in line
    else:
        assert "/proc/kcore is root's to read" in line or "perf did not read" in line
    doctor = hotloop("doctor").stdout
    assert "no   annotate kernel" in doctor


@needs_perf
def test_two_results_side_by_side(kept, spin, tmp_path):
    other = tmp_path / "o.jsonl"
    done = run_spin(spin, other, *RUN)
    assert done.returncode == 0, done.stderr
    both = hotloop("annotate", str(kept), str(other), "hl_run")
    assert both.returncode == 0, both.stderr
    lines = both.stdout.splitlines()
    assert lines[0].startswith(f"A {kept}: hl_run in ") and lines[1].startswith(f"B {other}: ")
    # the same build: every instruction pairs with itself, by address
    assert len(lines) > 3 and not any(" - " in ln for ln in lines[3:])
    doc = json.loads(hotloop("annotate", str(kept), str(other), "hl_run",
                             "--format", "json").stdout)
    assert all(p["a"] == p["b"] for p in doc["aligned"])


@pytest.mark.parametrize("args, said", [
    (["hl_rn"], "no samples of 'hl_rn' among the run's"),
    (["hl_run", "--top", "2"], "a symbol or --top N, not both"),
    ([], "which symbol?"),
])
@needs_perf
def test_bad_requests_are_one_line(kept, args, said):
    done = hotloop("annotate", str(kept), *args)
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert said in line
    if args == ["hl_rn"]:
        assert "did you mean hl_run?" in line


@needs_perf
def test_perf_data_missing_or_corrupt_is_one_line(spin, tmp_path):
    out = tmp_path / "x.jsonl"
    done = run_spin(spin, out, "--runs", "2", "--warmup", "0", "--no-keep-perf")
    assert done.returncode == 0, done.stderr
    none = hotloop("annotate", str(out), "hl_run")
    assert none.returncode == 2
    assert f"{out}: no perf data kept beside it" in none.stderr and "--no-keep-perf" in \
        none.stderr
    off = tmp_path / "off.jsonl"
    assert run_spin(spin, off, "--runs", "2", "--no-perf").returncode == 0
    assert "perf was off for this run" in hotloop("annotate", str(off), "hl_run").stderr
    bad = tmp_path / "b.jsonl"
    assert run_spin(spin, bad, *RUN).returncode == 0
    # the windows themselves, as a session without a tally of its samples by address (an
    # older version's) reads them: its tally is tested on its own
    (tmp_path / "b.perf" / "addrs.json.gz").unlink()
    files = sorted((tmp_path / "b.perf").glob("perf.data.*"))
    for f in files:
        f.write_bytes(b"not perf data at all" * 10)
    corrupt = hotloop("annotate", str(bad), "hl_run")
    assert corrupt.returncode == 2
    line, = corrupt.stderr.splitlines()
    assert "cannot decompress: Not a gzipped file" in line
    for f in files:
        with gzip.open(f, "wb") as g:
            g.write(b"not perf data at all" * 10)
    corrupt = hotloop("annotate", str(bad), "hl_run")
    line, = corrupt.stderr.splitlines()
    assert corrupt.returncode == 2 and "perf cannot read it: incompatible file format" in line


@needs_perf
def test_no_temporary_directory_is_one_line(kept):
    """Each kept window is unpacked into a temporary directory while perf reads it: where
    none can be made (here /proc, which not even root can write), one line and exit 2."""
    code = ("import sys, tempfile; tempfile.tempdir = '/proc'; from hotloop.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, "annotate", str(kept), "hl_run"],
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2, done.stderr
    line, = done.stderr.splitlines()
    assert line.startswith("hotloop: annotate hl_run: ") and "/proc/hotloop-annotate-" in line


@needs_perf
def test_perf_data_whose_binary_is_gone_says_so(kept):
    """As on another machine, or once the build cache is cleaned: the workload's module that
    the samples fell in is not where the perf data says."""
    built = sorted((Path(os.environ["XDG_CACHE_HOME"]) / "hotloop" / "build").glob(
        "_hl_spin_*.so"))
    assert built
    moved = [b.rename(b.with_name(b.name + ".away")) for b in built]
    try:
        done = hotloop("annotate", str(kept), "hl_run")
    finally:
        for m in moved:
            m.rename(m.with_name(m.name.removesuffix(".away")))
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert f"{built[0]} is gone, the binary the run sampled hl_run in" in line
    assert "annotate where the run ran" in line


def _forge_build_ids(result: Path, copy: Path, forge) -> None:
    """`result` copied to `copy` (its perf data beside it) with the build ids it recorded
    changed by `forge`: as if the binaries on disk were rebuilt, or another kernel booted."""
    lines = []
    for line in result.read_text().splitlines():
        obj = json.loads(line)
        if obj.get("scope") == "session":
            obj["build_ids"] = ids = forge(obj["build_ids"])
            # and the paths the worker mapped, as they would be recorded then
            obj["binaries"] = {p: ids[os.path.basename(p)] for p in obj["binaries"]
                               if os.path.basename(p) in ids}
        lines.append(json.dumps(obj))
    copy.write_text("\n".join(lines) + "\n")
    shutil.copytree(result.with_suffix(".perf"), copy.with_suffix(".perf"))


@needs_perf
def test_a_binary_rebuilt_since_the_run_is_refused(kept, tmp_path, cli):
    """perf would disassemble what is at the path today; the build ids the run kept say
    whether that is the code that was sampled."""
    recorded = next(json.loads(ln) for ln in kept.read_text().splitlines()
                    if '"session"' in ln)["build_ids"]
    module = next(d for d in recorded if d.startswith("_hl_spin_"))
    assert "[kernel.kallsyms]" in recorded and "libc.so.6" in recorded
    copy = tmp_path / "rebuilt.jsonl"
    _forge_build_ids(kept, copy, lambda ids: {**ids, module: "ab" * 20,
                                              "[kernel.kallsyms]": "cd" * 20})
    done = hotloop("annotate", str(copy), "hl_run")
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert f"{module} has changed since the run (build id {recorded[module]}, then " \
           f"{'ab' * 20})" in line
    kernel = json.loads(cli("show", str(kept), "--format", "json").stdout)["hot_symbols"]
    name = next(s["symbol"] for s in kernel if s["kernel"])
    done = hotloop("annotate", str(copy), name)
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert "the kernel running now is not the one the run sampled (build id " \
           f"{recorded['[kernel.kallsyms]']}, then {'cd' * 20})" in line
    assert "--vmlinux of that build" in line
    # --top goes on past a symbol it cannot annotate, and says why in one line
    top = hotloop("annotate", str(copy), "--top", "5", "--format", "json")
    assert top.returncode == 0, top.stderr
    assert "hl_run" not in {d["symbol"] for d in json.loads(top.stdout)}
    assert any(f"{module} has changed since the run" in ln for ln in top.stderr.splitlines())
    # a file without build ids (written before they were kept) annotates as before
    _forge_build_ids(kept, tmp_path / "old.jsonl", lambda ids: {})
    assert hotloop("annotate", str(tmp_path / "old.jsonl"), "hl_run").returncode == 0


@needs_perf
def test_kept_data_is_gzipped_and_annotates_as_the_plain_files_do(kept, tmp_path):
    """Kept data is gzipped once the run is over; the same files plain annotate the same."""
    gz = sorted(kept.with_suffix(".perf").glob("perf.data.*"))
    assert gz and all(f.suffix == ".gz" for f in gz)
    # beside them only hotloop's mark, naming the result file, and the tally of samples by
    # address; the copy without it annotates from the windows alone, the same
    assert sorted(f.name for f in kept.with_suffix(".perf").iterdir()) == sorted(
        [".hotloop-perf", "addrs.json.gz", *(f.name for f in gz)])
    assert (kept.with_suffix(".perf") / ".hotloop-perf").read_text() == f"{kept.name}\n"
    copy = tmp_path / "g.jsonl"
    shutil.copy(kept, copy)
    (tmp_path / "g.perf").mkdir()
    for f in gz:
        with gzip.open(f, "rb") as src, open(tmp_path / "g.perf" / f.stem, "wb") as dst:
            shutil.copyfileobj(src, dst)
    done = hotloop("annotate", str(copy), "hl_run", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == \
        json.loads(hotloop("annotate", str(kept), "hl_run", "--format", "json").stdout)


@needs_perf
def test_the_recorder_gzips_what_it_keeps_where_perf_cannot_compress(tmp_path):
    code = ("import asyncio, sys, time\nfrom hotloop.perf.recorder import PerfRecorder\n"
            "async def main():\n"
            "    rec = PerfRecorder([int(sys.argv[1])], keep_dir=sys.argv[2], compress='gzip',"
            " counters=False)\n"
            "    assert await rec.start()\n"
            "    await asyncio.sleep(1.5)\n"
            "    await rec.stop()\n"
            "asyncio.run(main())\n")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        done = subprocess.run([sys.executable, "-c", code, str(busy.pid), str(tmp_path / "k")],
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    finally:
        busy.kill()
        busy.wait()
    assert done.returncode == 0, done.stderr
    kept = sorted(f for f in (tmp_path / "k").iterdir() if f.name != "addrs.json.gz")
    assert kept and all(f.name.startswith("perf.data") and f.suffix == ".gz" for f in kept)
    # and beside them, the tally of the windows' samples by address, written at the stop
    assert (tmp_path / "k" / "addrs.json.gz").is_file()
    with gzip.open(kept[0]) as f:
        assert f.read(8) == b"PERFILE2"         # perf's own file, whole


@needs_perf
def test_enter_on_a_hot_symbol_in_the_console_shows_its_instructions(spin, tmp_path,
                                                                     leftovers):
    """The console's hot-symbols panel: `enter` on a user-space symbol of the run just
    ended opens its annotation (the whole run's), `s` sorts it hottest first, `escape`
    returns; a kernel symbol here gets the one line with the fixes."""
    from hotloop.catalog import Plan
    from hotloop.console.app import HotloopApp
    from hotloop.console.screens.annotation import AnnotationScreen
    from hotloop.console.widgets.symbols import SymbolsTable

    async def wait(pilot, predicate, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, predicate
            await pilot.pause(0.05)

    async def go() -> None:
        app = HotloopApp([spin], results_dir=tmp_path / "results")
        async with app.run_test(size=(120, 36)) as pilot:
            await wait(pilot, lambda: app.main_screen.form.base is not None)
            await app.main_screen.form.load(app.main_screen.cat, Plan("spin", "spin", runs=3, warmup=0))
            await pilot.press("r")
            await wait(pilot, lambda: app.main_screen.controller.live is not None and app.main_screen.controller.live.state == "finished")
            table = app.query_one(SymbolsTable)
            await wait(pilot, lambda: table.latest is not None
                       and table.latest.scope == "session")
            table.focus()
            rows = [s.symbol for s in table.latest.symbols]
            table.move_cursor(row=rows.index("hl_run"))
            await pilot.press("enter")
            await wait(pilot, lambda: isinstance(app.screen, AnnotationScreen)
                       and app.screen.result is not None)
            screen = app.screen
            assert screen.result.symbol == "hl_run" and screen.result.samples > 0
            shown = str(screen.query_one("#annotate-text").render())
            assert "hl_run in _hl_spin_" in shown and "◀" in shown
            await pilot.press("s")
            assert screen.by_share
            await pilot.press("escape")
            assert not isinstance(app.screen, AnnotationScreen)
            await pilot.press("enter", "escape")    # left before perf annotate is done: its
            # result comes to a screen that is gone, and nothing breaks
            await pilot.pause(3)
            assert app.is_running and not isinstance(app.screen, AnnotationScreen)
            kernel = next((i for i, s in enumerate(table.latest.symbols) if s.kernel), None)
            if kernel is not None and not kernel_code().available:
                table.move_cursor(row=kernel)
                await pilot.press("enter")
                await wait(pilot, lambda: isinstance(app.screen, AnnotationScreen) and
                           "kernel symbol" in str(app.screen.query_one("#annotate-text")
                                                  .render()))
                await pilot.press("escape")
            await pilot.press("q")
    asyncio.run(go())
    assert leftovers() == []


@needs_perf
def _started_as(pid_file: Path) -> tuple[int, int, frozenset[int]]:
    """The scheduling policy, nice value and CPUs a process noted in `pid_file` (its
    /proc/PID/stat and status, as the perf shim below copies them)."""
    text = pid_file.read_text()
    stat = text.split(")", 1)[1].split()            # fields from the 3rd (state) on
    cpus: set[int] = set()
    for part in re.search(r"^Cpus_allowed_list:\s*(\S+)", text, re.M).group(1).split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return int(stat[38]), int(stat[16]), frozenset(cpus)   # policy (field 41), nice (19)


def test_while_a_run_goes_on_perf_keeps_off_its_cpus_at_idle_priority(kept, tmp_path,
                                                                     monkeypatch):
    """The console's live annotation: every perf it starts runs at SCHED_IDLE on the CPUs
    the workload leaves free (a perf on PATH that notes how it was started, then is perf).
    The shim notes it with a shell and cat, and puts perf back to normal priority: what is
    tested is how hotloop starts it, and perf at idle priority on a machine whose CPUs are
    busy (another test's workload, stress-ng) waits minutes for a turn."""
    from hotloop.perf.annotate import annotate

    log = tmp_path / "started"          # a file a perf process: they run side by side
    shim = tmp_path / "bin" / "perf"
    shim.parent.mkdir()
    shim.write_text(f"#!/bin/sh\ncat /proc/$$/stat /proc/$$/status > {log}/$$\n"
                    f"chrt --other -p 0 $$ && renice -n 0 -p $$ >/dev/null\n"
                    f"exec {shutil.which('perf')} \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}:{os.environ['PATH']}")
    files = perf_data_files(kept.with_suffix(".perf"))
    hot = results.read(kept).session_symbols
    loop = next(s for s in hot.symbols if s.symbol == "hl_run")
    every = frozenset(os.sched_getaffinity(0))
    nice = os.nice(0)

    def started(background):
        shutil.rmtree(log, ignore_errors=True)
        log.mkdir()
        a = annotate(files, "hl_run", dso=loop.dso, kernel=False, build_ids=hot.build_ids,
                     background=background)
        assert a.samples > 0
        return {_started_as(f) for f in log.iterdir()}

    assert started(None) == {(os.SCHED_OTHER, nice, every)}
    # not pinned: idle priority, nice 19 (as far as it goes from here)
    idle = (os.SCHED_IDLE, min(nice + 19, 19), every)
    assert started(set()) == {idle}
    if len(every) > 1:
        first = min(every)
        assert started({first}) == {(os.SCHED_IDLE, idle[1], every - {first})}


def _copy_result(kept: Path, copy: Path) -> Path:
    """`kept` copied to `copy` with an empty perf directory beside it, to fill."""
    shutil.copy(kept, copy)
    (d := copy.with_suffix(".perf")).mkdir()
    return d


def _watch_tmp(proc: subprocess.Popen[str], tmp: Path, bound: int) -> int:
    """The most `tmp` held while `proc` ran; `proc` killed once it holds more than `bound`
    (so a failing run does not fill the disk)."""
    peak = 0
    while proc.poll() is None:
        held = sum(f.stat().st_size for f in tmp.rglob("*") if f.is_file()) \
            if tmp.exists() else 0
        peak = max(peak, held)
        if held > bound:
            proc.kill()
        time.sleep(0.01)
    return peak


@needs_perf
def test_a_gzip_bomb_is_cut_off_before_it_fills_the_temporary_directory(kept, tmp_path):
    """A kept window that expands far beyond what perf data gzips to (about 9 times) is
    not hotloop's: its expansion stops at a multiple of its size, one line, exit 2."""
    perf = _copy_result(kept, tmp_path / "bomb.jsonl")
    squeeze = gzip.compress(b"\0" * (1 << 20), 9)
    bomb = perf / "perf.data.1.gz"
    with open(bomb, "wb") as f:              # 1 GiB of zeros in about 1 MB
        for _ in range(1024):
            f.write(squeeze)
    for n in (2, 3, 4):
        shutil.copy(bomb, perf / f"perf.data.{n}.gz")
    limit = 64 * bomb.stat().st_size         # a generous bound on what a window may take
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "annotate",
                             str(tmp_path / "bomb.jsonl"), "hl_run"], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp)))
    peak = _watch_tmp(proc, tmp, 4 * limit + (1 << 20))
    err = proc.stderr.read()
    assert peak <= 4 * limit + (1 << 20)     # at most a window's cap per perf at once
    assert proc.returncode == 2, err
    line, = err.splitlines()
    assert f"{perf}/perf.data." in line and "expands beyond" in line
    assert list(tmp.iterdir()) == []


@needs_perf
def test_annotate_ends_within_a_second_of_a_signal(kept, tmp_path):
    """Windows that expand within the bound but take a while to unpack (320 MB each, 25
    times their size): SIGTERM ends annotate within a second, every perf gone, nothing left
    in $TMPDIR (perf data is a long run's, or a forged file's)."""
    perf = _copy_result(kept, tmp_path / "long.jsonl")
    pack = zlib.compressobj(1, zlib.DEFLATED, 31)           # gzip's format
    with open(perf / "perf.data.1.gz", "wb") as f:
        for _ in range(320 * 1024 // 30):
            f.write(pack.compress(os.urandom(1024) + b"\0" * (29 * 1024)))
        f.write(pack.flush())
    for n in (2, 3, 4):
        shutil.copy(perf / "perf.data.1.gz", perf / f"perf.data.{n}.gz")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "annotate",
                             str(tmp_path / "long.jsonl"), "hl_run"], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp)))
    deadline = time.monotonic() + 30
    while not any(tmp.rglob("*-perf.data.*")):     # windows being unpacked for perf
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    try:
        proc.wait(timeout=30)
    finally:
        proc.kill()
    took = time.monotonic() - sent
    assert proc.returncode == 143, proc.stderr.read()
    assert took < 1.0, f"{took:.1f} s"
    assert list(tmp.iterdir()) == []


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _beside_others(spin: Path, tmp_path: Path, cache_home: Path) -> tuple[Path, list[int]]:
    """A spin run with kept perf data while two other runs of spin go on, sampled with it
    (perf samples whole CPUs): another user's (its own copy of the module, the same name
    under another home, another build) and one of the same user's (the same copy).  The
    result, and how many samples perf has of hl_run in this run's own process and copy, in
    each of its windows."""
    homes = [tmp_path / "other", cache_home]
    theirs = [subprocess.Popen([sys.executable, "-m", "hotloop", "run", "spin", "--profiles",
                                str(spin), "--runs", "100000", "--no-perf", "--out",
                                str(tmp_path / f"theirs-{n}.jsonl")],
                               env=dict(os.environ, PYTHONPATH=str(ROOT),
                                        XDG_CACHE_HOME=str(home),
                                        XDG_STATE_HOME=str(tmp_path / f"state-{n}")),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
              for n, home in enumerate(homes)]
    try:
        deadline = time.monotonic() + 120
        while len(others := {c for pid in tagged_pids() if (c := _comm(pid))
                             .endswith("-spin")}) < 2:
            assert time.monotonic() < deadline and all(t.poll() is None for t in theirs)
            time.sleep(0.1)
        mine = tmp_path / "mine.jsonl"         # longer runs: three processes share the CPUs
        done = run_spin(spin, mine, *RUN, "--param", "turns=1000000")
    finally:
        for t in theirs:
            t.kill()
            t.wait()
    assert done.returncode == 0, done.stderr
    # what perf says of this run's own process and copy: its worker's comm (its own, as
    # the result records it), not merely one other than theirs: the tests of another
    # pytest-xdist worker run spin from this same build, under names of their own
    ours = str(cache_home / "hotloop" / "build")
    comms = results.read(mine).session_symbols.comms
    assert comms and not set(comms) & others, (comms, others)
    counted = {"ours": 0, "theirs": 0}
    per_window = []
    for window in perf_data_files(mine.with_suffix(".perf")):
        before = counted["ours"]
        plain = tmp_path / "window.data"
        plain.write_bytes(gzip.decompress(window.read_bytes()))
        script = subprocess.run(["perf", "script", "-F", "comm,ip,sym,symoff,dso", "-G",
                                 "--kallsyms", os.devnull, "-i", str(plain)],
                                capture_output=True, text=True, timeout=60).stdout
        for comm, dso in re.findall(r"^\s*(\S+)\s+[0-9a-f]+\s+hl_run\+0x[0-9a-f]+\s+\((.+)\)$",
                                    script, re.M):
            mine_ = comm in comms and dso.startswith(ours)
            counted["ours" if mine_ else "theirs"] += 1
        per_window.append(counted["ours"] - before)
    assert counted["theirs"] > 0 and counted["ours"] > 0, counted
    return mine, per_window


def _summarised(mine: Path, per_window: list[int]) -> int:
    """The samples of `per_window` in the windows the run summarised: on a machine too busy
    for perf report (at idle priority) to get through a window in its time, the run skips
    it, saying so (its warning names the file), and its hot symbols are of the others."""
    res = results.read(mine)
    files = perf_data_files(mine.with_suffix(".perf"))
    reported = {w.window for w in res.windows}
    skipped = {f for f, _ in enumerate(files)
               if f not in reported or any(files[f].name.removesuffix(".gz") + ";" in w
                                           for w in res.warnings)}
    assert len(skipped) < len(files), res.warnings      # something to compare
    return sum(n for f, n in enumerate(per_window) if f not in skipped)


needs_whole_cpus = pytest.mark.skipif(not system_wide_allowed(),
                                      reason="perf may not sample whole CPUs here")


@needs_perf
@needs_whole_cpus
def test_a_runs_hot_symbols_are_of_its_own_process(spin, tmp_path, cache_home):
    """The run's hot symbols count its worker's samples (perf report --comm), not those of
    the other runs of the workload sampled with it: perf merged every process's samples of
    a symbol into the entry of the first one sampled, then kept or dropped it whole."""
    mine, per_window = _beside_others(spin, tmp_path, cache_home)
    hot = json.loads(hotloop("show", str(mine), "--format", "json").stdout)["hot_symbols"]
    assert next((s["samples"] for s in hot if s["symbol"] == "hl_run"), 0) == \
        _summarised(mine, per_window), results.read(mine).warnings


@needs_perf
@needs_whole_cpus
def test_another_users_copy_of_the_workload_is_not_annotated(spin, tmp_path, cache_home):
    """annotate counts the samples of the binary this run's worker mapped when it was set
    up, in this run's processes only: not the first DSO of the same name perf has."""
    mine, per_window = _beside_others(spin, tmp_path, cache_home)
    annotated = hotloop("annotate", str(mine), "hl_run", "--format", "json")
    assert annotated.returncode == 0, annotated.stderr
    assert json.loads(annotated.stdout)["samples"] == sum(per_window)


@needs_perf
def test_the_processes_a_worker_forks_per_run_are_the_runs_own(tmp_path):
    """The AF_UNIX seqpacket stream test forks its reader at each run, after the worker is
    set up: its samples are the run's (its worker's name, inherited), and annotate counts
    them as the run's own hot symbols do."""
    out = tmp_path / "s.jsonl"
    done = hotloop("run", "seqpacket", "--runs", "3", "--warmup", "0", "--keep-perf",
                   "--out", str(out))
    assert done.returncode == 0, done.stderr
    hot = json.loads(hotloop("show", str(out), "--format", "json").stdout)["hot_symbols"]
    sampled = next(s for s in hot if s["symbol"] == "read")     # libc's, in the reader
    annotated = hotloop("annotate", str(out), "read", "--format", "json")
    assert annotated.returncode == 0, annotated.stderr
    assert json.loads(annotated.stdout)["samples"] == sampled["samples"]


@needs_perf
def test_a_kernel_symbol_that_cannot_annotate_is_refused_before_perf_starts(
        kept, tmp_path, cli, monkeypatch):
    """Counting a kernel symbol's samples loads the kernel's symbols for every window
    (minutes on a loaded machine) before perf annotate refuses it: a --vmlinux that is no
    file, a kernel other than the one sampled, or no kernel code here, is known first, and
    no perf starts for it; --top still annotates the user-space symbols."""
    hot = json.loads(cli("show", str(kept), "--format", "json").stdout)["hot_symbols"]
    name = next(s["symbol"] for s in hot if s["kernel"] and s["dso"] == "[kernel.kallsyms]")
    log = noting_perf(tmp_path, monkeypatch)
    gone = tmp_path / "no-such" / "vmlinux"
    done = hotloop("annotate", str(kept), name, "--vmlinux", str(gone))
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert line == f"hotloop: {name} is a kernel symbol, and --vmlinux {gone} is no file " \
                   f"to disassemble it from"
    assert list(log.iterdir()) == []
    copy = tmp_path / "other-kernel.jsonl"
    _forge_build_ids(kept, copy, lambda ids: {**ids, "[kernel.kallsyms]": "cd" * 20})
    done = hotloop("annotate", str(copy), name)
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert line.startswith("hotloop: the kernel running now is not the one the run sampled") \
        and f"then {'cd' * 20}" in line
    assert list(log.iterdir()) == []
    if not kernel_code().available:         # as on this kind of VM: no kcore, no vmlinux
        done = hotloop("annotate", str(kept), name)
        line, = done.stderr.splitlines()
        assert done.returncode == 2 and line.startswith(f"hotloop: {name} is a kernel symbol: "
                                                        f"the kernel's code is not here")
        assert list(log.iterdir()) == []
    # --top: every kernel symbol refused up front, the user-space ones annotated
    names = [s["symbol"] for s in hot]
    top = max(names.index(name), names.index("hl_run")) + 1
    done = hotloop("annotate", str(copy), "--top", str(top), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "hl_run" in {d["symbol"] for d in json.loads(done.stdout)}
    assert any("the kernel running now is not the one" in ln for ln in done.stderr.splitlines())
    kernel = {s["symbol"] for s in hot if s["dso"] == "[kernel.kallsyms]"}
    started = [f.read_text().splitlines() for f in log.iterdir()]
    assert started
    for argv in started:        # counted without the kernel's symbols: user-space symbols
        assert argv[0] in ("script", "annotate")
        assert argv[0] == "annotate" or argv[argv.index("--kallsyms") + 1] == os.devnull
        assert argv[0] == "script" or argv[argv.index("-s") + 1] not in kernel


@needs_perf
def test_a_compared_symbol_annotates_side_by_side_on_each_sides_session(spin, isolated,
                                                                       leftovers):
    """The compare screen's symbol tab on two real spin runs: `a` on hl_run opens its
    instructions on both sides (one session a side: each its own), each pane naming its
    session; a kernel symbol here says in one line why it cannot."""
    from test_app import wait_for
    from test_app_compare import compared, open_compare, pick
    from textual.widgets import DataTable

    from hotloop.console.app import HotloopApp
    from hotloop.console.screens.symbol_pair import SymbolPairScreen
    from hotloop.console.widgets.symbol_diff import SymbolDiff

    out = isolated / "results"
    for name in ("a", "b"):
        done = run_spin(spin, out / f"{name}.jsonl", *RUN)
        assert done.returncode == 0, done.stderr

    async def go() -> None:
        app = HotloopApp(results_dir=out)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_compare(pilot, app, 2)
            await pick(pilot, screen, "a.jsonl")
            await pick(pilot, screen, "b.jsonl")
            await compared(pilot, screen)
            assert screen.error == ""
            await pilot.press("4")
            diff = screen.query_one(SymbolDiff)
            table = screen.query_one("#compare-symbols", DataTable)
            await wait_for(pilot, lambda: table.row_count > 0, 5, "symbol rows")
            symbols = [r.delta.symbol if r.delta and not r.name else "" for r in diff.rows]
            # perf stat counted the worker's task-clock: the rows are costs per op
            assert diff.costs and "hl_run" in symbols
            assert diff.rows[symbols.index("hl_run")].delta.baseline_ns_per_op > 0
            table.move_cursor(row=symbols.index("hl_run"))
            await pilot.press("a")
            await wait_for(pilot, lambda: isinstance(app.screen, SymbolPairScreen)
                           and all(r is not None or m for r, m in zip(app.screen.results,
                                                                       app.screen.messages)),
                           120, "both sides annotated")
            pair = app.screen
            assert pair.messages == ["", ""], pair.messages
            for i, (side, name) in enumerate((("baseline", "a"), ("new", "b"))):
                shown = pair.pane_text(i)
                assert shown.startswith(f"{side}: results/{name}.jsonl, "), shown
                assert "samples of hl_run" in shown and "hl_run in _hl_spin_" in shown
                assert "◀" in shown
                assert pair.results[i].samples > 0
            await pilot.press("s")
            assert pair.by_share
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is screen, 5, "back to the symbols")
            kernel = next((i for i, r in enumerate(diff.rows)
                           if r.delta and r.delta.kernel and not r.name), None)
            assert kernel is not None       # getppid's path in the kernel, sampled
            if not kernel_code().available:
                table.move_cursor(row=kernel)
                await pilot.press("enter")
                await wait_for(pilot, lambda: isinstance(app.screen, SymbolPairScreen)
                               and all(app.screen.messages), 60, "both sides said why not")
                for said in app.screen.messages:
                    assert "is a kernel symbol: the kernel's code is not here" in said
                await pilot.press("escape")
            await pilot.press("escape", "q")
    asyncio.run(go())
    assert leftovers() == []


@needs_perf
def test_a_long_sessions_symbol_is_annotated_from_an_even_spread_of_its_windows(kept, tmp_path):
    """Beyond MOST_WINDOWS windows, annotate counts an even spread of those holding the
    symbol (each window is a perf script: every one of an 8-hour session took an hour).
    The long session here is the kept one's windows, each copied (real perf data)."""
    from hotloop.perf.spread import MOST_WINDOWS
    gz = perf_data_files(kept.with_suffix(".perf"))
    long = tmp_path / "long.jsonl"
    shutil.copy(kept, long)
    (tmp_path / "long.perf").mkdir()
    copies = MOST_WINDOWS // len(gz) + 2
    for k in range(copies):
        for f in gz:
            shutil.copy(f, tmp_path / "long.perf" / f"{f.name.removesuffix('.gz')}{k:03d}.gz")
    total = copies * len(gz)
    done = hotloop("annotate", str(long), "hl_run", "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["windows"] <= MOST_WINDOWS < doc["sampled_from"] <= total
    assert doc["samples"] > 0
    title = hotloop("annotate", str(long), "hl_run").stdout.splitlines()[0]
    assert f"(an even spread of the {doc['sampled_from']} holding it)" in title


def _counted_window_by_window(result: Path, symbol: str,
                              but: frozenset[str] = frozenset()) -> Counter[int]:
    """`symbol`'s samples in each kept window of `result` (`but` those named), by `perf
    script` here, summed by offset in the symbol: those of the run's processes (its workers'
    pids and names, as the result records them) in the run's own copy of the binary."""
    hot = results.read(result).session_symbols
    assert hot is not None and hot.comms
    own = {p for p in hot.binaries if os.path.basename(p).startswith("_hl_spin_")}
    assert own
    by_offset: Counter[int] = Counter()
    for window in perf_data_files(result.with_suffix(".perf")):
        if window.name.removesuffix(".gz") in but:
            continue
        plain = result.with_name("window.data")
        plain.write_bytes(gzip.decompress(window.read_bytes()))
        script = subprocess.run(["perf", "script", "-F", "comm,pid,ip,sym,symoff,dso", "-G",
                                 "--kallsyms", os.devnull, "-i", str(plain)],
                                capture_output=True, text=True, timeout=120).stdout
        plain.unlink()
        for comm, pid, name, off, dso in re.findall(
                r"^\s*(.*?)\s+(\d+)\s+[0-9a-f]+\s+(.+)\+0x([0-9a-f]+)\s+\((.+)\)$", script, re.M):
            if name == symbol and dso in own and (comm in hot.comms or int(pid) in hot.pids):
                by_offset[int(off, 16)] += 1
    return by_offset


def _by_instruction(doc: dict, by_offset: Counter[int]) -> list[int]:
    """Samples by offset in the symbol, put on the annotation's instructions."""
    starts = [i["offset"] for i in doc["instructions"]]
    out = [0] * len(starts)
    for off, n in by_offset.items():
        out[max(bisect.bisect_right(starts, starts[0] + off) - 1, 0)] += n
    return out


@needs_perf
def _annotated_exactly(result: Path) -> dict[str, Any]:
    """`hotloop annotate RESULT hl_run`'s JSON, asserted exact: every instruction has the
    samples perf script counts in the kept windows one by one, and none is an estimate."""
    done = hotloop("annotate", str(result), "hl_run", "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    by_offset = _counted_window_by_window(result, "hl_run")
    assert doc["samples"] == sum(by_offset.values()) > 0 and doc["sampled_from"] == 0
    assert [i["samples"] for i in doc["instructions"]] == _by_instruction(doc, by_offset)
    return doc


def test_annotate_from_the_tally_is_the_windows_counted_one_by_one(kept, tmp_path):
    """A session's tally of samples by address, written as its windows were summarised:
    annotate from it gives every instruction exactly the samples perf script counts in the
    kept windows, one by one, and as many as the run's hot symbols; the same as the windows
    alone give (the tally moved away), and not an estimate."""
    tally = kept.with_suffix(".perf") / "addrs.json.gz"
    listed = {name for name, _ in json.loads(gzip.decompress(tally.read_bytes()))["windows"]}
    assert listed == {f.name.removesuffix(".gz")
                      for f in perf_data_files(kept.with_suffix(".perf"))}
    doc = _annotated_exactly(kept)
    hot = results.read(kept).session_symbols
    assert doc["samples"] == next(s.samples for s in hot.symbols if s.symbol == "hl_run")
    alone = _copy_result(kept, tmp_path / "alone.jsonl")
    for f in perf_data_files(kept.with_suffix(".perf")):
        shutil.copy(f, alone)
    without = hotloop("annotate", str(tmp_path / "alone.jsonl"), "hl_run", "--format", "json")
    assert without.returncode == 0, without.stderr
    assert json.loads(without.stdout) == doc


@needs_perf
def test_a_thinned_session_annotates_every_window_from_its_tally(spin, tmp_path):
    """A session past its perf_keep_mb keeps an even sample of its windows; its tally holds
    every window's samples, so annotate counts them all (as many as its hot symbols say),
    where its kept windows alone have fewer."""
    out = tmp_path / "thin.jsonl"
    done = run_spin(spin, out, "--runs", "100", "--warmup", "0", "--keep-perf",
                    "--perf-keep-mb", "1", "--param", "turns=1000000")
    assert done.returncode == 0, done.stderr
    res = results.read(out)
    assert any("reached its budget" in w for w in res.warnings), res.warnings
    kept_windows = perf_data_files(out.with_suffix(".perf"))
    tally = json.loads(gzip.decompress((out.with_suffix(".perf") / "addrs.json.gz")
                                       .read_bytes()))
    listed = {name for name, _ in tally["windows"]}
    # every window summarised (its line in the result) is in the tally, thinned or not (but
    # one perf script gave up on, on a loaded machine: its line has no samples)
    windows = [w for w in res.windows if w.scope == "window"]
    numbers = {n for _, n in tally["windows"]}
    assert {w.window for w in windows if w.samples} <= numbers <= {w.window for w in windows}
    assert len(kept_windows) < len(listed)
    annotated = hotloop("annotate", str(out), "hl_run", "--format", "json")
    if not kept_windows:
        # a loaded machine: the windows still being read filled the 1 MB budget and none
        # was kept to disassemble; annotate says so in one line, naming the budget
        assert annotated.returncode != 0 and "beyond perf_keep_mb" in annotated.stderr, \
            annotated.stderr
        assert len(annotated.stderr.strip().splitlines()) == 1
        return
    assert annotated.returncode == 0, annotated.stderr
    doc = json.loads(annotated.stdout)
    # the run's hot symbols, and the kept windows perf script had not summarised when the
    # session ended (a loaded machine's last ones), counted from the windows themselves
    hot = next(s for s in res.session_symbols.symbols if s.symbol == "hl_run")
    rest = _counted_window_by_window(out, "hl_run", frozenset(listed))
    assert doc["samples"] == hot.samples + sum(rest.values()) and doc["sampled_from"] == 0
    assert doc["windows"] >= sum(1 for w in windows
                                 if any(s.symbol == "hl_run" for s in w.symbols))
    assert doc["windows"] > len(kept_windows)
    (out.with_suffix(".perf") / "addrs.json.gz").unlink()
    alone = hotloop("annotate", str(out), "hl_run", "--format", "json")
    assert alone.returncode == 0, alone.stderr
    assert 0 < json.loads(alone.stdout)["samples"] < doc["samples"]


@needs_perf
@pytest.mark.parametrize("forged, said", [
    (b"not gzip at all", "cannot decompress"),
    (gzip.compress(b'{"kind": "hotloop samples by address", "format": 99}'), "format 99"),
    (gzip.compress(b"[" * 100_000), "not a tally hotloop wrote"),
    (None, "expands beyond"),
], ids=["not gzip", "format 99", "not a tally", "a gzip bomb"])   # gzip's bytes hold a time
def test_a_forged_tally_is_one_line(kept, tmp_path, forged, said):
    perf = _copy_result(kept, tmp_path / "f.jsonl")
    for f in perf_data_files(kept.with_suffix(".perf")):
        shutil.copy(f, perf)
    if forged is None:                  # a gzip bomb: past MOST_UNPACKED in one stream
        pack = zlib.compressobj(9, zlib.DEFLATED, 31)
        forged = b"".join(pack.compress(b"\0" * (1 << 20)) for _ in range(129)) + pack.flush()
    (perf / "addrs.json.gz").write_bytes(forged)
    done = hotloop("annotate", str(tmp_path / "f.jsonl"), "hl_run")
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert f"{perf / 'addrs.json.gz'}: " in line and said in line and "remove it" in line


@needs_perf
def test_a_session_stopped_by_ctrl_c_annotates_from_the_tally_it_had(spin, tmp_path):
    """Ctrl-C: the recorders are cancelled, and the tally is written as the session goes,
    with every window summarised by then; annotate counts those from it, and the kept
    windows it does not list (summarised after, or never) one by one: all of them, here,
    where no window was thinned."""
    from faulty import wait_for_runs
    out = tmp_path / "c.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "spin", "--profiles",
                             str(spin), "--runs", "1000", "--warmup", "0", "--keep-perf",
                             "--param", "turns=1000000", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        wait_for_runs(out, 15, timeout=300)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, err
    tally = json.loads(gzip.decompress((out.with_suffix(".perf") / "addrs.json.gz")
                                       .read_bytes()))
    res = results.read(out)
    windows = [w for w in res.windows if w.scope == "window"]
    numbers = {n for _, n in tally["windows"]}
    assert {w.window for w in windows if w.samples} <= numbers     # none lost at the stop
    _annotated_exactly(out)
