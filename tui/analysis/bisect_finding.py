"""What a bisect found, as its report shows it (render.bisect_report words it; run.bisect_run
makes it): the decision's outcome, the confirming comparison of the last good against the
first bad and the results it was made of, what differs in their builds, and the time spent."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hotloop.analysis.bisection_model import Outcome
from hotloop.analysis.comparison import Comparison
from hotloop.results import Result


@dataclass(frozen=True)
class Finding:
    outcome: Outcome
    good: str                                   # the endpoints' full hashes
    bad: str
    subjects: dict[str, tuple[str, str]]        # sha -> (short hash, subject)
    comparison: Comparison | None               # the last good against the first bad
    differs: list[str]                          # what differs in their builds
    seconds: float
    state: Path                                 # the bisect's directory
    series: list[Path] = field(default_factory=list)
    sides: list[list[Result]] = field(default_factory=list)     # the comparison's results
    sessions: int = 0                           # all of them, the confirmation's too
    command: list[str] = field(default_factory=list)            # `hotloop bisect`'s words

    def short(self, sha: str | None) -> str:
        return self.subjects.get(sha or "", ((sha or "-")[:12], ""))[0]

    def subject(self, sha: str | None) -> str:
        return self.subjects.get(sha or "", ("", ""))[1]


def sides_of(comp: Comparison, results: Sequence[Result]) -> list[list[Result]]:
    """The comparison's sides as results (the mail's measured block reads their headers)."""
    by_file = {str(x.path): x for x in results}
    return [[by_file[f] for f in side.files if f in by_file] for side in comp.sides]
