"""Room for numpy and scipy before they load.

Under an address-space limit (`ulimit -v`) too low for them, scipy's OpenBLAS does not fail:
its start-up retries an mmap for ever, in C, deaf to Ctrl-C and SIGTERM (`hotloop compare`
under `ulimit -v 250000` hung for good).  So under a limit, OpenBLAS is kept to one thread
(each thread's buffers are address space too, so on a big machine the need would grow with
its CPUs; the statistics here gain nothing from BLAS threads) and the room they need is
checked first: a one-line error instead of a hang.
"""
from __future__ import annotations

import mmap
import os
import resource
import sys

from hotloop.errors import HotloopError

# Address space numpy and scipy took to load and compare two files, one OpenBLAS thread
# (numpy 2.x, scipy 1.x on x86_64: 226 MB), with a margin.
NEED = 256 << 20


class NoRoom(HotloopError):
    """The address-space limit leaves too little to load numpy and scipy: exit 1."""
    exit_code = 1


def make_room() -> None:
    """Before the first numpy import: NoRoom (one line) if they could not load."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or "scipy.stats" in sys.modules:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"       # read once, as OpenBLAS loads
    try:
        # prot 0 (PROT_NONE): address space only, never touched, yet counted by the limit
        probe = mmap.mmap(-1, NEED, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)
    except OSError:
        raise NoRoom(f"the statistics load numpy and scipy, which need {NEED >> 20} MB of "
                     f"address space free, more than the limit (ulimit -v {soft >> 10}) "
                     "leaves: raise it") from None
    probe.close()
