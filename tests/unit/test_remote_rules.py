"""The rules of running on another machine, without one: [host.NAME] tables, the ssh command
line, and the quoting that keeps every value a value on the remote shell."""
from __future__ import annotations

import dataclasses
import shlex

import pytest
from conftest import profile_dir

from hotloop import catalog, paths
from hotloop.catalog import Host
from hotloop.cli.parser import parser
from hotloop.cli.run import choices, variants
from hotloop.errors import HotloopError
from hotloop.run import start
from hotloop.run.remote import failure, script, ssh_argv

HOSTS = """
[host.lab1]
address = "lab1.example"
user = "root"
port = 2222
identity_file = "~/.ssh/lab"
ssh_options = ["ProxyJump=bastion", "Compression yes"]
hotloop = "~/.local/bin/hotloop"
directory = "~/bench"
label = "lab1 (stock 6.18)"
stop_wait = 30

[host.lab2]
address = "lab2"
"""


def test_hosts_load_with_every_key(tmp_path):
    cat = catalog.load([profile_dir(tmp_path, HOSTS)])
    lab1, lab2 = cat.hosts["lab1"], cat.hosts["lab2"]
    assert lab1 == Host("lab1", "lab1.example", "root", 2222, "~/.ssh/lab", "",
                        ("ProxyJump=bastion", "Compression yes"), "~/.local/bin/hotloop",
                        "~/bench", "lab1 (stock 6.18)", "", lab1.origin, 30.0)
    assert lab2.user == "" and lab2.port is None and lab2.hotloop == ""
    assert lab2.stop_wait == catalog.STOP_WAIT_S == 10
    assert cat.names("host") == ["lab1", "lab2"]


@pytest.mark.parametrize("table, expected", [
    ('address = "-oProxyCommand=touch /tmp/x"', "address: '-oProxyCommand=touch /tmp/x': "
                                                "expected a name without spaces that does not "
                                                "start with '-'"),
    ('address = "lab 1"', "address: 'lab 1': expected a name without spaces"),
    ('address = "lab1"\nuser = "-lroot"', "user: '-lroot': expected a name"),
    ('address = "lab1"\nport = 0', "port: 0 is below the minimum 1"),
    ('address = "lab1"\nssh_options = ["-oX=y"]', "expected an ssh option as Key=value"),
    ('address = "lab1"\nlabel = "a\\nb"', "holds a control character"),
    ('address = "lab1"\nhotloop = "x\\ny"', "holds a control character"),
    ('address = "lab1"\nadress = "x"', "adress: unknown key"),
    ('address = "lab1"\nstop_wait = 0', "stop_wait: must be above 0 and at most 60 seconds"),
    ('address = "lab1"\nstop_wait = nan', "stop_wait: must be above 0 and at most 60"),
    ('address = "lab1"\nstop_wait = 61', "stop_wait: must be above 0 and at most 60"),
    ('address = "lab1"\nstop_wait = "10"', "stop_wait: expected a number of seconds, got '10'"),
    ('user = "root"', "missing key 'address'"),
])
def test_a_bad_host_table_is_one_line_naming_file_line_and_key(tmp_path, table, expected):
    d = profile_dir(tmp_path, f"\n[host.lab1]\n{table}\n")
    with pytest.raises(HotloopError) as e:
        catalog.load([d])
    message = str(e.value)
    # the line of the key at fault (the table's own for a key missing)
    line = 2 if "missing" in expected else 2 + table.count("\n") + 1
    assert "\n" not in message
    assert message.startswith(f"{d / 'p.toml'}:{line}: [host.lab1]"), message
    assert expected in message


