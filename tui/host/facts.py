"""Facts about the running kernel and CPU, recorded in every result header, and `expect` checks.
"""
from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from hotloop.host import sysfs
from hotloop.host.settings import read_sysctl
from hotloop.host.sysfs import SystemSettingError

# --------------------------------------------------------------------------- kernel facts


def vulnerabilities() -> dict[str, str]:
    d = sysfs.CPU_SYS / "vulnerabilities"
    try:
        names = sorted(p.name for p in d.iterdir())
    except OSError:
        return {}
    out: dict[str, str] = {}
    for name in names:
        text = sysfs.read_opt(d / name)
        if text is not None:
            out[name] = text
    return out


def cmdline() -> str:
    return sysfs.read_opt(sysfs.PROC / "cmdline") or ""


def mitigations_state(vulns: Mapping[str, str] | None = None, cmd: str | None = None) -> str:
    """"off", "on", "not affected" or "unknown", from the cmdline and vulnerabilities files.

    `mitigations=off` on the cmdline decides. Otherwise any "Mitigation:" line
    means on; "Vulnerable" with no mitigation anywhere means off (e.g. each
    mitigation disabled by its own flag); all "Not affected" means nothing to do.
    """
    cmd = cmdline() if cmd is None else cmd
    if "mitigations=off" in cmd.split():
        return "off"
    vulns = vulnerabilities() if vulns is None else vulns
    if not vulns:
        return "unknown"
    texts = list(vulns.values())
    if any(t.startswith("Mitigation") for t in texts):
        return "on"
    if any(t.startswith("Vulnerable") for t in texts):
        return "off"
    return "not affected"


def cpu_model() -> str:
    text = sysfs.read_opt(sysfs.PROC / "cpuinfo") or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model", "Processor"):
            return value.strip()
    return os.uname().machine


def kernel_facts(sysctl_names: Iterable[str] = ()) -> dict[str, Any]:
    """What a result header records about the kernel, plus the touched sysctls' values now."""
    u = os.uname()
    vulns = vulnerabilities()
    cmd = cmdline()
    sysctls: dict[str, str | None] = {}
    for name in sysctl_names:
        try:
            sysctls[name] = read_sysctl(name)
        except SystemSettingError:
            sysctls[name] = None
    return {
        "release": u.release,
        "version": u.version,
        "machine": u.machine,
        "cmdline": cmd,
        "cpu_model": cpu_model(),
        "mitigations": mitigations_state(vulns, cmd),
        "vulnerabilities": vulns,
        "sysctl": sysctls,
    }


_REGEX_ONLY = re.compile(r"[\\^$+(){}|]")


def release_matches(pattern: str, release: str) -> bool:
    """Glob ("6.18*") unless the pattern uses regex-only syntax (\\ ^ $ + ( ) { } |).

    Why not try both: "4.3*" read as a regex matches "6.18.44" ("44"), so a
    pattern must mean one thing.
    """
    if _REGEX_ONLY.search(pattern):
        try:
            return re.search(pattern, release) is not None
        except re.error as e:
            raise SystemSettingError(f"expect.release: bad regular expression {pattern!r}: {e}") from None
    return fnmatch.fnmatchcase(release, pattern)


def check_expect(expect: Mapping[str, Any]) -> list[str]:
    """Check a kernel profile's `expect` table against the running kernel; one message per mismatch.

    Keys: release (glob or regex on uname release), cmdline_contains (list of
    strings, or one string), mitigations ("on" | "off"). Unknown keys and wrong
    types raise SystemSettingError (bad profile, not a mismatch).
    """
    problems: list[str] = []
    for key in expect:
        if key not in ("release", "cmdline_contains", "mitigations"):
            raise SystemSettingError(
                f"expect.{key}: unknown key (known: release, cmdline_contains, mitigations)"
            )
    if "release" in expect:
        pattern = expect["release"]
        if not isinstance(pattern, str):
            raise SystemSettingError("expect.release: must be a string pattern")
        release = os.uname().release
        if not release_matches(pattern, release):
            problems.append(f"kernel release {release} does not match {pattern!r}")
    if "cmdline_contains" in expect:
        wanted = expect["cmdline_contains"]
        if isinstance(wanted, str):
            wanted = [wanted]
        if not isinstance(wanted, list) or not all(isinstance(w, str) for w in wanted):
            raise SystemSettingError("expect.cmdline_contains: must be a list of strings")
        cmd = cmdline()
        for w in wanted:
            # Plain substring: "isolcpus=" and "nohz_full=1" both work.
            if w not in cmd:
                problems.append(f"kernel cmdline does not contain {w!r}")
    if "mitigations" in expect:
        want = expect["mitigations"]
        if want not in ("on", "off"):
            raise SystemSettingError("expect.mitigations: must be \"on\" or \"off\"")
        state = mitigations_state()
        if state not in (want, "not affected"):
            problems.append(f"mitigations are {state}, profile expects {want}")
    return problems
