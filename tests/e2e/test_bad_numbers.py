"""A workload reporting a number that is no measurement: the run fails, naming it.

NaN and infinities are not JSON, and a figure beyond what a float64 can do
arithmetic on breaks every reader, so hl_add_extra(NAN) ends the session with a
`failed` line naming the run and the value (exit 1), as 0 ops does, and the
file keeps the runs before it, all valid JSON.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import hotloop

from hotloop import results

ODD_C = r"""
#include "hotloop.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
struct st { int runs, at; const char *odd; };
void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env, char *err, size_t len)
{
    struct st *s = calloc(1, sizeof(*s));
    (void)env; (void)err; (void)len;
    s->at = (int)hl_param_int(p, n, "at", 3);
    s->odd = hl_param_str(p, n, "odd", "none");
    return s;
}
int hl_run(void *state, struct hl_result *res, char *err, size_t len)
{
    struct st *s = state;
    struct hl_clock c;
    double lat = 1000.0;
    (void)err; (void)len;
    if (++s->runs == s->at) {
        if (!strcmp(s->odd, "nan")) lat = NAN;
        if (!strcmp(s->odd, "inf")) lat = INFINITY;
        if (!strcmp(s->odd, "-inf")) lat = -INFINITY;
        if (!strcmp(s->odd, "huge")) lat = 1e300;
        if (!strcmp(s->odd, "denormal")) lat = 5e-324;
    }
    hl_add_extra(res, "lat_ns", lat);
    hl_clock_start(&c);
    usleep(2000);
    hl_clock_stop(&c, res);
    res->ops = 1000;
    return 0;
}
int hl_pids(void *state, int *pids, int max) { (void)state; (void)pids; (void)max; return 0; }
void hl_teardown(void *state) { free(state); }
"""

ODD_TOML = """
[workload.odd]
source = "odd.c"
metric = "ops/s"
params.odd = { default = "none", choices = ["none", "nan", "inf", "-inf", "huge", "denormal"] }
params.at = { default = 3, min = 1 }

[workload.oddlat]
source = "odd.c"
metric = "lat_ns"
params.odd = { default = "none", choices = ["none", "nan", "inf", "-inf", "huge", "denormal"] }
params.at = { default = 3, min = 1 }
"""


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    d = tmp_path / "odd"
    d.mkdir()
    (d / "odd.c").write_text(ODD_C)
    (d / "w.toml").write_text(ODD_TOML)
    return d


def strict_json(text: str):
    def refuse(token: str):
        raise AssertionError(f"{token} in the output: not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("workload", ["odd", "oddlat"])      # an extra; the primary metric
@pytest.mark.parametrize("value, shown", [("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"),
                                          ("huge", "1e+300"), ("denormal", "5e-324")])
def test_a_value_that_is_no_measurement_fails_the_run_naming_it(odd, workload, value, shown,
                                                                leftovers, cli):
    out = Path("r.jsonl")
    p = hotloop("run", workload, "--profiles", str(odd), "--param", f"odd={value}",
                "--warmup", "0", "--runs", "5", "--no-perf", "--out", str(out),
                "--format", "json")
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert f"run 3: extra 'lat_ns' from hl_add_extra: {shown}" in p.stderr
    doc = strict_json(p.stdout)                     # stdout: one valid JSON document
    assert len(doc["runs"]) == 2 and doc["partial"] and "run 3" in doc["error"]
    text = out.read_text()
    for line in text.splitlines():                  # every line JSON, no NaN/Infinity
        strict_json(line)
    res = results.read(out)
    assert len(res.runs) == 2 and res.failed and "run 3" in res.failed.message
    shown_file = cli("show", str(out))
    assert shown_file.returncode == 0 and "PARTIAL: run 3" in shown_file.stdout
    assert leftovers() == []


def test_a_nan_that_is_not_a_runs_figure_is_written_as_null_not_a_token(tmp_path, odd):
    # A perf counter perf printed as "nan" was not counted: null, as unsupported ones are.
    from hotloop import events as ev
    from hotloop.record import SessionSummary
    ok = hotloop("run", "odd", "--profiles", str(odd), "--runs", "2", "--warmup", "0",
                 "--no-perf", "--out", "ok.jsonl")
    assert ok.returncode == 0, ok.stderr

    started = ev.Started(results.read(Path("ok.jsonl")).header)
    w = results.Writer(tmp_path / "w.jsonl")
    w.write(started)
    w.write(ev.Finished(SessionSummary(), counters={"cycles": float("nan"),
                                            "instructions": float("inf"), "task-clock": 1.5}))
    w.close()
    text = (tmp_path / "w.jsonl").read_text()
    for line in text.splitlines():
        strict_json(line)
    counters = results.read(tmp_path / "w.jsonl").finished.counters
    assert counters == {"cycles": None, "instructions": None, "task-clock": 1.5}
