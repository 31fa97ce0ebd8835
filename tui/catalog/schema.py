"""Strict validation of the TOML tables: an unknown key is an error, and every error names the
file, the line, the table and the key.
"""
from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

from hotloop import paths
from hotloop.catalog.files import read_text
from hotloop.catalog.model import (
    METRICS,
    RUN_LIMITS,
    SCHED_POLICIES,
    STOP_WAIT_S,
    CpuProfile,
    Host,
    KernelProfile,
    Param,
    Plan,
    Workload,
    int64_problem,
    stop_wait_problem,
    timeout_problem,
    until_ci_problem,
)
from hotloop.catalog.ssh_trust import own, refused_config, refused_option
from hotloop.catalog.sysctl_trust import SET as SHARED_SYSCTLS
from hotloop.catalog.sysctl_trust import benchmarking
from hotloop.checks import Check, list_of
from hotloop.errors import HotloopError
from hotloop.host import kimage, procs
from hotloop.host.settings import value_problem
from hotloop.perf.call_graphs import CALL_GRAPHS

# --- validation ------------------------------------------------------------

class Where:
    """Builds `file:line: [table] key: message` errors for one file."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def line_of(self, kind: str, name: str, key: str = "") -> int | None:
        # tomllib keeps no positions: find the table header, then the key.
        header = re.compile(r"^\s*\[\s*" + re.escape(kind) + r"\s*\.\s*\"?" + re.escape(name)
                            + r"\"?\s*\]")
        start = next((i for i, ln in enumerate(self.lines) if header.match(ln)), None)
        if start is None:
            start = next((i for i, ln in enumerate(self.lines)
                          if re.search(r"\b" + re.escape(name) + r"\b", ln)), None)
            if start is None:
                return None
        if not key:
            return start + 1
        first = key.split(".")[0]
        pat = re.compile(r"^\s*\"?" + re.escape(first) + r"\"?\s*[=.]")
        for i in range(start + 1, len(self.lines)):
            if self.lines[i].lstrip().startswith("["):
                break
            if pat.match(self.lines[i]):
                return i + 1
        return start + 1

    def error(self, kind: str, name: str, key: str, message: str) -> HotloopError:
        line = self.line_of(kind, name, key)
        loc = f"{self.path}:{line}" if line else str(self.path)
        what = f"[{kind}.{name}]" + (f" {key}" if key else "")
        return HotloopError(f"{loc}: {what}: {message}")


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)




def _is(*types: type) -> Check:
    names = " or ".join(_type_name(t()) for t in types)

    def check(v: Any) -> str | None:
        if isinstance(v, bool) and bool not in types:
            return f"expected {names}, got {_type_name(v)}"
        return None if isinstance(v, types) else f"expected {names}, got {_type_name(v)}"
    return check


def _line(v: Any) -> str | None:
    """A one-line name (a label lands in every result header, table and title): no control
    characters, so a newline cannot forge a line of compare's output."""
    bad = _is(str)(v)
    if bad:
        return bad
    c = next((c for c in v if ord(c) < 32 or ord(c) == 127), None)
    return None if c is None else f"{v!r} holds a control character ({c!r}); one line only"


def _ssh_word(v: Any) -> str | None:
    """An address or a user name, given to ssh as one argument: a leading "-" would make it
    an option of ssh's (-oProxyCommand=...), so none may start so."""
    bad = _line(v)
    if bad:
        return bad
    if not v or v.startswith("-") or any(c.isspace() for c in v):
        return f"{v!r}: expected a name without spaces that does not start with '-'"
    return None


def _ssh_option(v: Any) -> str | None:
    """One `-o` option of ssh: Key=value."""
    bad = _line(v)
    if bad:
        return bad
    return None if re.fullmatch(r"[A-Za-z][A-Za-z0-9]*\s*[= ]\s*\S.*", v) else \
        f"{v!r}: expected an ssh option as Key=value (e.g. ProxyJump=bastion)"


MEMORY_MIB = (256, 1 << 20)        # 9p's buffers want more than 128M; 1024G is a lot


