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

from hotloop import catalog
from hotloop.catalog import Catalog, Plan
from hotloop.console.controller import RunController
from hotloop.console.live import LiveRun
from hotloop.console.messages import BisectEnded
from hotloop.errors import HotloopError
from hotloop.render import bisect_report
from hotloop.render.units import number
from hotloop.run import launch, variants
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
    over_kept: bool                     # a finished bisect's state was there: its checkouts go


def profiles_in(repo: Path, profiles: list[Path]) -> tuple[Path, ...]:
    """The console's --profiles as a bisect reads them: a directory in the repository from
    each revision's worktree (relative), one outside it as it is (absolute)."""
    out = []
    top = repo.resolve()
    for p in profiles:
        real = p.resolve()
        out.append(real.relative_to(top) if real.is_relative_to(top) else real)
    return tuple(out)


@dataclass(frozen=True)
class Measured:
    """What the form asks a bisect to measure, as `hotloop bisect`'s options say it: the plan
    by name (each revision's own), the form's settings over it, its parameters those the form
    changed.  One record for the words the state keeps (what `--resume` and the mail run)
    and for the plan the console measures, so that the two are one bisect."""
    name: str
    runs: int
    warmup: int
    cpu: str
    kernel: str
    perf: bool
    until_ci: float | None
    params: tuple[str, ...]             # K=V, those the form changed from the plan's

    @classmethod
    def of_form(cls, cat: Catalog, plan: Plan, base: Plan) -> Measured:
        """The form's plan (`plan`, built from the plan it loaded, `base`)."""
        was = cat.resolve(base).params
        changed = tuple(f"{k}={v}" for k, v in plan.params.items() if str(was.get(k)) != str(v))
        return cls(base.name, plan.runs, plan.warmup, plan.cpu, plan.kernel, plan.perf,
                   plan.until_ci or None, changed)

    def plan_of(self, cat: Catalog) -> Plan:
        """The plan in a revision's catalogue, as `hotloop bisect` makes it of these words."""
        spec = variants.VariantSpec.parse(list(self.params), "--param", cpus=[self.cpu],
                                          kernels=[self.kernel])
        one = variants.single(cat, cat.plan_for(self.name), spec)
        return catalog.with_overrides(one, runs=self.runs, warmup=self.warmup, perf=self.perf,
                                      until_ci=self.until_ci)

    def words(self, rng: str, profiles: tuple[Path, ...], build: str, metric: str
              ) -> list[str]:
        """The `hotloop bisect` words of it (the state's: what `--resume` parses)."""
        out = [rng, self.name, "--runs", str(self.runs), "--warmup", str(self.warmup),
               "--cpu", self.cpu, "--kernel", self.kernel,
               "--perf" if self.perf else "--no-perf"]
        for item in self.params:
            out += ["--param", item]
        if self.until_ci:
            out += ["--until-ci", f"{self.until_ci:g}"]
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

    def check(self, cat: Catalog, plan: Plan, base: Plan, rng: str, build: str, metric: str,
              profiles: list[Path]) -> Asked:
        """The bisect asked of the form's `plan` (loaded as `base`), checked as `hotloop
        bisect` checks it, the repository held; HotloopError (or ValueError) in one line
        when it cannot run."""
        from hotloop.analysis.bisection import Bisection
        from hotloop.analysis.bisection_model import Design
        from hotloop.run import revisions
        if any(c in rng + build + metric for c in "\n\0"):
            raise HotloopError("a range, build or metric of one line")
        repo = revisions.repository(Path.cwd())
        where = BisectDir(repo)
        if where.path.resolve().is_relative_to(repo.resolve()):
            raise HotloopError(f"{where.path}: hotloop's state directory is inside the "
                               f"repository {repo}: set XDG_STATE_HOME outside it")
        measured = Measured.of_form(cat, plan, base)
        rp = cat.resolve(measured.plan_of(cat))     # here: a bad one refused now
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
            try:                        # the command line's design (--with-bad its default)
                decision = Bisection([r.sha for r in revs], Design(with_bad=True))
            except ValueError as e:
                raise HotloopError(f"bisect: {e}") from None
            words = measured.words(rng, dirs, build, metric)
            opts = BisectOptions(measured.plan_of, dirs, build or None, metric=metric or None,
                                 command=tuple(words), notice=lambda text: self.c.log(text))
            run = BisectRun(opts, where, BisectState(str(repo), words, revs,
                                                     decision.to_dict()))
        except BaseException:
            where.release()
            raise
        return Asked(run, changes, rp.cpu.cpus, kept is not None)

    def drop(self, asked: Asked) -> None:
        """Not started (the consent refused): the repository let go, nothing kept."""
        asked.run.where.release()

    def start(self, asked: Asked, apply_system: bool = False) -> bool:
        c, run = self.c, asked.run
        if c.running:
            self.drop(asked)
            return False
        if apply_system:                # the consent, kept for --resume as the CLI's words
            run.st.argv.append("--apply-system")
            run.opts = replace(run.opts, apply_system=True,
                               command=(*run.opts.command, "--apply-system"))
        try:
            run.save()
        except HotloopError as e:
            self.drop(asked)
            c.log(f"cannot bisect: {e}", "error")
            return False
        st = run.st
        c.bisect = run
        c.series_sides = None
        c.log(f"bisect {st.revisions[0].short}..{st.revisions[-1].short}: "
              f"{len(st.revisions) - 2} revisions between, {run.opts.command[1]} → "
              f"{run.where.path}")
        c.away_from(asked.cpus)
        c.worker = c.ui.run_worker(self._run(run, asked.over_kept), group="session",
                                   exclusive=True, exit_on_error=False)
        return True

    async def _run(self, run: BisectRun, over_kept: bool) -> None:
        c = self.c
        live: LiveRun | None = None
        text = mail = ""
        stopped: Stopped | None = None
        try:
            if over_kept:               # the last bisect's checkouts (a kernel's: GBs), off
                await asyncio.to_thread(run.where.worktrees().remove_all)   # the UI's loop
            async for e in run.events():
                if not isinstance(e, OWN):      # a step's series: its sessions, live
                    if c.series is not None:
                        live = await c.series_event(c.series, e, live)
                elif isinstance(e, Stepping):
                    c.series = e.series
                elif isinstance(e, Preparing):
                    c.series = c.series_at = None       # no session runs while it builds
                    c.log(f"{e.rev.short} {e.rev.subject[:50]}: checking out"
                          + (" and building" if e.building else ""))
                elif isinstance(e, Skipped):
                    c.log(f"{e.rev[:12]} skipped: {e.why}", "warning")
                elif isinstance(e, Note):
                    c.log(e.text, "warning")
                elif isinstance(e, Judged) and run.opts.metric and e.value is not None:
                    c.log(f"{e.slot.variant} s{e.slot.session:02d}: {number(e.value)} "
                          f"{run.opts.metric} judged")
                elif isinstance(e, Rounded):
                    c.log(bisect_report.progress_line(e.ask, e.step, e.progress, e.seconds))
                elif isinstance(e, Confirming):
                    c.log(f"confirming: {e.last_good.short} against {e.first_bad.short}, "
                          f"{e.sessions} sessions a side")
                elif isinstance(e, Stopped):
                    stopped = e
                elif isinstance(e, Over):
                    text, mail = await self._over(run, e)
        except asyncio.CancelledError:
            stopped = Stopped(run.st.rounds, run.decision.next() is None)
            raise
        except Exception as e:  # noqa: BLE001 - a session bug must not kill the console
            c.failed(e)
            if run.st.rounds == 0:      # refused before a round: nothing to resume (as the
                run.where.discard()     # command line does), the next b not refused for it
        finally:
            if live is not None and live.running:
                live.end("stopped")
            if stopped is not None:
                c.log(f"bisect stopped{' while confirming' if stopped.confirming else ''}: "
                      f"{stopped.rounds} rounds kept in {run.where.path}; hotloop bisect "
                      f"--resume goes on", "warning")
            c.session = c.series = c.bisect = None
            run.where.release()
            c.restore_affinity()
            c.ui.post_message(BisectEnded(text, mail, str(run.where.path)))

    async def _over(self, run: BisectRun, e: Over) -> tuple[str, str]:
        """The report (text at the console's width, and mail), the checkouts removed (in a
        thread: a kernel tree's take a while)."""
        f = e.finding
        text = bisect_report.render_text(f, max(60, self.c.ui.app.size.width - 4))
        mail = bisect_report.render_mail(f)
        head = bisect_report.head(f, 200)
        self.c.log(" ".join(" ".join(head[:2]).split()),
                   "success" if f.outcome.status == "found" else "warning")
        try:
            await asyncio.to_thread(run.end)
        except HotloopError as err:     # the answer stands
            self.c.log(str(err), "warning")
        return text, mail
