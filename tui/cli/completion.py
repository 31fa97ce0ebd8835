"""`hotloop completion`: the shell's completion script, and the names it completes."""
from __future__ import annotations

import argparse
from pathlib import Path

from hotloop import catalog
from hotloop.cli.common import profile_dirs
from hotloop.cli.parser import completion_script
from hotloop.errors import HotloopError


def cmd_completion(args: argparse.Namespace) -> int:
    if args.names:
        return complete_names(args.names, profile_dirs(args))
    if args.shell is None:
        raise HotloopError("completion: name the shell: bash or zsh "
                           "(source <(hotloop completion bash))")
    print(completion_script(args.shell))
    return 0


def complete_names(kind: str, profiles: list[Path]) -> int:
    """The names a shell completes, one a line; nothing at all when they cannot be known
    (a --profiles directory that does not exist, a broken file): completion stays quiet."""
    try:
        cat = catalog.load([d for d in profiles if d.is_dir()], skip_bad=True)
        names = ([*cat.names("plan"), *cat.names("workload")] if kind == "plan"
                 else cat.names(kind))
        print("\n".join(dict.fromkeys(names)))
    except Exception:       # noqa: BLE001 - a completion never prints a traceback
        pass
    return 0
