"""What a comparison warns of, as records: a code (a stable short name), the facts, and the
command to run where one helps; render.warning_words words them, each format in its own
way (docs/formats.md lists the codes and their facts).

A record holds numbers and names, not sentences: a tool reading `compare --format json`
selects them by code, the mail keeps those a reviewer must know, the console puts the
command on a line of its own.  A fact that is text (a file's problem, a session's partial
reason) is what its own module says of it, quoted in the sentence as it is.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

AA_CALIBRATE = "hotloop calibrate results/aa/"     # A/A sessions one a boot: a reboot measured
DOCTOR = "hotloop doctor"


@dataclass(frozen=True)
class MetaDiff:
    """A header field (not the kernel) that differs between two sides' results."""
    field: str
    baseline: Any
    new: Any


@dataclass(frozen=True, kw_only=True)
class CompareWarning:
    """A warning of a comparison: its code (the class's), its facts (the fields), the command
    that helps (None if none)."""
    code: ClassVar[str] = ""
    command: str | None = None

    def facts(self) -> dict[str, Any]:
        """The fields but the command, in JSON's types (a tuple a list, a record a dict)."""
        out = dataclasses.asdict(self)
        out.pop("command")
        return {k: _plain(v) for k, v in out.items()}


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


# ----------------------------------------------------------------------- the sessions given

@dataclass(frozen=True, kw_only=True)
class Copies(CompareWarning):
    """A side named a copy of one of its sessions (the same content): counted once."""
    code: ClassVar[str] = "copies"
    given: str                          # the side as given
    copy: str                           # the first copy's path, and the session it copies
    original: str
    more: int                           # further copies in the side
    sessions: int                       # the side's sessions, each once


@dataclass(frozen=True, kw_only=True)
class Emulated(CompareWarning):
    """The sessions ran in emulated guests (qemu TCG): not this CPU's numbers."""
    code: ClassVar[str] = "emulated"
    why: str                            # why KVM was not used, as the header says


@dataclass(frozen=True, kw_only=True)
class BootsUnknown(CompareWarning):
    """Sessions from files before format 3 do not say their boot."""
    code: ClassVar[str] = "boots-unknown"
    sessions: int


@dataclass(frozen=True, kw_only=True)
class Partial(CompareWarning):
    """A side cut short (a crash, a stop): compared on the runs it holds."""
    code: ClassVar[str] = "partial"
    side: str
    file: str
    runs: int
    reason: str                         # results.liveness says why, per session


@dataclass(frozen=True, kw_only=True)
class Unstable(CompareWarning):
    """A side's sessions whose runs vary by more than UNSTABLE_CV within a session."""
    code: ClassVar[str] = "unstable"
    command: str | None = DOCTOR
    side: str
    sessions: int                       # how many of its sessions
    cv_pct: float                       # the largest of their CVs, %
    limit_pct: float
    pinned: tuple[int, ...]             # the CPUs every session was pinned to (() if not all)


@dataclass(frozen=True, kw_only=True)
class CpuShareLow(CompareWarning):
    """A side's worker had well under a CPU over its runs: its wall-clock rows hold a wait."""
    code: ClassVar[str] = "cpu-share-low"
    side: str
    share_pct: float                    # the worker's CPU time over its wall time, %
    cpu_ns: float                       # its CPU time and wall time per op, the runs' mean
    wall_ns: float
    metric: str                         # the metric that judges its CPU time instead


# ----------------------------------------------------------------------- what the sides are

@dataclass(frozen=True, kw_only=True)
class DiffersBeyondKernel(CompareWarning):
    """A later side's headers differ from the baseline's in more than the kernel."""
    code: ClassVar[str] = "differs-beyond-kernel"
    side: str
    differences: tuple[MetaDiff, ...]


@dataclass(frozen=True, kw_only=True)
class SessionsDiffer(CompareWarning):
    """A side's own sessions differ among themselves in these header fields."""
    code: ClassVar[str] = "sessions-differ"
    side: str
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Build:
    """One build of a workload a side's sessions ran, and the files that ran it."""
    source: str                         # the source's sha256, "" if not recorded
    files: tuple[str, ...]              # the files' names


@dataclass(frozen=True, kw_only=True)
class MixedBuilds(CompareWarning):
    """A side's sessions ran more than one build of the workload: pooled, two programs."""
    code: ClassVar[str] = "mixed-builds"
    side: str
    kinds: tuple[str, ...]              # what the builds differ in, a build after the first
    builds: tuple[Build, ...]


@dataclass(frozen=True, kw_only=True)
class PerfNotStarted(CompareWarning):
    """perf was asked for, and did not start in some of a side's sessions."""
    code: ClassVar[str] = "perf-not-started"
    side: str
    sessions: int                       # of `of`
    of: int
    why: str                            # the commonest reason, as the files say it
    other_reasons: bool


@dataclass(frozen=True, kw_only=True)
class NoHotSymbols(CompareWarning):
    """perf was asked for, and some of a side's sessions hold no hot symbols."""
    code: ClassVar[str] = "no-hot-symbols"
    side: str
    sessions: int
    of: int


@dataclass(frozen=True)
class PerfState:
    """Whether perf ran in a side's sessions: in `on` of its `sessions`."""
    side: str
    on: int
    sessions: int


@dataclass(frozen=True, kw_only=True)
class PerfDiffers(CompareWarning):
    """The sides differ in perf on and off: its overhead is in some numbers only."""
    code: ClassVar[str] = "perf-differs"
    sides: tuple[PerfState, ...]


