"""One measured run: a client drives a server for a while.

The server's CPU per request (D), split user/system, and its system calls per request.

The client is wrk when installed (C, the fastest there is), else the lab's own
pipelined client in processes of its own; or, asked for by name, the batch
client (iolab.clients.batch), which checks every answer's echoed number a read
at a time. Speed and system calls come from two
separate runs: strace stops the server at every call, so a traced run counts
calls and never times anything.
"""

import math
import resource
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from iolab import benchtools, environment, load, metrics, neighbours, syscalls, usage, wrk_lua

TIMEOUT_S = 10  # per request
LAB_CLIENT_MAX_REQUESTS = 100_000_000  # the lab's client is bounded by its duration here, not its count


@dataclass(frozen=True)
class Drive:
    """What the client saw in one run: requests answered, how long, its own CPU, errors of any kind."""

    client: str  # "wrk", "lab client" or "batch client"
    requests: int
    seconds: float  # the window the client counted its requests in
    client_cpu_s: float
    errors: int
    threads: int = 1  # the client's threads of its own: wrk and the batch client run one, the lab client a process per core
    window_s: float = 0.0  # from the client's start to its end, start-up included: its CPU was counted over this

    @property
    def rps(self):
        return self.requests / self.seconds if self.seconds else 0.0


def numbered_paths(depth):
    """GET /?seq=0 ... /?seq=depth-1: a batch the batch server recognises whole, its answers each echoing its number."""
    return [f"/?seq={i}" for i in range(depth)]


def client_name():
    """The client this machine runs the lesson's timed runs with."""
    return "wrk" if benchtools.missing_reason("wrk") is None else "lab client"


def _children_cpu_s():
    # wrk's CPU, once children.run has reaped it.
    times = resource.getrusage(resource.RUSAGE_CHILDREN)
    return times.ru_utime + times.ru_stime


def drive(url, depth, connections, duration_s, paths=None, client=None):
    """Keep `connections` connections busy with batches of `depth` requests for `duration_s` whole seconds.

    `client`: "wrk", "lab client", "batch client" (which sends its own numbered requests, GET /?seq=N), or None for
    the fastest this machine has.
    """
    paths = list(paths or ["/"])
    client = client or client_name()
    if client == "batch client":
        began = time.perf_counter()
        result = load.run_batches(url, depth, connections, duration_s, timeout_s=TIMEOUT_S)
        return Drive("batch client", result.requests, result.seconds, result.client_cpu_s, result.error_count, 1,
                     time.perf_counter() - began)
    if client == "wrk":
        before = _children_cpu_s()
        began = time.perf_counter()
        if depth == 1 and paths == ["/"]:
            report = benchtools.run_wrk(url, connections, duration_s, timeout_s=TIMEOUT_S)
        else:
            batch = [paths[i % len(paths)] for i in range(depth)]
            with tempfile.TemporaryDirectory() as scratch:
                report = wrk_lua.run_pipelined(url, batch, connections, duration_s,
                                               script_path=Path(scratch) / "batch.lua",
                                               timeout_s=TIMEOUT_S)
        wall = time.perf_counter() - began
        errors = report["socket_errors"] + report["non_2xx"]
        # wrk's own figure divides by the duration it was given; its start-up is not in it.
        seconds = report["requests"] / report["rps"] if report["rps"] else wall
        return Drive("wrk", report["requests"], seconds, _children_cpu_s() - before, errors, 1, wall)
    processes = min(environment.usable_cores(), connections)
    result = load.run_load(
        url, kind="pipelined", pipeline_depth=depth, pipeline_paths=paths, concurrency=connections,
        requests=LAB_CLIENT_MAX_REQUESTS, max_duration_s=duration_s, timeout_s=TIMEOUT_S, record="aggregate",
        processes=processes,
    )
    summary = metrics.summarize(result)
    client_cpu = result.usage.client_cpu_s if result.usage is not None else math.nan
    # Its processes' CPU is read from the go to the end of the run (RunUsage), the window it counts requests in.
    return Drive("lab client", summary.completed, result.duration_s, client_cpu, summary.errors, processes,
                 result.duration_s)


