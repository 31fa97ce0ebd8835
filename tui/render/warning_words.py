"""A comparison's warnings (analysis.compare_warnings) in words: the one sentence each code
says in every format, the console's advice (the command on a line of its own), which of
them a mail keeps, and a warning as JSON holds it (its code, facts, command and sentence).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import singledispatch
from typing import Any, TypeVar

from hotloop.analysis import compare_warnings as cw
from hotloop.analysis import noise
from hotloop.analysis.comparison import meta_text
from hotloop.visible import visible

W = TypeVar("W", bound=cw.CompareWarning)

# What a reviewer must know of the sides, beside the change: a mail keeps these.
ABOUT_THE_SIDES = frozenset({cw.DiffersBeyondKernel.code, cw.SessionsDiffer.code,
                             cw.PerfDiffers.code, cw.MixedBuilds.code})


def _s(n: int, word: str = "session") -> str:
    return f"{n} {word}{'s' * (n != 1)}"


@singledispatch
def words(w: cw.CompareWarning) -> str:
    """The warning's sentence, as every format prints it."""
    raise TypeError(f"no words for the warning {w.code!r}")


def _said(kind: type[W]) -> Callable[[Callable[[W], str]], Callable[[W], str]]:
    """Register `words` for one kind (typed: mypy checks each wording against its record)."""
    def register(f: Callable[[W], str]) -> Callable[[W], str]:
        words.register(kind)(f)
        return f
    return register


@_said(cw.Copies)
def _copies(w: cw.Copies) -> str:
    more = f" and {w.more} more" if w.more else ""
    return (f"{w.given}: {w.copy} is a copy of {w.original} (the same content){more}: "
            f"each session counted once, {w.sessions} sessions")


@_said(cw.Emulated)
def _emulated(w: cw.Emulated) -> str:
    return (f"no usable KVM ({w.why}): the sessions ran in emulated guests; their numbers do "
            f"not measure this CPU")


@_said(cw.BootsUnknown)
def _boots_unknown(w: cw.BootsUnknown) -> str:
    n = w.sessions
    return (f"{n} session{'s do' if n != 1 else ' does'} not say which boot "
            f"{'they' if n != 1 else 'it'} ran in (result files before format 3): taken as "
            f"possibly from another boot than the other side's, so one session a side cannot "
            f"be called without a calibration across reboots; run them again with this "
            f"hotloop to record their boots")


@_said(cw.Partial)
def _partial(w: cw.Partial) -> str:
    return f"{w.side} ({w.file}) is partial, {w.runs} runs: {w.reason}"


@_said(cw.Unstable)
def _unstable(w: cw.Unstable) -> str:
    if w.pinned:        # pinned already (advising that again told the user nothing)
        cpus = ",".join(map(str, w.pinned))
        quieter = (f"the runs were pinned to cpus {cpus}: keep other work off them, e.g. "
                   f"isolcpus={cpus} nohz_full={cpus} on the kernel command line")
    else:
        quieter = "a CPU profile that pins the workload"
    n = w.sessions
    return (f"{_s(n)} of {w.side} var{'y' if n != 1 else 'ies'} by CV {w.cv_pct:.0f}% within "
            f"a session (above {w.limit_pct:.0f}%): result may be unstable; quieten the "
            f"machine ({w.command} says what it allows; {quieter}; run --apply-system), or "
            f"run more runs and sessions")


@_said(cw.CpuShareLow)
def _cpu_share(w: cw.CpuShareLow) -> str:
    return (f"the worker of {w.side} had {w.share_pct:.0f}% of a CPU over its runs (CPU time "
            f"{w.cpu_ns:.4g} ns/op, wall {w.wall_ns:.4g} ns/op): the rest it waited, for a "
            f"CPU another task held (a busy machine) or on its own I/O, and the wall-clock "
            f"rows hold that wait; --metric {w.metric} judges its CPU time per op instead")


@_said(cw.DiffersBeyondKernel)
def _differs(w: cw.DiffersBeyondKernel) -> str:
    return (f"{w.side} differs from the baseline in more than the kernel: "
            + "; ".join(map(meta_text, w.differences)))


@_said(cw.SessionsDiffer)
def _sessions_differ(w: cw.SessionsDiffer) -> str:
    return f"the sessions of {w.side} differ among themselves in {', '.join(w.fields)}"


