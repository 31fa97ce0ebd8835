"""This hotloop as a wheel, for `host setup` to install elsewhere: built by pip from the source
tree of a checkout, or put back together from the files an installation holds (`pipx install
.` keeps no source tree).  Both hold the same code, C sources and bundled profiles, so the
remote's `--version` digest is this one's.
"""
from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from hotloop.errors import HotloopError
from hotloop.visible import visible

# dist-info files that describe an installation, not the package: pip writes them anew
_INSTALLED_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def source_tree() -> Path | None:
    """The checkout this hotloop runs from (an editable install), or None."""
    root = Path(__file__).resolve().parent.parent.parent
    return root if (root / "pyproject.toml").is_file() and (root / "csrc").is_dir() else None


# What a wheel is built from: pyproject names these, and nothing else of a checkout ships
_SOURCES = ("pyproject.toml", "README.md", "tui", "csrc", "profiles")
# a checkout's leftovers: pip builds in the tree it is given, and setuptools copies a stale
# build/lib (a module since deleted) into the wheel
_NOT_SOURCES = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.o", "build",
                                      "*.egg-info", ".*")


def build(dest: Path, root: Path | None = None) -> Path:
    """A wheel of this hotloop (or of the checkout `root`) in `dest`; one line if none can be
    made.  Built from a clean copy of the sources, so it holds what the checkout holds now."""
    root = root or source_tree()
    if root is None:
        return from_installed(dest)
    with tempfile.TemporaryDirectory(prefix="hotloop-wheel-", dir=dest) as tmp:
        clean = Path(tmp, "src")
        try:
            clean.mkdir()
            for name in _SOURCES:
                if (root / name).is_dir():
                    shutil.copytree(root / name, clean / name, ignore=_NOT_SOURCES)
                else:
                    shutil.copy2(root / name, clean / name)
        except OSError as e:
            raise HotloopError(f"building the wheel: cannot copy {root}'s sources: "
                               f"{e.strerror or e}") from None
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                                "-w", str(dest), str(clean)],
                               capture_output=True, text=True)
    wheels = list(dest.glob("hotloop-*.whl"))
    if built.returncode != 0 or len(wheels) != 1:
        tail = (built.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise HotloopError(f"building the wheel failed: {visible(tail)}")
    return wheels[0]


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def from_installed(dest: Path, dist_name: str = "hotloop") -> Path:
    """The wheel an installation was made from, again: its package files and its metadata,
    with a RECORD of their hashes (PEP 427)."""
    from importlib import metadata  # 30 modules: for host setup only, not every start
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        raise HotloopError(f"host setup: {dist_name} is not installed here as a package: "
                           f"install it (pipx install .) or run it from a clone") from None
    info = f"{dist_name}-{dist.version}.dist-info"
    members: list[tuple[str, bytes]] = []
    for f in dist.files or ():
        name = f.as_posix()
        top = name.split("/", 1)[0]
        if name.startswith("..") or "__pycache__" in name or name.endswith(".pyc"):
            continue                    # the command scripts, caches: pip makes its own
        if top.endswith(".dist-info") and (top != info or name.split("/")[-1] in _INSTALLED_ONLY):
            continue
        try:
            members.append((name, Path(str(f.locate())).read_bytes()))
        except OSError as e:
            raise HotloopError(f"host setup: {f.locate()}: cannot read this installation's "
                               f"file ({e.strerror or e}): reinstall it") from None
    if not any(n == f"{info}/METADATA" for n, _ in members):
        raise HotloopError(f"host setup: this installation of {dist_name} lists no METADATA: "
                           f"reinstall it")
    if not any(n == f"{info}/WHEEL" for n, _ in members):     # an installer that dropped it
        members.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: hotloop\n"
                                         b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    wheel = dest / f"{dist_name}-{dist.version}-py3-none-any.whl"
    record = "".join(f"{n},{_hash(data)},{len(data)}\n" for n, data in members)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
        z.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\n")
    return wheel
