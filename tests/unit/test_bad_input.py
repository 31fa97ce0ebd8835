"""Bad input, refused where it is typed: one line naming file, line, table and key, exit 2,
nothing run.  Numbers out of range are refused at load, never in the worker: hl_param_int()
hands C an int64_t, so a param beyond it is refused on the command line, as a TOML default
and as a plan's value; NaN or infinity is no timeout; --runs/--warmup/--processes have the
bounds a TOML plan has.

The command line is called in this process, and a unit test starts no process
(tests/conftest.py): "nothing run" is checked by construction.  That the int64 limits
themselves reach a real worker is tests/e2e/test_bounds.py's.
"""
from __future__ import annotations

import pytest
from conftest import profile_dir
from faulty import BIG, UNBOUNDED, one_line_exit_2, profiles


def test_bad_input_on_the_command_line_exits_2_with_one_line_and_runs_nothing(tmp_path, cli):
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
        p = cli(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert expected in p.stderr, (args, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert "Traceback" not in p.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("value", ["-99999999999999999999", "99999999999999999999",
                                   "0x8000000000000000", "9223372036854775808"])
def test_a_param_beyond_int64_on_the_command_line_is_refused_before_anything_runs(
        tmp_path, value, cli):
    d = profiles(tmp_path, UNBOUNDED)
    p = cli("run", "w", "--profiles", str(d), "--param", f"n={value}", "--runs", "1",
                "--no-perf")
    err = one_line_exit_2(p)
    assert f"--param n={value}" in err and "does not fit a 64-bit integer" in err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("toml, where", [
    (f"""
     [workload.w]
     source = "faulty.c"
     params.n = {{ default = {BIG} }}
     """, "w.toml:4: [workload.w] params.n.default: "),
    (f"""
     [workload.w]
     source = "faulty.c"
     params.n = {{ default = 1, max = {BIG} }}
     """, "w.toml:4: [workload.w] params.n.max: "),
    (f"""
     [workload.w]
     source = "faulty.c"
     params.n = {{ default = 1 }}

     [plan.p]
     workload = "w"
     params = {{ n = -{BIG} }}
     """, "w.toml:8: [plan.p] params.n: -"),
], ids=["a-default", "a-max", "a-plans-value"])
def test_a_toml_integer_beyond_int64_names_file_line_table_and_key(tmp_path, toml, where, cli):
    d = profiles(tmp_path, toml)
    # a bad file is skipped (a warning) unless the command needs what it defines
    err = one_line_exit_2(cli("run", "p" if "[plan.p]" in where else "w",
                                  "--profiles", str(d)))
    assert where in err and "does not fit a 64-bit integer" in err


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1", "1e300"])
def test_a_timeout_that_is_no_deadline_is_refused_on_the_command_line(tmp_path, value, cli):
    d = profiles(tmp_path, UNBOUNDED)
    err = one_line_exit_2(cli("run", "w", "--profiles", str(d), f"--timeout={value}",
                                  "--runs", "1", "--no-perf"))
    assert "--timeout" in err and "must be above 0 and at most" in err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "1e300"])
def test_a_timeout_that_is_no_deadline_is_refused_in_toml(tmp_path, value, cli):
    d = profiles(tmp_path, UNBOUNDED + f"""
[plan.p]
workload = "w"
timeout = {value}
""")
    err = one_line_exit_2(cli("run", "p", "--profiles", str(d)))
    assert "w.toml:8: [plan.p] timeout: must be above 0 and at most" in err


@pytest.mark.parametrize("key, value", [("runs", "1000001"), ("warmup", "10001"),
                                        ("processes", "1001")])
def test_run_settings_have_the_same_upper_bound_on_the_command_line_and_in_toml(
        tmp_path, key, value, cli):
    d = profiles(tmp_path, UNBOUNDED + f"""
[plan.p]
workload = "w"
{key} = {value}
""")
    err = one_line_exit_2(cli("run", "p", "--profiles", str(d)))
    assert f"[plan.p] {key}: {value} is above the maximum" in err
    (d / "w.toml").write_text(UNBOUNDED)
    # (accepted, a million runs would start a worker, which a unit test refuses)
    err = one_line_exit_2(cli("run", "w", "--profiles", str(d), f"--{key}", value,
                              "--no-perf"))
    assert f"--{key} {value}: must be at most" in err
    assert not (tmp_path / "results").exists()
    err = one_line_exit_2(cli("save", "mine", "--workload", "w", "--profiles", str(d),
                                  f"--{key}", value))
    assert f"[plan.mine] {key}: {value} is above the maximum" in err     # the TOML check
