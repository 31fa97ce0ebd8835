"""A bisect's report (`hotloop bisect`): the first bad revision, the change it brings with its
interval, the chance the answer is wrong, each step, the skipped, what differs in the build,
and the confirming comparison (the symbols that moved) as compare gives it; in text (the
terminal's width), mail (72 columns) or json (`first_bad`, `change_pct`, `ci_low`, `ci_high`,
`steps` each with `rev` and `verdict`, `alpha`)."""
from __future__ import annotations

import json
import shlex
from typing import Any

from hotloop.analysis.bisect_finding import Finding
from hotloop.analysis.bisection_model import Ask, Progress, Step
from hotloop.analysis.comparison import Comparison, Test
from hotloop.render import compare_formats, mail
from hotloop.render.layout import bound, safe, table, terminal_width, wrap
from hotloop.render.mail import command_lines
from hotloop.render.units import pct
from hotloop.visible import cut

SUBJECT = 50                # a subject's columns in the steps' table (json keeps it whole)
DIFFERS = 40                # lines of what differs in the build


def primary(comp: Comparison | None) -> Test | None:
    """The confirming comparison's test of the primary metric."""
    if comp is None or not comp.pairs:
        return None
    rows = [m for m in comp.pairs[0].metrics if m.primary] or comp.pairs[0].metrics[:1]
    return rows[0].test if rows else None


def change(r: Finding) -> tuple[float | None, float | None, float | None, str, str]:
    """The first bad's change (%, interval), what it is against (the confirming series' last
    good, else GOOD in its own step) and, where the confirmation gave no interval (too few
    runs, one session), why the step's is given instead."""
    t = primary(r.comparison)
    if t is not None and t.ci_low is not None and t.ci_high is not None:
        return t.change_pct, t.ci_low, t.ci_high, "last good", ""
    few = t is not None and min(t.n_baseline / max(1, t.sessions_baseline),
                                t.n_new / max(1, t.sessions_new)) < 5
    why = ("" if t is None else "the confirmation's change has no interval (" + (
        "too few runs a session: --runs 5 or more" if few else "its test gave none")
        + "): its step's against GOOD instead")
    step = next((s for s in r.outcome.steps if s.rev == r.outcome.first_bad
                 and s.verdict in ("bad", "differ")), None)
    if step is None:
        return (t.change_pct if t else None), None, None, ("last good" if t else ""), why
    return step.change_pct, step.ci_low, step.ci_high, "good", why


def _interval(lo: float | None, hi: float | None) -> str:
    return "" if lo is None or hi is None else f" [{pct(lo)}, {pct(hi)}]"


def duration(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 60} min {s % 60} s" if s >= 60 else f"{s} s"


