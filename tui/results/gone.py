"""What became of a result file's path, in words that are true: a directory of it deleted,
or one replaced by a file, is not "the file was deleted".

A series writes results/TIME-PLAN/KERNEL/sNN.jsonl; a user who deletes the series' directory,
or turns a kernel's directory into a file, while it runs is told which, and where.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path


def _blocked(path: Path) -> tuple[Path, str] | None:
    """The first of `path`'s directories (from the top) that is missing or not a directory:
    (it, "missing" | "file" | "other" | an error's words), else None."""
    for d in reversed(path.parents[:-1]):       # not "/" nor "."
        try:
            st = os.stat(d)
        except FileNotFoundError:
            return d, "missing"
        except NotADirectoryError:              # a component above is a file: said there
            continue
        except OSError as e:
            return d, e.strerror or str(e)
        if not stat.S_ISDIR(st.st_mode):
            return d, "file" if stat.S_ISREG(st.st_mode) else "other"
    return None


def since(path: Path, what: str = "it") -> str:
    """What happened to `path`, a file written or finished a moment ago: "results/T was
    deleted", "results/T/k1 was replaced by a file", else "`what` was deleted"."""
    found = _blocked(path)
    if found is None:
        return f"{what} was deleted"
    d, state = found
    return {"missing": f"{d} was deleted", "file": f"{d} was replaced by a file",
            "other": f"{d} is no longer a directory"}.get(state, f"{d}: {state}")


def cannot_make(path: Path) -> str | None:
    """Why `path`'s directory cannot be made, when one of its directories is a file or
    unreadable ("results/T/k1 is a file, not a directory"), else None."""
    found = _blocked(path)
    if found is None or found[1] == "missing":
        return None
    d, state = found
    return {"file": f"{d} is a file, not a directory",
            "other": f"{d} is not a directory"}.get(state, f"{d}: {state}")
