"""The CPU a load run took, and the time spent queued for one.

It covers the server's processes, the client processes and this notebook; measures, never draws.
"""

import bisect
import math
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psutil

from . import environment, listening

SNAPSHOT_ATTEMPTS = 5  # a process that exits mid-snapshot moves its CPU to its parent's counters: read again


@dataclass(frozen=True)
class TreeSnapshot:
    """One reading of a process tree: cumulative CPU and CPU-queueing seconds, at `taken` (time.monotonic)."""

    taken: float
    cpu_s: float
    queued_s: float
    processes: int
    threads: int
    # (pid, tid) -> (CPU ns, queued ns) of each live thread, to find the busiest one
    per_thread: dict[tuple[int, int], tuple[int, int]]


@dataclass(frozen=True)
class Usage:
    """What a server's processes used between two snapshots.

    cpu_s: user + system CPU seconds of every process in the tree, including
    children that exited and were reaped during the window.
    queued_s: seconds its threads spent ready to run but waiting for a CPU
    (the scheduler's run-queue delay): the CPU's saturation. Threads that
    ended inside the window take their share with them, so it can undercount.
    cores: the CPUs the server may use: its affinity (1 under `taskset -c 0`), or fewer under a container's
    CPU quota (environment.usable_cpus: 1.0 on Binder, 0.5 under half a CPU).
    busiest_cpu_s, busiest_queued_s: the same two for the one thread that ran
    the most (an event loop's); its running and queueing can never add up to
    more than the window, which the other threads' waits (a watchdog's) could.
    """

    cpu_s: float
    queued_s: float
    wall_s: float
    processes: int
    threads: int
    cores: float
    busiest_cpu_s: float = math.nan
    busiest_queued_s: float = math.nan

    @property
    def cpu_share(self) -> float:
        """Of the time the server wanted a CPU, the fraction it got one: 1.0 on an idle machine."""
        wanted = self.cpu_s + self.queued_s
        return self.cpu_s / wanted if wanted > 0 else 1.0


def process_cpu_s(process: psutil.Process) -> float:
    """CPU seconds of one process, all its threads, dead ones included, to the nanosecond where Linux allows."""
    try:
        # Linux's per-process CPU clock: clockid = (~pid << 3) | CPUCLOCK_SCHED. /proc's ticks are 10 ms
        # coarse, as large as a whole short run's CPU; this clock is exact.
        return time.clock_gettime(((~process.pid) << 3) | 2)
    except (OSError, OverflowError, AttributeError):
        times = process.cpu_times()  # a zombie, or not Linux: clock ticks
        return times.user + times.system


def reaped_children_cpu_s(process: psutil.Process) -> float:
    """CPU seconds of the children this process has waited for (their time moves here when they are reaped)."""
    times = process.cpu_times()
    return getattr(times, "children_user", 0.0) + getattr(times, "children_system", 0.0)


def thread_times(process: psutil.Process) -> dict[tuple[int, int], tuple[int, int]]:
    """{(pid, tid): (CPU ns, ns waited on a run queue)} for the process's live threads (Linux schedstat); {} elsewhere."""
    times: dict[tuple[int, int], tuple[int, int]] = {}
    try:
        tids = os.listdir(f"/proc/{process.pid}/task")
    except OSError:
        return times
    for tid in tids:
        try:
            with open(f"/proc/{process.pid}/task/{tid}/schedstat") as schedstat:
                ran, waited = schedstat.read().split()[:2]
            times[process.pid, int(tid)] = (int(ran), int(waited))
        except (OSError, ValueError):
            continue  # the thread ended while we looked
    return times


