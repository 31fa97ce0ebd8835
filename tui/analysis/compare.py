"""Compare results: baseline (the first side) against each later side.

A side is one result file, a directory (every result file in it is one session of that side) or
several files joined by commas: the sessions of one kernel, say.  For every metric the files
recorded (the workload's primary metric, ns/op, cycles/op where the CPU counted cycles, each
`extra` value such as user_s, sys_s or latency percentiles, and perf counters) a comparison row
holds the two sides' centres, the difference, the % change, a 95% confidence interval of it, a
p-value and a verdict, from the method that fits how the runs were taken (hotloop.analysis.significance):

* separate sessions (the usual case: stock and patched kernels with a reboot between): the
  session is the unit of replication; the session-to-session noise comes from the sides' own
  sessions and from this machine's noise profile (`hotloop calibrate`), found by the files'
  headers or given with `--noise FILE`.  With one session a side and no profile nothing
  measured that noise: the interval is what the largest plausible offset of a session allows
  (`significance.offset_bound`), and only a change beyond it is called (see Decisions).
* the variants of one interleaved batch (one session a side, ABAB...): a paired test on the
  rounds, which removes the drift the rounds share.

Around that: which header fields other than the kernel differ (apples vs oranges), the primary
metric's distributions on shared bucket edges (a side's sessions pooled) and the perf symbol
diff (a side's sessions pooled).

Decisions (documented here because every format shows their outcome):

* `change_pct` is the relative change of the sides' centres, ``(new / baseline - 1) * 100``: a
  positive number means the metric went up, whatever the metric.  Whether up is good is what
  the verdict says, following the metric's direction (`higher_is_better`).  A side's centre is
  its session's median, or with several sessions the geometric mean of their medians (each
  session counts once, however many runs it has).
* A verdict is a `Verdict` and the Test's numbers; render.verdicts words it.  A change is
  called (GOOD/BAD, or UP/DOWN for a metric with no good way) only when the 95% interval of the
  change clears 0, and its direction is the interval's, in every mode (a paired test's medians
  are not its estimate).  When the interval holds 0: WITHIN_NOISE for separate sessions (the
  interval's half width is the change that noise alone can make), NO_CHANGE for paired rounds.
  TOO_FEW_RUNS when a session has fewer than 5 runs, TOO_FEW_ROUNDS for fewer than 6 paired
  rounds, TOO_FEW_PROCESSES for interleaved variants that ran in fewer than 3 worker processes
  each.
* Many sides, many rows: the primary metric's rows (one per later side) are corrected
  together for the number of sides (Holm: `correct_sides`); a side called alone but not
  after it is NOT_AFTER_CORRECTION, with no direction word, and every corrected row's
  interval is the Holm-adjusted one (at the level its adjusted p was judged at, so it clears
  0 exactly when called; its own is kept as ci_low_alone, ci_high_alone).  Every other row
  is exploratory (not corrected), and every format says so.  `gate` (compare --fail-on)
  reads the corrected primary rows only.
* An interval that holds 0 and is wider than TOO_NOISY_PCT either way is TOO_NOISY ("too
  noisy to call"), not WITHIN_NOISE: no change anyone looks for could be told there.
* Across boots the boot is the replicate (`analysis.boots`): a boot's sessions are averaged
  into one, and with one boot a side and nothing that measured a reboot (no second boot, no
  calibration of one session a boot) the interval is the offset bound's (below) and a change
  within it is ACROSS_BOOTS ("cannot call").  A calibration within one boot is used within
  one boot only.
* Where nothing measured how much sessions (or boots) differ (one session a side, or one
  boot a side, and no calibration), the interval assumes the largest plausible offset:
  `stats.SESSION_OFFSET_BOUND`, 25% a session (or twice the runs' spread, if larger), a
  doubling or a halving between two sessions at 95%.  A change beyond it is called (GOOD,
  BAD...), worded with the bound it beat ("faster: beyond any session's offset (up to 25%
  a session)"); one within it gets no verdict (ONE_A_SIDE within one boot, ACROSS_BOOTS
  across a reboot) and no direction word.  Chosen by simulation through this code
  (benchmarks/sensitivity.py --bound): A/A 2.2% for sessions 20% apart, 4.3% at 25%, while
  sessions here differed by at most 17%; +700% called always, +100% in 49%.  The bound's
  interval and p are the row's: word, `significant`, interval and p tell one story.  (A
  smaller assumed noise, 3%, gave "faster?" on 30-72% of A/A pairs 6-20% apart.)
* No direction word without a call: "faster?" was read as a weak yes.
* A calibration at one replicate a side (nothing in the data can check it: a quieter one
  called 76% of A/A pairs) is used only when measured in the compared sessions' boot and
  sitting (`analysis.sitting`); otherwise not at all (the row as with none, `calibration`
  says why).  Every verdict on a calibration says whether the data checked it.
* The gate (compare --fail-on) fails closed: a primary row not judged (`Verdict.judged`
  false: too noisy, too few runs, no verdict on one session or boot a side) exits 4 unless
  --pass-unjudged; a found change exits 3 first.
* A session is its content (`Result.digest`): copies count once (`distinct`).
* perf counters are one number per session: with one session a side and no calibration of
  them they are shown with their difference and % change but no test (NO_TEST); with several
  sessions a side they are tested like the rest.
* A partial result (a crash mid-run) is compared on the runs it holds and flagged.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from hotloop.analysis import boots as boots_mod
from hotloop.analysis import compare_warnings as cw
from hotloop.analysis import noise as noise_mod
from hotloop.analysis import series_pairs, sitting, symdiff
from hotloop.analysis.comparison import (
    Comparison,
    MetricDelta,
    Pair,
    Side,
    Verdict,
    meta_warning,
    metadata_diff,
)
from hotloop.analysis.judge import correct_sides, test_metric
from hotloop.analysis.metrics import metric_values
from hotloop.analysis.sides import (
    BUILD_FIELDS,
    check_accel,
    check_side,
    cpu_shares,
    distinct,
    hot_symbols,
    identity,
    interleaved_pair,
    load_sides,
    mixed_builds,
    primary_metric,
    shared_histogram,
    side_names,
    side_of,
)
from hotloop.analysis.significance import MIN_PROCESSES
from hotloop.analysis.symbols import diff_symbols
from hotloop.errors import HotloopError
from hotloop.record import Header
from hotloop.results import Result
from hotloop.stats import ASSUMED_PER_WITHIN, SESSION_OFFSET_BOUND

TOP_SYMBOLS = 15
UNSTABLE_CV = 0.10                      # a session's runs above this CV: pyperf's "unstable"


def _calibrate_hint(h: Header) -> str:
    """The command that measures the session noise these results need."""
    key = noise_mod.key_of(h)
    parts = ["hotloop calibrate", key["workload"] or "PLAN"]
    parts += [f"--param {k}={v}" for k, v in key["params"].items()]
    if key["cpu"]:
        parts.append(f"--cpu {key['cpu']}")
    parts.append("--perf" if key["perf"] else "--no-perf")
    return " ".join(parts + ["--sessions 8"])


def designed(sides: Sequence[Sequence[Result]]) -> bool:
    """The sides are the variants of one series (a param, a CPU profile, plans; an A/A's
    twins), not its kernels, as its headers' batch says (format 5; never older files)."""
    batches = [r.header.batch for rs in sides for r in rs]
    return all(b is not None and not b.interleaved and len(b.sides) > 1
               and b.differs != ("kernel",) for b in batches) \
        and len({b.id for b in batches if b is not None}) == 1


