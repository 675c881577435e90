"""What else wanted the CPUs while a run measured: CPU pressure, steal, quota throttling, and the run's own waits.

A claim about time holds on the student's machine only while that machine is theirs. These readings say how far
it was not, each over the run's own window:
- others' CPU: the CPU time the kernel counted on the CPUs this process may use (/proc/stat), less what our own
  processes used (this one and its children: servers, clients, and the children it has reaped).
- steal: time a hypervisor gave those CPUs to another machine.
- throttling: time a CPU quota stopped the container.
- CPU pressure (Linux PSI, "some"): the share of the window in which some task waited for a CPU, the cgroup's
  where it has one (cgroup v2: a JupyterHub's or Binder's container), the host's otherwise; and our own threads'
  waits (schedstat). Both are kept for the record: pressure counts our own processes waiting for each other.

    with neighbours.watching() as watch:
        ...the measured run...
    print(watch.found.describe())
"""

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from . import environment, usage

HOST_PRESSURE = Path("/proc/pressure/cpu")
CGROUP_MOUNTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))  # cgroup v2, and v2 beside v1 (hybrid)
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Reading:
    """The cumulative counters at one moment; two of them make a Neighbours."""

    at_s: float  # time.monotonic()
    pressure_us: int | None  # PSI "some total" in µs, None where the kernel keeps none
    source: str  # "cgroup", "host", or "none"
    steal_s: float  # over the CPUs this process may use
    throttled: int  # quota periods the container was stopped in
    throttled_s: float
    own_waits_s: float  # this process's and its children's threads' waits for a CPU so far
    busy_s: float  # CPU time the kernel counted on the CPUs this process may use
    own_cpu_s: float  # CPU time of this process, its children, and the children it reaped


@dataclass(frozen=True)
class Neighbours:
    """Over one window: how much of it others held the CPUs, and the figures it is read from."""

    seconds: float
    source: str
    pressure_share: float | None  # of the window, some task waited for a CPU (ours included)
    own_wait_share: float  # our own processes' waits, as a share of the window (a thread-second each second)
    steal_share: float  # of the window × our CPUs
    throttled: int
    throttled_s: float
    others_cpu_share: float = 0.0  # of the window × our CPUs, the CPU time that was not ours

    @property
    def others_share(self) -> float:
        """The share of the window others held our CPUs: their CPU time, steal, or throttling, the largest. Our own
        processes waiting for each other (a server and its client on one CPU) is not counted."""
        return max(self.others_cpu_share, self.steal_share, self.throttled_s / self.seconds if self.seconds > 0 else 0.0)

    def describe(self) -> str:
        """One line a student reads: how much of this run others held, and from what."""
        parts = [f"their CPU {self.others_cpu_share:.0%}"]
        if self.pressure_share is not None:
            parts.append(f"CPU pressure {self.pressure_share:.0%} ({self.source}), our waits {self.own_wait_share:.0%}")
        if self.steal_share:
            parts.append(f"steal {self.steal_share:.0%}")
        if self.throttled:
            parts.append(f"throttled {self.throttled}× ({self.throttled_s:.2f} s)")
        figures = "; ".join(parts) or "no reading on this machine"
        return f"others held the CPUs {self.others_share:.0%} of this run ({figures})"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"others_share": self.others_share}


COLUMN = "others held the CPUs"  # the heading of the neighbours column in every lesson's table of runs


def held(found: "Neighbours | dict[str, Any] | None") -> str:
    """The neighbours column's cell: the share of a run others held the CPUs ("38%"), from a run's Neighbours or
    its as_dict(); "unknown" where the run did not read them."""
    if found is None:
        return "unknown"
    share = found["others_share"] if isinstance(found, dict) else found.others_share
    return f"{share:.0%}"


