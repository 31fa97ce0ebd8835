"""The int64 limits of a param reach a real worker as they are.

hl_param_int() hands C an int64_t: what is beyond it is refused where it is typed
(tests/unit/test_bad_input.py), and the limits themselves run.
"""
from __future__ import annotations

from conftest import hotloop
from faulty import UNBOUNDED, profiles


def test_the_int64_limits_themselves_are_accepted(tmp_path, leftovers):
    d = profiles(tmp_path, UNBOUNDED)
    for value in ("-9223372036854775808", "9223372036854775807"):
        p = hotloop("run", "w", "--profiles", str(d), "--param", f"n={value}", "--runs", "1",
                    "--warmup", "0", "--no-perf", "--out", f"r{value[0]}.jsonl")
        assert p.returncode == 0, p.stderr
    assert leftovers() == []
