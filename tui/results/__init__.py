"""Result files: one JSONL file per session, written by `writer` and read back by `reader`;
the perf data kept beside them in `perf_data`; its typed header and summary in `hotloop.record`.
This package's interface is the handful of names below (`results.read(path)`, `results.Writer`).
"""
from hotloop.results.reader import Result, read
from hotloop.results.writer import ON_EXISTS, WriteFailed, Writer, default_path

__all__ = ["ON_EXISTS", "Result", "WriteFailed", "Writer", "default_path", "read"]
