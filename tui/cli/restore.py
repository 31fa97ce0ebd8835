"""`hotloop restore`: the system settings a killed run left changed, put back from its
journal."""
from __future__ import annotations

import argparse

from hotloop.host import journal, recovery
from hotloop.visible import visible


def cmd_restore(args: argparse.Namespace) -> int:
    """0 when everything is back (or nothing was changed); 1 when a value is still changed
    or its journal had to be set aside: the messages say which, for a look by hand."""
    before = recovery.left_behind()
    messages = recovery.recover()        # a live run's journal is its own: left in place, exit 1
    print("\n".join(visible(m) for m in messages) if messages else "nothing to restore")
    after = recovery.left_behind()
    return 1 if journal.journal_path() in after or after - before else 0
