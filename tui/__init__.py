"""hotloop: a terminal console for benchmarking Linux kernel and system hot paths."""
__version__ = "0.1.0"