def progress_line(ask: Ask, s: Step, where: Progress, seconds: float) -> str:
    """Where a step stands after a round, and the bisect: "step 2, 1a2b3c4d5e6f round 3:
    +24.1% [+18.2%, +30.3%], bad (2 candidates left; 14 sessions, 1 min 3 s)"."""
    so_far = "" if s.change_pct is None else f": {s.change_pct:+.3g}%" + (
        "" if s.ci_low is None or s.ci_high is None
        else f" [{s.ci_low:+.3g}%, {s.ci_high:+.3g}%]")
    what = "endpoints" if ask.kind == "endpoints" else f"step {ask.step}"
    verdict = f", {s.verdict}" if s.verdict else ""
    left = "" if s.verdict == "no change" else f"{where.left} candidates left; "
    return (f"{what}, {ask.rev[:12]} round {len(s.rounds)}{so_far}{verdict} ({left}"
            f"{where.sessions} sessions, {duration(seconds)})")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def head(r: Finding, width: int) -> list[str]:
    """What was found, its change, and the chance it is wrong."""
    o = r.outcome
    rng = f"{r.short(r.good)}..{r.short(r.bad)}"
    ends = next((s for s in o.steps if s.kind == "endpoints"), None)
    endpoints = f"{pct(o.change_pct)}{_interval(o.ci_low, o.ci_high)}" + (
        f" ({_level(ends)})" if o.ci_low is not None and _level(ends) else "")
    if o.status == "no change":
        return wrap(f"nothing to bisect: the endpoints' change {endpoints} is not "
                    f"significant (the path's error bound {o.alpha:.3g})", width, "  ",
                    f"bisect {rng}: ")
    if o.status != "found":
        out = wrap(f"gave up: too many revisions could not be told good or bad; the first "
                   f"bad is after {r.short(o.last_good)} and at or before "
                   f"{r.short(o.earliest_bad)}", width, "  ", f"bisect {rng}: ")
        return out + wrap(f"the endpoints' change: {endpoints}", width, "  ", "  ")
    c, lo, hi, against, why = change(r)
    out = wrap(f"first bad {r.short(o.first_bad)} {safe(r.subject(o.first_bad))}", width,
               "  ", f"bisect {rng}: ")
    if c is not None:
        base = o.last_good if against == "last good" else r.good
        who = "the last good" if against == "last good" else "GOOD"
        level = "" if lo is None else " (95%)" if against == "last good" else \
            f" ({_level(_first_bad_step(r))})"
        out += wrap(f"its change against {who} ({r.short(base)}): "
                    f"{pct(c)}{_interval(lo, hi)}{level}", width, "    ", "  ")
    if why:
        out += wrap(why, width, "    ", "  ")
    out += wrap(f"the endpoints' change: {endpoints}", width, "    ", "  ")
    if c is not None and o.change_pct and abs(c) < abs(o.change_pct) / 2:
        out += wrap("it brings less than half of the endpoints' change: the change may be "
                    "spread over several revisions (bad is nearer BAD than GOOD); bisect "
                    "again on each side of it to find the others", width, "    ", "  note: ")
    if o.skipped:
        out += wrap("or one of the revisions before it that could not be told: "
                    + ", ".join(r.short(s) for s in o.skipped), width, "    ", "  ")
    out += wrap(f"the chance this answer is wrong: at most {100 * o.alpha:.3g}% "
                f"({_plural(o.tests, 'test')}, each at its share of it)", width, "    ", "  ")
    return out


def _first_bad_step(r: Finding) -> Step | None:
    return next((s for s in r.outcome.steps if s.rev == r.outcome.first_bad
                 and s.verdict in ("bad", "differ")), None)


def _level(s: Step | None) -> str:
    """An interval's confidence: a step's holds at 1 - the share of the bound it spent."""
    return "" if s is None or not s.alpha else f"{100 * (1 - s.alpha):.3g}%"


def levels(r: Finding) -> str:
    """What the steps' intervals hold at (each step its share of the bound)."""
    shares = sorted({_level(s) for s in r.outcome.steps if s.alpha and s.change_pct is not None})
    if not shares:
        return ""
    return (f"a step's interval holds at 1 - its share of the bound: {', '.join(shares)}; "
            f"a step's verdict is its interval against 0 and the endpoints' change")


def step_rows(r: Finding, subject: int) -> list[list[str]]:
    rows = [["step", "revision", "verdict", "rounds", "change vs good", "subject"]]
    for i, s in enumerate(r.outcome.steps):
        verdict = s.verdict or "running"
        rows.append([str(i), r.short(s.rev), verdict, str(len(s.rounds)) if s.rounds else "-",
                     f"{pct(s.change_pct)}{_interval(s.ci_low, s.ci_high)}"
                     if s.change_pct is not None else "-",
                     cut(safe(s.reason if s.verdict == "skipped" and s.reason
                              else r.subject(s.rev)), subject)])
    return rows


def tail(r: Finding) -> str:
    return (f"{r.sessions or r.outcome.sessions} sessions in {duration(r.seconds)}; the "
            f"sessions: {r.state / 'sessions'}")