def compare_sides(sides: Sequence[Sequence[Result]], given: Sequence[str] | None = None,
                  noise_file: Path | None = None, batch: bool | None = None,
                  pair_sessions: bool = True, primary: str | None = None) -> Comparison:
    """Compare every side with the first (the baseline); HotloopError for what cannot be.
    `batch`: the sides are designed variants (None: as their headers say, `designed`);
    `pair_sessions`: the kernels of one series tested on their pairs of sessions
    (analysis.series_pairs); `primary`: the metric judged (the workload's; --metric)."""
    if not sides or not all(sides):
        raise HotloopError("compare: no result files given")
    given = list(given) if given is not None else [str(rs[0].path) if len(rs) == 1 else
                                                  ",".join(str(r.path) for r in rs)
                                                  for rs in sides]
    sides, copied = _checked(sides, given)
    if batch is None:
        batch = designed(sides)
    base = sides[0][0]
    metric, unit, better = primary_metric(sides, primary)
    out = [side_of(i, n, rs, g, metric)
           for i, (n, rs, g) in enumerate(zip(side_names(sides, given), sides, given))]
    comp = Comparison(base.workload.name, metric, unit, better,
                      out, histogram=shared_histogram(sides, metric, unit))
    profile, notes = _profile(sides, noise_file)
    comp.noise = profile
    comp.warnings += [*copied, *notes, *_boot_warnings(sides)]
    assumed: list[str] = []             # metrics whose session noise nothing measured
    for side, rs in zip(out[1:], sides[1:]):
        pair, said = _pair(sides[0], rs, out[0], side, profile, pair_sessions, metric)
        comp.pairs.append(pair)
        comp.warnings += said
        # (a profile not used for the pair is said by the pair's own warning)
        assumed += [m.metric for m in pair.metrics
                    if m.test.noise_source == "assumed" and m.metric not in assumed
                    and m.test.calibration is None]
    _correct(comp)
    comp.warnings += _noise_warnings(comp, base.header, profile, notes, assumed, batch)
    comp.warnings += [*_session_warnings(sides, out), *_perf_warnings(sides, out),
                      *cpu_shares(sides, out)]
    # the variants of one interleaved batch (their headers say so) differ by design too
    comp.batch = batch or bool(comp.pairs) and all(p.method == "paired" for p in comp.pairs)
    if not comp.batch:
        comp.warnings += [meta_warning(p) for p in comp.pairs if p.metadata]
    for rs, s in zip(sides, out):
        if builds := mixed_builds(rs, s.name):      # said apart
            comp.warnings.append(builds)
        inside = sorted({d.field for r in rs[1:]
                         for d in metadata_diff(rs[0].header.to_json(), r.header.to_json(),
                                                kernel=True)
                         if d.field not in ("hotloop", *(BUILD_FIELDS if builds else ()))})
        if inside:
            comp.warnings.append(cw.SessionsDiffer(side=s.name, fields=tuple(inside)))
    return comp


