"""Noise profiles: how much this machine's sessions of one benchmark differ, and what that costs.

`hotloop calibrate` runs (or reads) A/A sessions of one plan and splits their variance into two
components per metric (Kalibera & Jones's levels): the spread of runs within a session, and the
spread of sessions' medians beyond what that explains (sigma_b: the session's own offset: the
boot, the VM's neighbours, the time of day).  From those and the measured cost of starting a
session against the cost of a run, it works out the cheapest sessions x runs a side that would
detect a 1%, 2% or 5% change.

A profile is valid for the results it was measured like: the same host, workload, params, CPU
profile and perf on/off (`key_of`), never across hosts.  It is stored as JSON under
`$XDG_STATE_HOME/hotloop/noise/` and `compare` finds it by the result files' headers.  A file
that is corrupt, forged or for something else is reported in one line and ignored.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hotloop import __version__
from hotloop.analysis import metrics
from hotloop.analysis.compare_warnings import NoiseProfileIgnored
from hotloop.errors import HotloopError
from hotloop.paths import state_dir, state_dir_problem
from hotloop.record import Header
from hotloop.results import Result
from hotloop.stats import MIN_RUNS

VERSION = 2
# A calibration's session variance from 3-4 sessions is too uncertain to pool with: a
# 4-session profile came out at 3.4e-5 against a median variance of 0.0055 and then called
# 6 of 8 real A/A pairs, and 8.5-12% of 3-session profiles give over 20% false positives.
# From 8 (df 7) its t quantile is within 15% of the normal one.  (The alternative, compare
# using the planner's 90% upper bound, would widen every calibrated interval, the good ones
# too, by 20-40%.)
MIN_SESSIONS = 8
MAX_SESSIONS_READ = 10_000
ASSUMED_SESSION_COST_S = 1.5            # start-up of a session when only files were given
MAX_SESSIONS = 50                       # beyond this, planning says "interleave instead"
RUN_CHOICES = (*range(5, 31), 40, 50, 60, 80, 100, 150, 200, 300, 500, 1000, 2000, 5000,
               10000)
CHANGES = (1.0, 2.0, 5.0)
KEY_FIELDS = ("host", "workload", "params", "cpu", "cpus", "perf")


class NoiseError(HotloopError):
    """A noise profile that cannot be used (one line)."""


@dataclass(frozen=True)
class MetricNoise:
    """The variance of one metric's session log-median, measured, and its parts (log scale:
    fractions, not %).  `session_var` is what compare needs and is measured directly (the
    spread of the sessions' log-medians); the split into the sessions' own offset and the
    runs' part only moves it to other run counts."""
    session_var: float          # tau^2: variance of one session's log-median at `runs` runs
    median_var: float           # its part from the runs (mean McKean-Schrader variance)
    sigma_within: float         # standard deviation of one run's log value within a session
    runs: float                 # runs per session the above was measured with: their
                                # harmonic mean (a median's variance goes as 1/n)
    df: int                     # degrees of freedom of session_var (sessions - 1)

    @property
    def sigma_between(self) -> float:
        """The session-to-session standard deviation: what the runs do not explain."""
        return math.sqrt(max(0.0, self.session_var - self.median_var))

    def at(self, runs: float, session_var: float | None = None) -> float:
        """tau^2 with `runs` runs a session: with fewer runs than calibrated, the runs' part
        grows as 1/runs; with more, it stays what was measured.  Shrinking it would subtract
        the McKean-Schrader estimate of the median variance, which has no degrees of freedom
        to carry: calibrated at 30 runs and compared at 200, that called 9-17% of A/A pairs.
        So a measured session variance is never reduced (Satterthwaite's alternative would
        need the median variance's own df, which nothing gives)."""
        s2 = self.session_var if session_var is None else session_var
        ratio = max(1.0, self.runs / max(runs, 1.0))
        return s2 + self.median_var * (ratio - 1)

    def runs_for(self, sides: Sequence[Sequence[int]]) -> float:
        """The run count at which `at` gives the variance of the difference of the sides'
        mean session centres, divided by sum(1/k): each session's runs' part goes as its own
        1/n_i (capped at the runs calibrated, as `at`), so 10 runs against 200 is not 105
        runs a side: the sum over sides of sum_i 1/n_i / k^2, over the sum of 1/k."""
        weight = sum(1 / len(s) for s in sides)
        inv = sum(sum(1 / min(max(n, 1), self.runs) for n in s) / len(s) ** 2
                  for s in sides) / weight
        return 1 / inv

    def upper(self, level: float = 0.9) -> float:
        """An upper `level` confidence bound of session_var (chi-square, df): a design
        planned on it holds even if this calibration happened to come out low."""
        from hotloop.analysis.significance import sps  # scipy, after its check
        return self.session_var * self.df / float(sps.chi2.ppf(1 - level, self.df))


@dataclass(frozen=True)
class NoiseProfile:
    key: dict[str, Any]         # what makes it valid: KEY_FIELDS of the result headers
    sessions: int
    metrics: dict[str, MetricNoise]
    session_cost_s: float       # a session's cost beyond its runs: start, build, setup, warmups
    run_cost_s: float           # one run, wall time
    cost_measured: bool         # False: the session cost is assumed (calibrated from files)
    created: str
    hotloop: str
    kernels: list[str]
    files: list[str] = field(default_factory=list)
    digests: list[str] = field(default_factory=list)   # the sessions' sha256: copies too
    # Each session's boot (analysis.boots.boot_of; "" unknown): a calibration within one boot
    # measured no reboot, and compare does not use it for sides across boots.  Empty in
    # profiles from before it was recorded: unknown.
    boots: list[str] = field(default_factory=list)
    # Each session's start (its header's time): at one session a side a calibration is
    # used only from the compared sessions' boot and sitting (analysis.sitting).  Empty in
    # profiles from before it was recorded.
    times: list[str] = field(default_factory=list)
    path: str = ""              # where it was read from or saved to
    # metrics the sessions recorded but the profile could not calibrate, and why (a run of
    # 0 s of user time has no log scale): the report names them rather than leave them out
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def boot_spread(self) -> str:
        """analysis.boots.spread of its sessions: "across boots" when each had its own."""
        from hotloop.analysis import boots
        return boots.spread(self.boots)

    def describe(self) -> str:
        k = self.key
        primary = next(iter(self.metrics.values()), None)
        noise = f"session noise {100 * primary.sigma_between:.2f}%" if primary else "no metrics"
        return (f"{noise} ({self.sessions} sessions of {k.get('workload')} on {k.get('host')}, "
                f"{self.boot_spread}, {self.created[:10]})")


# --------------------------------------------------------------------------- keys and files

def key_of(header: Header) -> dict[str, Any]:
    """What a noise profile must share with a result to describe it."""
    return {"host": header.host,
            "workload": "" if header.workload.name == "?" else header.workload.name,
            "params": {str(k): v for k, v in sorted(header.params.items())},
            "cpu": header.cpu.name, "cpus": list(header.cpu.cpus), "perf": header.perf}


def key_id(key: dict[str, Any]) -> str:
    text = json.dumps({k: key.get(k) for k in KEY_FIELDS}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def directory() -> Path:
    return state_dir() / "noise"


def path_for(key: dict[str, Any]) -> Path:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(key.get("workload") or "workload"))[:40]
    return directory() / f"{slug}-{key_id(key)}.json"


def describe_key(key: dict[str, Any]) -> str:
    params = " ".join(f"{k}={v}" for k, v in (key.get("params") or {}).items())
    return (f"{key.get('workload')} {params} · cpu {key.get('cpu')} · "
            f"perf {'on' if key.get('perf') else 'off'} · host {key.get('host')}").replace(
                "  ", " ")


def age_days(profile: NoiseProfile, now: float | None = None) -> int | None:
    """How many days ago the profile was taken; None when its date cannot be read."""
    import datetime
    try:
        taken = datetime.datetime.strptime(profile.created, "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None
    return int(((time.time() if now is None else now) - taken.timestamp()) // 86400)


def age_words(created: str, days: int | None) -> str:
    """"taken 2026-11-20, 13 days ago" (or its date alone when it cannot be read)."""
    if days is None:
        return f"taken {created[:10] or 'at an unknown time'}"
    ago = "today" if days < 1 else f"{days} day{'s' * (days != 1)} ago"
    return f"taken {created[:10]}, {ago}"


def loud(check: dict[str, Any]) -> bool:
    """A calibration far noisier than the sessions compared (one taken under load: pooled
    in, it only widens the interval), by the lower tail of compare's F test."""
    return check.get("p_quieter", 1.0) < 0.05 and bool(check.get("measured_pct"))


def save(profile: NoiseProfile) -> Path:
    path = path_for(profile.key)
    doc = {"hotloop_noise": VERSION, **asdict(profile)}
    doc.pop("path")
    try:
        # Each level 0700 and the file 0600, whatever the umask: find() trusts nothing others
        # may write, and a profile it would refuse is no use.
        for d in (state_dir().parent, state_dir(), path.parent):
            d.mkdir(mode=0o700, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(doc, indent=2, allow_nan=False) + "\n")
        os.replace(tmp, path)
    except (OSError, ValueError) as e:
        raise HotloopError(f"{path}: cannot save the noise profile: "
                           f"{getattr(e, 'strerror', None) or e}") from None
    return path


def _number(doc: dict[str, Any], name: str, lo: float = 0.0, hi: float = 1e9) -> float:
    v = doc.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or not lo <= v <= hi:
        raise ValueError(f"{name} is {v!r}, not a number from {lo:g} to {hi:g}")
    return float(v)


def load(path: Path) -> NoiseProfile:
    """Read a profile; NoiseError (one line) for anything that is not a valid one."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):    # a FIFO would block the read for ever
            raise ValueError("not a regular file")
        if st.st_size > 1 << 20:
            raise ValueError("larger than 1 MiB")
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict) or doc.get("hotloop_noise") != VERSION:
            raise ValueError("not a hotloop noise profile (version "
                             f"{doc.get('hotloop_noise') if isinstance(doc, dict) else '?'})")
        key = doc.get("key")
        if not isinstance(key, dict) or set(KEY_FIELDS) - set(key):
            raise ValueError("no key")
        sessions = doc.get("sessions")
        if isinstance(sessions, bool) or not isinstance(sessions, int) \
                or not 2 <= sessions <= MAX_SESSIONS_READ:
            raise ValueError(f"sessions {sessions!r}")
        if sessions < MIN_SESSIONS:
            raise ValueError(f"measured from {sessions} sessions; a calibration needs at "
                             f"least {MIN_SESSIONS}: calibrate again")
        raw = doc.get("metrics")
        if not isinstance(raw, dict) or not raw:
            raise ValueError("no metrics")
        found: dict[str, MetricNoise] = {}
        for name, m in raw.items():
            if not isinstance(m, dict):
                raise ValueError(f"metric {name!r} is not a table")
            # Its degrees of freedom are its sessions less one, never more: a forged df would
            # make the calibration look better known than it is.
            if m.get("df") != sessions - 1 or isinstance(m.get("df"), bool):
                raise ValueError(f"metric {name!r}: df {m.get('df')!r} is not sessions - 1")
            # On the log scale a standard deviation of 5 is a factor of 150: not a machine's
            # noise, a forged or broken file.
            found[str(name)] = MetricNoise(_number(m, "session_var", hi=25),
                                           _number(m, "median_var", hi=25),
                                           _number(m, "sigma_within", hi=5),
                                           _number(m, "runs", 1), sessions - 1)
        return NoiseProfile(
            key={k: key[k] for k in KEY_FIELDS}, sessions=sessions, metrics=found,
            session_cost_s=_number(doc, "session_cost_s"), run_cost_s=_number(doc, "run_cost_s"),
            cost_measured=bool(doc.get("cost_measured")), created=str(doc.get("created", "")),
            hotloop=str(doc.get("hotloop", "")),
            kernels=[str(k) for k in doc.get("kernels") or [] if isinstance(k, str)],
            files=[str(f) for f in doc.get("files") or [] if isinstance(f, str)],
            digests=[d for d in doc.get("digests") or []
                     if isinstance(d, str) and re.fullmatch(r"[0-9a-f]{64}", d)],
            boots=_boots(doc.get("boots"), sessions),
            times=_boots(doc.get("times"), sessions),
            path=str(path))
    except FileNotFoundError:
        raise NoiseError(f"{path}: no such noise profile") from None
    except (OSError, UnicodeDecodeError) as e:
        raise NoiseError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    except (ValueError, TypeError, AttributeError) as e:
        raise NoiseError(f"{path}: not a usable noise profile: {e}") from None


def _boots(raw: Any, sessions: int) -> list[str]:
    """A profile's boots, one a session: anything else (missing, forged, of another length)
    is no knowledge, and unknown boots are never taken as across reboots."""
    if not isinstance(raw, list) or len(raw) != sessions:
        return []
    if not all(isinstance(b, str) and len(b) <= 200 and b.isprintable() for b in raw):
        return []
    return list(raw)


def _untrusted(path: Path) -> str | None:
    """Why a stored profile may not be trusted: it decides verdicts, so like the restore
    journal it must be this user's, in directories nobody else may write, and no symlink."""
    for d in (state_dir(), directory()):
        problem = state_dir_problem(d)
        if problem:
            return problem
    try:
        st = path.lstat()
    except OSError as e:
        return f"{path}: {e.strerror}"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return f"{path} belongs to another user or others may write to it"
    return None


def find(header: Header, explicit: Path | None = None
         ) -> tuple[NoiseProfile | None, list[NoiseProfileIgnored]]:
    """The noise profile for results with this header, and warnings about the ones ignored.

    `explicit` (compare --noise FILE) is used only if it matches the results; a stored
    profile is looked up by the header's key.  Never raises for a bad file: it is ignored
    with a warning, and the comparison goes on without it."""
    key = key_of(header)
    path = explicit if explicit is not None else path_for(key)
    if explicit is None and not path.exists() and not path.is_symlink():
        return None, []
    problem = _untrusted(path) if explicit is None else None
    if problem:
        return None, [NoiseProfileIgnored(path=str(path), reason=problem)]
    try:
        profile = load(path)
    except NoiseError as e:
        if explicit is not None:        # named by the user: a typo must not change verdicts
            raise HotloopError(f"--noise {e}") from None
        return None, [NoiseProfileIgnored(path=str(path), reason=str(e))]
    theirs = profile.key
    for name in KEY_FIELDS:
        if theirs.get(name) != key.get(name):
            return None, [NoiseProfileIgnored(
                path=str(path), reason=f"{path} was measured for {name} {theirs.get(name)!r}, "
                                       f"these results have {key.get(name)!r}")]
    return profile, []


def stored() -> list[tuple[Path, NoiseProfile | None, str]]:
    """Every stored profile: (path, profile or None, why it cannot be used)."""
    out: list[tuple[Path, NoiseProfile | None, str]] = []
    d = directory()
    if not d.is_dir():
        return out
    for path in sorted(d.glob("*.json")):
        try:
            out.append((path, load(path), ""))
        except NoiseError as e:
            out.append((path, None, str(e)))
    return out


# --------------------------------------------------------------------------- estimation

def metric_noise(sessions: Sequence[Sequence[float]]) -> MetricNoise:
    """The variance components of one metric from its values in A/A sessions (all > 0)."""
    from hotloop.analysis import significance
    from hotloop.analysis.significance import np  # numpy, once its room is checked
    ests = [significance.session_estimate(g, log=True) for g in sessions]
    session_var, df = significance.centre_variance([ests])
    # The run count the median variance was measured at: a median's variance goes as 1/n,
    # so the mean of the sessions' variances is that of their harmonic mean of runs (the
    # arithmetic mean of 10 and 1000 runs, 505, would make `at` shrink it for 200 runs).
    runs = len(ests) / sum(1 / e.n for e in ests)
    return MetricNoise(session_var, float(np.mean([e.var for e in ests])),
                       significance.within_spread(sessions, log=True), float(runs), df)


def estimate(sessions: Sequence[Result], session_cost_s: float | None = None,
             run_cost_s: float | None = None) -> NoiseProfile:
    """Variance components of every metric from A/A sessions of one benchmark.

    Without measured costs (sessions given as files), a run costs its measured time and a
    session start is assumed to cost ASSUMED_SESSION_COST_S."""
    from hotloop.analysis import (
        boots,
        significance,  # numpy and scipy: only when calibrating
    )
    if len(sessions) < MIN_SESSIONS:
        raise HotloopError(f"calibrate: {len(sessions)} session"
                           f"{'' if len(sessions) == 1 else 's'}; a calibration needs at least "
                           f"{MIN_SESSIONS}: fewer give a session variance too uncertain to "
                           f"trust")
    key = key_of(sessions[0].header)
    for r in sessions[1:]:
        other = key_of(r.header)
        for name in KEY_FIELDS:
            if other[name] != key[name]:
                raise HotloopError(f"{r.path}: {name} {other[name]!r} differs from "
                                   f"{sessions[0].path}'s {key[name]!r}: a calibration needs "
                                   f"sessions of one benchmark")
    for r in sessions:
        if len(r.runs) < MIN_RUNS:
            raise HotloopError(f"{r.path}: {len(r.runs)} runs; a calibration session needs at "
                               f"least {MIN_RUNS}")
    every = [metrics.metric_values(r) for r in sessions]
    found: dict[str, MetricNoise] = {}
    skipped: dict[str, str] = {}
    for name in every[0]:
        if not all(name in s for s in every):
            skipped[name] = "not in every session"
            continue
        groups = [s[name].values for s in every]
        if significance.positive(*groups):  # a metric that can be 0 has no log scale to share
            found[name] = metric_noise(groups)
        else:
            skipped[name] = "a value of 0 in some run: no log scale to calibrate it on"
    if not found:
        raise HotloopError("calibrate: no metric with positive values in every session")
    measured = session_cost_s is not None and run_cost_s is not None
    if run_cost_s is None:
        per_run = sorted(sum(x.ns for x in r.runs) / len(r.runs) / 1e9 for r in sessions)
        run_cost_s = per_run[len(per_run) // 2]
    return NoiseProfile(
        key=key, sessions=len(sessions), metrics=found,
        session_cost_s=float(session_cost_s if session_cost_s is not None
                             else ASSUMED_SESSION_COST_S),
        run_cost_s=float(run_cost_s), cost_measured=measured,
        created=time.strftime("%Y-%m-%dT%H:%M:%S%z"), hotloop=__version__,
        kernels=sorted({r.header.kernel_release for r in sessions}),
        files=[str(r.path) for r in sessions], digests=[r.digest for r in sessions if r.digest],
        boots=[boots.boot_of(r) for r in sessions],
        times=[r.header.time for r in sessions], skipped=skipped)


# --------------------------------------------------------------------------- planning

@dataclass(frozen=True)
class Repetitions:
    """The cheapest design a side that detects `change_pct` with at least 80% power (with
    90% assurance: planned on the calibration's upper bound), or None."""
    change_pct: float
    sessions: int | None
    runs: int | None
    cost_s: float | None                # per side


def repetitions(m: MetricNoise, session_cost_s: float, run_cost_s: float, change_pct: float,
                calibration_df: int) -> Repetitions:
    """Kalibera-Jones repetition counts by search: for each runs-per-session, the fewest
    sessions a side whose comparison (with this calibration pooled in, as compare does)
    reaches 80% power (noncentral t); the cheapest of those.  Planned on the calibration's
    90% upper bound: a calibration from few sessions may have come out low, so the design
    has at least 80% power with 90% assurance."""
    from hotloop.analysis.significance import detectable_pct
    best: Repetitions = Repetitions(change_pct, None, None, None)
    bound = m.upper()
    for n in RUN_CHOICES:
        tau2 = m.at(n, bound)
        for k in range(1, MAX_SESSIONS + 1):
            df = 2 * k - 2 + calibration_df
            if detectable_pct(tau2, k, df) <= change_pct:
                cost = k * (session_cost_s + n * run_cost_s)
                if best.cost_s is None or cost < best.cost_s:
                    best = Repetitions(change_pct, k, n, cost)
                break
    return best
