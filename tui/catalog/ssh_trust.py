"""What a host table may make `ssh` do on this machine.

A profile may come from a shared repository (--profiles), so a host from outside the user's
own config directory may set only the ssh options, and its ssh config file only the keys,
known to be harmless: where to connect and as whom, which key, which algorithms, timeouts,
a jump host by name (HARMLESS).  Anything else (a command run here, a file written here, a
socket or a process left behind, host key checking loosened, this machine's environment
sent, the remote let in) is refused as the profile loads, in one line naming the file, the
line and the key: an allow-list, so a key this check has never heard of is refused too.
A host's `ssh_config` from elsewhere is read (beside its TOML file when relative) and
checked, not refused outright, so that a lab's repository can still share its hosts' ports,
users and jump hosts.

hotloop's own options go where ssh takes them: ssh keeps an option's first value (the
command line's before any config file's), so `pinned()` comes first on ssh's command line:
BatchMode for every host, and for a shared one strict host key checking and no forwarding,
whatever the profile or a config file says.
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
LOOSENS = "loosens host key checking"
ELSEWHERE = "connects to another machine than the host's address says (give it as address)"
SENDS = "sends this machine's environment to the remote"
UNLISTED = ("is not one of the keys a shared profile may set (where to connect and as whom, "
            "which key, algorithms, timeouts, a jump host by name: docs/hosts.md)")
# ssh_config(5)'s keys a shared profile may set, at any value (lower case): none runs, writes
# or opens anything here; IdentityFile and CertificateFile only read a key here.
HARMLESS = frozenset({
    "port", "user", "identityfile", "identitiesonly", "certificatefile",
    "ciphers", "macs", "kexalgorithms", "hostkeyalgorithms", "pubkeyacceptedalgorithms",
    "pubkeyacceptedkeytypes", "casignaturealgorithms", "requiredrsasize", "rekeylimit",
    "connecttimeout", "connectionattempts", "serveraliveinterval", "serveralivecountmax",
    "tcpkeepalive", "compression", "addressfamily", "ipqos", "loglevel",
    "preferredauthentications", "pubkeyauthentication", "passwordauthentication",
    "kbdinteractiveauthentication", "challengeresponseauthentication",
    "numberofpasswordprompts", "proxyjump",
})
# Keys harmless at these values only (the strict one, the off one), in any case
SAFE_AT = {"batchmode": {"yes", "true"}, "stricthostkeychecking": {"yes", "true"},
           "checkhostip": {"yes", "true"}, "verifyhostkeydns": {"no", "false"},
           "updatehostkeys": {"no", "false"}, "permitlocalcommand": {"no", "false"},
           "controlmaster": {"no", "false"}, "controlpersist": {"no", "false"},
           "controlpath": {"none"}, "streamlocalbindunlink": {"no", "false"},
           "forwardagent": {"no", "false"}, "forwardx11": {"no", "false"},
           "forwardx11trusted": {"no", "false"}, "tunnel": {"no", "false"},
           "clearallforwardings": {"yes", "true"}, "identityagent": {"none"},
           "userknownhostsfile": {"none"}, "globalknownhostsfile": {"none"}}
# What the refused keys do, for the one line that refuses them (any other key: UNLISTED)
WHY = {
    "proxycommand": RUNS, "localcommand": RUNS, "permitlocalcommand": RUNS,
    "knownhostscommand": RUNS, "match": RUNS, "pkcs11provider": RUNS,
    "securitykeyprovider": RUNS, "xauthlocation": RUNS,
    "userknownhostsfile": WRITES, "globalknownhostsfile": TRUSTS, "updatehostkeys": WRITES,
    "controlmaster": SHARES, "controlpath": SHARES, "controlpersist": SHARES,
    "localforward": OPENS, "remoteforward": OPENS, "dynamicforward": OPENS,
    "streamlocalbindunlink": OPENS, "forwardagent": OPENS, "forwardx11": OPENS,
    "forwardx11trusted": OPENS, "tunnel": OPENS, "clearallforwardings": OPENS,
    "stricthostkeychecking": LOOSENS, "checkhostip": LOOSENS, "verifyhostkeydns": LOOSENS,
    "hostkeyalias": LOOSENS, "batchmode": "lets ssh ask for a password the console cannot "
                                         "answer",
    "hostname": ELSEWHERE, "sendenv": SENDS, "setenv": SENDS,
}
# In a config file, also its sections: Host, and Match but for `exec`; HostName names the
# address of a section's alias there (in an option the host's `address` says it)
FILE_ALSO = frozenset({"host", "hostname"})
# A config file's Include reads files this check did not (globs, ~/.ssh/...): refused too.
FILE_ONLY = {"include"}
# A jump host by name: [user@]host[:port], a comma between hops, none starting with "-"
# (ssh runs the jump through a shell command line it builds)
_JUMP = re.compile(r"none|(?:[A-Za-z0-9_.]+@)?[A-Za-z0-9_][A-Za-z0-9_.-]*(?::[0-9]{1,5})?"
                   r"(?:,(?:[A-Za-z0-9_.]+@)?[A-Za-z0-9_][A-Za-z0-9_.-]*(?::[0-9]{1,5})?)*",
                   re.I)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:%-]*")
# ssh drops quotes anywhere in a keyword (Proxy"Command" is ProxyCommand) and reads quoted
# and escaped words in Match: the check reads a line without them, so no spelling slips past
_QUOTING = str.maketrans("", "", "\"'\\")

# Before a shared host's own options: ssh keeps the first value, so none of these can be
# undone by the profile, its config file or ~/.ssh/config.  BatchMode for every host: never a
# password prompt the console cannot answer.
PINNED = ("BatchMode=yes",)
PINNED_SHARED = ("StrictHostKeyChecking=yes", "ForwardAgent=no", "ForwardX11=no",
                 "ClearAllForwardings=yes", "PermitLocalCommand=no")


@dataclass(frozen=True)
class Said:
    """An ssh option, or a line of an ssh config file, refused from a shared profile."""
    line: int                   # of the config file; 0 for an option
    key: str
    why: str                    # what it makes ssh do: RUNS, WRITES, ...


def _refused(key: str, rest: str, in_file: bool) -> str | None:
    """Why a key with its value (`rest`, "=" and all) is refused from a shared profile."""
    low = key.lower()
    words = rest.translate(_QUOTING).strip(" \t\r=").split()
    value = words[0].lower() if words else ""
    if low == "proxyjump":
        return None if len(words) == 1 and _JUMP.fullmatch(words[0]) else \
            "names a jump host other than by name ([user@]host[:port], comma-separated)"
    if low in HARMLESS or (in_file and low in FILE_ALSO):
        if low == "hostname" and not (len(words) == 1 and _NAME.fullmatch(words[0])):
            return "is not a host name"
        return None
    if low in SAFE_AT and value in SAFE_AT[low] and len(words) == 1:
        return None
    return WHY.get(low, UNLISTED)


def refused_option(option: str) -> Said | None:
    """An ssh `-o` option refused from a shared profile (its key and why), else None."""
    m = re.match(r"\s*([A-Za-z][A-Za-z0-9]*)\s*([= ].*)", option, re.S)
    if m is None:
        return Said(0, option.split("=")[0].strip(), "is not an ssh option as Key=value")
    why = _refused(m.group(1), m.group(2), in_file=False)
    return None if why is None else Said(0, m.group(1), why)


def own(path: Path) -> bool:
    """A file in the user's own config directory (not a --profiles one, not bundled)."""
    try:
        return path.resolve().is_relative_to(paths.config_dir().resolve())
    except OSError:
        return False