def _checked(sides: Sequence[Sequence[Result]],
             given: Sequence[str]) -> tuple[list[list[Result]], list[cw.Copies]]:
    """The sides, each session once, checked to be comparable (HotloopError if not), and the
    warnings naming the copies left out."""
    copied: list[cw.Copies] = []
    unique = []
    for rs, g in zip(sides, given):
        kept, note = distinct(rs, g)
        unique.append(kept)
        copied += [note] if note else []
    for rs, g in zip(unique, given):
        check_side(rs, g)
        for r in rs:
            if not r.runs:
                what = "the baseline has" if rs is unique[0] else "has"
                raise HotloopError(f"{r.path}: {what} no recorded runs, nothing to compare")
    # A session (by its content: a copy is the same session) belongs to one side; a side
    # against itself, or against copies of itself, is fine (exactly no change).
    def ident(r: Result) -> str:
        return r.digest or str(r.path.resolve())
    owner: dict[str, int] = {}
    for i, rs in enumerate(unique):
        for r in rs:
            j = owner.setdefault(ident(r), i)
            if j != i and {ident(p) for p in unique[j]} != {ident(p) for p in rs}:
                raise HotloopError(f"{r.path}: in two sides ({given[j]} and {given[i]}); a "
                                   f"session belongs to one side (a side against itself is "
                                   f"fine)")
    base = unique[0][0]
    wname, metric, _ = identity(base)
    for rs in unique[1:]:
        other, other_metric, _ = identity(rs[0])
        if other != wname:
            raise HotloopError(f"{rs[0].path}: workload {other!r} cannot be compared with the "
                               f"baseline's {wname!r} ({base.path})")
        if other_metric != metric:
            raise HotloopError(f"{rs[0].path}: metric {other_metric!r} cannot be compared with the "
                               f"baseline's {metric!r} ({base.path})")
    check_accel([r for rs in unique for r in rs])
    return unique, copied


