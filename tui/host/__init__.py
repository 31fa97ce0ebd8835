"""The running system: everything that reads or writes /proc and /sys lives here.

`sysfs` (the kernel's files, which tests point at fake trees), `cpus` (CPU lists), `settings`
(one sysctl or cpufreq setting), `journal` (the restore journal), `recovery` (a dead run's
journal restored), `holds` (what a live run's journal holds), `changes` (planned changes,
applied and restored), `facts` (kernel facts for the result header, `expect`), `procs`
(scheduling, children that die with their parent), `kimage` (kernel images a VM boots), `kvm`
(qemu, and whether KVM is usable here) and `doctor` (what this machine allows).
These modules import nothing else of hotloop.

The safety contract for changes (sysctl, governor, boost):

* `changes.plan_changes` works out what would change, without touching anything; features the
  machine lacks become warnings (or an error with `strict=True`).
* `changes.apply` writes every original value to a restore journal (fsync + atomic rename)
  *before* the first write, then applies; a failure part-way restores what was already written.
* `Applied.restore` (or leaving the `with` block) puts the originals back in reverse order and
  removes the journal.
* `recovery.recover` runs at the start of every hotloop command: a journal left behind by a
  hotloop that was SIGKILLed or lost power is restored and reported.

A lock file held for the lifetime of an `Applied` (flock, released by the kernel when the
process dies) tells a crashed owner from one still running, so a second hotloop started during
a run does not "restore" the first one's settings; the journal's pid and its start time say
the same when the lock file was removed.  Root's journal and lock are the machine's
(/run/hotloop), whatever HOME or XDG_STATE_HOME a run has: the settings are the machine's.
"""