def _memory(v: Any) -> str | None:
    """A VM's memory as virtme-run's --memory passes it to qemu's -m: a number with M or G,
    or a bare number, to which virtme-run appends M ("1T" would become "-m 1TM")."""
    bad = _is(str)(v)
    if bad:
        return bad
    m = re.fullmatch(r"([1-9][0-9]{0,7})([MG]?)", v)
    mib = int(m.group(1)) * (1024 if m.group(2) == "G" else 1) if m else 0
    lo, hi = MEMORY_MIB
    return None if lo <= mib <= hi else \
        (f"{v!r}: expected a size like \"2G\" or \"512M\" (a number with M or G, or alone "
         f"for MiB) from {lo}M to {hi >> 10}G")


def _one_of(choices: tuple[str, ...]) -> Check:
    def check(v: Any) -> str | None:
        return _is(str)(v) or (None if v in choices else
                               f"{v!r} is not one of {', '.join(choices)}")
    return check


def _int_range(lo: int | None, hi: int | None) -> Check:
    def check(v: Any) -> str | None:
        bad = _is(int)(v)
        if bad:
            return bad
        if lo is not None and v < lo:
            return f"{v} is below the minimum {lo}"
        if hi is not None and v > hi:
            return f"{v} is above the maximum {hi}"
        return None
    return check




def _array(item: Check) -> Check:
    return list_of(item, "an array", _type_name)


SPECS: dict[str, dict[str, Check]] = {
    "workload": {"source": _is(str), "summary": _is(str), "metric": _is(str),
                 "unit": _is(str), "higher_is_better": _is(bool),
                 "procs": _int_range(1, 64), "params": _is(dict)},
    "cpu": {"summary": _is(str), "cpus": _array(_int_range(0, 4095)),
            "sched": _one_of(SCHED_POLICIES), "priority": _int_range(0, procs.PRIORITY_MAX),
            "nice": _int_range(*procs.NICE), "governor": _is(str), "boost": _is(bool),
            "cflags": _array(_is(str)), "isolated": _is(bool), "strict": _is(bool)},
    "kernel": {"summary": _is(str), "label": _line, "sysctl": _is(dict),
               "expect": _is(dict), "image": _line, "append": _line,
               "cpus": _int_range(1, 256), "memory": _memory},
    "plan": {"summary": _is(str), "workload": _is(str), "cpu": _is(str), "kernel": _is(str),
             "runs": _int_range(*RUN_LIMITS["runs"]),
             "warmup": _int_range(*RUN_LIMITS["warmup"]),
             "perf": _is(bool), "perf_freq": _int_range(*RUN_LIMITS["perf_freq"]),
             "call_graph": _one_of(CALL_GRAPHS), "timeout": timeout_problem,
             "processes": _int_range(*RUN_LIMITS["processes"]),
             "until_ci": until_ci_problem, "params": _is(dict),
             "perf_keep_mb": _int_range(*RUN_LIMITS["perf_keep_mb"])},
    "host": {"address": _ssh_word, "user": _ssh_word, "port": _int_range(1, 65535),
             "identity_file": _line, "ssh_config": _line, "ssh_options": _array(_ssh_option),
             "hotloop": _line, "directory": _line, "label": _line, "summary": _is(str),
             "stop_wait": stop_wait_problem},
}
REQUIRED = {"workload": ("source",), "plan": ("workload",), "cpu": (), "kernel": (),
            "host": ("address",)}
_PARAM_SPEC: dict[str, Check] = {"default": _is(int, str),
                                 "min": lambda v: _is(int)(v) or int64_problem(v),
                                 "max": lambda v: _is(int)(v) or int64_problem(v),
                                 "choices": _array(_is(str)), "help": _is(str)}
_EXPECT_SPEC: dict[str, Check] = {"release": _is(str), "cmdline_contains": _array(_is(str)),
                                  "mitigations": _one_of(("on", "off"))}
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def check_keys(where: Where, kind: str, name: str, table: dict, spec: dict[str, Check],
                prefix: str = "") -> None:
    for key, value in table.items():
        if key not in spec:
            known = ", ".join(spec)
            raise where.error(kind, name, prefix + key, f"unknown key (known: {known})")
        bad = spec[key](value)
        if bad:
            raise where.error(kind, name, prefix + key, bad)


