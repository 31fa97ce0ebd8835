"""The int64 limits of a param reach a real worker as they are.

hl_param_int() hands C an int64_t: what is beyond it is refused where it is typed
(tests/unit/test_bad_input.py), and the limits themselves run.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from conftest import hotloop
from faulty import FAULTY_C

BIG = "100_000_000_000_000_000_000_000_000"      # 10^26: TOML parses it, C cannot take it


def profiles(tmp_path: Path, toml: str) -> Path:
    d = tmp_path / "prof"
    d.mkdir(exist_ok=True)
    (d / "faulty.c").write_text(FAULTY_C)
    (d / "w.toml").write_text(textwrap.dedent(toml))
    return d


UNBOUNDED = """
[workload.w]
source = "faulty.c"
params.n = { default = 1, help = "no min, no max: only int64 bounds it" }
"""


def one_line_exit_2(p) -> str:
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "Traceback" not in p.stderr
    return p.stderr


def test_the_int64_limits_themselves_are_accepted(tmp_path, leftovers):
    d = profiles(tmp_path, UNBOUNDED)
    for value in ("-9223372036854775808", "9223372036854775807"):
        p = hotloop("run", "w", "--profiles", str(d), "--param", f"n={value}", "--runs", "1",
                    "--warmup", "0", "--no-perf", "--out", f"r{value[0]}.jsonl")
        assert p.returncode == 0, p.stderr
    assert leftovers() == []