# ----------------------------------------------------------------------- the noise profile

@dataclass(frozen=True, kw_only=True)
class NoiseProfileIgnored(CompareWarning):
    """A stored noise profile that cannot be used: unsafe, unreadable, another benchmark's."""
    code: ClassVar[str] = "noise-profile-ignored"
    path: str
    reason: str                         # what is wrong with it, the path included


@dataclass(frozen=True, kw_only=True)
class NoiseProfileOfCompared(CompareWarning):
    """The noise profile was measured from sessions compared here: they would count twice."""
    code: ClassVar[str] = "noise-profile-of-compared"
    path: str


@dataclass(frozen=True, kw_only=True)
class NoNoiseProfile(CompareWarning):
    """One session a side and no calibration: the interval is the largest plausible offset's."""
    code: ClassVar[str] = "no-noise-profile"
    key: dict[str, Any]                 # analysis.noise.key_of: what a profile would match
    ignored: bool                       # a profile was found and not used
    batch: bool                         # the variants of one batch (interleaving would do)
    offset_pct: float                   # stats.SESSION_OFFSET_BOUND, %
    per_within: float                   # stats.ASSUMED_PER_WITHIN


@dataclass(frozen=True, kw_only=True)
class ProfileLacks(CompareWarning):
    """The noise profile has no figure for these metrics."""
    code: ClassVar[str] = "profile-lacks-metrics"
    metrics: tuple[str, ...]
    offset_pct: float
    per_within: float


@dataclass(frozen=True, kw_only=True)
class CalibrationBySitting(CompareWarning):
    """One session a side: the calibration is used, unchecked, as it was taken in their boot
    and sitting."""
    code: ClassVar[str] = "calibration-by-sitting"
    hours: float                        # analysis.sitting.SITTING_S in hours


@dataclass(frozen=True, kw_only=True)
class CalibrationOneBoot(CompareWarning):
    """The sides ran in different boots, and the calibration measured no reboot."""
    code: ClassVar[str] = "calibration-one-boot"
    command: str | None = AA_CALIBRATE
    side: str
    baseline: str
    sessions: int                       # the calibration's
    spread: str                         # how its sessions spread over boots (analysis.boots)
    relation: str                       # the sides' boots: "across boots", ...


@dataclass(frozen=True, kw_only=True)
class CalibrationUnchecked(CompareWarning):
    """One session a side: nothing checks the calibration, and it was not taken beside them."""
    code: ClassVar[str] = "calibration-unchecked"
    side: str
    reason: str                         # analysis.sitting.why_not


@dataclass(frozen=True, kw_only=True)
class CalibrationDropped(CompareWarning):
    """The sessions' own noise contradicts the calibration (F test): compared without it."""
    code: ClassVar[str] = "calibration-dropped"
    command: str | None = AA_CALIBRATE
    side: str
    metric: str
    measured_pct: float
    calibrated_pct: float
    p: float


@dataclass(frozen=True, kw_only=True)
class LoudCalibration(CompareWarning):
    """The calibration is far noisier than these sessions: taken under load, it widens the
    interval."""
    code: ClassVar[str] = "loud-calibration"
    side: str
    metric: str
    created: str                        # when it was taken, as the profile says
    days: int | None                    # how long ago (None: its date unreadable)
    calibrated_pct: float
    measured_pct: float
    p: float                            # the F test's lower tail


# ----------------------------------------------------------------------- the verdicts

@dataclass(frozen=True, kw_only=True)
class CannotCallAcrossBoots(CompareWarning):
    """One boot a side, a reboot between, and nothing measured what a reboot moves."""
    code: ClassVar[str] = "cannot-call-across-boots"
    command: str | None = AA_CALIBRATE
    side: str
    metric: str
    possibly: bool                      # the boots unknown: possibly different
    sessions_baseline: int
    sessions_new: int


@dataclass(frozen=True, kw_only=True)
class TooFewProcesses(CompareWarning):
    """Interleaved sides that ran in fewer than MIN_PROCESSES worker processes each."""
    code: ClassVar[str] = "too-few-processes"
    side: str
    baseline: str
    least: int                          # significance.MIN_PROCESSES


@dataclass(frozen=True, kw_only=True)
class PairsTooFew(CompareWarning):
    """A series' kernels with too few complete pairs of sessions: compared unpaired."""
    code: ClassVar[str] = "pairs-too-few"
    side: str
    baseline: str
    pairs: int
    needed: int                         # series_pairs.MIN_PAIRS
    unmatched: tuple[int, ...]          # the session numbers without their pair


@dataclass(frozen=True, kw_only=True)
class PairsIncomplete(CompareWarning):
    """A series' kernels paired on their complete pairs, the others left out."""
    code: ClassVar[str] = "pairs-incomplete"
    side: str
    baseline: str
    pairs: int
    unmatched: tuple[int, ...]


# ----------------------------------------------------------------------- variants matched

@dataclass(frozen=True, kw_only=True)
class VariantUnmatched(CompareWarning):
    """A variant only one of two sides of variants holds (analysis.matched): left out."""
    code: ClassVar[str] = "variant-unmatched"
    variant: str
    side: str                           # the side as given


def kinds() -> list[type[CompareWarning]]:
    """Every kind of warning, one a code (the docs and the words cover each)."""
    out: list[type[CompareWarning]] = []
    todo = list(CompareWarning.__subclasses__())
    while todo:
        k = todo.pop(0)
        out.append(k)
        todo += k.__subclasses__()
    return out
