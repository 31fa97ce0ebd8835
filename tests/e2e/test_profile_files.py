"""A --profiles directory is anyone's: what is no profile file is left out, said in one line
each, and never hangs or fills the machine (a FIFO, a symlink to /dev/zero, a huge file, a
directory named like a profile), through the real command line and the real console."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, hotloop

from hotloop.catalog.files import PROFILE_CAP

FINE = '[plan.fine]\nworkload = "zero_null"\nruns = 2\nperf = false\n'


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    d = tmp_path / "shared"
    d.mkdir()
    (d / "fine.toml").write_text(FINE)
    os.mkfifo(d / "y.toml")                         # a read would wait for a writer for ever
    (d / "x.toml").symlink_to("/dev/zero")          # a read would fill memory
    (d / "z.toml").mkdir()                          # rglob finds it too
    with (d / "big.toml").open("w") as f:           # valid TOML, a plan at its end
        line = "# " + "x" * 98 + "\n"
        f.write(line * (PROFILE_CAP // len(line) + 10) + '[plan.big]\nworkload = "zero_null"\n')
    return d


def _memory_capped() -> None:
    # 2 GB of address space: reading /dev/zero whole would hit it (MemoryError), a profile
    # read stays far below
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _skipped_lines(stderr: str, d: Path) -> dict[str, str]:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("hotloop: warning: ")]
    return {name: next((ln for ln in lines if f"{d / name}:" in ln), "")
            for name in ("x.toml", "y.toml", "z.toml", "big.toml")}


def test_list_skips_what_is_no_profile_file_with_one_line_each(hostile):
    done = hotloop("--profiles", str(hostile), "list", "plans", timeout=60,
                   preexec_fn=_memory_capped)
    assert done.returncode == 0, done
    assert "  fine " in done.stdout and "  big " not in done.stdout
    said = _skipped_lines(done.stderr, hostile)
    assert said["y.toml"].endswith("y.toml: is a FIFO, not a regular file: skipped"), said
    assert said["x.toml"].endswith("x.toml: is a device, not a regular file: skipped"), said
    assert said["z.toml"].endswith("z.toml: is a directory, not a regular file: skipped"), said
    assert said["big.toml"].endswith(
        "bytes, more than the 1 MB a profile may hold: skipped"), said
    assert len([ln for ln in done.stderr.splitlines() if ln]) == 4, done.stderr


def test_a_plan_in_a_file_left_out_is_unknown_and_completion_does_not_wait(hostile):
    done = hotloop("--profiles", str(hostile), "run", "big", "--runs", "1", timeout=60,
                   preexec_fn=_memory_capped)
    assert done.returncode == 2, done
    assert done.stderr.splitlines()[-1].startswith("hotloop: unknown plan or workload 'big'")
    names = hotloop("completion", "--names", "plan", "--profiles", str(hostile), timeout=60,
                    preexec_fn=_memory_capped)
    assert names.returncode == 0 and "fine" in names.stdout.split(), names
    assert "big" not in names.stdout.split()


CONSOLE = textwrap.dedent("""\
    import asyncio, sys
    from pathlib import Path
    from hotloop.console.app import HotloopApp

    async def main():
        app = HotloopApp(profiles=[Path(sys.argv[1])])
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            print("\\n".join(app.screen.cat.errors))
            await pilot.press("q")
            await pilot.pause()
        print("exited", app.return_code)

    asyncio.run(main())
    """)


def test_the_console_opens_and_q_leaves_with_a_fifo_among_the_profiles(hostile):
    """The console (the real app under Textual's pilot, in its own process so that a read
    that blocks fails the test by its timeout rather than hanging it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CONSOLE, str(hostile)], capture_output=True,
                          text=True, timeout=120, env=env, preexec_fn=_memory_capped)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "exited 0", done.stdout
    assert f"{hostile / 'y.toml'}: is a FIFO, not a regular file: skipped" in done.stdout