def _tree_times(pid):
    """{pid: (user s, system s)} of the server's process tree (gunicorn's worker, nginx's, the server itself)."""
    times = {}
    for process in usage.process_tree(psutil.Process(pid)):
        try:
            cpu = process.cpu_times()
            times[process.pid] = (cpu.user, cpu.system)
        except psutil.Error:
            continue  # gone while we looked
    return times


@dataclass(frozen=True)
class Measured:
    """One server at one depth: throughput, D and its parts in microseconds, system calls per request."""

    label: str
    depth: int
    batched: bool
    client: str
    requests: int
    rps: float
    demand_us: float  # D: the server's CPU per request (every process of it)
    user_us: float  # of which in user space: Python, the interpreter, C extensions
    system_us: float  # of which in the kernel, on the server's behalf: its system calls
    client_us: float  # the client's CPU per request
    queued_us: float  # per request, how long the server's busiest thread was ready to run but waited for a CPU
    errors: int
    syscalls_per_request: float | None = None  # None where strace cannot count here
    writes_per_request: float | None = None
    syscalls_skipped: str | None = None  # why system calls were not counted
    top_calls: dict | None = None  # the most frequent system calls, per request, by name
    cores: int = 1  # the CPUs the server could run on
    connections: int = 1
    client_threads: int = 1  # wrk and the batch client: one thread; the lab client: a process per core
    seconds: float = 0.0  # the window the client counted requests in
    window_s: float = 0.0  # the longest window any CPU of this run was counted over (the server's, the client's)
    counted_requests: int = 0  # requests answered while strace counted
    # The busiest thread's CPU per request: the event loop's, which the one-thread law bounds. D also holds the
    # process's other threads (the parent watchdog wakes four times a second), so X·D may read a little over 1.
    thread_us: float = math.nan
    neighbours: dict | None = None  # what else held the CPUs over the timed run (iolab.neighbours, as_dict)

    @property
    def one_process_ceiling_rps(self):
        """The utilization law for one thread: it is busy D per request, so at most 1 / D requests a second."""
        return ceilings(self.demand_us, self.client_us, self.cores, self.client_threads, self.thread_us)["server's thread"]

    @property
    def machine_ceiling_rps(self):
        """The machine's reach (ceilings(): the server's thread, the client's threads, both sharing the cores)."""
        return min(ceilings(self.demand_us, self.client_us, self.cores, self.client_threads, self.thread_us).values())

    @property
    def edges(self):
        """How much a figure over a ceiling can come from the windows alone: CPU counted over window_s, requests over
        seconds, so X·D can read as high as window_s / seconds where the thread was busy all along."""
        return max(self.window_s / self.seconds, 1.0) if self.seconds > 0 else math.inf

    def row(self):
        return {**asdict(self), "edges": self.edges}


def others_held(row):
    """The share of a run others held the CPUs (a Measured.row()'s neighbours), for a table: "38%", or "unknown"."""
    return neighbours.held(row.get("neighbours"))


def ceilings(demand_us, client_us, cores, client_threads=1, thread_us=math.nan):
    """The utilization law three times, in req/s: the server's one thread (1 / D), the client's own threads
    (threads / the client's CPU per request), and both sharing the cores (cores / (D + client)).
    As lesson 06's model counts the load client; the smallest is the machine's reach. With `thread_us`, the
    server's thread is bounded by its own CPU per request, not its whole process's."""
    return {
        "server's thread": 1e6 / (thread_us if math.isfinite(thread_us) else demand_us),
        "client's threads": client_threads * 1e6 / client_us if client_us > 0 else math.inf,
        "the cores, shared": cores * 1e6 / (demand_us + client_us),
    }


def pair_reach(pair, cores):
    """What a server and its client can reach together, in req/s: the smallest of ceilings() for a Measured pair."""
    return min(ceilings(pair.demand_us, pair.client_us, cores, pair.client_threads, pair.thread_us).values())