def again(r: Finding, width: int) -> list[str]:
    """The bisect's command, to run it again: its words, an option with its value a group."""
    groups: list[list[str]] = [["hotloop", "bisect"]]
    for i, w in enumerate(r.command):
        if i == 0 and ".." in w:        # the range as its short hashes: a line's width
            w = f"{r.short(r.good)}..{r.short(r.bad)}"
        quoted = shlex.quote(safe(w))
        if groups[-1][0].startswith("--") and len(groups[-1]) == 1 and not w.startswith("-"):
            groups[-1].append(quoted)
        else:
            groups.append([quoted])
    return ["", "reproduce:"] + [f"  {ln}" for ln in command_lines(groups, width - 2)]


def render_text(r: Finding, width: int | None = None) -> str:
    w = width or terminal_width()
    out = head(r, w) + ["", "steps:"]
    out += table(step_rows(r, SUBJECT), {3}, w, squeeze=(5,))
    if levels(r):
        out += wrap(levels(r), w, "  ", "  ")
    if r.differs:
        out += ["", "what differs in the build:"] + [f"  {safe(d)}" for d in r.differs[:DIFFERS]]
    if r.comparison is not None:
        out += ["", "the last good against the first bad (hotloop compare of the confirming "
                    "series):", ""]
        out += compare_formats.render(r.comparison, "text", w).rstrip("\n").splitlines()
    out += [""] + wrap(tail(r), w)
    return "\n".join(bound(out, w)) + "\n"


def render_mail(r: Finding) -> str:
    w = mail.WIDTH
    out = head(r, w) + ["", "steps:"]
    rows = [row[:5] for row in step_rows(r, 0)]
    out += table(rows, {3}, w, squeeze=(4,))
    if levels(r):
        out += wrap(levels(r), w, "  ", "  ")
    if r.differs:
        out += ["", "what differs in the build:"] + [f"  {safe(d)}" for d in r.differs[:DIFFERS]]
    if r.comparison is not None and r.sides:
        out += ["", "the last good against the first bad:", ""]
        out += mail.compare_mail(r.comparison, r.sides, footer=False).rstrip("\n").splitlines()
    out += [""] + wrap(tail(r), w)
    if r.command:
        out += again(r, w)
    return "\n".join(bound(out, w)) + "\n"


def _step(r: Finding, s: Step) -> dict[str, Any]:
    return {"rev": s.rev, "subject": r.subject(s.rev), "kind": s.kind, "verdict": s.verdict,
            "rounds": len(s.rounds), "change_pct": s.change_pct, "ci_low": s.ci_low,
            "ci_high": s.ci_high, "alpha": s.alpha, "reason": s.reason}


def document(r: Finding) -> dict[str, Any]:
    o = r.outcome
    c, lo, hi, against, why = change(r)
    return {"status": o.status, "first_bad": o.first_bad,
            "first_bad_subject": r.subject(o.first_bad) if o.first_bad else None,
            "last_good": o.last_good, "earliest_bad": o.earliest_bad,
            "skipped": list(o.skipped),
            # the first bad, or one of the skipped before it (as git bisect's "any of")
            "candidates": [*o.skipped, o.first_bad] if o.first_bad else [],
            "change_pct": c, "ci_low": lo, "ci_high": hi, "change_note": why or None,
            "change_against": {"last good": "last_good", "good": "good"}.get(against),
            "endpoints": {"change_pct": o.change_pct, "ci_low": o.ci_low,
                          "ci_high": o.ci_high},
            "alpha": o.alpha, "sessions": r.sessions or o.sessions,
            "seconds": round(r.seconds, 3),
            "steps": [_step(r, s) for s in o.steps],
            "build_differences": r.differs, "state": str(r.state),
            "series": [str(p) for p in r.series],
            "comparison": compare_formats.document(r.comparison)
            if r.comparison is not None else None}


def render(r: Finding, fmt: str = "text", width: int | None = None) -> str:
    if fmt == "json":
        return json.dumps(document(r), indent=2, allow_nan=False) + "\n"
    if fmt == "mail":
        return render_mail(r)
    return render_text(r, width)
