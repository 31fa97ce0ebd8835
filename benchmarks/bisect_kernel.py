"""A kernel bisect in VMs, end to end, timed: `hotloop bisect` over a repository whose
revisions each "build" a kernel by copying one of two Debian images (up to the middle the
older, after it the newer), every session a fresh boot of its revision's image.

    python benchmarks/bisect_kernel.py [--revisions 4] [--plan seqpacket] [--runs 2]
        [--max-rounds 3] [--confirm 2] [--perf] [--append 'slub_debug=FZPU']

Two point releases of one kernel may not differ (then the bisect says "nothing to bisect");
so that there is a change to find, the revisions after the middle also carry a kernel
profile whose command line (`--append`, default slub_debug=FZPU: every slab allocation
checked and poisoned, which an AF_UNIX socket's skbs feel) slows the kernel down, as a
regression in the kernel itself would; `--append ''` leaves the images alone to tell.
Emulated here (no usable KVM: qemu TCG), each session is about a minute; the table says what
the bisect found, its steps, its sessions and the time it took.  Real git worktrees, real
builds (the copy), real boots; nothing of the repository's checkout touched.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OLD, NEW = "/boot/vmlinuz-6.1.0-47-amd64", "/boot/vmlinuz-6.1.0-50-amd64"


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.org",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@example.org")
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def repository(where: Path, revisions: int, append: str) -> list[str]:
    """REVISIONS + 1 commits; after the middle, build.sh copies the newer image and the
    kernel profile's command line has `append`."""
    git(where, "init", "-q", "-b", "main")
    (where / "profiles").mkdir()
    shas = []
    for i in range(revisions + 1):
        image = OLD if i <= revisions // 2 else NEW
        (where / "build.sh").write_text(f"cp {image} bzImage\n")
        (where / "NOTES").write_text(f"revision {i}: {Path(image).name}\n")
        line = append if i > revisions // 2 and append else ""
        (where / "profiles" / "guest.toml").write_text(
            f'[kernel.guest]\nimage = "{OLD}"    # each revision\'s: --kernel-image\n'
            + (f'append = "{line}"\n' if line else ""))
        git(where, "add", "build.sh", "NOTES", "profiles")
        git(where, "commit", "-q", "-m", f"Revision {i}: {Path(image).name}")
        shas.append(git(where, "rev-parse", "HEAD"))
    return shas


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--revisions", type=int, default=4)
    ap.add_argument("--plan", default="seqpacket")
    ap.add_argument("--append", default="slub_debug=FZPU")
    ap.add_argument("--param", action="append", default=None,
                    help="the plan's params (default for seqpacket: msgs=20000, which an "
                         "emulated guest runs in seconds)")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--max-rounds", type=int, default=3)
    ap.add_argument("--confirm", type=int, default=2)
    ap.add_argument("--perf", action="store_true")
    a = ap.parse_args()
    for image in (OLD, NEW):
        if not Path(image).exists():
            print(f"needs {image} (apt-get install linux-image-{image.split('vmlinuz-')[1]})")
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "kernels"
        repo.mkdir()
        shas = repository(repo, a.revisions, a.append)
        argv = [sys.executable, "-m", "hotloop", "bisect", f"{shas[0]}..{shas[-1]}", a.plan,
                "--build", "sh build.sh", "--kernel-image", "bzImage", "--profiles",
                "profiles", "--kernel", "guest", "--runs", str(a.runs),
                *(w for p in (a.param if a.param is not None else
                              ["msgs=20000"] if a.plan == "seqpacket" else [])
                  for w in ("--param", p)),
                "--warmup", "0", "--max-rounds", str(a.max_rounds), "--confirm",
                str(a.confirm), "--perf" if a.perf else "--no-perf", "--format", "json"]
        print("$ " + " ".join(argv[2:]), flush=True)
        began = time.monotonic()
        done = subprocess.run(argv, cwd=repo, stdout=subprocess.PIPE, text=True)
        took = time.monotonic() - began
    if done.returncode not in (0, 1):
        print(f"bisect exited {done.returncode}")
        return 1
    doc = json.loads(done.stdout)
    print()
    print("| revisions | status | first bad | its change | endpoints' change | steps | "
          "sessions | time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")

    def pct(d: dict[str, float | None]) -> str:
        if d["change_pct"] is None:
            return "-"
        ci = "" if d["ci_low"] is None or d["ci_high"] is None else \
            f" [{d['ci_low']:+.3g}, {d['ci_high']:+.3g}]"
        return f"{d['change_pct']:+.3g}%{ci}"
    first = (doc["first_bad_subject"] or "-") if doc["first_bad"] else "-"
    steps = ", ".join(f"{s['rev'][:8]} {s['verdict']}" for s in doc["steps"])
    print(f"| {a.revisions} | {doc['status']} | {first} | {pct(doc)} | "
          f"{pct(doc['endpoints'])} | {steps} | {doc['sessions']} | {took / 60:.1f} min |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