def pinned(origin: str) -> tuple[str, ...]:
    """hotloop's ssh options for a host from `origin`, to go first on ssh's command line."""
    return PINNED + (() if origin and own(Path(origin)) else PINNED_SHARED)


def refused_config(text: str) -> Said | None:
    """The first line of an ssh config file refused from a shared profile (a key not among
    the harmless ones, a Match exec, an Include), else None.  Read more loosely than ssh reads
    it (keywords in any case, quoted, after a "=", "exec" anywhere in a Match line): a doubt
    is a refusal."""
    for number, line in enumerate(text.split("\n"), 1):
        bare = line.translate(_QUOTING).lstrip(" \t\r=")
        m = re.match(r"([A-Za-z0-9]+)(.*)", bare, re.S)
        if m is None:
            if bare.strip(" \t\r") and not bare.lstrip().startswith("#"):
                return Said(number, bare.strip()[:20], "is not an ssh_config line")
            continue
        key, rest = m.group(1), m.group(2)
        low = key.lower()
        if low == "match":
            if "exec" in rest.lower():
                return Said(number, f"{key} exec", RUNS)
            continue
        if low in FILE_ONLY:
            return Said(number, key, "reads files this check does not")
        why = _refused(key, rest, in_file=True)
        if why is not None:
            return Said(number, key, why)
    return None