def test_ssh_gets_hotloops_pinned_options_then_the_hosts_and_the_address_after_double_dash(
        tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    mine = tmp_path / "config" / "hotloop" / "hosts.toml"
    host = Host("lab1", "lab1.example", "root", 2222, "/k", "/cfg",
                ("ProxyJump=b", "ConnectTimeout=3"), origin=str(mine))
    argv = ssh_argv(host, "true")
    assert argv[:4] == ["ssh", "-T", "-F", "/cfg"]
    opts = [argv[i + 1] for i, a in enumerate(argv) if a == "-o"]
    # ssh keeps an option's first value: BatchMode first, the user's own next (they win
    # over hotloop's defaults, ConnectTimeout here), then the defaults
    assert opts[:3] == ["BatchMode=yes", "ProxyJump=b", "ConnectTimeout=3"]
    assert opts.index("ConnectTimeout=3") < opts.index("ConnectTimeout=15")
    assert "StrictHostKeyChecking" not in " ".join(argv)
    # a host from a shared profile: strict host key checking and no forwarding come first
    shared = dataclasses.replace(host, origin=str(tmp_path / "repo" / "hosts.toml"))
    opts = [a for a in ssh_argv(shared, "true") if "=" in a]
    assert opts[:6] == ["BatchMode=yes", "StrictHostKeyChecking=yes", "ForwardAgent=no",
                        "ForwardX11=no", "ClearAllForwardings=yes", "PermitLocalCommand=no"]
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-i") + 1] == "/k"
    assert argv[argv.index("-l") + 1] == "root"
    assert argv[-3:] == ["--", "lab1.example", "sh -c true"]


def test_a_home_path_expands_on_the_remote_and_the_rest_is_quoted():
    host = Host("lab1", "lab1", hotloop="~/bin/hot loop", directory="~")
    text = script(host, ["--version"])
    assert text == """h="$HOME"/'bin/hot loop'; mkdir -p "$HOME" && cd "$HOME" && exec "$h" --version"""
    default = script(Host("lab1", "lab1"), ["--version"])
    assert '[ -x "$h" ] || h=hotloop' in default and default.endswith('exec "$h" --version')


def test_the_command_lines_plan_goes_to_a_host_as_the_consoles_does():
    # run --host resolves the plan here with the command line's overrides, then sends it
    # spelled out, as the console does: the host reads back the same plan
    cat = catalog.load([])
    args = parser().parse_args(["run", "quick", "--host", "lab1", "--cpu", "split", "--runs",
                                "5", "--param", "msgs=7", "--no-perf", "--until-ci", "2.5",
                                "--perf-freq", "97", "--apply-system", "--no-keep-perf"])
    variant, = variants(cat, args, here=False)
    argv = start.plan_argv(variant.rp.plan, choices(args, 1, "host"))
    assert argv[-2:] == ["--", "seqpacket"] and "--plan-name=quick" in argv
    back = parser().parse_args(["run", "--format=events", *argv])
    assert (back.cpu, back.runs, back.perf, back.until_ci, back.perf_freq) == \
        (["split"], 5, False, 2.5, 97)
    assert "msgs=7" in back.param and back.apply_system and not back.keep_perf


def test_a_failure_says_whose_words_it_is():
    host = Host("lab1", "lab1")
    assert failure(host, 255, ["ssh: connect to host lab1 port 22: Connection refused"]) == \
        "lab1: ssh: connect to host lab1 port 22: Connection refused"
    assert failure(host, 255, ["root@lab1: Permission denied (publickey)."]) == \
        "lab1: ssh: root@lab1: Permission denied (publickey)."
    assert failure(host, 2, ["hotloop: unknown plan 'x'"]) == "lab1: unknown plan 'x'"
    assert "hotloop host setup lab1" in failure(host, 127, ["sh: 1: exec: hotloop: not found"])
    keyed = Host("lab1", "lab1", hotloop="/opt/h")
    assert "its hotloop key names /opt/h: install this version there, or drop the key" in \
        failure(keyed, 127, ["sh: 1: exec: /opt/h: not found"])
    assert failure(host, 2, ["\x1b[31mhotloop: red\x1b[0m"]).startswith("lab1: ")
    # a host whose key is not known yet: what to do, not only ssh's words; a host of the
    # user's own directory may accept new keys, a shared one checks them strictly
    mine = dataclasses.replace(host, origin=str(paths.config_dir() / "hosts.toml"))
    assert failure(mine, 255, ["Host key verification failed."]) == (
        "lab1: ssh: Host key verification failed. (its key is not known here: `ssh lab1 true` "
        "once accepts it, or ssh_options = [\"StrictHostKeyChecking=accept-new\"] in "
        "[host.lab1])")
    assert failure(host, 255, ["Host key verification failed."]) == (
        "lab1: ssh: Host key verification failed. (its key is not known here: `ssh lab1 true` "
        "once accepts it; a host from a profile outside your config directory connects only "
        "to a host whose key is known)")


def test_what_is_quoted_is_what_shlex_splits_back():
    host = Host("lab1", "lab1", hotloop="/opt/hotloop")
    inner = shlex.split(ssh_argv(host, script(host, ["a b", "c"]))[-1])
    assert inner[:2] == ["sh", "-c"] and inner[2] == """h=/opt/hotloop; exec "$h" 'a b' c"""


RUNS, WRITES, SHARES, OPENS = ("runs a command on this machine",
                               "makes ssh write host keys to a file it names on this machine",
                               "makes ssh leave a socket file or a process on this machine",
                               "opens this machine to the remote")


@pytest.mark.parametrize("option, why", [
    ("ProxyCommand=nc %h %p", RUNS), ("ProxyCommand nc %h %p", RUNS),
    ("proxycommand=sh -c 'touch /tmp/x'", RUNS),
    ("LocalCommand=touch /tmp/x", RUNS), ("PermitLocalCommand=yes", RUNS),
    ("KnownHostsCommand=/bin/sh -c x", RUNS),
    ("Match=exec \"touch /tmp/x\"", RUNS), ("PKCS11Provider=/tmp/evil.so", RUNS),
    ("SecurityKeyProvider=/tmp/evil.so", RUNS), ("XAuthLocation=/tmp/evil", RUNS),
    # what makes ssh write here: with StrictHostKeyChecking=no, a host key line is appended
    ("UserKnownHostsFile=~/.bashrc", WRITES), ("userknownhostsfile ~/.bashrc", WRITES),
    ("GlobalKnownHostsFile=/tmp/k", "makes ssh trust the host keys of a file it names"),
    ("ControlPath=~/.bashrc", SHARES), ("ControlMaster=auto", SHARES),
    ("ControlPersist=yes", SHARES),
    ("LocalForward=/tmp/s localhost:22", OPENS), ("RemoteForward=2222 /run/docker.sock", OPENS),
    ("DynamicForward=1080", OPENS), ("StreamLocalBindUnlink=yes", OPENS),
    ("ForwardAgent=yes", OPENS), ("ForwardAgent=/tmp/agent", OPENS), ("ForwardX11=yes", OPENS),
    ("ForwardX11Trusted=yes", OPENS), ("Tunnel=point-to-point", OPENS),
])
def test_ssh_options_that_run_write_or_open_here_only_from_the_users_own_directory(
        tmp_path, monkeypatch, option, why):
    """A profile may come from a shared repository (--profiles): ssh options that run a
    command (or load a library) on this machine, write a file here, leave a socket or a
    process, or let the remote in are refused there, in one line naming file, line, key and
    what it does, and accepted from the user's own config directory."""
    shared = profile_dir(tmp_path, '\n[host.lab1]\naddress = "lab1"\n'
                                   f'ssh_options = ["ProxyJump=b", {_toml(option)}]\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with pytest.raises(HotloopError) as e:
        catalog.load([shared])
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{shared / 'p.toml'}:4: [host.lab1] ssh_options: "), message
    assert f": {option.split('=')[0].split()[0]} {why}, accepted only from your own " in \
        message and "~/.ssh/config" in message, message
    mine = tmp_path / "config" / "hotloop"
    mine.mkdir(parents=True)
    (mine / "hosts.toml").write_text((shared / "p.toml").read_text())
    cat = catalog.load([])
    assert option in cat.hosts["lab1"].ssh_options


LOOSENS = "loosens host key checking"
UNLISTED = "is not one of the keys a shared profile may set"


@pytest.mark.parametrize("option, key, why", [
    # host key checking off, in every spelling ssh reads
    ("StrictHostKeyChecking=no", "StrictHostKeyChecking", LOOSENS),
    ("StrictHostKeyChecking=off", "StrictHostKeyChecking", LOOSENS),
    ("stricthostkeychecking=FALSE", "stricthostkeychecking", LOOSENS),
    ("StrictHostKeyChecking no", "StrictHostKeyChecking", LOOSENS),
    ("StrictHostKeyChecking = accept-new", "StrictHostKeyChecking", LOOSENS),
    ("CheckHostIP=no", "CheckHostIP", LOOSENS), ("VerifyHostKeyDNS=yes", "VerifyHostKeyDNS", LOOSENS),
    ("HostKeyAlias=github.com", "HostKeyAlias", LOOSENS),
    ("Hostname=10.9.9.9", "Hostname", "connects to another machine than the host's address"),
    ("SendEnv=*", "SendEnv", "sends this machine's environment to the remote"),
    ("ProxyUseFdpass=yes", "ProxyUseFdpass", UNLISTED), ("BatchMode=no", "BatchMode", "lets ssh ask"),
    ("UpdateHostKeys=yes", "UpdateHostKeys", "makes ssh write host keys"),
    ("ProxyJump=-oProxyCommand=x", "ProxyJump", "names a jump host other than by name"),
    ("ProxyJump=b;touch x", "ProxyJump", "names a jump host other than by name"),
    ("CanonicalizeHostname=yes", "CanonicalizeHostname", UNLISTED),
])
def test_a_shared_host_may_not_loosen_host_key_checking_or_set_an_unlisted_key(
        tmp_path, monkeypatch, option, key, why):
    """Outside the user's own config directory, only the ssh options known to be harmless
    (an allow-list) load: any other is one line naming file, line, key and what it does."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    shared = profile_dir(tmp_path, f'\n[host.lab1]\naddress = "lab1"\nssh_options = [{_toml(option)}]\n')
    with pytest.raises(HotloopError) as e:
        catalog.load([shared])
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{shared / 'p.toml'}:4: [host.lab1] ssh_options: {option!r}: "
                              f"{key} {why}"), message


@pytest.mark.parametrize("line, key, why", [
    ("  StrictHostKeyChecking no", "StrictHostKeyChecking", LOOSENS),
    ("  stricthostkeychecking=Off", "stricthostkeychecking", LOOSENS),
    ("  HostKeyAlias lab", "HostKeyAlias", LOOSENS), ("  SendEnv *", "SendEnv",
                                                      "sends this machine's environment"),
    ("  ProxyUseFdpass yes", "ProxyUseFdpass", UNLISTED),
    ("  HostName -oProxyCommand=x", "HostName", "is not a host name"),
])
def test_a_shared_hosts_ssh_config_may_not_loosen_host_key_checking(tmp_path, monkeypatch, line,
                                                                    key, why):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    shared = profile_dir(tmp_path, '[host.lab]\naddress = "lab"\nssh_config = "ssh.conf"\n')
    (shared / "ssh.conf").write_text(f"Host lab\n  HostName 10.0.0.5\n{line}\n")
    with pytest.raises(HotloopError) as e:
        catalog.load([shared])
    assert str(e.value).startswith(f"{shared / 'p.toml'}:3: [host.lab] ssh_config: "
                                   f"{shared / 'ssh.conf'}:3: {key} {why}"), str(e.value)


def test_a_shared_host_keeps_the_harmless_options_a_lab_shares(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    options = ["Port=2222", "User=bench", "IdentityFile=~/.ssh/lab", "IdentitiesOnly yes",
               "Ciphers=aes128-ctr", "ConnectTimeout=3", "ServerAliveInterval 5",
               "ProxyJump=me@bastion.lab:2200,jump2", "StrictHostKeyChecking=yes",
               "Compression=yes", "ForwardAgent=no"]
    shared = profile_dir(tmp_path, '[host.lab]\naddress = "lab"\nssh_options = ['
                                   + ", ".join(map(_toml, options)) + "]\n")
    assert catalog.load([shared]).hosts["lab"].ssh_options == tuple(options)


def _toml(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.mark.parametrize("line, key, why", [
    ('ProxyCommand sh -c "touch PWNED"', "ProxyCommand", RUNS),
    ("proxycommand=nc %h %p", "proxycommand", RUNS),
    ('  "ProxyCommand" nc %h %p', "ProxyCommand", RUNS), ("LocalCommand touch x", "LocalCommand", RUNS),
    ("PermitLocalCommand yes", "PermitLocalCommand", RUNS),
    ("KnownHostsCommand /bin/x", "KnownHostsCommand", RUNS),
    ('Match host x exec "touch PWNED"', "Match exec", RUNS), ("match !EXEC x", "match exec", RUNS),
    ("Include ~/.ssh/other", "Include", "reads files this check does not"),
    ("PKCS11Provider /tmp/evil.so", "PKCS11Provider", RUNS),
    ("SecurityKeyProvider=/tmp/evil.so", "SecurityKeyProvider", RUNS),
    ("XAuthLocation /tmp/evil", "XAuthLocation", RUNS),
    # spellings ssh reads as these: a quote inside a keyword, a leading "=", a quoted exec
    ('Proxy"Command" sh -c x', "ProxyCommand", RUNS), ("=ProxyCommand sh -c x", "ProxyCommand", RUNS),
    ("Match host x ex'ec' y", "Match exec", RUNS),
    ("PermitLocalCommand=\"yes\"", "PermitLocalCommand", RUNS),
    # the case: a host key line appended to ~/.bashrc (StrictHostKeyChecking no)
    ("  UserKnownHostsFile ~/.bashrc", "UserKnownHostsFile", WRITES),
    ("ControlPath ~/.ssh/cm-%C", "ControlPath", SHARES),
    ('ControlMaster "auto"', "ControlMaster", SHARES),
    ("RemoteForward 2222 /run/docker.sock", "RemoteForward", OPENS),
])
def test_a_shared_hosts_ssh_config_is_read_beside_it_and_refused_if_it_runs_commands(
        tmp_path, monkeypatch, line, key, why):
    """A --profiles directory may ship the ssh config its host names: relative, it is the TOML
    file's neighbour (not the working directory's), and a line of it that runs a command here
    is refused in one line naming both files and the key; from the user's own config
    directory the same host loads as before."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    shared = profile_dir(tmp_path, '[host.lab]\naddress = "x"\nssh_config = "ssh.conf"\n')
    (shared / "ssh.conf").write_text(f"Host *\n  Port 2222\n{line}\n")
    monkeypatch.chdir(tmp_path)         # a cwd with no ssh.conf: the TOML's neighbour is read
    with pytest.raises(HotloopError) as e:
        catalog.load([shared])
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"{shared / 'p.toml'}:3: [host.lab] ssh_config: "
                              f"{shared / 'ssh.conf'}:3: {key} {why}, accepted only "
                              "from your own config directory"), message
    mine = tmp_path / "config" / "hotloop"
    mine.mkdir(parents=True)
    (mine / "hosts.toml").write_text((shared / "p.toml").read_text())
    (mine / "ssh.conf").write_text((shared / "ssh.conf").read_text())
    assert catalog.load([]).hosts["lab"].ssh_config == str(mine / "ssh.conf")


