"""A bisect in the console (`hotloop bisect` of the form's plan, in the git repository the
console was started in): run.bisect_run.BisectRun in the run controller's worker, each
step's sessions in the live panels as a series' are, each round's standing in the log, the
report on its own screen at the end.

The state is the command line's: a bisect stopped here (x, q) resumes with `hotloop bisect
--resume`, from the words it is kept with (the form's plan as `--param`, `--runs`...).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path

from hotloop.catalog import Catalog, Plan
from hotloop.console.controller import RunController
from hotloop.console.live import LiveRun
from hotloop.console.messages import BisectEnded
from hotloop.errors import HotloopError
from hotloop.render import bisect_report
from hotloop.render.units import number
from hotloop.run import launch
from hotloop.run.bisect import BisectDir, BisectState
from hotloop.run.bisect_run import (
    BisectOptions,
    BisectRun,
    Confirming,
    Judged,
    Note,
    Over,
    Preparing,
    Rounded,
    Skipped,
    Stepping,
    Stopped,
    rounds_kept,
)

# what a BisectRun says of itself; any other event is its step's series'
OWN = (Preparing, Skipped, Stepping, Judged, Rounded, Confirming, Note, Stopped, Over)


@dataclass
class Asked:
    """A bisect checked and ready to start: its run (the repository held) and what its
    plan would change on the system (asked first)."""
    run: BisectRun
    changes: list[str]
    cpus: tuple[int, ...]


def profiles_in(repo: Path, profiles: list[Path]) -> tuple[Path, ...]:
    """The console's --profiles as a bisect reads them: a directory in the repository from
    each revision's worktree (relative), one outside it as it is (absolute)."""
    out = []
    top = repo.resolve()
    for p in profiles:
        real = p.resolve()
        out.append(real.relative_to(top) if real.is_relative_to(top) else real)
    return tuple(out)


def words_of(rng: str, plan: Plan, profiles: tuple[Path, ...], build: str,
             metric: str) -> list[str]:
    """The `hotloop bisect` words measuring what the form's plan measures (kept with the
    state: what `--resume` parses, and the mail's reproduce line)."""
    out = [rng, plan.name, "--runs", str(plan.runs), "--warmup", str(plan.warmup),
           "--cpu", plan.cpu, "--kernel", plan.kernel]
    for k, v in plan.params.items():
        out += ["--param", f"{k}={v}"]
    if not plan.perf:
        out.append("--no-perf")
    if plan.until_ci:
        out += ["--until-ci", f"{plan.until_ci:g}"]
    for p in profiles:
        out += ["--profiles", str(p)]
    if build:
        out += ["--build", build]
    if metric:
        out += ["--metric", metric]
    return out