def _param(where: Where, wname: str, pname: str, spec: Any) -> Param:
    key = f"params.{pname}"
    if not isinstance(spec, dict):
        raise where.error("workload", wname, key, "expected a table like { default = 1 }")
    check_keys(where, "workload", wname, spec, _PARAM_SPEC, key + ".")
    if "default" not in spec:
        raise where.error("workload", wname, key, "missing key 'default'")
    default = spec["default"]
    if isinstance(default, str) and ("min" in spec or "max" in spec):
        raise where.error("workload", wname, key, "min/max apply to integer params only")
    if isinstance(default, int) and "choices" in spec:
        raise where.error("workload", wname, key, "choices apply to string params only")
    p = Param(pname, default, spec.get("min"), spec.get("max"),
              tuple(spec.get("choices", ())), spec.get("help", ""))
    if p.min is not None and p.max is not None and p.min > p.max:
        raise where.error("workload", wname, key, f"min {p.min} is above max {p.max}")
    bad = p.problem(default)
    if bad:
        raise where.error("workload", wname, key + ".default", bad)
    return p


def _workload(where: Where, name: str, t: dict) -> Workload:
    source = (where.path.parent / t["source"]).resolve()
    if not source.is_file():
        raise where.error("workload", name, "source", f"no such file: {source}")
    metric = t.get("metric", "ops/s")
    if metric not in METRICS and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", metric):
        raise where.error("workload", name, "metric", f"unknown metric {metric!r} (one of "
                          f"{', '.join(METRICS)}, or the name of an extra the workload "
                          f"reports with hl_add_extra)")
    unit, better = METRICS.get(metric, (str(metric), True))
    params = {p: _param(where, name, p, s) for p, s in t.get("params", {}).items()}
    return Workload(name, source, t.get("summary", ""), metric, t.get("unit", unit),
                    t.get("higher_is_better", better), t.get("procs", 1), params,
                    str(where.path))


def _cpu(where: Where, name: str, t: dict) -> CpuProfile:
    sched = t.get("sched", "other")
    prio = t.get("priority", 0)
    if sched in ("fifo", "rr") and not 1 <= prio <= 99:
        raise where.error("cpu", name, "priority", f"sched {sched} needs a priority in 1..99")
    if sched not in ("fifo", "rr") and prio != 0:
        raise where.error("cpu", name, "priority", f"sched {sched} takes priority 0 only")
    return CpuProfile(name, t.get("summary", ""), tuple(t.get("cpus", ())), sched, prio,
                      t.get("nice", 0), t.get("governor"), t.get("boost"),
                      tuple(t.get("cflags", ("-O2",))), t.get("isolated", False),
                      t.get("strict", False), str(where.path))


def _trusted_dir(path: Path) -> bool:
    """The user's own config directory, or the bundled profiles."""
    try:
        return own(path) or path.resolve().parent == paths.BUNDLED_PROFILES.resolve()
    except OSError:
        return False


