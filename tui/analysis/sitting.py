"""Whether a calibration can be trusted where the data cannot check it: one session (one
replicate) a side.

With two or more sessions a side the sides' own session variance checks the calibration (an
F test, analysis.significance.noise_check).  With one a side nothing can: a calibration taken
when the machine was quieter than when the sessions ran was trusted all the same, and called
76% of A/A pairs (calibrated with no session noise, sessions 4% apart, one boot).  So there a
calibration counts only when it was measured alongside the compared sessions: in the same
boot and sitting (every compared session started within SITTING_S of its sessions' span), where
it saw the noise they had.  Otherwise it is not used, and the row is judged as with none.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from hotloop.analysis import boots as boots_mod
from hotloop.analysis.noise import NoiseProfile
from hotloop.results import Result

SITTING_S = 3600.0              # a compared session this close to the calibration's sessions


def _when(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z")
    except (TypeError, ValueError):
        return None


def why_not(profile: NoiseProfile, sessions: Sequence[Result]) -> str | None:
    """Why `profile` cannot stand in for the unchecked session noise of these sessions (one
    a side); None when it was measured in their boot and sitting."""
    here = {boots_mod.boot_of(r) for r in sessions}
    if len(here) != 1 or "" in here:
        return ("one session a side cannot check it, and these sessions do not share one "
                "known boot")
    if set(profile.boots) != here:
        return ("one session a side cannot check it, and it was not measured in this boot "
                "(calibrate in the boot these sessions ran in, next to them)")
    cal = [t for t in map(_when, profile.times) if t is not None]
    ran = [t for t in (_when(r.header.time) for r in sessions) if t is not None]
    if not cal or len(cal) < len(profile.times) or len(ran) < len(sessions):
        return ("one session a side cannot check it, and its sessions' times are not "
                "recorded (calibrate again with this hotloop)")
    slack = timedelta(seconds=SITTING_S)
    lo, hi = min(cal) - slack, max(cal) + slack
    if not all(lo <= t <= hi for t in ran):
        return (f"one session a side cannot check it, and it was measured more than "
                f"{SITTING_S / 3600:g} hour from these sessions (another sitting)")
    return None