@_said(cw.MixedBuilds)
def _builds(w: cw.MixedBuilds) -> str:
    def one(b: cw.Build) -> str:
        files = ", ".join(b.files[:3]) + (f" and {len(b.files) - 3} more"
                                          if len(b.files) > 3 else "")
        return f"source {b.source[:12] or '?'} in {files}"
    return visible(f"the sessions of {w.side} ran {len(w.builds)} builds of the workload "
                   f"(they differ in {'; '.join(w.kinds)}): "
                   f"{'; '.join(one(b) for b in w.builds)}; pooled as one side they measure "
                   f"different code: compare each build's sessions on their own")


@_said(cw.PerfNotStarted)
def _perf_not_started(w: cw.PerfNotStarted) -> str:
    return (f"{w.sessions} of {_s(w.of)} of side {w.side}: perf was asked for but did not "
            f"start ({w.why}{', and other reasons' if w.other_reasons else ''}): no symbol "
            f"diff with this side")


@_said(cw.NoHotSymbols)
def _no_symbols(w: cw.NoHotSymbols) -> str:
    return (f"{w.sessions} of {_s(w.of)} of side {w.side} "
            f"{'has' if w.sessions == 1 else 'have'} no hot symbols (perf did not run or "
            f"failed): no symbol diff with this side")


@_said(cw.PerfDiffers)
def _perf_differs(w: cw.PerfDiffers) -> str:
    states = ["on" if s.on == s.sessions else "off" if not s.on else
              f"on in {s.on} of {s.sessions} sessions" for s in w.sides]
    whose = "one side's" if len(w.sides) == 2 and set(states) == {"on", "off"} else \
        "some sessions'"
    return ("sides differ in perf: "
            + ", ".join(f"{st} {'of' if ' ' in st else 'in'} {s.side}"
                        for st, s in zip(states, w.sides))
            + f": perf's overhead is in {whose} numbers only")


@_said(cw.NoiseProfileIgnored)
def _ignored(w: cw.NoiseProfileIgnored) -> str:
    return f"noise profile ignored: {w.reason}"


@_said(cw.NoiseProfileOfCompared)
def _of_compared(w: cw.NoiseProfileOfCompared) -> str:
    return (f"noise profile not used: {w.path} was measured from sessions compared here; "
            f"calibrate from other A/A sessions")


def _rule(offset_pct: float, per_within: float) -> str:
    return f"the larger of {offset_pct:g}% a session and {per_within:g} times the runs' own spread"


@_said(cw.NoNoiseProfile)
def _no_profile(w: cw.NoNoiseProfile) -> str:
    # the variants of one batch: interleaving them is the cheap way to a verdict
    other = "run the variants with --interleave" if w.batch else "run two sessions a side or more"
    # the figure assumed is each row's (its noise_pct) and the header's: not said again
    return (f"no {'usable ' if w.ignored else ''}noise profile for {noise.describe_key(w.key)}: "
            f"with one session a side nothing measured how much sessions differ, so the "
            f"interval is what the largest plausible offset allows "
            f"({_rule(w.offset_pct, w.per_within)}: a doubling or a halving) and only a "
            f"change beyond it gets a verdict; {other}, or measure this machine's: {w.command}")


@_said(cw.ProfileLacks)
def _lacks(w: cw.ProfileLacks) -> str:
    return (f"the noise profile has no figure for {', '.join(w.metrics)} (values not all "
            f"above 0): with one session a side only a change beyond the largest plausible "
            f"offset ({_rule(w.offset_pct, w.per_within)}) gets a verdict")


@_said(cw.CalibrationBySitting)
def _by_sitting(w: cw.CalibrationBySitting) -> str:
    return ("one session a side: nothing here can check the calibration against these "
            "sessions; it is used because it was measured in their boot and sitting (within "
            f"{w.hours:g} hour of them), so the verdict holds if the machine stayed as it was "
            "then")


@_said(cw.CalibrationOneBoot)
def _one_boot(w: cw.CalibrationOneBoot) -> str:
    return (f"{w.side}: noise profile not used (its {w.sessions} sessions: {w.spread}): "
            f"{w.side} and {w.baseline} ran in different boots ({w.relation}), and a "
            f"calibration measures a reboot only from sessions of one boot each; calibrate "
            f"from A/A sessions one a boot: {w.command}")


