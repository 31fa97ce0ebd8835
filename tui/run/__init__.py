"""Running a plan: the session (orchestration), its preflight (consent, the build, the result
header), the worker process and the typed protocol between the two, interleaved batches and
calibration sessions.
"""
