"""What results mean: comparisons with their significance tests, session noise and its
calibration, the metrics a result holds and the perf symbol diff.  Nothing here prints.
"""
