"""What a host table may make `ssh` run on this machine.

A profile may come from a shared repository (--profiles), so ssh options and ssh config files
that run a command or load a library here are accepted only from the user's own config
directory.  A host's `ssh_config` from elsewhere is read (beside its TOML file when relative)
and refused if it says any of them: it is checked, not refused outright, so that a lab's
repository can still share its hosts' ports, users, jump hosts and known hosts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hotloop import paths

# ssh options that run a command (or load a library) on this machine, as -o or in a Match
LOCAL_EXEC = {"proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand",
              "match", "pkcs11provider", "securitykeyprovider", "xauthlocation"}
# A config file's Include reads files this check did not (globs, ~/.ssh/...): refused too.
# Its Match is refused only with `exec` (Match host/user/... run nothing).
FILE_ONLY = {"include"}
# ssh drops quotes anywhere in a keyword (Proxy"Command" is ProxyCommand) and reads quoted
# and escaped words in Match: the check reads a line without them, so no spelling slips past
_QUOTING = str.maketrans("", "", "\"'\\")


def runs_locally(option: str) -> str | None:
    """The key of an ssh option that runs something on this machine, else None."""
    m = re.match(r"\s*([A-Za-z][A-Za-z0-9]*)\s*[= ]\s*(.*)", option)
    if m is None or m.group(1).lower() not in LOCAL_EXEC:
        return None
    if m.group(1).lower() == "permitlocalcommand" and m.group(2).strip().lower() == "no":
        return None
    return m.group(1)


def own(path: Path) -> bool:
    """A file in the user's own config directory (not a --profiles one, not bundled)."""
    try:
        return path.resolve().is_relative_to(paths.config_dir().resolve())
    except OSError:
        return False


@dataclass(frozen=True)
class Said:
    """A line of an ssh config file that runs something here."""
    line: int
    key: str


def config_runs_locally(text: str) -> Said | None:
    """The first line of an ssh config file that runs a command or loads a library here (or
    includes a file unread), else None.  Read more loosely than ssh reads it (keywords in any
    case, quoted, after a "=", "exec" anywhere in a Match line): a doubt is a refusal."""
    for number, line in enumerate(text.split("\n"), 1):
        bare = line.translate(_QUOTING).lstrip(" \t\r=")
        m = re.match(r"([A-Za-z0-9]+)(.*)", bare, re.S)
        if m is None:                   # a comment, a blank line
            continue
        key, rest = m.group(1), m.group(2)
        low = key.lower()
        if low == "match":
            if "exec" in rest.lower():
                return Said(number, f"{key} exec")
            continue
        permitted_no = low == "permitlocalcommand" and \
            rest.strip(" \t\r=").lower().split()[:1] == ["no"]
        if low in FILE_ONLY or (low in LOCAL_EXEC and not permitted_no):
            return Said(number, key)
    return None
