"""`hotloop doctor`: what this machine can do (the compiler, perf, the kernel's code, the
profiles, the VMs), a line each."""
from __future__ import annotations

import argparse

from hotloop.cli.common import load_catalog
from hotloop.errors import HotloopError
from hotloop.run import build
from hotloop.visible import visible


def cmd_doctor(args: argparse.Namespace) -> int:
    from hotloop.host import doctor
    from hotloop.perf import annotate, probe
    rows: list[tuple[str, bool, str]] = []
    try:
        rows.append(("compiler", True, build.compiler_version()))
    except HotloopError as e:
        rows.append(("compiler", False, str(e)))
    rows += [(c.name, c.available, c.detail) for c in doctor.capabilities()]
    rows += [(c.name, c.available, c.detail) for c in probe.capabilities()]
    kernel_code = annotate.kernel_code()
    rows.append((kernel_code.name, kernel_code.available, kernel_code.detail))
    cat = load_catalog(args)
    bad = sum(s.warning.endswith("(file skipped)") for s in cat.skipped)
    rows.append(("profiles", not cat.skipped,
                 f"{len(cat.files)} files: {len(cat.workloads)} workloads, "
                 f"{len(cat.cpus)} cpu, {len(cat.kernels)} kernel, {len(cat.plans)} plans"
                 + (f"; {bad} bad file{'' if bad == 1 else 's'} and "
                    f"{len(cat.skipped) - bad} plan{'' if len(cat.skipped) - bad == 1 else 's'}"
                    " skipped (see above)" if cat.skipped else "")))
    # the VM rows: qemu, virtme-ng, KVM, each image's 9p
    rows += doctor.vm_rows({k.name: k.image for k in cat.kernels.values() if k.image})
    for name, ok, detail in rows:
        print(f"  {'yes' if ok else 'no '}  {name:<20} {visible(detail)}")
    return 0