def pressure_file() -> tuple[Path | None, str]:
    """(the cpu.pressure this process's cgroup keeps, "cgroup"), or (the host's, "host"), or (None, "none")."""
    for line in _text(Path("/proc/self/cgroup")).splitlines():
        if line.startswith("0::") and line[3:].strip() not in ("", "/"):
            for mount in CGROUP_MOUNTS:
                candidate = mount / line[3:].strip().lstrip("/") / "cpu.pressure"
                if candidate.is_file():
                    return candidate, "cgroup"
    return (HOST_PRESSURE, "host") if HOST_PRESSURE.is_file() else (None, "none")


def read(root: psutil.Process | None = None) -> Reading:
    """The counters now. `root`: the process whose tree's waits count as our own (this one by default)."""
    path, source = pressure_file()
    pressure = None
    for line in _text(path).splitlines() if path else []:
        if line.startswith("some "):
            pressure = int(dict(field.split("=") for field in line.split()[1:])["total"])
    group = environment.cpu_use()
    busy_s, steal_s = _cpu_s()
    waits_s, own_cpu_s = own_s(root)
    return Reading(time.monotonic(), pressure, source if pressure is not None else "none", steal_s,
                   group.throttled if group else 0, group.throttled_s if group else 0.0, waits_s, busy_s, own_cpu_s)


def between(before: Reading, after: Reading) -> Neighbours:
    """Neighbours over the window from one Reading to a later one."""
    seconds = max(after.at_s - before.at_s, 1e-9)
    pressure = None
    if before.pressure_us is not None and after.pressure_us is not None:
        pressure = min(1.0, (after.pressure_us - before.pressure_us) / 1e6 / seconds)
    cpus = max(len(os.sched_getaffinity(0)), 1)  # /proc/stat counts every CPU we may run on, quota or not
    others_s = (after.busy_s - before.busy_s) - (after.own_cpu_s - before.own_cpu_s)
    return Neighbours(seconds, after.source, pressure, max(0.0, after.own_waits_s - before.own_waits_s) / seconds,
                      max(0.0, after.steal_s - before.steal_s) / (seconds * cpus), after.throttled - before.throttled,
                      max(0.0, after.throttled_s - before.throttled_s), min(1.0, max(0.0, others_s / (seconds * cpus))))


class Watch:
    """What watching() yields: `found` (a Neighbours) once the block has ended."""

    found: Neighbours | None = None


@contextlib.contextmanager
def watching(root: psutil.Process | None = None) -> Iterator[Watch]:
    """Read the neighbours over the block; `root` as for read()."""
    watch = Watch()
    before = read(root)
    try:
        yield watch
    finally:
        watch.found = between(before, read(root))


def own_s(root: psutil.Process | None = None) -> tuple[float, float]:
    """(seconds waited for a CPU, CPU seconds) so far of `root` (this process by default) and its descendants,
    each with the CPU of the children it has reaped (a gunicorn worker its master waited for, say). A child that
    ended unreaped inside the window takes its figures with it: its CPU then counts as others', its waits are lost."""
    try:
        process = root or psutil.Process()
        tree = [process, *process.children(recursive=True)]
    except psutil.Error:
        return 0.0, 0.0
    waits = cpu = 0.0
    for member in tree:
        try:
            waits += usage.queued_s(member)
            cpu += usage.process_cpu_s(member) + usage.reaped_children_cpu_s(member)
        except psutil.Error:
            continue  # it ended while we looked
    return waits, cpu


def _cpu_s() -> tuple[float, float]:
    """(CPU seconds the kernel counted busy, seconds stolen) on the CPUs this process may use (/proc/stat: user,
    nice, system, irq and softirq; steal), (0, 0) where unknown."""
    allowed = {f"cpu{n}" for n in os.sched_getaffinity(0)}
    busy = stolen = 0
    for line in _text(Path("/proc/stat")).splitlines():
        fields = line.split()
        if fields and fields[0] in allowed and len(fields) > 8:
            user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
            busy += user + nice + system + irq + softirq
            stolen += steal
    return busy * TICK_S, stolen * TICK_S


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
