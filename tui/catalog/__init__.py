"""The catalogue: TOML files of workloads, CPU and kernel profiles and plans.

Files are read from the bundled `profiles/`, the user's config directory and any
`--profiles DIR` (`loader`), validated strictly (`schema`: an unknown key is an error, every
error one line naming the file, the line, the table and the key) and turned into the frozen
dataclasses of `model`; `save` writes a plan back as TOML.
"""
from hotloop.catalog.loader import Catalog, fit_to_machine, load, search_path
from hotloop.catalog.model import (
                                   KINDS,
                                   METRICS,
                                   RUN_LIMITS,
                                   SCHED_POLICIES,
                                   STOP_WAIT_S,
                                   TIMEOUT_MAX,
                                   CpuProfile,
                                   Host,
                                   KernelProfile,
                                   Param,
                                   ParamSetting,
                                   Plan,
                                   ResolvedPlan,
                                   Workload,
                                   process_shares,
                                   stop_wait_problem,
                                   timeout_problem,
                                   until_ci_problem,
)
from hotloop.catalog.save import plan_table, save_plan, with_overrides

__all__ = ["KINDS", "METRICS", "RUN_LIMITS", "SCHED_POLICIES", "STOP_WAIT_S", "TIMEOUT_MAX",
           "Catalog", "CpuProfile", "Host", "KernelProfile", "Param", "ParamSetting", "Plan",
           "ResolvedPlan", "Workload", "fit_to_machine", "load", "plan_table", "process_shares",
           "save_plan", "search_path", "stop_wait_problem", "timeout_problem",
           "until_ci_problem", "with_overrides"]
