"""Compile a workload's C source into a cffi extension module, cached.

cffi (API mode, the cdef block of hotloop.h) writes the wrapper; the compiler
is run here directly so its errors can be captured and reported in a few
lines.  The cache key covers the header, the source, the flags, the compiler
version and the Python ABI, and a file lock keeps two processes from
building the same module at once.
"""
from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import cffi
from cffi.recompiler import make_c_source

from hotloop import paths
from hotloop.errors import HotloopError
from hotloop.run.built import Built, load

__all__ = ["Built", "build", "load"]

CC = os.environ.get("CC", "cc")
BASE_FLAGS = ("-fPIC", "-shared", "-Wall", "-pthread")
ERROR_LINES = 6


def header() -> bytes:
    """hotloop.h, the workloads' ABI; a bundled file gone missing is bad input, in one line."""
    try:
        return paths.HEADER.read_bytes()
    except OSError as e:
        raise HotloopError(f"{paths.HEADER}: cannot read the bundled header: {e.strerror} "
                           f"({paths.REINSTALL})") from None


def cdef() -> str:
    text = header().decode()
    m = re.search(r"/\* cdef-begin.*?\*/(.*?)/\* cdef-end \*/", text, re.S)
    if not m:
        raise HotloopError(f"{paths.HEADER}: no cdef-begin/cdef-end block")
    return m.group(1)


@functools.cache
def compiler_version() -> str:
    try:
        out = subprocess.run([CC, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise HotloopError(f"C compiler {CC!r} not usable ({e}): install gcc") from None
    return out.stdout.splitlines()[0].strip()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build(source: Path, cflags: tuple[str, ...] = ("-O2",), name: str = "") -> Built:
    """Compile `source` (or reuse the cached build); HotloopError on a compile error."""
    try:
        src = source.read_bytes()
    except OSError as e:
        raise HotloopError(f"{source}: cannot read the workload source: {e.strerror}") from None
    version = compiler_version()
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    # cffi writes the module's wrapper: another cffi (a second hotloop installed elsewhere)
    # gets builds of its own.
    key = _sha256(b"\0".join([header(), src, " ".join(cflags).encode(), version.encode(),
                              suffix.encode(), cffi.__version__.encode()]))[:16]
    stem = re.sub(r"\W", "_", name or source.stem)
    module_name = f"_hl_{stem}_{key}"
    out_dir = paths.cache_dir() / "build"     # the user's: never inside the installed package
    target = out_dir / (module_name + suffix)
    built = Built(target, module_name, _sha256(src), version, tuple(cflags), True)
    if target.exists():
        return built
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / ".lock").touch()
    except OSError as e:
        raise HotloopError(f"{out_dir}: cannot use the build cache: {e.strerror} "
                           f"(set XDG_CACHE_HOME to a directory of yours)") from None
    with open(out_dir / ".lock", "w") as lock:
        _wait_lock(lock.fileno(), source)
        if target.exists():             # built by another process meanwhile
            return built
        _compile(source, cflags, module_name, target)
    return Built(target, module_name, built.source_sha256, version, tuple(cflags), False)


# Set by a signal (cli): a build waiting for another's lock, or compiling, gives up at once,
# so Ctrl-C ends hotloop instead of waiting for a compiler or a lock holder that may hang.
CANCEL = threading.Event()


def _cancelled(source: Path) -> HotloopError:
    return HotloopError(f"{source}: interrupted while building")


def _wait_lock(fd: int, source: Path) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:         # another hotloop builds this cache: wait for it
            if CANCEL.wait(0.05):
                raise _cancelled(source) from None


def _run_cancellable(cmd: list[str], source: Path) -> tuple[int, str]:
    """The compiler's exit status and stderr; killed when CANCEL is set."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while True:
        try:
            _, err = proc.communicate(timeout=0.05)   # retrying loses no output
            return proc.returncode, err
        except subprocess.TimeoutExpired:
            if CANCEL.is_set():
                proc.kill()
                proc.wait()
                raise _cancelled(source) from None


def _compile(source: Path, cflags: tuple[str, ...], module_name: str, target: Path) -> None:
    work = target.parent / f".{module_name}.tmp"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        ffi = cffi.FFI()
        ffi.cdef(cdef())
        wrapper = work / f"{module_name}.c"
        # FFI.emit_c_code() without its "generating ..." line on stdout.
        make_c_source(ffi, module_name, '#include "hotloop.h"\n', str(wrapper), verbose=False)
        tmp_so = work / target.name
        cmd = [CC, *BASE_FLAGS, *cflags, f"-I{paths.CSRC}", f"-I{source.parent}",
               f"-I{sysconfig.get_paths()['include']}", str(wrapper), str(source),
               "-o", str(tmp_so)]
        code, stderr = _run_cancellable(cmd, source)
        if code != 0:
            raise HotloopError(f"{source}: does not compile: {first_errors(stderr)}")
        check_links(source, tmp_so)
        os.replace(tmp_so, target)      # atomic: a reader never sees half a file
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_links(source: Path, so: Path) -> None:
    """A symbol nothing defines (a typo, a missing hl_* function) shows only when the
    module is loaded: load it now (RTLD_NOW), so it is bad input, not a crashed worker."""
    # In a child process: the user's constructors must not run inside hotloop.
    probe = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                            str(so)], capture_output=True, text=True)
    if probe.returncode != 0:
        err = probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "load failed"
        m = re.search(r"undefined symbol: (\S+)", err)
        what = f"undefined symbol {m.group(1)}" if m else err
        hint = " (a workload defines hl_setup, hl_run, hl_pids and hl_teardown)" \
            if m and m.group(1).startswith("hl_") else ""
        raise HotloopError(f"{source}: does not link: {what}{hint}")


def first_errors(stderr: str) -> str:
    """The compiler's first error lines, joined into one line for the report."""
    lines = [ln.strip() for ln in stderr.splitlines() if re.search(r"\berror\b", ln)]
    lines = lines or [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return " | ".join(lines[:ERROR_LINES]) or "the compiler failed without a message"