def _kernel(where: Where, name: str, t: dict) -> KernelProfile:
    for key, value in t.get("sysctl", {}).items():
        if not re.fullmatch(r"[a-z0-9_]+(\.[a-zA-Z0-9_-]+)+", key):
            raise where.error("kernel", name, "sysctl", f"{key!r} is not a sysctl name")
        # a kernel booted in a VM sets its own guest's sysctls, never this machine's
        if not benchmarking(key) and "image" not in t and not _trusted_dir(where.path):
            raise where.error("kernel", name, "sysctl", (
                f"{key}: outside the sysctls a shared profile may set ({SHARED_SYSCTLS}): "
                f"accepted only from your own config directory ({paths.config_dir()}), not "
                f"from {where.path}"))
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            raise where.error("kernel", name, "sysctl",
                              f"{key}: expected an integer or a string, got {_type_name(value)}")
        # Control characters, "" and "011" would not be written as they read.
        problem = value_problem(str(value))
        if problem:
            raise where.error("kernel", name, "sysctl", f"{key}: {problem}")
    check_keys(where, "kernel", name, t.get("expect", {}), _EXPECT_SPEC, "expect.")
    image = ""
    if "image" in t:
        image = os.path.expanduser(t["image"])
        if not os.path.isabs(image):        # beside the file, as a workload's source
            image = str(where.path.parent / image)
        problem = kimage.image_problem(Path(image))
        if problem:
            raise where.error("kernel", name, "image", problem)
    else:
        for key in ("append", "cpus", "memory"):
            if key in t:
                raise where.error("kernel", name, key, "applies to a kernel booted in a VM: "
                                  "give its image too (image = \"/boot/vmlinuz-...\")")
    append = t.get("append", "")
    try:
        shlex.split(append)
    except ValueError as e:
        raise where.error("kernel", name, "append", f"{append!r}: {e} (the kernel command "
                          f"line splits as a shell's words)") from None
    return KernelProfile(name, t.get("summary", ""), t.get("label", name),
                         dict(t.get("sysctl", {})), dict(t.get("expect", {})), str(where.path),
                         image, append, t.get("cpus"), t.get("memory", ""))


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _plan(where: Where, name: str, t: dict) -> Plan:
    for key, value in t.get("params", {}).items():
        # A list of values makes the plan a batch: one variant per value.
        if isinstance(value, list) and value and all(map(_scalar, value)):
            continue
        if not _scalar(value):
            raise where.error("plan", name, f"params.{key}", "expected an integer, a string "
                              f"or a non-empty array of them, got {_type_name(value)}")
    fields = {k: v for k, v in t.items() if k != "params"}
    return Plan(name=name, params=dict(t.get("params", {})), origin=str(where.path), **fields)


def _beside(where: Where, path: str) -> str:
    """A file a host names: a relative path is its TOML file's neighbour (as a profile's
    `source` is), never the working directory's; "~/..." and absolute paths stay as written."""
    if not path or os.path.isabs(os.path.expanduser(path)):
        return path
    return os.path.abspath(where.path.parent / path)


def _trusted(where: Where, name: str, t: dict, ssh_config: str) -> None:
    """Refuse, from a profile outside the user's own directory, what would make ssh run a
    command, write a file or let the remote in here: its ssh options, and what its ssh config
    file says (read now, before ssh ever runs)."""
    if own(where.path):
        return
    mine = f"accepted only from your own config directory ({paths.config_dir()}), not from " \
           f"{where.path}"
    for option in t.get("ssh_options", ()):
        if said := refused_option(option):
            raise where.error("host", name, "ssh_options", (
                f"{option!r}: {said.key} {said.why}, {mine}: put it there, or in "
                f"~/.ssh/config"))
    if not ssh_config:
        return
    path = os.path.expanduser(ssh_config)
    try:                                # a regular file, at most PROFILE_CAP bytes
        said = refused_config(read_text(Path(path)))
    except HotloopError as e:
        raise where.error("host", name, "ssh_config", str(e)) from None
    if said:
        raise where.error("host", name, "ssh_config", (
            f"{path}:{said.line}: {said.key} {said.why}, {mine}: put the host there, or the "
            f"setting in ~/.ssh/config"))


def _host(where: Where, name: str, t: dict) -> Host:
    ssh_config = _beside(where, t.get("ssh_config", ""))
    _trusted(where, name, t, ssh_config)
    return Host(name, t["address"], t.get("user", ""), t.get("port"),
                _beside(where, t.get("identity_file", "")), ssh_config,
                tuple(t.get("ssh_options", ())), t.get("hotloop", ""),
                t.get("directory", ""), t.get("label", ""), t.get("summary", ""),
                str(where.path), float(t.get("stop_wait", STOP_WAIT_S)))


BUILDERS = {"workload": _workload, "cpu": _cpu, "kernel": _kernel, "plan": _plan,
            "host": _host}