@_said(cw.CalibrationUnchecked)
def _unchecked(w: cw.CalibrationUnchecked) -> str:
    return (f"{w.side}: noise profile not used ({w.reason}); run 2+ sessions a side, whose own "
            f"spread checks it")


@_said(cw.CalibrationDropped)
def _dropped(w: cw.CalibrationDropped) -> str:
    return (f"{w.side}: calibration dropped for {w.metric}: the sessions compared vary by "
            f"{w.measured_pct:.2f}% from one to the next, the calibration says "
            f"{w.calibrated_pct:.2f}% (F test, p {w.p:.3f}); compared on the sessions' own "
            f"noise. Calibrate the way you compare (across reboots: {w.command})")


@_said(cw.LoudCalibration)
def _loud(w: cw.LoudCalibration) -> str:
    return (f"{w.side}: {w.metric}: the calibration ({noise.age_words(w.created, w.days)}) "
            f"says it varies by {w.calibrated_pct:.2f}% from one session to the next, these "
            f"sessions by {w.measured_pct:.2f}% (F test, p {w.p:.3f}): taken on a busier "
            f"machine, it widens the interval; calibrate again on a machine as quiet as this "
            f"one")


@_said(cw.CannotCallAcrossBoots)
def _across_boots(w: cw.CannotCallAcrossBoots) -> str:
    maybe = "possibly " if w.possibly else ""
    what = (f"one session a side, from {maybe}different boots"
            if w.sessions_baseline == w.sessions_new == 1 else
            f"one boot a side ({w.sessions_baseline} and {w.sessions_new} sessions): "
            f"sessions of one boot are not replicates of a reboot")
    return (f"{w.side}: cannot call: {what}, and nothing measured how much a reboot moves "
            f"{w.metric}; run sessions in several boots a side (a reboot between, or a VM "
            f"booted for each), or calibrate across reboots (A/A sessions one a boot: "
            f"{w.command})")


@_said(cw.TooFewProcesses)
def _few_processes(w: cw.TooFewProcesses) -> str:
    return (f"{w.side} and {w.baseline} ran in fewer than {w.least} worker processes each: a "
            f"process's own offset (its memory layout, its CPU) cannot be told from a change; "
            f"interleave with --processes 5 (the default)")


def _left(unmatched: tuple[int, ...]) -> str:
    return ", ".join(f"s{n:02d}" for n in unmatched)


@_said(cw.PairsTooFew)
def _too_few_pairs(w: cw.PairsTooFew) -> str:
    alone = f"; {_left(w.unmatched)} without its pair" if w.unmatched else ""
    return (f"{w.side} vs {w.baseline}: {w.pairs} complete pairs of the series' sessions (the "
            f"paired test needs {w.needed}{alone}): compared unpaired")


@_said(cw.PairsIncomplete)
def _incomplete(w: cw.PairsIncomplete) -> str:
    return (f"{w.side} vs {w.baseline}: paired on {w.pairs} complete pairs of the series' "
            f"sessions ({_left(w.unmatched)} without its pair, left out)")


@_said(cw.VariantUnmatched)
def _unmatched(w: cw.VariantUnmatched) -> str:
    return f"{visible(w.variant)} only in {visible(w.side)}: left out"


def advice(w: cw.CompareWarning) -> str:
    """The console's words: a command to run after a colon on lines of its own, whole (a
    wrapped line in mid-sentence is hard to pick out, let alone copy)."""
    text = words(w)
    if w.command is None:
        return text
    # the last: a side's name (from a file) saying the same comes before it
    said, sep, rest = text.rpartition(f": {w.command}")
    return f"{said}:\n    {w.command}{rest}" if sep else text


def about_the_sides(w: cw.CompareWarning) -> bool:
    """What a reviewer must know beside the change: that the sides differ in more than it."""
    return w.code in ABOUT_THE_SIDES


def document(w: cw.CompareWarning, **more: Any) -> dict[str, Any]:
    """A warning as JSON carries it: its code, its sentence, its command, its facts."""
    return {"code": w.code, "text": words(w), "command": w.command, "facts": w.facts(), **more}

