"""What the cores this process may use did during a run: ours, the kernel's networking, other programs, idle, throttled."""

import contextlib
import os
from dataclasses import dataclass

import psutil

from iolab import environment, usage

TICK_S = 1 / os.sysconf("SC_CLK_TCK")  # /proc/stat counts in clock ticks (10 ms on most kernels)


def usable_cores():
    """The CPUs this process may be scheduled on (its affinity): 1 under `taskset -c 0`. A container's CPU quota
    does not show here: how much of them it may use is environment.usable_cpus()."""
    return sorted(os.sched_getaffinity(0))


@contextlib.contextmanager
def pinned(cpus):
    """Keep the calling thread, and every process it starts meanwhile (the load clients), on `cpus`; as
    `taskset -c` would, for a while. Its own affinity comes back afterwards."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def pin_process_tree(pid, cpus):
    """Put every thread of a server's processes on `cpus` (affinity is per thread, and the server's started elsewhere)."""
    for process in usage.process_tree(psutil.Process(pid)):
        try:
            threads = os.listdir(f"/proc/{process.pid}/task")
        except OSError:
            continue
        for thread in threads:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(int(thread), cpus)


@dataclass(frozen=True)
class CoreTimes:
    """Cumulative seconds of the given CPUs, from /proc/stat: tasks running, interrupts, stolen, idle."""

    tasks_s: float  # user + nice + system: processes and threads, ours and everyone else's
    interrupts_s: float  # irq + softirq: the kernel's own work, most of it moving packets over loopback
    stolen_s: float  # steal: a hypervisor ran another machine on these CPUs
    idle_s: float  # idle + iowait
    own_s: float  # this process and the children it has reaped (the load clients): user + system
    # Under a CPU quota (Binder, JupyterHub) the container's own cgroup: its CPU seconds and its throttling so far.
    # /proc/stat counts the whole node there, other users' containers included, which take nothing from our quota.
    group: environment.GroupCpu | None = None


def read(cpus=None):
    """A CoreTimes of `cpus` (default: this process's affinity) and of this process, now."""
    wanted = {f"cpu{n}" for n in (usable_cores() if cpus is None else cpus)}
    totals = [0] * 8
    with open("/proc/stat") as stat:
        for line in stat:
            name, *fields = line.split()
            if name in wanted:
                for index, value in enumerate(fields[:8]):
                    totals[index] += int(value)
    user, nice, system, idle, iowait, irq, softirq, steal = (ticks * TICK_S for ticks in totals)
    own = os.times()
    limits = environment.cgroups()
    return CoreTimes(
        tasks_s=user + nice + system,
        interrupts_s=irq + softirq,
        stolen_s=steal,
        idle_s=idle + iowait,
        own_s=own.user + own.system + own.children_user + own.children_system,
        group=limits.cpu() if limits.cpu_quota() is not None else None,
    )


@dataclass(frozen=True)
class CoreUse:
    """How the cores' time was spent between two readings, in core-seconds; `server_s` comes from the server's tree."""

    wall_s: float
    cores: float  # usable CPUs: the affinity's, or fewer under a quota (0.5 for half a CPU)
    server_s: float
    own_s: float  # this notebook and its load clients
    interrupts_s: float
    others_s: float  # everything that was not ours: other programs (in this container, under a quota), a hypervisor
    idle_s: float  # nobody ran at all (under a quota: of the CPU time the quota allowed, what was not used)
    throttled: int = 0  # quota periods in which the container used up its quota and was stopped
    throttled_s: float = 0.0  # how long it was stopped so

    @property
    def idle_share(self):
        """The fraction of the cores' time nothing ran: with work waiting, time spent waking a core up."""
        capacity = self.wall_s * self.cores
        return self.idle_s / capacity if capacity > 0 else 0.0

    @property
    def others_share(self):
        """The fraction of the cores' time other programs took: 0 on a quiet machine, about half beside a CPU hog."""
        capacity = self.wall_s * self.cores
        return self.others_s / capacity if capacity > 0 else 0.0


def between(before, after, wall_s, server_s, cores):
    """The CoreUse of a window from two readings; ticks are coarse, so `others_s` is clipped at 0.

    Under a CPU quota the shares are of the quota (`cores` usable CPUs), from the container's own cgroup counter:
    others are other programs in this container, not other users' containers on the node.
    """
    own = after.own_s - before.own_s
    tasks = after.tasks_s - before.tasks_s
    interrupts = after.interrupts_s - before.interrupts_s
    if before.group is not None and after.group is not None:
        used = after.group.used_s - before.group.used_s
        throttled, throttled_s = environment.throttled_between(before.group, after.group)
        return CoreUse(wall_s, cores, server_s, own, interrupts, max(0.0, used - own - server_s),
                       max(0.0, wall_s * cores - used), throttled, throttled_s)
    # Where the kernel does not account interrupt time apart (no IRQ_TIME_ACCOUNTING), a task's own CPU clock
    # includes the interrupts handled on its time, while /proc/stat files the ticks that land there as softirq.
    others = max(0.0, tasks + interrupts - own - server_s) + (after.stolen_s - before.stolen_s)
    return CoreUse(wall_s, cores, server_s, own, interrupts, others, after.idle_s - before.idle_s)
