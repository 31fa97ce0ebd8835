"""Where hotloop keeps things: bundled files, the user's config, cache and state."""
from __future__ import annotations

import os
import stat
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


def state_dir() -> Path:
    """$XDG_STATE_HOME/hotloop, else ~/.local/state/hotloop (XDG says: ignore a relative value)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "hotloop"



def state_dir_problem(directory: Path | None = None) -> str | None:
    """Why the state directory may not hold a restore journal, or None.

    The journal says what to write into /proc/sys, so whoever may write the
    directory decides what the next hotloop (maybe root's) writes there: it
    must be this user's and writable by nobody else. Missing is fine: it is
    then created 0700.
    """
    d = directory or state_dir()
    try:
        st = os.stat(d)
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot use the state directory {d}: {e.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"refusing the state directory {d}: it is not a directory"
    if st.st_uid != os.geteuid():
        return (f"refusing the state directory {d}: it belongs to uid {st.st_uid}, not to "
                f"this user (uid {os.geteuid()}); no setting is changed or restored from it")
    if st.st_mode & 0o022:
        return (f"refusing the state directory {d}: others may write to it (mode "
                f"{stat.S_IMODE(st.st_mode):04o}); no setting is changed or restored from it "
                f"until `chmod go-w {d}`")
    return None
