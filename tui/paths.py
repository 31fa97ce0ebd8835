"""Where hotloop keeps things: bundled files, the user's config, cache and state."""
from __future__ import annotations

import atexit
import contextlib
import csv
import errno
import functools
import hashlib
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path, PurePosixPath

PACKAGE = Path(__file__).resolve().parent
# The bundled C sources and profiles.  Installed (pip, pipx: a wheel) they are package data,
# hotloop/csrc and hotloop/profiles; run from a checkout (an editable install) the package is
# tui/ and they sit beside it at the top of the repository (pyproject.toml maps one onto the
# other).  Either way csrc/ and profiles/ are siblings: a bundled workload's source is
# "../csrc/NAME.c".  Never a guess between the two: a wheel missing its data says so.
INSTALLED = PACKAGE.name != "tui"
BUNDLED = PACKAGE if INSTALLED else PACKAGE.parent
BUNDLED_PROFILES = BUNDLED / "profiles"
CSRC = BUNDLED / "csrc"
HEADER = CSRC / "hotloop.h"
# Where result files (and the console's screenshots) go when none is named: results/ under
# the working directory, as a build tree keeps its output beside the sources.
RESULTS = Path("results")
REINSTALL = ("this installation of hotloop is broken: reinstall it" if INSTALLED else
             f"restore it in {BUNDLED}, e.g. with git checkout")


def bundled_files() -> list[Path]:
    """The bundled files this hotloop must have.

    Installed, the wheel's RECORD (what pip wrote, found beside this very package, so another
    hotloop installed elsewhere is not consulted) names every one; a checkout has the header
    and the profile directory, and whatever profiles it holds.  RECORD is read as the csv it
    is, not through importlib.metadata: its 30 modules would load at every start of an
    installed copy (a remote host's, a VM guest's)."""
    files = [HEADER]
    if INSTALLED:
        for record in sorted(PACKAGE.parent.glob(f"{PACKAGE.name}-*.dist-info/RECORD"))[:1]:
            with contextlib.suppress(OSError), open(record, newline="") as f:
                for row in csv.reader(f):
                    parts = PurePosixPath(row[0]).parts if row else ()
                    if parts[:2] in ((PACKAGE.name, "csrc"), (PACKAGE.name, "profiles")):
                        files.append(PACKAGE.parent.joinpath(*parts))
    return sorted(set(files))


@functools.cache
def source_digest() -> str:
    """A digest of this hotloop's code and bundled files, the same for a checkout and the
    wheel built from it: two installations of one version number from other sources (two
    checkouts, a local edit) tell apart by it."""
    digest = hashlib.sha256()
    for part, root, patterns in (("hotloop", PACKAGE, ("*.py", "*.tcss")),
                                 ("csrc", CSRC, ("*.c", "*.h")),
                                 ("profiles", BUNDLED_PROFILES, ("*.toml",))):
        files = sorted({f for pattern in patterns for f in root.rglob(pattern)
                        if root != PACKAGE or not (f.is_relative_to(CSRC)
                                                   or f.is_relative_to(BUNDLED_PROFILES))})
        for f in files:
            digest.update(f"{part}/{f.relative_to(root).as_posix()}\0".encode())
            try:
                digest.update(f.read_bytes())
            except OSError:             # bundled_problem() says which, where it matters
                digest.update(b"\0unreadable")
    return digest.hexdigest()[:12]


def bundled_problem() -> str | None:
    """The first bundled file that is missing or cannot be read, in one line; or None."""
    if not BUNDLED_PROFILES.is_dir():
        return f"{BUNDLED_PROFILES}: the bundled profiles are missing ({REINSTALL})"
    for f in bundled_files():
        try:
            st = os.stat(f)
            if not stat.S_ISREG(st.st_mode):
                return f"{f}: a bundled file is not a regular file ({REINSTALL})"
            os.close(os.open(f, os.O_RDONLY))
        except FileNotFoundError:
            return f"{f}: a bundled file is missing ({REINSTALL})"
        except OSError as e:
            return f"{f}: cannot read a bundled file: {e.strerror} ({REINSTALL})"
    return None


def _xdg(var: str, default: str) -> Path:
    return Path(os.environ.get(var) or Path.home() / default) / "hotloop"


def config_dir() -> Path:
    """The user's profile directory: saved plans land here."""
    return _xdg("XDG_CONFIG_HOME", ".config")


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/hotloop, else ~/.cache/hotloop; with neither (HOME names no directory:
    a service's, a container's, `HOME=/nonexistent`) a directory of this process's own in
    the temporary directory, removed when it ends, rather than a HOME made up (as root,
    anywhere): builds are then not kept between runs, which stderr says once."""
    if os.environ.get("XDG_CACHE_HOME"):
        return _xdg("XDG_CACHE_HOME", ".cache")
    home = Path.home()
    return home / ".cache" / "hotloop" if home.is_dir() else _passing_cache(str(home))


@functools.cache
def _passing_cache(home: str) -> Path:
    made = Path(tempfile.mkdtemp(prefix="hotloop-cache-"))     # 0700, a name nobody chose
    owner = os.getpid()

    def remove() -> None:
        if os.getpid() == owner:       # not a forked child's exit
            shutil.rmtree(made, ignore_errors=True)
    atexit.register(remove)
    sys.stderr.write(f"hotloop: warning: HOME {home} is not a directory: builds are cached "
                     f"in {made} until this hotloop ends (set XDG_CACHE_HOME to keep them)\n")
    return made / "hotloop"


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
    home = Path.home()
    if not home.is_dir() and d.is_relative_to(home):
        # made there, it would make up a HOME (as root, anywhere): as cache_dir, none
        return (f"no state directory: HOME {home} is not a directory (set XDG_STATE_HOME "
                f"to keep hotloop's state)")
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


def new_file(stem: Path, suffix: str, text: str) -> Path:
    """`text` in a file of its own, STEM.SUFFIX or STEM-N.SUFFIX: never one that exists,
    never through a link planted in a shared results directory (O_EXCL, O_NOFOLLOW), and
    none left half written."""
    for n in range(1, 100):
        path = stem.with_name(stem.name + (f"-{n}" if n > 1 else "") + suffix)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError:
            path.unlink(missing_ok=True)
            raise
        return path
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))
