"""Running on other machines over SSH, against a real sshd on 127.0.0.1 (tests/e2e/sshd.py):
lab1 and lab2 are two aliases of it, each with a working directory of its own, so each
"host" keeps its own copy of the result file.  The remote hotloop is this one's installed
command; the test's environment (its tag, its XDG directories) travels with ssh's SendEnv,
so `leftovers()` sees the processes on the remote side too."""
from __future__ import annotations

import asyncio
import getpass
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import POLL, ROOT, hotloop, needs_root_sysctl

from hotloop import __version__, catalog, record, results
from hotloop import events as ev
from hotloop.cli.parser import version_line
from hotloop.console.app import HotloopApp
from hotloop.console.widgets.params import HERE
from hotloop.record import Remote
from hotloop.run.stream import WARNINGS_KEPT

pytest_plugins = ["sshd"]

REMOTE_HOTLOOP = Path(sys.executable).with_name("hotloop")    # this install's command
FAST = ["--runs", "3", "--warmup", "0", "--no-perf", "--param", "msgs=2000"]


@pytest.fixture
def hosts(tmp_path: Path, sshd_server) -> Path:
    """A profile directory with [host.lab1] and [host.lab2] (working in tmp/lab1, tmp/lab2),
    [host.nokey] (a key the server refuses) and [host.nowhere] (a closed port).  It is the
    test's own config directory: the fixture's ssh_config names its known_hosts
    (UserKnownHostsFile), which hotloop takes only from there, never from a shared profile.
    Tests still pass it as --profiles (each file is read once, as the user's own)."""
    assert REMOTE_HOTLOOP.exists(), f"no hotloop command beside {sys.executable}"
    d = Path(os.environ["XDG_CONFIG_HOME"]) / "hotloop"
    d.mkdir(parents=True, exist_ok=True)
    tables = []
    for name in ("lab1", "lab2", "nokey", "nowhere"):
        (tmp_path / name).mkdir()
        tables.append(textwrap.dedent(f"""\
            [host.{name}]
            address = "{name}"
            ssh_config = "{sshd_server.config}"
            hotloop = "{REMOTE_HOTLOOP}"
            directory = "{tmp_path / name}"
            """))
    (d / "hosts.toml").write_text("\n".join(tables).replace(
        'directory = "' + str(tmp_path / "lab1") + '"',
        'directory = "' + str(tmp_path / "lab1") + '"\nlabel = "lab1 (stock)"'))
    return d


def remote_copies(tmp_path: Path, host: str) -> list[Path]:
    return sorted((tmp_path / host / "results").glob("*.jsonl"))


def local_files() -> list[Path]:
    return sorted(Path("results").glob("*.jsonl"))


def test_a_plan_runs_there_and_its_result_file_is_here(tmp_path, hosts, leftovers, cli):
    done = hotloop("run", "quick", "--runs", "3", "--warmup", "0", "--param", "msgs=2000",
                   "--host", "lab1", "--profiles", str(hosts))
    assert done.returncode == 0, done.stderr
    mine, = local_files()
    assert mine.name.endswith("-quick-lab1.jsonl")
    theirs, = remote_copies(tmp_path, "lab1")
    res, remote = results.read(mine), results.read(theirs)
    assert res.finished is not None and [r.value for r in res.runs] == remote.values
    h = res.header
    assert h.remote == Remote("lab1", "lab1", str(theirs), str(theirs.with_suffix(".perf")))
    assert h.perf_data == ""                    # the perf data stays there
    assert h.label == "lab1 (stock)" and h.variant == "lab1"
    assert h.hotloop == __version__ and h.plan.runs == 3
    assert "[lab1 (stock)]" in done.stdout and f"result file: {mine}" in done.stdout
    assert "(host lab1, over SSH)" in done.stdout
    shown = cli("show", str(mine))       # a normal result file: no special case
    assert shown.returncode == 0 and "3 runs" in shown.stdout
    assert json.loads(cli("show", str(mine), "--format", "json").stdout)["remote"] == \
        record.to_json(h.remote)
    assert json.loads(cli("show", str(theirs), "--format", "json").stdout)["remote"] is None
    annotated = hotloop("annotate", str(mine), "hl_run")
    assert annotated.returncode == 2
    assert f"ran on lab1, and its perf data is there ({theirs.with_suffix('.perf')}): " \
           f"annotate it there, hotloop annotate {theirs} SYMBOL" in annotated.stderr
    assert leftovers() == []


def test_several_hosts_run_at_once_and_are_compared_first_as_baseline(tmp_path, hosts,
                                                                       leftovers):
    done = hotloop("run", "quick", *FAST, "--host", "lab1", "--host", "lab2",
                   "--profiles", str(hosts))
    assert done.returncode == 0, done.stderr
    a, b = local_files()
    assert {a.name.rsplit("-", 1)[1], b.name.rsplit("-", 1)[1]} == {"lab1.jsonl", "lab2.jsonl"}
    assert "lab2 vs lab1 (baseline)" in done.stdout
    assert len(remote_copies(tmp_path, "lab1")) == len(remote_copies(tmp_path, "lab2")) == 1
    assert leftovers() == []


