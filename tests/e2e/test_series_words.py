"""What a series says when its directories are taken from under it, for real (two kernel
profiles without images: they run here): a kernel's directory made a file is not "the file
was deleted", and a deleted series' directory is named, not said to hold the sessions."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT

KERNELS = '[kernel.k1]\nlabel = "k one"\n[kernel.k2]\nlabel = "k two"\n'


@pytest.mark.parametrize("how", ["a kernel's directory made a file", "the series deleted"])
def test_a_series_says_what_became_of_its_directory(tmp_path, leftovers, how):
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "k.toml").write_text(KERNELS)
    proc = subprocess.Popen([sys.executable, "-m", "hotloop", "run", "zero_null", "--profiles",
                             str(tmp_path / "profiles"), "--kernel", "k1", "--kernel", "k2",
                             "--sessions", "2", "--runs", "100000", "--param", "count=2000",
                             "--no-perf"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        first = None
        deadline = time.monotonic() + 240
        while first is None and time.monotonic() < deadline and proc.poll() is None:
            found = list((tmp_path / "results").glob("*/k1/s01.jsonl"))
            if found and '"type":"run"' in found[0].read_text():
                first = found[0]
            time.sleep(0.05)
        assert first is not None, proc.communicate()
        series = first.parent.parent.relative_to(tmp_path)
        # hotloop stopped while the directory changes: it finds it changed, never half-way
        # (k1 removed, the file not yet made), however long a loaded machine makes that
        proc.send_signal(signal.SIGSTOP)
        if how == "the series deleted":
            shutil.rmtree(first.parent.parent)
            gone = f"{series} was deleted"
        else:
            shutil.rmtree(first.parent)
            first.parent.write_text("")
            gone = f"{series / 'k1'} was replaced by a file"
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert err.splitlines()[-1] == (f"hotloop: {series / 'k1' / 's01.jsonl'}: cannot write "
                                    f"the result file: {gone} during the run"), err
    assert "deleted during the run" not in err or how == "the series deleted"
    assert leftovers() == []

