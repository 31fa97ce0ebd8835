"""Other machines over SSH: `run --host`, `host check` and `host setup`.

A [host.NAME] of the profiles says how to reach a machine (run.remote runs ssh with it).  The
plan is resolved there, by the remote hotloop, from its own profiles: the command line's
arguments go there as they were typed, each one quoted, and are checked there.
"""
from __future__ import annotations

import argparse
import asyncio
import re
import shlex
import sys
import tempfile
from pathlib import Path

from hotloop import __version__
from hotloop.catalog import Catalog, Host, Plan
from hotloop.cli.common import load_catalog, warn_skipped
from hotloop.cli.run import choices, drive_and_report, emit, variants
from hotloop.cli.wheel import build as build_wheel
from hotloop.errors import HotloopError
from hotloop.paths import source_digest
from hotloop.run import launch, start
from hotloop.run.remote import (
    SETUP_DIR,
    RemoteSession,
    failure,
    other_sources,
    remote_path,
    run_remote,
    setup_advice,
    which_hotloop,
)
from hotloop.visible import visible

SETUP_TIMEOUT_S = 900.0                 # pip installing hotloop's dependencies there
SETUP_SHOWN = "~/.cache/hotloop"        # SETUP_DIR as a user reads it ($XDG_CACHE_HOME's)


def hosts_named(cat: Catalog, names: list[str], flag: str = "--host") -> list[Host]:
    for name in names:
        cat.require("host", name, flag)
        if names.count(name) > 1:
            raise HotloopError(f"--host {name}: named twice")
    return [cat.hosts[n] for n in names]


def calibration_sessions(cat: Catalog, args: argparse.Namespace, plan: Plan, where: Path,
                         chosen: start.Choices) -> list[RemoteSession]:
    """`calibrate PLAN --host NAME`: the K A/A sessions, one after the other, there; their
    result files here, in `where` (their headers name that machine, so the noise profile is
    that machine's, as compare looks it up for results from it)."""
    host, = hosts_named(cat, [args.host])
    launch.check_host(cat.kernels[plan.kernel], host.name)
    return [start.there(host, plan, where / f"session-{i:02d}.jsonl", chosen,
                        variant=f"session {i}")
            for i in range(1, args.sessions + 1)]


def run_on_hosts(cat: Catalog, args: argparse.Namespace) -> int:
    """`run --host A [--host B]`: the plan on each host, at once or (--interleave) taking
    turns, a result file here for each; compared when there are several."""
    hosts = hosts_named(cat, args.host)
    # the plan and its overrides, checked here; each host's hotloop fits it to that machine
    todo = variants(cat, args, here=False)
    if len(todo) > 1:                   # several asked for, or a plan that is a batch
        raise HotloopError(f"--host runs one variant on each host, and this asks for "
                           f"{len(todo)} ({', '.join(v.label for v in todo[:3])}"
                           f"{', ...' if len(todo) > 3 else ''}): one plan, one --cpu, one "
                           f"value a --param, one --kernel (the hosts are what is compared)")
    if args.control or args.gated:
        raise HotloopError("--control is what a remote session is given; with --host, "
                           "hotloop gives it")
    if args.interleave and len(hosts) < 2:
        raise HotloopError("--interleave needs two or more --host (or variants on this "
                           "machine, without --host)")
    chosen = choices(args, len(hosts), each="host")
    variant, = todo
    warn_skipped(cat)
    sessions = [launch.start_run(launch.RunRequest(
        variant.rp, chosen, host=h, output=args.out, variant=h.name,
        mirror=emit if args.format == "events" else None)) for h in hosts]
    return drive_and_report(sessions, args, [h.name for h in hosts],
                            parallel=not args.interleave)


# --- host check, host setup -------------------------------------------------

def cmd_host(args: argparse.Namespace) -> int:
    cat = load_catalog(args)
    host = hosts_named(cat, [args.name], f"host {args.action}")[0]
    return check(host) if args.action == "check" else setup(host)


SHOWN = 300                             # characters of a line of the remote's shown
DIR_OK, DIR_BAD = "@hotloop: directory writable", "@hotloop: directory not writable"


