"""A compiled workload module on disk, and loading it: what the worker process needs of the
build, apart from it, so that a worker (one a session, every session of a series) does not
import cffi's compiler, subprocess and the rest of `build` to start.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType


@dataclass(frozen=True)
class Built:
    """A compiled workload module on disk."""
    path: Path
    module_name: str
    source_sha256: str
    compiler: str
    cflags: tuple[str, ...]
    cached: bool


def load(built: Built) -> ModuleType:
    """Import a built module: it has `.ffi` and `.lib` with the hl_* functions."""
    loader = importlib.machinery.ExtensionFileLoader(built.module_name, str(built.path))
    spec = importlib.util.spec_from_file_location(built.module_name, built.path,
                                                  loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
