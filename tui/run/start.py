"""How a run starts: a plan and the user's choices become a session here, or the command line
of one on a [host.NAME].  The command line and the console both start runs through these, so a
plan key or a choice reaches a remote host the same way whoever started it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hotloop import events as ev
from hotloop.catalog import Host, Plan, ResolvedPlan
from hotloop.record import Batch
from hotloop.run.pinned import Pinned
from hotloop.run.session import Session

# A VM's and a host's sessions are imported when one is made: what a guest or a host runs
# (`run --format events`, a session here) reads no module of theirs.
if TYPE_CHECKING:
    from hotloop.run.remote import Bounds, RemoteSession
    from hotloop.run.vm import VmSession


@dataclass(frozen=True)
class Choices:
    """What the user decides about a run beside its plan."""
    apply_system: bool = False      # consent to the profiles' sysctl/governor changes
    keep_perf: bool = True          # perf data kept beside the result file, for annotate
    on_exists: str = "rename"       # a taken result file name: results.ON_EXISTS


def plan_argv(plan: Plan, choices: Choices) -> list[str]:
    """A plan as the options of `hotloop run` there: its workload with every key spelled out,
    since the remote's catalogue need not hold the plan (nor the same version of it)."""
    out = [f"--cpu={plan.cpu}", f"--kernel={plan.kernel}", f"--runs={plan.runs}",
           f"--warmup={plan.warmup}", f"--timeout={plan.timeout!r}",
           f"--processes={plan.processes}", "--perf" if plan.perf else "--no-perf",
           f"--perf-freq={plan.perf_freq}", f"--call-graph={plan.call_graph}",
           f"--perf-keep-mb={plan.perf_keep_mb}",
           *([f"--until-ci={plan.until_ci!r}"] if plan.until_ci is not None else []),
           *(f"--param={k}={v}" for k, v in plan.params.items()),
           *(["--apply-system"] if choices.apply_system else []),
           "--keep-perf" if choices.keep_perf else "--no-keep-perf",
           f"--plan-name={plan.name}"]
    return [*out, "--", plan.workload]


def bounds(plan: Plan) -> Bounds:
    from hotloop.run.remote import Bounds
    # each worker process runs the plan's warmup: at most the runs' many processes do
    return Bounds(plan.runs, plan.warmup * min(plan.processes, plan.runs), plan.timeout)


def here(rp: ResolvedPlan, result_file: Path, choices: Choices, variant: str = "",
         mirror: Callable[[ev.Event], None] | None = None,
         batch: Batch | None = None, pinned: Pinned | None = None,
         notice: Callable[[str], None] | None = None) -> Session | VmSession:
    """A session of `rp` on this machine; in a VM booting its kernel profile's image when it
    has one.  The guest is the session's own: its sysctls are applied there without asking,
    and its perf data is not kept.  `pinned`: a series' builds, the one its sessions here run
    (a guest builds its own); `notice`: what a VM session says of its boot as it goes."""
    if rp.kernel.image:
        from hotloop.run.vm import VmSession
        argv = plan_argv(rp.plan, Choices(apply_system=True, keep_perf=False))
        vm = VmSession(rp, argv, result_file, bounds(rp.plan), variant=variant,
                       on_exists=choices.on_exists, mirror=mirror, batch=batch)
        vm.notice = notice
        return vm
    session = Session(rp, result_file, variant=variant, apply_system=choices.apply_system,
                      keep_perf=choices.keep_perf, on_exists=choices.on_exists, mirror=mirror,
                      pinned=pinned)
    session.batch = batch or session.batch
    return session


def there(host: Host, plan: Plan, result_file: Path, choices: Choices, variant: str = "",
          mirror: Callable[[ev.Event], None] | None = None) -> RemoteSession:
    """A session of `plan` on `host` over SSH, its result file here."""
    from hotloop.run.remote import RemoteSession
    return RemoteSession(host, plan_argv(plan, choices), result_file, bounds(plan),
                         variant=variant,
                         on_exists=choices.on_exists, until_ci=plan.until_ci, mirror=mirror)