def test_a_warning_from_each_host_is_shown_under_each_hosts_name(hosts):
    """Two machines saying the same thing are two facts: one line each (a batch here says
    it once: one machine)."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "hotloop"     # the remotes' too (SendEnv)
    config.mkdir(parents=True, exist_ok=True)
    (config / "cpu.toml").write_text("[cpu.lonely]\ncpus = [0]\nisolated = true\n")
    done = hotloop("run", "quick", *FAST, "--cpu", "lonely", "--host", "lab1", "--host", "lab2",
                   "--profiles", str(hosts))
    assert done.returncode == 0, done.stderr
    said = [ln for ln in done.stderr.splitlines() if "[cpu.lonely] isolated" in ln]
    assert sorted(ln.split(": ", 2)[1] for ln in said) == ["lab1", "lab2"], said


def test_calibrate_on_a_host_measures_that_machines_noise_for_its_results(hosts, leftovers, cli,
                                                                          monkeypatch):
    """calibrate --host: the A/A sessions run there, their files land here; the noise
    profile is keyed by that machine (the headers'), so a comparison of two later runs
    there uses it."""
    monkeypatch.setenv("COLUMNS", "400")        # the profile's long path on one line
    from hotloop.analysis import noise
    plan = ["quick", "--runs", "5", "--warmup", "0", "--no-perf", "--param", "msgs=2000"]
    done = hotloop("calibrate", *plan, "--sessions", "8", "--host", "lab1",
                   "--profiles", str(hosts))
    assert done.returncode == 0, done.stderr
    assert "session 8/8: 5 runs, median" in done.stderr and "8 sessions" in done.stdout
    where, = [d for d in Path("results").iterdir() if d.is_dir()]
    sessions = [results.read(f) for f in sorted(where.glob("session-*.jsonl"))]
    assert len(sessions) == 8
    assert all(r.header.remote and r.header.remote.host == "lab1" for r in sessions)
    (path, profile, why), = noise.stored()
    assert profile is not None and not why and profile.sessions == 8
    assert profile.key["host"] == sessions[0].header.host
    a, b = Path("a.jsonl"), Path("b.jsonl")
    for f in (a, b):
        ran = hotloop("run", *plan, "--host", "lab1", "--out", str(f), "--profiles", str(hosts))
        assert ran.returncode == 0, ran.stderr
    compared = cli("compare", str(a), str(b))
    assert "session noise: calibrated" in compared.stdout and str(path) in compared.stdout
    assert leftovers() == []
    for args, said in [(["--host", "nosuch"], "nosuch"),
                       (["--host", "nowhere"], "nowhere: ssh: connect to host"),
                       ([str(a), str(b), str(a), "--host", "lab1"], "result files are read here")]:
        bad = hotloop("calibrate", *(args if args[0].endswith(".jsonl") else [*plan, *args]),
                      "--sessions", "8", "--profiles", str(hosts))
        assert bad.returncode == 2 and said in bad.stderr, (args, bad.stderr)
    assert [d for d in Path("results").iterdir() if d.is_dir()] == [where]   # none left empty


def test_interleaved_hosts_take_turns_as_one_batch(tmp_path, hosts, leftovers):
    done = hotloop("run", "quick", "--runs", "4", "--warmup", "0", "--no-perf", "--param",
                   "msgs=2000", "--host", "lab1", "--host", "lab2", "--interleave",
                   "--profiles", str(hosts))
    assert done.returncode == 0, done.stderr
    headers = [results.read(f).header for f in local_files()]
    assert [h.variant for h in headers] == ["lab1", "lab2"]
    batch = {h.batch for h in headers}
    assert len(batch) == 1 and next(iter(batch)).interleaved     # their rounds pair
    # each remote ran gated: a repetition only on its turn, 4 in 4 processes' blocks
    remote = results.read(remote_copies(tmp_path, "lab1")[0])
    assert len(remote.runs) == 4 and remote.header.processes == 4
    assert "lab2 vs lab1 (baseline)" in done.stdout
    assert leftovers() == []


@pytest.mark.parametrize("host, said", [
    ("nowhere", "nowhere: ssh: connect to host 127.0.0.1 port"),
    ("nokey", "nokey: ssh: "),
])
def test_an_unreachable_host_is_one_line_exit_2_and_no_file(hosts, host, said, leftovers):
    done = hotloop("run", "quick", *FAST, "--host", host, "--profiles", str(hosts))
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert line.startswith(f"hotloop: {said}"), line
    assert ("Connection refused" if host == "nowhere" else "Permission denied") in line
    assert local_files() == []
    assert leftovers() == []


@pytest.mark.parametrize("value", ["msgs=1; touch {x}", "msgs=$(touch {x})", "type=`touch {x}`"])
def test_a_value_is_checked_here_before_it_goes_to_a_host(tmp_path, hosts, value):
    # the plan is resolved here and goes spelled out (run.start): a bad value never reaches
    # the host's shell (how a value that does is quoted: test_remote_rules)
    x = tmp_path / "pwned"
    done = hotloop("run", "quick", "--host", "lab1", "--param", value.format(x=x),
                   "--profiles", str(hosts))
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert line.startswith(f"hotloop: --param {value.format(x=x)}: "), line
    assert not x.exists()
    assert local_files() == [] and remote_copies(tmp_path, "lab1") == []


def test_a_remote_that_is_not_this_version_is_told_with_the_fix(tmp_path, hosts):
    old = tmp_path / "old-hotloop"
    old.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'hotloop 0.0.1'\nexit 0\n")
    old.chmod(0o755)
    toml = (hosts / "hosts.toml").read_text()
    (hosts / "hosts.toml").write_text(toml.replace(f'hotloop = "{REMOTE_HOTLOOP}"',
                                                   f'hotloop = "{old}"', 1))
    done = hotloop("host", "check", "lab1", "--profiles", str(hosts))
    assert done.returncode == 2
    # its own `hotloop` key wins over what setup installs: the advice says so
    assert f"lab1 runs hotloop 0.0.1, this is {__version__}: its hotloop key names {old}: " \
           f"install this version there, or drop the key and run hotloop host setup lab1" \
        in done.stderr


def test_the_same_version_from_other_sources_is_told_apart(tmp_path, hosts):
    """Two checkouts of one version, one edited: `--version` carries a digest of the
    sources, host check refuses the other one, and a run there says so in a warning."""
    other = tmp_path / "other"
    for part in ("tui", "csrc", "profiles"):
        shutil.copytree(ROOT / part, other / part,
                        ignore=shutil.ignore_patterns("__pycache__"))
    with open(other / "tui" / "stats.py", "a") as f:
        f.write("\n# a local edit\n")
    (other / "path").mkdir()
    (other / "path" / "hotloop").symlink_to(other / "tui")
    shim = tmp_path / "other-hotloop"
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={other / 'path'} exec {sys.executable} "
                    f"-m hotloop \"$@\"\n")
    shim.chmod(0o755)
    ours = hotloop("--version").stdout.strip()
    theirs = subprocess.run([str(shim), "--version"], capture_output=True, text=True,
                            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                            ).stdout.strip()
    assert ours.startswith(f"hotloop {__version__} (source ") and theirs != ours
    assert theirs.startswith(f"hotloop {__version__} (source ")
    toml = (hosts / "hosts.toml").read_text()
    (hosts / "hosts.toml").write_text(toml.replace(f'hotloop = "{REMOTE_HOTLOOP}"',
                                                   f'hotloop = "{shim}"', 1))
    digest = lambda line: line.rsplit(" ", 1)[1].rstrip(")")
    done = hotloop("host", "check", "lab1", "--profiles", str(hosts))
    assert done.returncode == 2
    assert f"lab1 runs hotloop {__version__} from other sources (source {digest(theirs)} " \
           f"there, {digest(ours)} here): its hotloop key names {shim}" in done.stderr
    ran = hotloop("run", "quick", *FAST, "--host", "lab1", "--profiles", str(hosts))
    assert ran.returncode == 0, ran.stderr
    assert f"from other sources (source {digest(theirs)} there" in ran.stderr
    res = results.read(local_files()[0])
    assert res.header.hotloop_source == digest(theirs)


def test_host_check_reports_what_the_remote_allows(hosts):
    done = hotloop("host", "check", "lab1", "--profiles", str(hosts))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("lab1: reachable (lab1)\n")
    assert f"hotloop {__version__} at {REMOTE_HOTLOOP}" in done.stdout
    for row in ("compiler", "perf", "profiles"):        # hotloop doctor, there
        assert f"  {row} " in done.stdout.replace("yes", "").replace("no ", "")
    bad = hotloop("host", "check", "nowhere", "--profiles", str(hosts))
    assert bad.returncode == 2 and "Connection refused" in bad.stderr


def _started(proc: subprocess.Popen[str], runs: int = 2, timeout: float = 120) -> Path:
    """The local result file once it holds `runs` runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        for f in local_files():
            if f.read_text().count('"type":"run"') >= runs:
                return f
        time.sleep(0.1)
    raise AssertionError("the run did not start")


def _children(pid: int, comm: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:]
            if name == comm and int(rest.split()[1]) == pid:
                found.append(int(d.name))
    return found


def _start(hosts: Path, *more: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "hotloop", "run", "quick", "--runs", "500",
                             "--warmup", "0", "--no-perf", "--param", "msgs=20000",
                             "--profiles", str(hosts), *more], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def _remote_ended(tmp_path: Path, host: str, leftovers: Callable[..., list[int]]) -> dict:
    assert leftovers(30) == []          # both sides: the remote hotloop carries the tag
    theirs, = remote_copies(tmp_path, host)
    return json.loads(theirs.read_text().splitlines()[-1])


def test_a_dropped_connection_keeps_the_runs_and_stops_the_remote(tmp_path, hosts, leftovers):
    proc = _start(hosts, "--host", "lab1")
    mine = _started(proc)
    ssh, = _children(proc.pid, "ssh")
    os.kill(ssh, signal.SIGKILL)                # the connection goes
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    res = results.read(mine)
    assert res.failed is not None and len(res.runs) >= 2
    assert res.failed.message == f"ssh connection lost after {len(res.runs)} runs"
    assert f"hotloop: lab1: ssh connection lost after {len(res.runs)} runs" in err
    last = _remote_ended(tmp_path, "lab1", leftovers)
    # the remote saw its stdin close: a hangup, its worker killed, its file closed
    assert last["type"] == "failed" and last["interrupted"] and last["signal"] == "SIGHUP"


def test_hotloop_killed_here_leaves_nothing_running_there(tmp_path, hosts, leftovers):
    proc = _start(hosts, "--host", "lab1")
    _started(proc)
    proc.kill()                                 # no handler runs: ssh dies with it
    proc.communicate(timeout=30)
    last = _remote_ended(tmp_path, "lab1", leftovers)
    assert last["type"] == "failed" and last["interrupted"] and last["signal"] == "SIGHUP"


def test_ctrl_c_stops_every_remote_and_keeps_their_last_lines(tmp_path, hosts, leftovers):
    proc = _start(hosts, "--host", "lab1", "--host", "lab2")
    _started(proc)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "hotloop: interrupted; the runs measured so far are in" in err
    for f in local_files():
        res = results.read(f)
        # the remote's own last line came back, naming the signal given here
        assert res.failed is not None and res.failed.interrupted, f
        assert res.failed.signal == "SIGINT"
    for host in ("lab1", "lab2"):
        last = _remote_ended(tmp_path, host, leftovers)
        assert last["type"] == "failed" and last["interrupted"]
    assert "PARTIAL: interrupted" in out


@needs_root_sysctl
def test_a_system_change_there_needs_consent_and_the_refusal_names_the_host(tmp_path, hosts):
    # the test's config directory travels (XDG_CONFIG_HOME): the remote sees this profile
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "hotloop"
    config.mkdir(parents=True, exist_ok=True)
    now = int(Path("/proc/sys/net/core/busy_poll").read_text())
    (config / "k.toml").write_text(f'[kernel.poll]\nsysctl = {{ "{POLL}" = {now + 7} }}\n')
    done = hotloop("run", "quick", *FAST, "--kernel", "poll", "--host", "lab1",
                   "--profiles", str(hosts))
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert line.startswith("hotloop: lab1: ") and POLL in line and "--apply-system" in line
    assert int(Path("/proc/sys/net/core/busy_poll").read_text()) == now
    ok = hotloop("run", "quick", *FAST, "--kernel", "poll", "--host", "lab1",
                 "--apply-system", "--profiles", str(hosts))
    assert ok.returncode == 0, ok.stderr
    assert int(Path("/proc/sys/net/core/busy_poll").read_text()) == now     # restored there
    res = results.read(local_files()[0])
    assert res.header.sysctl[POLL].during == str(now + 7)


def test_a_forged_stream_ends_the_local_file_with_what_was_wrong(tmp_path, hosts):
    """A remote that sends a header, then a run whose value its counters do not give."""
    real = hotloop("run", "quick", *FAST, "--out", str(tmp_path / "real.jsonl"))
    assert real.returncode == 0, real.stderr
    started, run = (tmp_path / "real.jsonl").read_text().splitlines()[:2]
    forged = json.loads(run)
    forged["value"] *= 2
    fake = tmp_path / "fake-hotloop"
    fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{started}\n{json.dumps(forged)}\nEOF\nsleep 60\n")
    fake.chmod(0o755)
    toml = (hosts / "hosts.toml").read_text()
    (hosts / "hosts.toml").write_text(toml.replace(f'hotloop = "{REMOTE_HOTLOOP}"',
                                                   f'hotloop = "{fake}"', 1))
    done = hotloop("run", "quick", "--host", "lab1", "--profiles", str(hosts), timeout=60)
    assert done.returncode == 1
    res = results.read(local_files()[0])
    assert res.failed is not None and len(res.runs) == 0
    assert res.failed.message.startswith("value ") and "is not the bytes/s of its counters" \
        in res.failed.message


def test_events_on_stdout_are_the_result_files_lines(tmp_path):
    done = hotloop("run", "quick", *FAST, "--format", "events", "--out",
                   str(tmp_path / "r.jsonl"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == (tmp_path / "r.jsonl").read_text()
    assert done.stderr == ""            # the warnings are lines of the stream


def test_stdin_closing_stops_a_controlled_run(tmp_path, leftovers):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "quick", "--runs", "500",
                             "--warmup", "0", "--no-perf", "--format", "events", "--control",
                             "stdin", "--out", str(tmp_path / "r.jsonl")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdin is not None and proc.stderr is not None
    for _ in range(3):
        assert proc.stdout.readline()           # the header, then runs
    proc.stdin.close()
    out = proc.stdout.read()
    proc.stderr.read()
    assert proc.wait(timeout=60) == 128 + signal.SIGHUP
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "failed" and last["signal"] == "SIGHUP"
    assert (tmp_path / "r.jsonl").read_text().splitlines()[-1] == out.splitlines()[-1]
    assert leftovers() == []


async def until_run_ends(pilot, app: HotloopApp) -> None:
    deadline = time.monotonic() + 120
    while app.main_screen.controller.live is None or app.main_screen.controller.live.running:
        assert time.monotonic() < deadline, "the run on the host did not end"
        await pilot.pause(0.1)


def test_the_console_runs_on_a_host_like_here(tmp_path, hosts, leftovers):
    async def go() -> None:
        app = HotloopApp(profiles=[hosts], results_dir=tmp_path / "results")
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            assert app.main_screen.form.fields["host"].value == HERE
            app.main_screen.form.set_choice("host", "lab1")
            await app.main_screen.form.load(app.main_screen.cat, app.main_screen.form.build())  # the choice outlives a reload
            assert app.main_screen.form.host == "lab1"
            for key, text in (("runs", "3"), ("warmup", "0"), ("param.msgs", "2000")):
                app.main_screen.form.fields[key].control.value = text
            await pilot.pause()
            await pilot.press("r")
            await until_run_ends(pilot, app)
            assert app.main_screen.controller.live.state == "finished" and app.main_screen.controller.live.n == 3
            await pilot.pause(0.3)              # the next tick of the status line
            status = str(app.query_one("#status").content)
            assert "on lab1" in status and "done 3/3" in status
            await pilot.press("q")
    asyncio.run(go())
    mine, = (tmp_path / "results").glob("*-lab1.jsonl")
    remote = results.read(mine).header.remote
    assert remote is not None and remote.host == "lab1"
    assert len(remote_copies(tmp_path, "lab1")) == 1
    assert leftovers() == []


def test_every_key_of_a_plan_run_from_the_console_reaches_the_host(tmp_path, hosts, leftovers):
    # The console and the command line start a run one way (run.start): a user plan's perf
    # settings and the choice to keep perf data travel to the host with the rest.
    (hosts / "plans.toml").write_text(textwrap.dedent("""\
        [plan.sampled]
        workload = "zero_null"
        runs = 2
        warmup = 0
        perf_freq = 499
        call_graph = "fp"
        perf_keep_mb = 7
        params = { count = 20000 }
        """))

    async def go() -> None:
        app = HotloopApp(profiles=[hosts], results_dir=tmp_path / "results")
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            assert app.main_screen.cat is not None
            await app.main_screen.form.load(app.main_screen.cat, app.main_screen.cat.plans["sampled"])
            app.main_screen.form.set_choice("host", "lab1")
            await pilot.pause()
            await pilot.press("r")
            await until_run_ends(pilot, app)
            assert app.main_screen.controller.live.state == "finished", app.main_screen.controller.live.state
            await pilot.press("q")
    asyncio.run(go())
    mine, = (tmp_path / "results").glob("*-lab1.jsonl")
    h = results.read(mine).header
    assert (h.plan.name, h.workload.name, h.params["count"]) == ("sampled", "zero_null", 20000)
    assert (h.plan.perf_freq, h.plan.call_graph, h.plan.perf_keep_mb) == (499, "fp", 7)
    assert h.remote is not None
    if h.plan.perf:                             # perf works there: its data was kept there
        assert h.remote.perf_data and Path(h.remote.perf_data).is_dir()
    assert leftovers() == []


OLD_SESSION = Path(__file__).resolve().parent / "data" / "zero_null-512-v0.1.jsonl"   # 6 runs


def hung_host(tmp_path: Path, hosts: Path, lines: str, sshd_server, **keys: Any) -> None:
    """[host.fake]: a 'hotloop' there that sends `lines` of a real session whatever it is
    asked, then keeps its connection open (as a hung or hostile remote would)."""
    _fake_host(tmp_path, hosts, "fake", f"{lines}\nexec cat >/dev/null\n", sshd_server, **keys)


def test_a_remote_is_cut_off_beyond_the_runs_the_plan_asked(tmp_path, hosts, sshd_server,
                                                            leftovers):
    hung_host(tmp_path, hosts, f"cat {OLD_SESSION}", sshd_server)
    done = hotloop("run", "zero_null", "--runs", "3", "--warmup", "1", "--no-perf",
                   "--host", "fake", "--profiles", str(hosts))
    assert done.returncode == 1, done.stderr
    assert "sent more runs than the plan's 3" in done.stderr
    mine, = local_files()
    res = results.read(mine)
    assert len(res.runs) == 3 and res.failed is not None
    assert res.failed.message == "sent more runs than the plan's 3"
    assert leftovers() == []


def drive_fake(tmp_path: Path, hosts: Path, lines: str, sshd_server, gated: bool = False,
               stop_wait: float | None = None, **plan: Any) -> list[ev.Event]:
    """A session of the zero_null plan on [host.fake], in process: real ssh, a real sshd."""
    from hotloop.run import start
    hung_host(tmp_path, hosts, lines, sshd_server,
              **({} if stop_wait is None else {"stop_wait": stop_wait}))
    cat = catalog.load([hosts])
    chosen = catalog.with_overrides(cat.plan_for("zero_null"), perf=False, **plan)
    session = start.there(cat.hosts["fake"], chosen, tmp_path / "s.jsonl", start.Choices())
    if gated:
        session.gate = asyncio.Queue()      # interleaved, and never given a turn

    async def drive() -> list[ev.Event]:
        return [e async for e in session.events()]
    # a session that waits on its remote for good fails here rather than hangs the suite
    return asyncio.run(asyncio.wait_for(drive(), 300))


def test_an_interleaved_remote_is_cut_off_when_it_runs_out_of_its_turn(tmp_path, hosts,
                                                                       sshd_server, leftovers):
    last = drive_fake(tmp_path, hosts, f"cat {OLD_SESSION}", sshd_server, gated=True,
                      runs=6)[-1]
    assert isinstance(last, ev.Failed)
    assert last.message == "ran a repetition out of its turn (interleaved)"
    assert leftovers() == []


def test_a_silent_remote_is_cut_off_after_a_repetitions_timeout(tmp_path, hosts, monkeypatch,
                                                                sshd_server, leftovers):
    from hotloop.run import stream
    monkeypatch.setattr(stream, "GRACE_S", 0.5)        # a worker's start-up: short here
    # the header and one warmup, then nothing, its connection open
    last = drive_fake(tmp_path, hosts, f"head -n 3 {OLD_SESSION}", sshd_server, runs=3,
                      timeout=1.0)[-1]
    assert isinstance(last, ev.Failed)
    assert last.message == "sent nothing for 1.5 s (a repetition's timeout is 1 s)"
    assert results.read(tmp_path / "s.jsonl").failed == last
    assert leftovers() == []


def test_a_remote_that_stays_after_its_last_line_is_let_go(tmp_path, hosts, sshd_server,
                                                           leftovers):
    # its session is whole: it ends, the remote let go after at most the time a stop may
    # take (the host's stop_wait: 1 s here, 10 s unless set), not waited for until it goes
    events = drive_fake(tmp_path, hosts, f"cat {OLD_SESSION}", sshd_server, runs=6,
                        stop_wait=1)
    assert isinstance(events[-1], ev.Finished)
    assert results.read(tmp_path / "s.jsonl").finished == events[-1]
    assert leftovers() == []


def test_a_console_without_hosts_shows_no_host_choice(tmp_path):
    async def go() -> None:
        app = HotloopApp(results_dir=tmp_path / "results")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert "host" not in app.main_screen.form.fields and app.main_screen.form.host is None
    asyncio.run(go())


def test_host_setup_installs_this_version_there_and_runs_use_it(tmp_path, hosts, sshd_server):
    """A host with no `hotloop` key: setup builds the wheel here, copies it over ssh and pip
    installs it in a venv under the remote's cache directory (this test's, sent with ssh),
    which check and run then find by themselves."""
    (hosts / "fresh.toml").write_text(textwrap.dedent(f"""\
        [host.fresh]
        address = "lab1"
        ssh_config = "{sshd_server.config}"
        directory = "{tmp_path / 'lab1'}"
        """))
    venv = Path(os.environ["XDG_CACHE_HOME"]) / "hotloop" / "venv"
    done = hotloop("host", "setup", "fresh", "--profiles", str(hosts), timeout=900)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"fresh: {version_line()} installed in {venv}; "
                           f"`hotloop host check fresh` tells what it allows\n")
    checked = hotloop("host", "check", "fresh", "--profiles", str(hosts))
    assert checked.returncode == 0, checked.stderr
    assert f"hotloop {__version__} at {venv}/bin/hotloop" in checked.stdout
    ran = hotloop("run", "quick", *FAST, "--host", "fresh", "--profiles", str(hosts))
    assert ran.returncode == 0, ran.stderr
    assert results.read(local_files()[0]).finished is not None


def _fake_host(tmp_path: Path, hosts: Path, name: str, script: str, sshd_server,
               **keys: Any) -> None:
    """[host.NAME] whose remote `hotloop` is this shell script (`keys`: more of its table)."""
    exe = tmp_path / f"{name}.sh"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    (hosts / f"{name}.toml").write_text(textwrap.dedent(f"""\
        [host.{name}]
        address = "lab1"
        ssh_config = "{sshd_server.config}"
        hotloop = "{exe}"
        directory = "{tmp_path / 'lab1'}"
        """) + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items()))


def test_a_second_ctrl_c_still_ends_every_file_with_its_last_line(tmp_path, hosts, leftovers):
    proc = _start(hosts, "--host", "lab1", "--host", "lab2")
    _started(proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    for f in local_files():
        res = results.read(f)
        assert res.failed is not None and res.failed.interrupted, f
    assert leftovers(30) == []


def test_a_remote_that_does_not_answer_is_left_after_the_wait(tmp_path, hosts, sshd_server,
                                                               leftovers):
    """A hung machine: its header came, then nothing, and it ignores its stdin closing.  It
    is waited for as long as its stop_wait (2 s here, 10 s unless set)."""
    real = hotloop("run", "quick", *FAST, "--out", str(tmp_path / "real.jsonl"))
    assert real.returncode == 0, real.stderr
    header = (tmp_path / "real.jsonl").read_text().splitlines()[0]
    stop_wait = 2
    _fake_host(tmp_path, hosts, "hung", f"cat <<'EOF'\n{header}\nEOF\nexec sleep 600\n",
               sshd_server, stop_wait=stop_wait)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "quick", "--host", "hung",
                             "--profiles", str(hosts)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 30
    while not any(f.stat().st_size for f in local_files()):    # its header came
        assert time.monotonic() < deadline
        time.sleep(0.1)
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    waited = time.monotonic() - t
    assert proc.returncode == 130, err
    assert f"hotloop: stopping: hung end their runs and restore their systems (up to " \
           f"{stop_wait} s; SIGINT again leaves at once)" in err
    # waited for as long as it said (a busy machine only waits longer), then let go: the
    # remote's sleep of 600 s goes on (a wait for it would fail communicate's 60 s)
    assert stop_wait <= waited, waited
    res = results.read(local_files()[0])
    assert res.failed is not None and res.failed.interrupted and res.failed.signal == "SIGINT"
    # nothing of hotloop's is left: only the hung "remote" itself, which a real hotloop is not
    left = leftovers(5)
    assert [Path(f"/proc/{pid}/comm").read_text().strip() for pid in left] == ["sleep"] * len(left)
    for pid in left:
        os.kill(pid, signal.SIGKILL)


def test_a_host_that_cannot_start_leaves_the_others_to_finish(tmp_path, hosts, sshd_server,
                                                              leftovers):
    _fake_host(tmp_path, hosts, "refuses", "sleep 1; echo 'hotloop: boom' >&2; exit 2\n",
               sshd_server)
    done = hotloop("run", "quick", "--runs", "6", "--warmup", "0", "--no-perf", "--host",
                   "lab1", "--host", "refuses", "--profiles", str(hosts))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == "hotloop: refuses: boom"
    mine, = local_files()
    res = results.read(mine)
    assert res.finished is not None and len(res.runs) == 6     # lab1 ran to its end
    assert f"result file: {mine}" in done.stdout               # and its report says where
    assert leftovers() == []


def test_a_hosts_label_names_the_side_with_the_runs_kernel_profile(tmp_path, hosts):
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "hotloop"    # travels with ssh
    config.mkdir(parents=True, exist_ok=True)
    (config / "k.toml").write_text('[kernel.patched]\nlabel = "patched"\n')
    done = hotloop("run", "quick", *FAST, "--kernel", "patched", "--host", "lab1",
                   "--profiles", str(hosts))
    assert done.returncode == 0, done.stderr
    assert results.read(local_files()[0]).header.label == "lab1 (stock) + patched"


def test_host_check_makes_the_hosts_directory_or_says_it_cannot(tmp_path, hosts):
    toml = (hosts / "hosts.toml").read_text()
    fresh = tmp_path / "not" / "yet"
    (hosts / "hosts.toml").write_text(toml.replace(str(tmp_path / "lab1"), str(fresh)))
    done = hotloop("host", "check", "lab1", "--profiles", str(hosts))
    assert done.returncode == 0, done.stderr
    assert f"its directory {fresh} is writable" in done.stdout and fresh.is_dir()
    assert "@hotloop" not in done.stdout
    (hosts / "hosts.toml").write_text(toml.replace(str(tmp_path / "lab1"), "/proc/no/bench"))
    bad = hotloop("host", "check", "lab1", "--profiles", str(hosts))
    assert bad.returncode == 2
    assert "lab1: its directory /proc/no/bench cannot be made or written there" in bad.stderr


def test_host_check_keeps_a_remotes_flood_to_a_line(tmp_path, hosts, sshd_server):
    _fake_host(tmp_path, hosts, "flood",
               "[ \"$1\" = --version ] && head -c 3000000 /dev/zero | tr '\\0' x; echo\n",
               sshd_server)
    done = hotloop("host", "check", "flood", "--profiles", str(hosts))
    assert done.returncode == 2
    assert len(done.stdout) + len(done.stderr) < 2000
    assert "is not a hotloop (its --version said 'xxxx" in done.stderr
    bogus = hotloop("host", "check", "bogus", "--profiles", str(hosts))
    assert bogus.returncode == 2 and bogus.stderr.startswith("hotloop: host check bogus: ")


def test_a_result_file_that_cannot_be_written_stops_it_before_the_host_starts(tmp_path, hosts):
    (tmp_path / "afile").write_text("")
    out = tmp_path / "afile" / "r.jsonl"            # a directory that is a file
    done = hotloop("run", "quick", *FAST, "--host", "lab1", "--out", str(out),
                   "--profiles", str(hosts))
    assert done.returncode == 2
    line, = done.stderr.splitlines()
    assert line.startswith(f"hotloop: {out}: cannot write the result file: ")
    assert remote_copies(tmp_path, "lab1") == []    # nothing ran there


def test_a_shared_hosts_ssh_config_cannot_run_a_command_here(tmp_path):
    """A repository that ships a host and the ssh config it names (`--profiles .`): a
    ProxyCommand there would run on this machine, so the host is refused, in one line naming
    the file and the key, and nothing ran."""
    (tmp_path / "ssh.conf").write_text('Host *\n ProxyCommand sh -c "touch PWNED"\n')
    (tmp_path / "h.toml").write_text('[host.lab]\naddress="x"\nssh_config="ssh.conf"\n')
    done = hotloop("--profiles", ".", "host", "check", "lab", cwd=tmp_path)
    assert not (tmp_path / "PWNED").exists()
    assert done.returncode == 2, done
    last = done.stderr.splitlines()[-1]     # after the skipped file's warning, its error
    assert "Traceback" not in done.stderr, done.stderr
    assert last.startswith(f"hotloop: h.toml:3: [host.lab] ssh_config: {tmp_path / 'ssh.conf'}"
                           ":2: ProxyCommand runs a command on this machine"), done.stderr


@pytest.mark.parametrize("where", ["ssh_config", "ssh_options"])
def test_a_shared_host_cannot_make_ssh_append_to_a_file_here(tmp_path, sshd_server, where):
    """A repository's host whose ssh config (or options) says UserKnownHostsFile=~/.bashrc
    with StrictHostKeyChecking=no: ssh, reaching the real server, would append the host's key
    line to that file.  The host is refused as it loads, in one line (file, line, key), and
    the file is as it was."""
    bashrc = tmp_path / "bashrc"
    bashrc.write_text("echo hello\n")
    shared = tmp_path / "repo"
    shared.mkdir()
    reach = (f"Host lab\n  HostName 127.0.0.1\n  Port {sshd_server.port}\n  User "
             f"{getpass.getuser()}\n  IdentityFile {sshd_server.key}\n  IdentitiesOnly yes\n"
             f"  BatchMode yes\n")
    writes = f"  UserKnownHostsFile {bashrc}\n  StrictHostKeyChecking no\n"
    (shared / "ssh.conf").write_text(reach + (writes if where == "ssh_config" else ""))
    options = (f'ssh_options = ["UserKnownHostsFile={bashrc}", "StrictHostKeyChecking=no"]\n'
               if where == "ssh_options" else "")
    (shared / "h.toml").write_text(f'[host.lab]\naddress = "lab"\nssh_config = "ssh.conf"\n'
                                   f'{options}hotloop = "{REMOTE_HOTLOOP}"\n')
    done = hotloop("--profiles", str(shared), "host", "check", "lab")
    assert bashrc.read_text() == "echo hello\n"
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr, done.stderr
    said = (f"{shared / 'ssh.conf'}:8: UserKnownHostsFile" if where == "ssh_config" else
            f"'UserKnownHostsFile={bashrc}': UserKnownHostsFile")
    assert f"h.toml:{3 if where == 'ssh_config' else 4}: [host.lab] {where}: {said} makes ssh " \
           f"write host keys to a file it names on this machine, accepted only from your " \
           f"own config directory" in done.stderr.splitlines()[-1], done.stderr


def _shared_reach(tmp_path: Path, sshd_server, options: str = "", config: str = "") -> Path:
    """A --profiles directory (not the user's own) with [host.lab]: an ssh config that reaches
    the real server by name, port, user and key, but names no known_hosts file: the server's
    key is known to no file this ssh reads."""
    shared = tmp_path / "repo"
    shared.mkdir()
    (shared / "ssh.conf").write_text(
        f"Host lab\n  HostName 127.0.0.1\n  Port {sshd_server.port}\n  User "
        f"{getpass.getuser()}\n  IdentityFile {sshd_server.key}\n  IdentitiesOnly yes\n"
        f"  ConnectTimeout 5\n{config}")
    (shared / "h.toml").write_text(f'[host.lab]\naddress = "lab"\nssh_config = "ssh.conf"\n'
                                   f'{options}hotloop = "{REMOTE_HOTLOOP}"\n')
    return shared


def _known_hosts() -> list[tuple[Path, bytes | None]]:
    """The known_hosts files ssh writes by default (under the passwd entry's home, which
    ssh uses whatever $HOME says)."""
    import pwd
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    return [(f, f.read_bytes() if f.exists() else None)
            for f in (home / ".ssh" / "known_hosts", home / ".ssh" / "known_hosts2")]


@pytest.mark.parametrize("options, config, line, said", [
    ('ssh_options = ["StrictHostKeyChecking=no"]\n', "", 4,
     "ssh_options: 'StrictHostKeyChecking=no': StrictHostKeyChecking loosens host key checking"),
    ('ssh_options = ["stricthostkeychecking OFF"]\n', "", 4,
     "ssh_options: 'stricthostkeychecking OFF': stricthostkeychecking loosens host key"),
    ('ssh_options = ["SendEnv=*"]\n', "", 4, "ssh_options: 'SendEnv=*': SendEnv sends this "
                                              "machine's environment to the remote"),
    ("", "  StrictHostKeyChecking false\n", 3, "ssh_config: {conf}:8: StrictHostKeyChecking "
                                               "loosens host key checking"),
    ("", "  VerifyHostKeyDNS yes\n", 3, "ssh_config: {conf}:8: VerifyHostKeyDNS loosens"),
])
def test_a_shared_host_cannot_turn_host_key_checking_off(tmp_path, sshd_server, options,
                                                          config, line, said):
    """A repository's host that says StrictHostKeyChecking no (any spelling, in its options or
    its ssh config) would reach the real server, unknown to this machine, and write its key:
    it is refused as it loads, one line naming file, line and key; no key file changed."""
    before = _known_hosts()
    shared = _shared_reach(tmp_path, sshd_server, options, config)
    done = hotloop("--profiles", str(shared), "host", "check", "lab")
    assert _known_hosts() == before
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith(f"hotloop: {shared / 'h.toml'}:{line}: [host.lab] "
                           + said.format(conf=shared / "ssh.conf")), done.stderr
    assert "accepted only from your own config directory" in last


def test_a_shared_host_reaches_only_a_known_host_and_ssh_is_told_so_first(
        tmp_path, sshd_server, monkeypatch):
    """A repository's harmless host (name, port, user, key) reaching the real server, whose
    key this machine does not know: ssh refuses it (hotloop's StrictHostKeyChecking=yes comes
    first, ssh keeps an option's first value) and writes no key.  The ssh command hotloop ran,
    given to the real `ssh -G` (which prints the configuration it would use), says strict
    checking, batch mode and no forwarding."""
    shared = _shared_reach(tmp_path, sshd_server, 'ssh_options = ["ConnectTimeout=5"]\n')
    shim = tmp_path / "bin"
    shim.mkdir()
    argv_file = tmp_path / "ssh.argv"
    real_ssh = shutil.which("ssh")
    (shim / "ssh").write_text(f'#!/bin/sh\nprintf "%s\\0" "$@" > {argv_file}\n'
                              f'exec {real_ssh} "$@"\n')
    (shim / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    before = _known_hosts()
    done = hotloop("--profiles", str(shared), "host", "check", "lab")
    assert _known_hosts() == before
    assert done.returncode == 2, done
    last = done.stderr.splitlines()[-1]
    assert "Host key verification failed" in last, done.stderr
    assert "connects only to a host whose key is known" in last
    argv = argv_file.read_bytes().split(b"\0")[:-1]
    assert argv[0] == b"-T"
    shown = subprocess.run([real_ssh, "-G", *[a.decode() for a in argv[1:]]],
                           capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert shown.returncode == 0, shown.stderr
    config = dict(line.split(" ", 1) for line in shown.stdout.splitlines() if " " in line)
    assert config["hostname"] == "127.0.0.1" and config["port"] == str(sshd_server.port)
    assert config["stricthostkeychecking"] == "true"
    assert (config["batchmode"], config["forwardagent"], config["forwardx11"],
            config["clearallforwardings"], config["permitlocalcommand"]) == \
        ("yes", "no", "no", "yes", "no")
    assert config["connecttimeout"] == "5"          # the host's option still wins a default's


def test_a_remote_that_floods_warnings_is_bounded_and_stops_within_its_wait(
        tmp_path, hosts, sshd_server, leftovers):
    """A remote that sends warning lines as fast as it can, and goes on after its stdin
    closes: the result file here keeps the first WARNINGS_KEPT and one line saying how many
    more came, and Ctrl-C ends it within the stop_wait it announces (the backlog of lines
    already sent is not worked through)."""
    real = hotloop("run", "quick", *FAST, "--out", str(tmp_path / "real.jsonl"))
    assert real.returncode == 0, real.stderr
    header = (tmp_path / "real.jsonl").read_text().splitlines()[0]
    stop_wait = 2
    _fake_host(tmp_path, hosts, "flood", f"cat <<'EOF'\n{header}\nEOF\n"
               "seq 1 100000000 | sed 's/.*/{\"type\":\"warning\",\"message\":\"disk "
               "nearly full (&)\"}/'\n", sshd_server, stop_wait=stop_wait)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "quick", "--host", "flood",
                             "--profiles", str(hosts)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not any(f.stat().st_size for f in local_files()):    # its header came
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    mine, = local_files()
    while '"disk nearly full (100)"' not in mine.read_text():     # the flood is on
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            pytest.fail(f"no flood: {proc.communicate()}")
        time.sleep(0.1)
    time.sleep(1)
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    waited = time.monotonic() - t
    print(f"stopped in {waited:.1f} s; result file {mine.stat().st_size:,} bytes")
    assert proc.returncode == 130, err[-2000:]
    assert f"(up to {stop_wait} s; SIGINT again leaves at once)" in err
    # stopped: a Ctrl-C lost in the flood would read its 10^8 lines past communicate's 120 s
    res = results.read(mine)
    assert res.failed is not None and res.failed.interrupted
    said = res.warnings
    assert said[:3] == [f"disk nearly full ({i})" for i in (1, 2, 3)]
    assert len(said) == WARNINGS_KEPT + 1 and re.fullmatch(
        r"[0-9,]+ more warnings not kept \(the first 100 are\)", said[-1]), said[-1]
    assert mine.stat().st_size < 100_000
    assert len([ln for ln in err.splitlines() if "disk nearly full" in ln]) <= WARNINGS_KEPT
    left = leftovers(5)             # the flooding "remote" goes with its connection
    for pid in left:
        os.kill(pid, signal.SIGKILL)