class Bisecting:
    """The console's bisect: checked, started in the controller's worker, stopped by it."""

    def __init__(self, controller: RunController) -> None:
        self.c = controller

    def check(self, cat: Catalog, plan: Plan, rng: str, build: str, metric: str,
              profiles: list[Path]) -> Asked:
        """The bisect asked, checked as `hotloop bisect` checks it; HotloopError (or
        ValueError) in one line when it cannot run."""
        from hotloop.analysis.bisection import Bisection
        from hotloop.run import revisions
        if "\n" in rng + build + metric:
            raise HotloopError("a range, build or metric of one line")
        repo = revisions.repository(Path.cwd())
        where = BisectDir(repo)
        if where.path.resolve().is_relative_to(repo.resolve()):
            raise HotloopError(f"{where.path}: hotloop's state directory is inside the "
                               f"repository {repo}: set XDG_STATE_HOME outside it")
        rp = cat.resolve(plan)          # the form's plan, here: a bad one refused now
        changes = launch.consent([rp])
        dirs = profiles_in(repo, profiles)
        where.hold()
        try:
            kept = where.load()
            if kept is not None and not kept.over:
                raise HotloopError(
                    f"an interrupted bisect of {repo} is kept: hotloop bisect --resume goes "
                    f"on with it, hotloop bisect --fresh {kept.argv[0] if kept.argv else ''} "
                    f"... discards it")
            revs = revisions.revision_range(repo, rng)
            try:
                decision = Bisection([r.sha for r in revs])
            except ValueError as e:
                raise HotloopError(f"bisect: {e}") from None
            if kept is not None:
                where.worktrees().remove_all()      # the one over: its checkouts too
            words = words_of(rng, plan, dirs, build, metric)
            opts = BisectOptions(lambda _cat: plan, dirs, build or None, metric=metric or None,
                                 command=tuple(words),
                                 notice=lambda text: self.c._log(text))
            run = BisectRun(opts, where, BisectState(str(repo), words, revs,
                                                     decision.to_dict()))
        except BaseException:
            where.release()
            raise
        return Asked(run, changes, rp.cpu.cpus)

    def drop(self, asked: Asked) -> None:
        """Not started (the consent refused): the repository let go, nothing kept."""
        asked.run.where.release()

    def start(self, asked: Asked, apply_system: bool = False) -> bool:
        c, run = self.c, asked.run
        if c.running:
            self.drop(asked)
            return False
        run.opts = replace(run.opts, apply_system=apply_system)
        try:
            run.save()
        except HotloopError as e:
            self.drop(asked)
            c._log(f"cannot bisect: {e}", "error")
            return False
        st = run.st
        c.bisect = run
        c.series_sides = None
        c._log(f"bisect {st.revisions[0].short}..{st.revisions[-1].short}: "
               f"{len(st.revisions) - 2} revisions between, {run.opts.command[1]} → "
               f"{run.where.path}")
        c._away_from(asked.cpus)
        c.worker = c.ui.run_worker(self._run(run), group="session", exclusive=True,
                                   exit_on_error=False)
        return True

    async def _run(self, run: BisectRun) -> None:
        c = self.c
        live: LiveRun | None = None
        text = mail = ""
        stopped = False
        try:
            async for e in run.events():
                if not isinstance(e, OWN):      # a step's series: its sessions, live
                    if c.series is not None:
                        live = await c._series_event(c.series, e, live)
                elif isinstance(e, Stepping):
                    c.series = e.series
                elif isinstance(e, Preparing):
                    c._log(f"{e.rev.short} {e.rev.subject[:50]}: checking out"
                           + (" and building" if e.building else ""))
                elif isinstance(e, Skipped):
                    c._log(f"{e.rev[:12]} skipped: {e.why}", "warning")
                elif isinstance(e, Note):
                    c._log(e.text, "warning")
                elif isinstance(e, Judged) and run.opts.metric and e.value is not None:
                    c._log(f"{e.slot.variant} s{e.slot.session:02d}: {number(e.value)} "
                           f"{run.opts.metric} judged")
                elif isinstance(e, Rounded):
                    c._log(bisect_report.progress_line(e.ask, e.step, e.progress, e.seconds))
                elif isinstance(e, Confirming):
                    c._log(f"confirming: {e.last_good.short} against {e.first_bad.short}, "
                           f"{e.sessions} sessions a side")
                elif isinstance(e, Stopped):
                    stopped = True
                elif isinstance(e, Over):
                    text, mail = self._over(run, e)
        except asyncio.CancelledError:
            stopped = True
            raise
        except Exception as e:  # noqa: BLE001 - a session bug must not kill the console
            c._failed(e)
        finally:
            if live is not None and live.running:
                live.end("stopped")
            if stopped:
                c._log(f"bisect stopped: {rounds_kept(run.st)} rounds kept in "
                       f"{run.where.path}; hotloop bisect --resume goes on", "warning")
            c.session = c.series = c.bisect = None
            run.where.release()
            c._restore_affinity()
            c.ui.post_message(BisectEnded(text, mail, stopped, str(run.where.path)))

    def _over(self, run: BisectRun, e: Over) -> tuple[str, str]:
        """The report (text at the terminal's width, and mail), the checkouts removed."""
        f = e.finding
        text = bisect_report.render_text(f, max(60, self.c.ui.app.size.width - 4))
        mail = bisect_report.render_mail(f)
        head = bisect_report.head(f, 200)
        self.c._log(" ".join(" ".join(head[:2]).split()),
                    "success" if f.outcome.status == "found" else "warning")
        try:
            run.end()
        except HotloopError as err:     # the answer stands
            self.c._log(str(err), "warning")
        return text, mail