def measure(label, server, *, depth=1, connections=64, duration_s=2, batched=True, count=True, paths=None,
            client=None):
    """Time `server` under load at `depth`, then (if `count`) count its system calls in a second, shorter run."""
    before = _tree_times(server.pid)
    meter = usage.measure(server)
    with neighbours.watching() as watch:
        drive_ = drive(server.url + "/", depth, connections, duration_s, paths, client)
    used = meter.stop()
    after = _tree_times(server.pid)
    server.check()
    requests = max(drive_.requests, 1)
    deltas = {pid: (after[pid][0] - before.get(pid, (0, 0))[0], after[pid][1] - before.get(pid, (0, 0))[1])
              for pid in after}
    user_s = sum(user for user, _ in deltas.values())
    system_s = sum(system for _, system in deltas.values())
    # The exact clock for the total; the ticks only to split it between user and system.
    total_s = used.cpu_s if used.cpu_s > 0 else user_s + system_s
    user_share = user_s / (user_s + system_s) if user_s + system_s > 0 else math.nan
    busiest = max(deltas, key=lambda pid: sum(deltas[pid])) if deltas else server.pid
    per_request = writes = skipped = top = None
    counted = 0
    if count:
        per_request, writes, skipped, top, counted = count_syscalls(server, busiest, depth, connections, paths, client)
    return Measured(
        label=label, depth=depth, batched=batched, client=drive_.client, requests=drive_.requests, rps=drive_.rps,
        demand_us=total_s / requests * 1e6, user_us=total_s * user_share / requests * 1e6,
        system_us=total_s * (1 - user_share) / requests * 1e6, client_us=drive_.client_cpu_s / requests * 1e6,
        queued_us=used.busiest_queued_s / requests * 1e6 if math.isfinite(used.busiest_queued_s) else math.nan,
        errors=drive_.errors, syscalls_per_request=per_request, writes_per_request=writes, syscalls_skipped=skipped,
        top_calls=top, cores=used.cores, connections=connections, client_threads=drive_.threads,
        seconds=drive_.seconds, window_s=max(used.wall_s, drive_.window_s), counted_requests=counted,
        thread_us=used.busiest_cpu_s / requests * 1e6, neighbours=watch.found.as_dict() if watch.found else None,
    )


STRACE_DURATION_S = 1
TOP_CALLS = 4
# What a server calls once per connection, not per request: accept4, setsockopt, registering with epoll and
# leaving it, close. The client connects inside the counted window, so these are in the count.
SETUP_CALLS_PER_CONNECTION = 10


def counted_at_edges(row, per_request, setup=False):
    """How far a count per request (system calls, or writes) can stray from `per_request` by the counted window alone.

    strace counts from before the client connects to after it stops; the client counts the answers it read in between.
    At each edge a connection can have one batch in flight (depth requests of `per_request` calls each), counted by one
    side and not the other; with `setup`, each connection's own calls are counted too. Spread over the requests
    counted, from this run's own figures: `row` is a Measured.row().
    """
    per_connection = 2 * row["depth"] * per_request + (SETUP_CALLS_PER_CONNECTION if setup else 0)
    return row["connections"] * per_connection / row["counted_requests"]


def count_syscalls(server, pid, depth, connections, paths=None, client=None):
    """(system calls per request, writes per request, None, {the most frequent calls: per request}, requests counted)
    of process `pid`, from a run under strace; (None, None, why, None, 0) where strace cannot count here."""
    try:
        with syscalls.counting(pid) as counts:
            drive_ = drive(server.url + "/", depth, connections, STRACE_DURATION_S, paths, client)
    except syscalls.SyscallCountUnavailable as error:
        return None, None, str(error), None, 0
    requests = drive_.requests
    if not requests:
        return None, None, "no request was answered while strace counted", None, 0
    top = sorted(counts.calls.items(), key=lambda item: -item[1])[:TOP_CALLS]
    return counts.total / requests, counts.of(syscalls.WRITES) / requests, None, {
        name: calls / requests for name, calls in top}, requests