def check(host: Host) -> int:
    """Reachable, the same hotloop, and what `hotloop doctor` says there."""
    where = remote_path(host.directory) if host.directory else '"$HOME"'
    script = (which_hotloop(host) + 'command -v "$h" >/dev/null 2>&1 || '
              '{ echo "no hotloop"; exit 0; }; command -v "$h"; "$h" --version && "$h" doctor; '
              # where its runs write their results: made if it is not there yet, as a run does
              f'if mkdir -p {where} 2>/dev/null && [ -w {where} ]; then echo "{DIR_OK}"; '
              f'else echo "{DIR_BAD}"; fi')
    code, out, err = asyncio.run(run_remote(host, script))
    if code != 0:
        raise HotloopError(failure(host, code, err))
    lines = [visible(ln)[:SHOWN] for ln in out.splitlines()]
    who = f"{host.user}@" if host.user else ""
    print(f"{host.name}: reachable ({visible(who + host.address)})")
    if not lines or lines[0] == "no hotloop":
        raise HotloopError(f"{host.name}: no hotloop there (" + (
            f"{host.hotloop}: not found" if host.hotloop else
            f"neither in {SETUP_SHOWN}/venv nor on its PATH") + f"): {setup_advice(host)}")
    where = lines[0]
    said = re.fullmatch(r"hotloop (\S+)(?: \(source ([0-9a-f]+)\))?", lines[1]) \
        if len(lines) > 1 else None
    if said is None:
        raise HotloopError(f"{host.name}: {where} is not a hotloop (its --version said "
                           f"{lines[1][:80] if len(lines) > 1 else 'nothing'!r})")
    version, source = said.group(1), said.group(2)
    print(f"  hotloop {version} at {where}" + (f" (source {source})" if source else ""))
    place = f"its directory {visible(host.directory)}" if host.directory else \
        "its login directory"
    writable = lines[-1] == DIR_OK
    for line in lines[2:-1] if lines[-1] in (DIR_OK, DIR_BAD) else lines[2:]:
        print(line)
    if not writable:
        raise HotloopError(f"{host.name}: {place} cannot be made or written there: its runs "
                           f"write their results in it (the host's `directory` key)")
    print(f"  {place} is writable")
    if version != __version__:
        raise HotloopError(f"{host.name} runs hotloop {version}, this is {__version__}: "
                           f"{setup_advice(host)}")
    if source != source_digest():
        raise HotloopError(other_sources(host, version, source))
    return 0


def setup(host: Host) -> int:
    """Build this hotloop's wheel here, copy it over ssh, install it in a venv under the
    remote's cache directory."""
    code, out, err = asyncio.run(run_remote(
        host, "python3 -c 'import sys; print(sys.version.split()[0]); "
              "sys.exit(sys.version_info < (3, 10))'"))
    if code not in (0, 1):
        raise HotloopError(failure(host, code, err) if code == 255 else
                           f"{host.name}: no python3 there (hotloop needs Python 3.10 or "
                           f"newer, with venv)")
    if code == 1:
        raise HotloopError(f"{host.name} has Python {visible(out.strip())}: hotloop needs "
                           f"3.10 or newer")
    print(f"{host.name}: Python {visible(out.strip())}; building the wheel here",
          file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="hotloop-wheel-") as tmp:
        wheel = build_wheel(Path(tmp))
        name = shlex.quote(wheel.name)
        print(f"{host.name}: installing {wheel.name} in {SETUP_SHOWN}/venv there",
              file=sys.stderr)
        # One connection: the wheel on stdin, then a venv and pip install from it.
        script = (f"set -e; d={SETUP_DIR}; mkdir -p \"$d\"; cat > \"$d\"/{name}; "
                  f"python3 -m venv \"$d\"/venv; "
                  f"\"$d\"/venv/bin/python -m pip install -q --upgrade \"$d\"/{name} 1>&2; "
                  f"\"$d\"/venv/bin/hotloop --version; echo \"$d\"/venv")
        code, out, err = asyncio.run(run_remote(host, script, timeout=SETUP_TIMEOUT_S,
                                                stdin=wheel.read_bytes()))
    if code != 0:
        said = failure(host, code, err)
        raise HotloopError(said + ("" if code == 255 else
                                   " (pip there needs its package index for hotloop's "
                                   "dependencies)"))
    version, _, where = out.strip().partition("\n")
    print(f"{host.name}: {visible(version)} installed in {visible(where)}; `hotloop host "
          f"check {host.name}` tells what it allows")
    return 0