def test_a_shared_hosts_harmless_ssh_config_loads_and_a_missing_one_is_one_line(
        tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    shared = profile_dir(tmp_path, '[host.lab]\naddress = "x"\nssh_config = "ssh.conf"\n'
                                   'identity_file = "keys/lab"\n')
    with pytest.raises(HotloopError, match=r"p.toml:3: \[host.lab\] ssh_config: .*/prof/"
                                           r"ssh.conf: cannot read: No such file"):
        catalog.load([shared])
    (shared / "ssh.conf").write_text("# Match exec is said in a comment only\nHost lab\n"
                                     "  ProxyJump bastion\n  Match host lab user root\n"
                                     "  PermitLocalCommand no\n  ControlMaster no\n"
                                     "  ControlPath none\n  ForwardAgent no\n"
                                     "  IdentityAgent none\n  StrictHostKeyChecking yes\n")
    lab = catalog.load([shared]).hosts["lab"]
    assert (lab.ssh_config, lab.identity_file) == (str(shared / "ssh.conf"),
                                                   str(shared / "keys" / "lab"))
    assert ssh_argv(lab, "true")[2:4] == ["-F", str(shared / "ssh.conf")]


@pytest.mark.parametrize("argv, asks", [
    (["run", "page-pool", "--host", "lab1"], "asks for 3 (mode=fast_path, mode=ptr_ring"),  # a batch
    (["run", "zero_null", "--host", "lab1", "--param", "block_size=512,4096"], "asks for 2"),
    (["run", "zero_null", "syscall", "--host", "lab1"], "asks for 2"),
])
def test_a_host_runs_one_variant_and_a_batch_is_refused_in_one_line(tmp_path, isolated,
                                                                    capsys, argv, asks):
    """A plan that is a batch (its params hold lists) was let through to a traceback."""
    from hotloop.cli import main
    d = profile_dir(tmp_path, HOSTS)
    assert main([argv[0], "--profiles", str(d), *argv[1:]]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--host runs one variant on each host, and this " + asks in err
    assert not (isolated / "results").exists()
