"""Result files: one JSONL file per session (`store`), its typed header and summary in `hotloop.record`."""
from hotloop.results.reader import Result, read
from hotloop.results.store import ON_EXISTS, WriteFailed, Writer, default_path

__all__ = ["ON_EXISTS", "Result", "WriteFailed", "Writer", "default_path", "read"]