def _profile(sides: Sequence[Sequence[Result]],
             noise_file: Path | None
             ) -> tuple[noise_mod.NoiseProfile | None, list[cw.CompareWarning]]:
    """The noise profile for the baseline's header (or `noise_file`), unless it was measured
    from sessions compared here; and the notes on why none was found or used."""
    profile, ignored = noise_mod.find(sides[0][0].header, noise_file)
    notes: list[cw.CompareWarning] = [*ignored]
    compared = {r.path.resolve() for rs in sides for r in rs}
    digests = {r.digest for rs in sides for r in rs if r.digest}
    if profile is not None and (compared & {Path(f).resolve() for f in profile.files}
                                or digests & set(profile.digests)):
        # Its sessions would count twice: once as the calibration, once as the data.
        notes.append(cw.NoiseProfileOfCompared(path=profile.path))
        profile = None
    return profile, notes


def _boot_warnings(sides: Sequence[Sequence[Result]]) -> list[cw.CompareWarning]:
    """Sessions in emulated guests, and sessions that do not say their boot."""
    out: list[cw.CompareWarning] = []
    tcg = next((r for rs in sides for r in rs if r.header.vm is not None), None)
    if tcg is not None and tcg.header.vm is not None and tcg.header.vm.accel == "tcg":
        why = tcg.header.vm.why_not_kvm or "KVM not used"
        out.append(cw.Emulated(why=why))
    unknown = sum(not boots_mod.boot_of(r) for rs in sides for r in rs)
    if unknown and len(sides) > 1:
        out.append(cw.BootsUnknown(sessions=unknown))
    return out


def _pair(base: Sequence[Result], rs: Sequence[Result], baseline: Side, side: Side,
          profile: noise_mod.NoiseProfile | None,
          pair_sessions: bool, primary: str) -> tuple[Pair, list[cw.CompareWarning]]:
    """One later side against the baseline: its rows, and the warnings they call for."""
    said: list[cw.CompareWarning] = []
    paired = interleaved_pair(base, rs)
    boots = boots_mod.of_sides(base, rs)
    # A calibration stands in for the sides' own replicates only if it measured what
    # they differ by: taken within one boot, it measured no reboot.
    spread = profile.boot_spread if profile is not None else ""
    unfit = (f"its {profile.sessions} sessions: {spread}" if profile is not None
             and not boots_mod.calibration_fits(boots, spread) else None)
    if unfit and profile is not None:
        said.append(cw.CalibrationOneBoot(side=side.name, baseline=baseline.name,
                                          sessions=profile.sessions, spread=spread,
                                          relation=boots.relation))
    found = series_pairs.pairs(base, rs) if pair_sessions and paired is None else None
    if found is not None and (found.unmatched or not found.usable):
        said.append(found.warning(baseline.name, side.name))
    by_pairs = found.index if found is not None and found.usable else None
    # One replicate a side: nothing in the data can check the calibration, so it counts
    # only from these sessions' boot and sitting (analysis.sitting).
    lone = paired is None and by_pairs is None and boots.count() == (1, 1)
    unchecked = sitting.why_not(profile, [*base, *rs]) \
        if lone and profile is not None and not unfit else None
    if unchecked:
        said.append(cw.CalibrationUnchecked(side=side.name, reason=unchecked))
    base_values = [metric_values(r) for r in base]
    new_values = [metric_values(r) for r in rs]
    rows = []
    for name, m in base_values[0].items():
        if not all(name in x for x in base_values + new_values):
            continue
        calibrated = profile.metrics.get(name) if profile and not (unfit or unchecked) \
            else None
        t = test_metric([x[name] for x in base_values], [x[name] for x in new_values],
                        paired=paired, calibrated=calibrated,
                        boots=None if paired is not None else boots, pairs=by_pairs)
        if unfit or unchecked:
            t = dataclasses.replace(t, calibration=f"not used: {unfit or unchecked}")
        elif t.noise_check and t.noise_check["action"] == "unchecked":
            # not checked by the data, but measured in this boot and sitting
            t = dataclasses.replace(t, noise_check={**t.noise_check, "action": "sitting"})
        rows.append(MetricDelta(m.name, m.unit, m.higher_is_better, t, m.kind,
                                primary=m.name == primary))
    rows.sort(key=lambda row: not row.primary)      # the primary first (--metric moves it)
    said += _row_warnings(rows, baseline, side, boots, profile)
    diff = None
    bs, ns = hot_symbols(base), hot_symbols(rs)
    if bs and ns:       # the differential profile: analysis.symdiff
        diff = symdiff.differential(base, rs, boots=None if paired is not None else boots,
                                    pairs=by_pairs, shares=diff_symbols(list(bs), list(ns)))
    meta = metadata_diff(base[0].header.to_json(), rs[0].header.to_json())
    return Pair(baseline, side, rows, meta, diff.rows if diff else None,   # every row: the text views cut
                rows[0].test.method if rows else "sessions",
                explained=diff.explained if diff else None,
                symbol_note=diff.note if diff else "",
                symbols_tested=diff.tested if diff else 0), said


