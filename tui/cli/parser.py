"""The command line: subcommands, their options, the examples, shell completion."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NoReturn

from hotloop import __version__, paths
from hotloop.errors import HotloopError
from hotloop.perf.call_graphs import CALL_GRAPHS

# Shell completion (shtab): names come from `hotloop completion --names KIND`, which reads
# the catalogue (with the --profiles directories already on the line) and says nothing
# when it cannot.
NAME_KINDS = ("plan", "workload", "cpu", "kernel", "host")


_COMPLETION_PREAMBLE = {
    "bash": r"""
# hotloop's names: $1 plan|workload|cpu|kernel|host, $2 the word so far
_hotloop_names() {
  local i profiles=()
  for ((i = 2; i < ${#COMP_WORDS[@]}; i++)); do
    [[ ${COMP_WORDS[i-1]} == --profiles ]] && profiles+=(--profiles "${COMP_WORDS[i]}")
  done
  compgen -W "$(hotloop completion --names "$1" "${profiles[@]}" 2>/dev/null)" -- "$2"
}
_hotloop_names_plan() { _hotloop_names plan "$1"; }
_hotloop_names_workload() { _hotloop_names workload "$1"; }
_hotloop_names_cpu() { _hotloop_names cpu "$1"; }
_hotloop_names_kernel() { _hotloop_names kernel "$1"; }
_hotloop_names_host() { _hotloop_names host "$1"; }
""",
    "zsh": r"""
# hotloop's names: $1 plan|workload|cpu|kernel|host
_hotloop_names() {
  local i
  local -a profiles names
  for ((i = 2; i < CURRENT; i++)); do
    [[ ${words[i-1]} == --profiles ]] && profiles+=(--profiles "${words[i]}")
  done
  names=(${(f)"$(hotloop completion --names "$1" "${profiles[@]}" 2>/dev/null)"})
  compadd -a names
}
""",
}


def _names(kind: str) -> dict[str, str]:
    return {"bash": f"_hotloop_names_{kind}", "zsh": f"_hotloop_names {kind}"}


# What an argument completes to, for shtab: a path (its FILE, DIRECTORY) by name, so that
# shtab (and the 30 modules it imports) loads for `hotloop completion` only, not every start.
FILE, DIRECTORY = "file", "directory"


def _complete(action: argparse.Action, what: dict[str, Any] | str) -> None:
    action.complete = what      # type: ignore[attr-defined]   # read by shtab


def completion_script(shell: str) -> str:
    """The shell's completion script, shtab's, for the command line parser() builds."""
    import shtab
    paths_as = {FILE: shtab.FILE, DIRECTORY: shtab.DIRECTORY}
    top = parser()
    todo = [top]
    while todo:
        for action in todo.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += action.choices.values()
            elif isinstance(getattr(action, "complete", None), str):
                action.complete = paths_as[action.complete]  # type: ignore[attr-defined]
    return shtab.complete(top, shell, preamble=_COMPLETION_PREAMBLE[shell])


def _profiles_option(p: argparse.ArgumentParser, dest: str = "profiles") -> None:
    _complete(p.add_argument("--profiles", metavar="DIR", type=Path, action="append",
                             default=[], dest=dest,
                             help="another directory of TOML profiles (repeatable)"),
              DIRECTORY)


def _positive(text: str) -> int:
    """A count of at least 1 (`--top -1` would take all but the last)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


METRIC_HELP = ("the primary metric, the one judged and gated (default: the workload's): "
               "ns/op, cpu_ns/op (or cpu: the worker's CPU time per op, which a busy "
               "machine's waits leave out), cycles/op, an extra such as user_s")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:      # one line, exit 2
        raise HotloopError(f"{self.prog.removeprefix('hotloop').strip() or 'usage'}: "
                           f"{message}")


class _Once(argparse.Action):
    """calibrate's --kernel and --cpu: a second one is refused, not silently taken for the
    first (a calibration measures the noise of one kernel, on one CPU profile)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        first = getattr(namespace, self.dest)
        if first is not None:
            what = "kernel" if self.dest == "kernel" else "CPU profile"
            parser.error(f"{option_string} {first} {option_string} {values}: calibrate "
                         f"measures one {what}'s noise; calibrate each {what} on its own")
        setattr(namespace, self.dest, values)


def _plan_options(p: argparse.ArgumentParser, several: bool = False) -> None:
    """What `run` and `calibrate` take to adjust the plan they run."""
    _complete(p.add_argument("--cpu", action="append" if several else _Once,
                             help="CPU profile" + ("; repeat to compare profiles" if several
                                                   else "")), _names("cpu"))
    _complete(p.add_argument("--kernel", action="append" if several else _Once,
                             help="kernel profile" + ("; repeat to compare kernels (with "
                                                      "--sessions N: N sessions of each, "
                                                      "alternating)" if several else "")),
              _names("kernel"))
    p.add_argument("--runs", type=int, help="recorded repetitions")
    p.add_argument("--warmup", type=int, help="unrecorded repetitions first")
    p.add_argument("--timeout", type=float, help="seconds one repetition may take")
    p.add_argument("--until-ci", type=float, metavar="PCT",
                   help="stop once the median's 95%% confidence interval is within +-PCT%% "
                        "(at most --runs runs)")
    p.add_argument("--processes", type=int,
                   help="spread the runs over N worker processes, in turn (default: the "
                        "plan's, 1): averages out what one process's memory layout does")
    p.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="override a workload parameter (repeatable)"
                        + ("; K=V1,V2 compares values" if several else ""))
    p.add_argument("--perf", action=argparse.BooleanOptionalAction, default=None,
                   help="sample with perf (default: the plan's, on where perf works)")
    p.add_argument("--perf-freq", type=int, metavar="HZ",
                   help="perf's samples a second (default: the plan's, 999)")
    p.add_argument("--call-graph", choices=CALL_GRAPHS,
                   help="perf's call graphs (default: the plan's, none)")
    p.add_argument("--perf-keep-mb", type=int, metavar="MB",
                   help="the results directory's budget for kept perf data (default: the "
                        "plan's, 200)")
    p.add_argument("--apply-system", action="store_true",
                   help="allow the profiles' sysctl/governor changes (restored after)")
    _profiles_option(p)


EXAMPLES = """\
examples:
  hotloop                                   the console
  hotloop run quick                         the default plan, headless
  hotloop run seqpacket --runs 20           a workload with its defaults
  hotloop run seqpacket --cpu same-core --cpu split --interleave   A/B, round by round
  hotloop show results/FILE.jsonl --runs    summary, histogram, every run
  hotloop annotate results/FILE.jsonl hl_run    a hot symbol's instructions
  hotloop compare stock.jsonl patched.jsonl --svg cmp.svg
  hotloop list plans                        the plans and what a run of each takes
  hotloop run page-pool --host lab1 --host lab2   on two machines over SSH, compared
  hotloop doctor                            what this machine allows
  source <(hotloop completion bash)         tab completion (bash; zsh likewise)

`hotloop COMMAND --help` tells more about each command."""


class _Version(argparse.Action):
    """`hotloop 0.1.0 (source 1a2b3c4d5e6f)`: two installations of one version number from
    other sources tell apart (the digest is read only when asked for)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(version_line())
        parser.exit()


# Each subcommand's --help ends with these.
_EXAMPLES = {
    "run": ["hotloop run quick                         the default plan",
            "hotloop run seqpacket --runs 20 --param msg_size=64",
            "hotloop run seqpacket --cpu same-core --cpu split --interleave   A/B",
            "hotloop run zero_null --until-ci 0.5 --runs 500",
            "hotloop run seqpacket --kernel stock --kernel patched --sessions 10   A B B A ...",
            "hotloop run zero_null --param block_size=512,4096 --sessions 5   variants alike",
            "hotloop run page-pool --host lab1 --host lab2   over SSH, then compared"],
    "show": ["hotloop show results/FILE.jsonl           summary, histogram, hot symbols",
             "hotloop show results/FILE.jsonl --runs    ... and every run",
             "hotloop show results/FILE.jsonl --format csv --svg report.svg"],
    "compare": ["hotloop compare stock.jsonl patched.jsonl",
                "hotloop compare results/stock/ results/patched/ --format org",
                "hotloop compare a.jsonl,b.jsonl c.jsonl --svg cmp.svg"],
    "annotate": ["hotloop annotate results/FILE.jsonl hl_run",
                 "hotloop annotate results/FILE.jsonl --top 5 --sort share",
                 "hotloop annotate stock.jsonl patched.jsonl hl_run   side by side"],
    "calibrate": ["hotloop calibrate quick --sessions 8",
                  "hotloop calibrate results/a-a/          A/A files already run",
                  "hotloop calibrate --list"],
    "list": ["hotloop list                              everything",
             "hotloop list plans                        runs, warmups, the last time taken",
             "hotloop list hosts --profiles lab/"],
    "doctor": ["hotloop doctor", "hotloop doctor --profiles lab/"],
    "save": ["hotloop save mine --workload zero_null --cpu split --param count=100000",
             "hotloop save ab --workload seqpacket --runs 30 --processes 3 --no-perf"],
    "host": ["hotloop host check lab1", "hotloop host setup lab1"],
    "restore": ["hotloop restore"],
    "bisect": ["hotloop bisect v1.0..v1.1 mine --profiles bench/   in the workload's repository",
               "hotloop bisect v6.1..v6.2 seqpacket --build 'make bzImage' "
               "--kernel-image arch/x86/boot/bzImage",
               "hotloop bisect --resume                   go on after a Ctrl-C"],
    "completion": ["source <(hotloop completion bash)",
                   "hotloop completion zsh > ~/.zfunc/_hotloop"],
}


def _examples(name: str) -> str:
    return "examples:\n" + "\n".join(f"  {e}" for e in _EXAMPLES[name])


def version_line() -> str:
    return f"hotloop {__version__} (source {paths.source_digest()})"


def parser() -> argparse.ArgumentParser:
    top = _Parser(prog="hotloop", formatter_class=argparse.RawDescriptionHelpFormatter,
                  description="Benchmark Linux kernel and system hot paths.\n\n"
                              "With no arguments, hotloop opens the console (a terminal UI) on "
                              "the quick plan:\npress r to run it, q to quit.",
                  epilog=EXAMPLES)
    top.add_argument("-V", "--version", action=_Version, nargs=0,
                     help="the version, and a digest of the sources it was installed from")
    _profiles_option(top, dest="top_profiles")     # before the subcommand, or after it
    sub = top.add_subparsers(dest="command", parser_class=_Parser)

    def _sub(name: str, help: str,  # noqa: A002 - argparse's word
             description: str = "") -> argparse.ArgumentParser:
        """A subcommand whose --help says what it does first and ends with examples."""
        return sub.add_parser(name, help=help, description=description or help,
                              epilog=_examples(name),
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    run = _sub("run", help="run plans or workloads headless")
    _complete(run.add_argument("names", nargs="+", metavar="NAME",
                               help="plan or workload name; several run as a batch and are "
                                    "compared"), _names("plan"))
    run.add_argument("--sessions", type=int, metavar="N",
                     help="N sessions of each --kernel in a balanced order (A B B A ...), "
                          "each a fresh start, then compared with sessions as replicates; "
                          "or of each variant (plans, --cpu, K=V1,V2), not both; with one "
                          "kernel, N sessions of it")
    run.add_argument("--aa", action="store_true",
                     help="an A/A: the one variant asked for run as two sides, a1 and a2, and "
                          "compared (with --sessions N, --interleave, or one session each): "
                          "what noise alone does to every row")
    run.add_argument("--metric", metavar="NAME",
                     help="the batch's or series' comparison: " + METRIC_HELP)
    run.add_argument("--interleave", action="store_true",
                     help="run the variants alternately, one repetition each (ABAB...)")
    run.add_argument("--keep-perf", action=argparse.BooleanOptionalAction, default=True,
                     help="keep the perf data beside the result file, compressed "
                          "(RESULT.perf/, for hotloop annotate; the oldest go beyond the "
                          "plan's perf_keep_mb, 200 MB) (default: keep)")
    _complete(run.add_argument("--out", type=Path,
                               help="result file (default results/<time>-<plan>.jsonl)"),
              FILE)
    run.add_argument("--force", action="store_true",
                     help="replace an existing --out file (kept as it was unless the run "
                          "measures something)")
    run.add_argument("--format", choices=("text", "mail", "json", "events"), default="text",
                     help="text (default), mail (the final report in 72 columns, to paste in "
                          "a reply), json, or events: every event as a result line on "
                          "stdout as it happens (what a remote session sends)")
    _complete(run.add_argument("--host", action="append", default=[], metavar="NAME",
                               help="run on a [host.NAME] of the profiles over SSH, the result "
                                    "file here; repeat for several hosts, compared after"),
              _names("host"))
    run.add_argument("--control", choices=("stdin",),
                     help="stdin: stop the run when standard input closes (a remote "
                          "session: a dropped connection stops it)")
    run.add_argument("--gated", action="store_true", help=argparse.SUPPRESS)   # --host --interleave
    # --host: the plan spelled out as its workload and every key (run.start), under its name
    run.add_argument("--plan-name", help=argparse.SUPPRESS)
    _plan_options(run, several=True)

    show = _sub("show", help="summary, histogram and hot symbols of a result file")
    _complete(show.add_argument("file", type=Path, help="a result file (.jsonl), or a "
                                "directory of sessions: their symbols' cost per op"), FILE)
    show.add_argument("--format", choices=("text", "mail", "json", "csv"), default="text",
                      help="text (default, the terminal's width), mail (72 columns, to paste "
                           "in a reply), json, or csv: the runs, one row each")
    show.add_argument("--runs", action="store_true",
                      help="list every run: value, ops, ns and the workload's extras")
    _complete(show.add_argument("--svg", type=Path, metavar="OUT",
                                help="also draw the report (histogram and tables) as an SVG "
                                     "picture"), FILE)
    _profiles_option(show)

    cmp = _sub("compare", help="compare results; the first side is the baseline")
    _complete(cmp.add_argument("files", nargs="+", metavar="SIDE",
                               help="a result file, a directory of them, or files joined by "
                                    "commas: each one side, its files that side's sessions"),
              FILE)
    cmp.add_argument("--format", choices=("text", "mail", "md", "org", "csv", "json"),
                     default="text", help="text (default, the terminal's width), mail (72 "
                     "columns, to paste in a reply), md or org tables, csv or json")
    _complete(cmp.add_argument("--noise", type=Path, metavar="FILE",
                               help="the noise profile to use (default: the stored one that "
                                    "matches)"), FILE)
    _complete(cmp.add_argument("--svg", type=Path, metavar="OUT",
                               help="also draw the table and the histograms as an SVG picture"),
              FILE)
    cmp.add_argument("--metric", metavar="NAME", help=METRIC_HELP)
    cmp.add_argument("--unpaired", action="store_true",
                     help="the kernels of one series (run --sessions): test their sessions "
                          "as independent, not session i of each as a pair (the default)")
    cmp.add_argument("--fail-on", choices=("worse", "better", "change"), default=None,
                     help="a regression gate for CI: exit 3 when a side's primary metric is "
                          "significantly worse (better, changed either way) than the "
                          "baseline, after the correction for the number of sides")
    cmp.add_argument("--threshold", type=float, default=None, metavar="PCT",
                     help="with --fail-on: ignore significant changes smaller than PCT %%")
    cmp.add_argument("--pass-unjudged", action="store_true",
                     help="with --fail-on: exit 0, not 4, when a side's primary metric gets "
                          "no verdict (too noisy, too few runs, one session a side not "
                          "calibrated, one boot a side across a reboot)")
    cmp.add_argument("--strict", action="store_true",
                     help="deprecated, the default: with --fail-on, a side with no verdict "
                          "exits 4")
    _profiles_option(cmp)

    ann = _sub("annotate", help="a hot symbol's instructions from a result's kept "
                                          "perf data; two results side by side")
    _complete(ann.add_argument("what", nargs="+", metavar="FILE|SYMBOL",
                               help="one or two result files (their perf data kept), "
                                    "then the symbol"), FILE)
    ann.add_argument("--top", type=_positive, metavar="N",
                     help="annotate the N hottest symbols (N >= 1)")
    ann.add_argument("--sort", choices=("address", "share", "percent"), default="address",
                     help="address (default): the code in order; share (or percent): "
                          "hottest first")
    ann.add_argument("--format", choices=("text", "json"), default="text",
                     help="text (default) or json")
    _complete(ann.add_argument("--vmlinux", type=Path, metavar="PATH",
                               help="the running kernel's vmlinux, for kernel symbols"),
              FILE)

    cal = _sub("calibrate", help="measure the session-to-session noise of a plan",
               description="Measure the session-to-session noise of a plan: at least 8 "
                           "sessions of at least 5 runs each (fewer give a noise too uncertain "
                           "to trust), run here or read from A/A result files (each content "
                           "counted once).")
    _complete(cal.add_argument("names", nargs="*", metavar="PLAN|PATH",
                               help="a plan or workload to run K sessions of, or A/A result "
                                    "files or directories to read"), _names("plan"))
    cal.add_argument("--sessions", type=int, default=8,
                     help="sessions to run (default and minimum 8)")
    cal.add_argument("--gap", type=float, default=0.0, metavar="S",
                     help="seconds between sessions")
    cal.add_argument("--list", action="store_true", help="list the stored noise profiles")
    _complete(cal.add_argument("--host", metavar="NAME",
                               help="calibrate that machine over SSH (a [host.NAME])"),
              _names("host"))
    _plan_options(cal)

    bis = _sub("bisect", help="find the revision that made a plan slower (or faster), "
                              "with a stated error bound",
               description="Bisect a performance change in the git repository here: GOOD "
                           "and BAD measured against each other first (an A B B A series), "
                           "then each revision in rounds with GOOD and BAD, session by "
                           "session, until it is classed good or bad (or, at a cap, unknown: "
                           "skipped); "
                           "the whole path's chance of a wrong answer is at most --alpha. "
                           "Each revision is checked out in a worktree of hotloop's under its "
                           "state directory: your checkout is never touched.")
    bis.add_argument("range", nargs="?", metavar="GOOD..BAD",
                     help="the last revision known good and the first known bad")
    _complete(bis.add_argument("plan", nargs="?", metavar="PLAN",
                               help="the plan or workload to measure"), _names("plan"))
    bis.add_argument("--build", metavar="CMD",
                     help="a shell command run in each revision's worktree before it is "
                          "measured (its output to a log); one that fails skips the revision")
    bis.add_argument("--build-timeout", type=float, metavar="S",
                     help="seconds a --build may take; one that takes longer skips its "
                          "revision (default: no bound)")
    bis.add_argument("--kernel-image", metavar="PATH",
                     help="a kernel image in each revision's worktree (after --build), booted "
                          "in a VM for its sessions")
    bis.add_argument("--alpha", type=float, default=0.05,
                     help="the bound on the chance that the answer is wrong (default 0.05)")
    bis.add_argument("--max-rounds", type=_positive, default=8, metavar="N",
                     help="the rounds (a session of each side) a step may take before its "
                          "revision is called unknown and skipped (default 8)")
    bis.add_argument("--metric", metavar="NAME", help="the metric judged: " + METRIC_HELP)
    bis.add_argument("--with-bad", action=argparse.BooleanOptionalAction, default=True,
                     help="each step's round also runs a session of BAD, and the revision is "
                          "judged nearer GOOD or nearer BAD (default; --no-with-bad: against "
                          "GOOD alone, two sessions a round)")
    bis.add_argument("--confirm", type=int, default=3, metavar="N",
                     help="sessions a side of the last good against the first bad at the "
                          "end, for the change, its interval and the symbols that moved "
                          "(default 3; 0: none)")
    bis.add_argument("--format", choices=("text", "mail", "json"), default="text",
                     help="text (default), mail (72 columns, to paste in a reply) or json")
    bis.add_argument("--resume", action="store_true",
                     help="go on with the interrupted bisect of this repository, its "
                          "finished sessions kept, with the options it was started with")
    bis.add_argument("--fresh", action="store_true",
                     help="start afresh, discarding an interrupted bisect of this repository")
    _complete(bis.add_argument("--cpu", help="CPU profile"), _names("cpu"))
    _complete(bis.add_argument("--kernel", help="kernel profile"), _names("kernel"))
    bis.add_argument("--runs", type=int, help="recorded repetitions a session")
    bis.add_argument("--warmup", type=int, help="unrecorded repetitions first")
    bis.add_argument("--timeout", type=float, help="seconds one repetition may take")
    bis.add_argument("--processes", type=int, help="worker processes a session")
    bis.add_argument("--param", action="append", default=[], metavar="K=V",
                     help="override a workload parameter (repeatable)")
    bis.add_argument("--perf", action=argparse.BooleanOptionalAction, default=None,
                     help="sample with perf (default: the plan's): the symbols that moved")
    bis.add_argument("--perf-freq", type=int, metavar="HZ", help="perf's samples a second")
    bis.add_argument("--until-ci", type=float, metavar="PCT",
                     help="a session stops once its median's 95%% interval is within +-PCT%%")
    bis.add_argument("--apply-system", action="store_true",
                     help="allow the profiles' sysctl/governor changes (restored after)")
    bis.set_defaults(call_graph=None, perf_keep_mb=None)    # run's, as plans'
    _profiles_option(bis)

    lst = _sub("list", help="list workloads, CPU and kernel profiles, plans")
    lst.add_argument("what", nargs="?", choices=("workloads", "cpu", "kernel", "plans", "hosts"),
                     help="what to list (default: all of it)")
    _profiles_option(lst)

    doctor = _sub("doctor", help="what this machine allows")
    _profiles_option(doctor)

    save = _sub("save", help="save a plan to your profile directory")
    save.add_argument("name", help="the plan's name")
    _complete(save.add_argument("--workload", required=True, help="the workload it runs"),
              _names("workload"))
    _complete(save.add_argument("--cpu", default="default", help="CPU profile"), _names("cpu"))
    _complete(save.add_argument("--kernel", default="default", help="kernel profile"),
              _names("kernel"))
    save.add_argument("--runs", type=int, default=10, help="recorded repetitions")
    save.add_argument("--warmup", type=int, default=1, help="unrecorded repetitions first")
    save.add_argument("--processes", type=int, default=1,
                      help="worker processes the runs are spread over")
    save.add_argument("--param", action="append", default=[], metavar="K=V",
                      help="a workload parameter (repeatable)")
    save.add_argument("--perf", action=argparse.BooleanOptionalAction, default=True,
                      help="sample with perf")
    save.add_argument("--summary", default="", help="one line for `hotloop list plans`")
    save.add_argument("--force", action="store_true", help="replace a plan saved before")
    _profiles_option(save)

    host = _sub("host", help="check a [host.NAME] over SSH, or install this "
                                       "hotloop there")
    host.add_argument("action", choices=("check", "setup"),
                      help="check: reachable, same hotloop, what it allows; setup: install "
                           "this version there (a venv in its ~/.cache/hotloop)")
    _complete(host.add_argument("name", metavar="NAME", help="the [host.NAME] of the "
                                                              "profiles"), _names("host"))
    _profiles_option(host)

    restore = _sub("restore", help="put back system settings a killed run left")
    _profiles_option(restore)

    comp = _sub("completion", help="print a shell completion script: "
                                             "source <(hotloop completion bash)")
    comp.add_argument("shell", nargs="?", choices=("bash", "zsh"),
                      help="the shell the script is for")
    comp.add_argument("--names", choices=NAME_KINDS, help=argparse.SUPPRESS)
    _profiles_option(comp)
    return top
