"""The quoting that keeps every value a value on the remote shell, through two real shells
(the rules of the ssh command line without a shell are tests/unit/test_remote_rules.py)."""
from __future__ import annotations

import subprocess

import pytest

from hotloop.catalog import Host
from hotloop.run.remote import script, ssh_argv

# {mark}: a file of the test's own, that a word run as a command would create (a fixed path
# such as /tmp/x is anybody's: one that was there already failed every case)
EVIL = ["1; touch {mark}", "$(touch {mark})", "`touch {mark}`", "a'b\"c", "x\ny", "*", "-x",
        "~/a b"]


@pytest.mark.parametrize("word", EVIL)
def test_every_word_reaches_the_remote_shell_as_itself(tmp_path, word):
    """The two shells a word passes (the login shell ssh starts, then sh -c) each get it
    quoted: run what ssh would send through two real shells, and the remote program gets the
    word as it was, and nothing else ran."""
    mark = tmp_path / "ran"
    value = word.format(mark=mark)
    host = Host("lab1", "lab1", hotloop=str(tmp_path / "args.sh"))
    (tmp_path / "args.sh").write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\0" "$a"; done\n')
    (tmp_path / "args.sh").chmod(0o755)
    remote_command = ssh_argv(host, script(host, ["run", f"--param=k={value}", "--", value]))[-1]
    done = subprocess.run(["sh", "-c", remote_command], capture_output=True, cwd=tmp_path,
                          timeout=10)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split("\0")[:-1] == ["run", f"--param=k={value}", "--", value]
    assert not mark.exists()
