"""hotloop: a terminal console for benchmarking Linux kernel and system hot paths.

The pipeline, one package per stage, data flowing one way:

    catalog  ->  run  ->  events  ->  results  ->  analysis  ->  render / console
    (TOML)      (session, worker)   (JSONL)     (compare, noise) (text, Textual)

with `host` (the running system: /proc, /sys, scheduling) and `perf` beneath `run`, and
`checks`, `events`, `errors`, `paths`, `stats` and `visible` shared by all.  The rule for imports is
kept by import-linter (pyproject.toml, checked by the tests).
"""
__version__ = "0.1.0"
