"""Where hotloop keeps things: bundled files, the user's config, cache and state."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLED_PROFILES = ROOT / "profiles"
CSRC = ROOT / "csrc"
HEADER = CSRC / "hotloop.h"


def _xdg(var: str, default: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / default) / "hotloop"


def config_dir() -> Path:
    """The user's profile directory: saved plans land here."""
    return _xdg("XDG_CONFIG_HOME", ".config")


def cache_dir() -> Path:
    return _xdg("XDG_CACHE_HOME", ".cache")
