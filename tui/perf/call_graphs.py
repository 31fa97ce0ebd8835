"""perf's call-graph modes a plan or `--call-graph` chooses from: a module of its own, so that
the command line's parser (every start, `-V` included) loads no perf probing."""
from __future__ import annotations

CALL_GRAPHS = ("none", "fp", "dwarf")