def _row_warnings(rows: Sequence[MetricDelta], baseline: Side, side: Side,
                  boots: boots_mod.Boots,
                  profile: noise_mod.NoiseProfile | None = None) -> list[cw.CompareWarning]:
    """What one pair's rows found that a row cannot say: a calibration dropped, no call
    across boots, too few worker processes."""
    said: list[cw.CompareWarning] = []
    check = rows[0].test.noise_check if rows else None
    if check and check["action"] == "dropped":
        said.append(cw.CalibrationDropped(side=side.name, metric=rows[0].metric,
                                          measured_pct=check["measured_pct"],
                                          calibrated_pct=check["calibrated_pct"],
                                          p=check["p"]))
    elif check and profile is not None and noise_mod.loud(check):
        said.append(cw.LoudCalibration(side=side.name, metric=rows[0].metric,
                                       created=profile.created,
                                       days=noise_mod.age_days(profile),
                                       calibrated_pct=check["calibrated_pct"],
                                       measured_pct=check["measured_pct"],
                                       p=check["p_quieter"]))
    first_row = next((r for r in rows if r.primary), None)
    if first_row is not None and first_row.test.verdict is Verdict.ACROSS_BOOTS:
        t = first_row.test
        said.append(cw.CannotCallAcrossBoots(side=side.name, metric=first_row.metric,
                                             possibly=boots.relation != boots_mod.ACROSS,
                                             sessions_baseline=t.sessions_baseline,
                                             sessions_new=t.sessions_new))
    if rows and rows[0].test.verdict is Verdict.TOO_FEW_PROCESSES:
        said.append(cw.TooFewProcesses(side=side.name, baseline=baseline.name,
                                       least=MIN_PROCESSES))
    return said


def _correct(comp: Comparison) -> None:
    """The primary metric's verdicts, corrected together for the number of sides."""
    firsts = [next((j for j, m in enumerate(p.metrics) if m.primary), None) for p in comp.pairs]
    at = [(p, j) for p, j in zip(comp.pairs, firsts) if j is not None]
    fixed = correct_sides([p.metrics[j].test for p, j in at])
    for (p, j), t in zip(at, fixed):
        p.metrics[j] = dataclasses.replace(p.metrics[j], test=t)


def _noise_warnings(comp: Comparison, header: Header, profile: noise_mod.NoiseProfile | None,
                    notes: Sequence[cw.CompareWarning], assumed: Sequence[str],
                    batch: bool) -> list[cw.CompareWarning]:
    """What the session noise the verdicts used cannot vouch for: a calibration nothing
    here checks, or a noise assumed for want of a measured one."""
    out: list[cw.CompareWarning] = []
    if any(m.primary and m.test.noise_check and m.test.noise_check["action"] == "sitting"
           for p in comp.pairs for m in p.metrics):
        out.append(cw.CalibrationBySitting(hours=sitting.SITTING_S / 3600))
    if assumed and profile is None:
        out.append(cw.NoNoiseProfile(key=noise_mod.key_of(header), ignored=bool(notes),
                                     batch=batch, offset_pct=100 * SESSION_OFFSET_BOUND,
                                     per_within=ASSUMED_PER_WITHIN,
                                     command=_calibrate_hint(header)))
    elif assumed:
        out.append(cw.ProfileLacks(metrics=tuple(assumed), offset_pct=100 * SESSION_OFFSET_BOUND,
                                   per_within=ASSUMED_PER_WITHIN))
    return out


