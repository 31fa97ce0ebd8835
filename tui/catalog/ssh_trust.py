"""What a host table may make `ssh` do on this machine.

A profile may come from a shared repository (--profiles), so ssh options and ssh config files
that run a command or load a library here, write or remove a file here, leave a socket or a
process behind, or open this machine to the remote are accepted only from the user's own
config directory.  A host's `ssh_config` from elsewhere is read (beside its TOML file when
relative) and refused if it says any of them: it is checked, not refused outright, so that a
lab's repository can still share its hosts' ports, users and jump hosts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hotloop import paths

RUNS = "runs a command on this machine"
WRITES = "makes ssh write host keys to a file it names on this machine"
TRUSTS = "makes ssh trust the host keys of a file it names"
SHARES = "makes ssh leave a socket file or a process on this machine"
OPENS = "opens this machine to the remote"
# ssh_config(5)'s keys that run a command (or load a library) here, write a file here (with
# StrictHostKeyChecking=no a known-hosts file gains a line: UserKnownHostsFile=~/.bashrc),
# share or keep a connection (a socket at any path, a master outliving hotloop), or let the
# remote in (a forwarded local socket, agent, display or tun device).  IdentityFile,
# CertificateFile, RevokedHostKeys and IdentityAgent only read or ask, so they stay allowed.
REFUSED = {
    "proxycommand": RUNS, "localcommand": RUNS, "permitlocalcommand": RUNS,
    "knownhostscommand": RUNS, "match": RUNS, "pkcs11provider": RUNS,
    "securitykeyprovider": RUNS, "xauthlocation": RUNS,
    "userknownhostsfile": WRITES, "globalknownhostsfile": TRUSTS,
    "controlmaster": SHARES, "controlpath": SHARES, "controlpersist": SHARES,
    "localforward": OPENS, "remoteforward": OPENS, "dynamicforward": OPENS,
    "streamlocalbindunlink": OPENS, "forwardagent": OPENS, "forwardx11": OPENS,
    "forwardx11trusted": OPENS, "tunnel": OPENS,
}
# The values that turn such a key off (LocalCommand has none: its value is a command)
OFF = {"permitlocalcommand": "no", "controlmaster": "no", "controlpersist": "no",
       "controlpath": "none", "streamlocalbindunlink": "no", "forwardagent": "no",
       "forwardx11": "no", "forwardx11trusted": "no", "tunnel": "no",
       "userknownhostsfile": "none", "globalknownhostsfile": "none"}
# A config file's Include reads files this check did not (globs, ~/.ssh/...): refused too.
# Its Match is refused only with `exec` (Match host/user/... run nothing).
FILE_ONLY = {"include"}
# ssh drops quotes anywhere in a keyword (Proxy"Command" is ProxyCommand) and reads quoted
# and escaped words in Match: the check reads a line without them, so no spelling slips past
_QUOTING = str.maketrans("", "", "\"'\\")


@dataclass(frozen=True)
class Said:
    """An ssh option, or a line of an ssh config file, refused from a shared profile."""
    line: int                   # of the config file; 0 for an option
    key: str
    why: str                    # what it makes ssh do: RUNS, WRITES, ...


def _refused(key: str, rest: str) -> str | None:
    low = key.lower()
    if low not in REFUSED:
        return None
    value = rest.strip(" \t\r=").lower().split()[:1]
    return None if low in OFF and value == [OFF[low]] else REFUSED[low]


def refused_option(option: str) -> Said | None:
    """An ssh `-o` option refused from a shared profile (its key and why), else None."""
    m = re.match(r"\s*([A-Za-z][A-Za-z0-9]*)\s*([= ].*)", option)
    if m is None:
        return None
    why = _refused(m.group(1), m.group(2))
    return None if why is None else Said(0, m.group(1), why)


def own(path: Path) -> bool:
    """A file in the user's own config directory (not a --profiles one, not bundled)."""
    try:
        return path.resolve().is_relative_to(paths.config_dir().resolve())
    except OSError:
        return False


def refused_config(text: str) -> Said | None:
    """The first line of an ssh config file refused from a shared profile (one that runs a
    command or loads a library here, writes here, shares a connection, lets the remote in, or
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
                return Said(number, f"{key} exec", RUNS)
            continue
        if low in FILE_ONLY:
            return Said(number, key, "reads files this check does not")
        why = _refused(key, rest)
        if why is not None:
            return Said(number, key, why)
    return None