def queued_ns(pid: int | None = None) -> int | None:
    """Nanoseconds one thread has spent ready to run but waiting for a CPU (Linux schedstat), or None where the kernel
    does not say: process `pid`'s main thread, or the calling thread (pid None)."""
    path = "/proc/thread-self/schedstat" if pid is None else f"/proc/{pid}/schedstat"
    try:
        with open(path) as schedstat:
            return int(schedstat.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def queued_s(process: psutil.Process) -> float:
    """Seconds the process's live threads have waited on a run queue (Linux schedstat); 0 where unknown."""
    return sum(waited for _, waited in thread_times(process).values()) / 1e9


def process_tree(root: psutil.Process) -> list[psutil.Process]:
    """The root, its descendants, and any process still in its process group (a child that was reparented)."""
    tree = {root.pid: root}
    tree.update({child.pid: child for child in root.children(recursive=True)})
    try:
        group = os.getpgid(root.pid)
    except OSError:
        return list(tree.values())
    if group == root.pid:  # the launcher gives every server a group of its own; never scan a shared one
        for process in psutil.process_iter():
            try:
                if process.pid not in tree and os.getpgid(process.pid) == group:
                    tree[process.pid] = process
            except (OSError, psutil.Error):
                continue
    return list(tree.values())


def snapshot(pid: int) -> TreeSnapshot:
    """A TreeSnapshot of process `pid` and everything it started; psutil.NoSuchProcess if `pid` is gone."""
    root = psutil.Process(pid)
    for _ in range(SNAPSHOT_ATTEMPTS):
        try:
            processes = process_tree(root)
            cpu = 0.0
            per_thread: dict[tuple[int, int], tuple[int, int]] = {}
            for process in processes:
                cpu += process_cpu_s(process) + reaped_children_cpu_s(process)
                per_thread.update(thread_times(process))
            queued = sum(waited for _, waited in per_thread.values()) / 1e9
            return TreeSnapshot(time.monotonic(), cpu, queued, len(processes), len(per_thread), per_thread)
        except psutil.NoSuchProcess:
            if not root.is_running():
                raise
            # A child exited while we read the tree: its CPU is now on its way to its parent. Read it all again.
    raise RuntimeError(f"the processes under pid {pid} kept changing; could not read their CPU")


def cores_of(pid: int) -> float:
    """The CPUs process `pid` may use: its affinity (this machine's count where unknown), or the container's CPU quota
    where that is less (this lab runs its servers in its own container, so the quota is theirs too)."""
    try:
        affinity = len(psutil.Process(pid).cpu_affinity())
    except (AttributeError, psutil.Error):
        affinity = os.cpu_count() or 1
    return environment.usable_cpus(affinity)


class CpuMeter:
    """Measures a server's process tree between start() and stop(): `with CpuMeter(server.pid) as meter: ...`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before: TreeSnapshot | None = None
        self.usage: Usage | None = None

    def start(self) -> "CpuMeter":
        self.before = snapshot(self.pid)
        self.cores = cores_of(self.pid)
        return self

    def stop(self) -> Usage:
        """Read the tree again and return the Usage since start(); NaN figures if the server died in between."""
        if self.before is None:
            raise RuntimeError("CpuMeter.stop() before start()")
        if self.usage is not None:
            return self.usage
        try:
            after = snapshot(self.pid)
        except psutil.NoSuchProcess:
            after = TreeSnapshot(time.monotonic(), math.nan, math.nan, 0, 0, {})
        busiest_cpu = busiest_queued = math.nan
        if after.per_thread:
            deltas = [
                (ran - self.before.per_thread.get(key, (0, 0))[0], waited - self.before.per_thread.get(key, (0, 0))[1])
                for key, (ran, waited) in after.per_thread.items()
            ]
            busiest_cpu, busiest_queued = (value / 1e9 for value in max(deltas))
        self.usage = Usage(
            cpu_s=after.cpu_s - self.before.cpu_s,
            queued_s=after.queued_s - self.before.queued_s,
            wall_s=after.taken - self.before.taken,
            processes=max(self.before.processes, after.processes),
            threads=max(self.before.threads, after.threads),
            cores=self.cores,
            busiest_cpu_s=busiest_cpu,
            busiest_queued_s=busiest_queued,
        )
        return self.usage

    def __enter__(self) -> "CpuMeter":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def measure(server_or_pid: Any) -> CpuMeter:
    """A started CpuMeter for a Server (or a pid): call .stop() for its Usage."""
    return CpuMeter(getattr(server_or_pid, "pid", server_or_pid)).start()


def _process_reading(pid: int) -> tuple[float, float] | None:
    """(CPU seconds, seconds queued for a CPU) of one live process, or None once it has exited."""
    try:
        process = psutil.Process(pid)
        return process_cpu_s(process), queued_s(process)
    except (psutil.Error, OSError):
        return None


CONTAINER_TICK_S = 0.01  # how often a run under a CPU quota reads its container's counters: a tenth of a CFS period


@dataclass(frozen=True)
class ContainerWindow:
    """What the whole container (every process of the lab, under its CPU quota) did over one window of a run.

    cpu_s: CPU seconds its processes ran; throttled: quota periods in which the kernel stopped it; throttled_s:
    how long it was stopped (v1 sums this over the CPUs it waited on). quota: the CPUs the quota allows.
    """

    window_s: float
    cpu_s: float
    throttled: int
    throttled_s: float
    quota: float

    @property
    def utilization(self) -> float:
        """CPU seconds per second over the window: at most the quota, give or take one period's worth."""
        return self.cpu_s / self.window_s if self.window_s > 0 else math.nan


class ContainerTrace:
    """The container's CPU counters read every CONTAINER_TICK_S while a run goes, so any window of it can be cut out.

    Only under a CPU quota (elsewhere there is no container's share to read, and nothing runs). Readings carry
    time.perf_counter(), the clock the load clients' time zero is on.
    """

    def __init__(self) -> None:
        limits = environment.cgroups()
        self.quota = limits.cpu_quota()
        self.files = limits.cpu_files() if self.quota is not None else None
        self.version = limits.version
        self.points: list[tuple[float, float, int, float]] = []  # (perf_counter, used_s, throttled periods, throttled_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _read(self) -> None:
        cpu = environment.read_group_cpu(self.files, self.version)  # type: ignore[arg-type]  # started with files
        if cpu is not None:
            self.points.append((time.perf_counter(), cpu.used_s, cpu.throttled, cpu.throttled_s))

    def _run(self) -> None:
        while not self._stop.wait(CONTAINER_TICK_S):
            self._read()

    def start(self) -> "ContainerTrace":
        if self.files is not None and self._thread is None:
            self._read()
            self._thread = threading.Thread(target=self._run, name="container-cpu", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> "ContainerTrace":
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._read()
        return self

    def _at(self, moment: float) -> tuple[float, ...]:
        """The counters at `moment` (perf_counter), interpolated between the readings either side of it."""
        times = [point[0] for point in self.points]
        i = bisect.bisect_left(times, moment)
        if i <= 0:
            return self.points[0][1:]
        if i >= len(times):
            return self.points[-1][1:]
        (t0, *a), (t1, *b) = self.points[i - 1], self.points[i]
        share = (moment - t0) / (t1 - t0) if t1 > t0 else 1.0
        return tuple(x + (y - x) * share for x, y in zip(a, b))

    def window(self, began: float, ended: float) -> ContainerWindow | None:
        """The ContainerWindow between two perf_counter moments; None without a quota or without readings."""
        if self.quota is None or len(self.points) < 2 or not ended > began:
            return None
        first, last = self._at(began), self._at(ended)
        return ContainerWindow(ended - began, last[0] - first[0], round(last[1] - first[1]), last[2] - first[2],
                               self.quota)


@dataclass(frozen=True)
class RunUsage:
    """Where a load run's CPU went: the server's processes (None if not measured), the client processes, this process.

    The clients are read when each says it is ready (imported, about to start)
    and when it says it is done, so their start-up is left out. `lab_cpu_s` is
    this notebook's own process over the run: reading the clients' reports,
    and drawing a live dashboard if one was drawn. `listen_drops`: connection
    attempts dropped because an accept queue was full (counted for the whole
    machine, so another program's can show up here too).
    """

    server: Usage | None
    client_cpu_s: float
    client_queued_s: float
    lab_cpu_s: float
    wall_s: float
    cores: float
    listen_drops: int = 0
    container: ContainerTrace | None = None  # the container's counters through the run, under a CPU quota


class RunMeter:
    """Measures one load run; iolab.load drives it: start() at the run's go, client_frame() per frame, stop() at the end."""

    def __init__(self, server_pid: int | None = None) -> None:
        self.server = CpuMeter(server_pid) if server_pid is not None else None
        self._clients: dict[int, list[Any]] = {}  # pid -> [reading at ready, latest reading]
        self._lab_before: float | None = None
        self._began: float | None = None
        self.container = ContainerTrace()
        self.usage: RunUsage | None = None

    def start(self) -> "RunMeter":
        if self.server is not None and self.server.before is None:
            try:
                self.server.start()
            except (psutil.Error, OSError, RuntimeError):
                self.server = None  # it died before the run (the run will say so): measuring must never stop a run
        self._lab_before = time.process_time()
        self._drops_before = listening.listen_drops()
        self._began = time.monotonic()
        self.container.start()
        return self

    def client_frame(self, pid: int, ready: bool) -> None:
        """A client process sent a frame: the first reading (ready) is its baseline, the last one counts."""
        reading = _process_reading(pid)
        if reading is None:
            return
        readings = self._clients.setdefault(pid, [None, None])
        if ready or readings[0] is None:
            readings[0] = reading
        readings[1] = reading

    def stop(self) -> RunUsage:
        """The RunUsage of the run (once; later calls return the same)."""
        if self.usage is not None:
            return self.usage
        if self._began is None:
            self.start()
        clients = [(last[0] - first[0], last[1] - first[1]) for first, last in self._clients.values() if first]
        try:
            server = self.server.stop() if self.server is not None else None
        except (psutil.Error, OSError, RuntimeError):
            server = None
        self.container.stop()
        drops_after = listening.listen_drops()
        drops = drops_after - self._drops_before if None not in (drops_after, self._drops_before) else 0  # type: ignore[operator]
        self.usage = RunUsage(
            server=server,
            client_cpu_s=sum(cpu for cpu, _ in clients) if clients else math.nan,
            client_queued_s=sum(queued for _, queued in clients) if clients else math.nan,
            lab_cpu_s=time.process_time() - self._lab_before,  # type: ignore[operator]  # start() set it
            wall_s=time.monotonic() - self._began,  # type: ignore[operator]  # start() set it
            cores=self.server.cores if self.server is not None else cores_of(os.getpid()),
            listen_drops=drops,
            container=self.container if self.container.points else None,
        )
        return self.usage


def per_run_figures(run_usage: RunUsage | None, completed: int, duration_s: float) -> dict[str, Any]:
    """The figures metrics.Summary carries for a measured run: U, D and the rest, per the operational laws.

    utilization: U = server CPU seconds / the run's seconds (the utilization law's U;
    over 1 when several cores work). demand_ms: D = U / X = CPU seconds / requests
    (the service demand law). queued_ms: the wait for a CPU, per request, of the
    server's busiest thread (an event loop's only one); saturation_ms: of all its threads.
    client_demand_ms, client_queued_ms, lab_demand_ms: the same for the load
    client and for this notebook.
    """
    nan = math.nan
    figures = dict.fromkeys(
        (
            "server_cpu_s", "utilization", "demand_ms", "queued_ms", "saturation_ms", "client_demand_ms",
            "client_queued_ms", "lab_demand_ms",
        ),
        nan,
    )
    if run_usage is None or not completed:
        return figures | {"cores": 0, "listen_drops": 0}
    server = run_usage.server
    if server is not None:
        figures.update(
            server_cpu_s=server.cpu_s,
            utilization=server.cpu_s / duration_s if duration_s else nan,
            demand_ms=server.cpu_s / completed * 1000,
            queued_ms=server.busiest_queued_s / completed * 1000,
            saturation_ms=server.queued_s / completed * 1000,
        )
    figures.update(
        client_demand_ms=run_usage.client_cpu_s / completed * 1000,
        client_queued_ms=run_usage.client_queued_s / completed * 1000,
        lab_demand_ms=run_usage.lab_cpu_s / completed * 1000,
        cores=run_usage.cores,
        listen_drops=run_usage.listen_drops,
    )
    return figures


USE_HEADERS = (
    "run",
    "utilization: server CPU-s per s",
    "per core",
    "saturation: server threads' wait for a CPU, ms per request",
    "in flight, mean (of users)",
    "connects dropped, accept queue full",
    "errors",
    "D: server CPU per request, ms",
    "client CPU per request, ms",
    "this notebook's CPU per request, ms",
)


def use_table(summaries: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """(headers, rows) of a USE-method table (utilization, saturation, errors) for {name: metrics.Summary}.

    One call away in a lesson: `display(tables.markdown(*usage.use_table({"async": summary})))`.
    """
    rows: list[list[Any]] = []
    for name, s in summaries.items():
        per_core = s.utilization / s.cores if s.cores else math.nan
        rows.append([
            name, s.utilization, per_core, s.saturation_ms, f"{s.in_flight:.3g} ({s.concurrency})", s.listen_drops,
            s.errors,
            s.demand_ms, s.client_demand_ms, s.lab_demand_ms,
        ])
    return list(USE_HEADERS), rows