def _pinned(rs: Sequence[Result]) -> tuple[int, ...]:
    """The CPUs a side's sessions were pinned to, () unless every one was pinned: what the
    CPU profile could still do for a noisy side is pin it, or once pinned (advising that
    again told the user nothing) keep other work off those CPUs."""
    if not all(r.header.cpu.cpus for r in rs):
        return ()
    return tuple(sorted({c for r in rs for c in r.header.cpu.cpus}))


def _session_warnings(sides: Sequence[Sequence[Result]],
                      out: Sequence[Side]) -> list[cw.CompareWarning]:
    """Sides whose sessions' runs vary too much to trust, and sides cut short."""
    said: list[cw.CompareWarning] = []
    for rs, s in zip(sides, out):
        shaky = [cv for r in rs if r.finished
                 for cv in [r.finished.summary.cv] if cv is not None and cv > UNSTABLE_CV]
        if shaky:
            said.append(cw.Unstable(side=s.name, sessions=len(shaky), cv_pct=100 * max(shaky),
                                    limit_pct=100 * UNSTABLE_CV, pinned=_pinned(rs)))
    for s in out:
        if s.partial:
            said.append(cw.Partial(side=s.name, file=s.file, runs=s.runs,
                                   reason=s.partial_reason))
    return said


def _perf_warnings(sides: Sequence[Sequence[Result]],
                   out: Sequence[Side]) -> list[cw.CompareWarning]:
    """Sessions without hot symbols where perf was asked for (it did not start, or its
    report failed: the symbol diff leaves their side out, silently otherwise), and sides
    whose headers differ in perf on/off: sampling costs time (a VM's sessions measured 3,208
    ns/op with perf on, 852 and 636 without), so that difference is in the numbers."""
    if not any(r.header.perf for rs in sides for r in rs):
        return []                           # perf asked for nowhere: nothing missing
    said: list[cw.CompareWarning] = []
    for rs, s in zip(sides, out):
        # the sessions whose file says perf never started (format 4), and why
        whys = Counter(w for r in rs if (w := r.perf_not_started) is not None)
        if whys:
            n, why = sum(whys.values()), whys.most_common(1)[0][0]
            said.append(cw.PerfNotStarted(side=s.name, sessions=n, of=len(rs), why=why,
                                          other_reasons=len(whys) > 1))
        none = sum(not (r.session_symbols and r.session_symbols.symbols)
                   and r.perf_not_started is None for r in rs)
        if none:
            said.append(cw.NoHotSymbols(side=s.name, sessions=none, of=len(rs)))

    # perf on as it ran: a header with perf on whose perf never started measured without it
    on = [sum(r.header.perf and r.perf_not_started is None for r in rs) for rs in sides]
    states = [cw.PerfState(s.name, k, len(rs)) for k, rs, s in zip(on, sides, out)]
    # alike: every side's sessions all on, or all off (or on in k of n, alike)
    if len({"on" if st.on == st.sessions else "off" if not st.on else (st.on, st.sessions)
            for st in states}) > 1:
        said.append(cw.PerfDiffers(sides=tuple(states)))
    return said


def compare(rs: list[Result], batch: bool = False) -> Comparison:
    """Each result its own side, the first the baseline.  `batch`: the variants of one batch,
    whose differences (a param, a CPU profile) are what was asked for, not a warning."""
    return compare_sides([[r] for r in rs], batch=batch)


def load_and_compare(paths: Sequence[str | Path], noise_file: Path | None = None,
                     pair_sessions: bool = True, primary: str | None = None) -> Comparison:
    return compare_sides(load_sides(paths), [str(p) for p in paths], noise_file,
                         pair_sessions=pair_sessions, primary=primary)


