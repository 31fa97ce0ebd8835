"""Bad profiles and bad input: one line naming file, line, table and key; exit 2; nothing run."""
from __future__ import annotations

from conftest import hotloop, profile_dir


def test_bad_input_on_the_command_line_exits_2_with_one_line_and_runs_nothing(tmp_path):
    d = profile_dir(tmp_path, "[cpu.c]\nnice = 'low'\n")
    cases = [
        (["run", "nope"], "unknown plan or workload 'nope'"),
        (["run", "zero_null", "--param", "block_size=0"], "0 is below the minimum 1"),
        (["run", "zero_null", "--param", "block_size=big"], "expected an integer"),
        (["run", "zero_null", "--param", "colour=1"], "has no param 'colour'"),
        (["run", "zero_null", "--param", "count"], "expected KEY=VALUE"),
        (["run", "seqpacket", "--param", "type=raw"], "'raw' is not one of"),
        (["run", "zero_null", "--cpu", "nope"], "unknown CPU profile 'nope'"),
        (["run", "zero_null", "--runs", "0"], "--runs 0: must be at least 1"),
        # a bad file is skipped, but not when the command needs what it defines
        (["run", "zero_null", "--cpu", "c", "--profiles", str(d)],
         "[cpu.c] nice: expected an integer"),
        (["run", "zero_null", "--profiles", str(tmp_path / "none")], "no such directory"),
        (["run"], "the following arguments are required: NAME"),
        (["frobnicate"], "invalid choice"),
    ]
    for args, expected in cases:
        p = hotloop(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert expected in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "Traceback" not in p.stderr
    assert not (tmp_path / "results").exists()
