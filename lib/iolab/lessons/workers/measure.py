"""One measured run of a server configuration on one handler.

Throughput, latency, and every party's CPU per request.
"""

import math
import os
import time
from dataclasses import asdict, dataclass

import psutil

from iolab import environment, load, metrics, neighbours, servers, usage

from . import cores

# The three kinds of work, as the contract's routes. `{wait_ms}` and `{cpu_ms}` come from the lesson's parameters.
HANDLERS = {
    "hello": "/",
    "wait": "/sync-sleep?ms={wait_ms}",
    "cpu": "/cpu?ms={cpu_ms}",
}
ROLES = ("app", "nginx", "supervisor")
SPLIT_AT = (0.2, 0.4, 0.6)  # the shares of a run's expected length at which the connections' spread is read
SPREAD_WAIT_S = 1.0  # how long the users' connections may take to be accepted, before the go, when the spread is read
TIMEOUT_S = 30.0


def handler_path(handler, wait_ms, cpu_ms):
    return HANDLERS[handler].format(wait_ms=wait_ms, cpu_ms=cpu_ms)


def role(process):
    """'app' for a Python process that runs the application (no children of its own), 'nginx' for an nginx
    worker, 'supervisor' for what only starts and watches them (wrappers, gunicorn's arbiter, nginx's master)."""
    name = process.name()
    if name == "nginx":
        return "nginx" if "worker" in " ".join(process.cmdline()) else "supervisor"
    return "supervisor" if process.children() else "app"


def cpu_by_role(pid):
    """{role: [CPU seconds so far, seconds queued for a CPU, processes]} of a server's process tree."""
    found = {name: [0.0, 0.0, 0] for name in ROLES}
    for process in usage.process_tree(psutil.Process(pid)):
        try:
            kind = role(process)
            found[kind][0] += usage.process_cpu_s(process) + usage.reaped_children_cpu_s(process)
            found[kind][1] += usage.queued_s(process)
            found[kind][2] += 1
        except psutil.Error:
            continue  # gone between listing and reading: its CPU moved to its parent's counters
    return found


def sockets_per_app_process(server):
    """{pid: sockets it has open} for each application process: counted from /proc/PID/fd, which is quick where
    reading every TCP connection of the machine (psutil.net_connections) is not."""
    held = {}
    for process in usage.process_tree(psutil.Process(server.pid)):
        try:
            if role(process) != "app":
                continue
            fds = os.listdir(f"/proc/{process.pid}/fd")
        except (psutil.Error, OSError):
            continue
        count = 0
        for fd in fds:
            try:
                count += os.readlink(f"/proc/{process.pid}/fd/{fd}").startswith("socket:")
            except OSError:
                continue  # closed while we looked
        held[process.pid] = count
    return held


def connections_held(before, readings):
    """Client connections each application process held, on average over `readings` of sockets_per_app_process
    (less the sockets it had when idle, `before`), largest first, rounded to whole connections."""
    if not readings:
        return ()
    totals = {}
    for reading in readings:
        for pid, count in reading.items():
            totals[pid] = totals.get(pid, 0) + max(0, count - before.get(pid, 0))
    return tuple(sorted((round(total / len(readings)) for total in totals.values()), reverse=True))


def spread_once_connected(server, users, idle, limit_s=SPREAD_WAIT_S):
    """Client connections each application process holds (largest first) once all `users` have been accepted, or
    as many as were when `limit_s` ran out; `idle` is sockets_per_app_process before the users came."""
    deadline = time.monotonic() + limit_s
    while True:
        spread = connections_held(idle, [sockets_per_app_process(server)])
        if sum(spread) >= users or time.monotonic() >= deadline:
            return spread
        time.sleep(0.005)


@dataclass(frozen=True)
class Run:
    """What one run measured. Demands are CPU milliseconds per request (D = U / X); shares are of the cores' time."""

    server: str
    options: dict
    handler: str
    path: str
    users: int
    keep_alive: bool
    completed: int
    errors: int
    rps: float
    mean_ms: float
    p99_ms: float
    duration_s: float
    server_demand_ms: float  # all the server's processes
    app_demand_ms: float  # the processes running Python application code (gunicorn workers, Tornado, threaded_app)
    nginx_demand_ms: float
    app_queued_ms: float  # per request, how long the application's threads waited for a free core
    app_processes: int
    client_demand_ms: float  # the load client's processes
    kernel_demand_ms: float  # interrupt work the kernel did (mostly loopback packets), for reference
    others_share: float  # taken by programs that are not this lesson's: the run's disturbance
    idle_share: float  # no one ran
    cores: float  # usable CPUs: the affinity's, or fewer under a container's CPU quota
    connections: tuple = ()  # client connections per application process, read during the run (largest first)
    connections_at_go: tuple = ()  # the same, read once every user had connected, before the run began
    throttled: int = 0  # times the container's CPU quota stopped it during the run (iolab.neighbours)
    throttled_s: float = 0.0  # how long in all
    # The span the cores' shares are of: from before the load client started to after it ended, so longer than
    # duration_s, the client's own window. others_share x window_s x cores is what other programs took in it.
    window_s: float = 0.0
    neighbours: dict | None = None  # what else held the CPUs over the same window (iolab.neighbours, as_dict)

    def as_dict(self):
        return asdict(self)


def run(server, path, requests, users, *, handler="", keep_alive=True, client="raw", client_processes=1,
        read_split=False, expected_s=1.0):
    """Run a closed-loop load of `requests` from `users` against a started server and measure who spent what.

    With `read_split`, the connections each application process holds are read a few times while the run is under
    way (at the SPLIT_AT shares of `expected_s`); and, where the users keep their connections (keep-alive, the raw
    client), every user connects before the run begins and the spread is read then too (a prediction may use it: it
    is known before the measured window).
    """
    cpus = cores.usable_cores()
    idle_sockets = sockets_per_app_process(server) if read_split else {}
    at_go = []
    ahead = read_split and keep_alive and client == "raw"  # the users can connect first, and keep what they opened

    def read_spread_at_go():
        at_go.append(spread_once_connected(server, users, idle_sockets))

    before_roles = cpu_by_role(server.pid)
    before_cores, before_others = cores.read(cpus), neighbours.read()
    began = time.monotonic()
    pending = load.start_load(
        server.url + path, requests=requests, concurrency=users, kind=f"closed_{client}", processes=client_processes,
        server=server, keep_alive=keep_alive, timeout_s=TIMEOUT_S, max_duration_s=max(60.0, 10 * expected_s),
        before_go=read_spread_at_go if ahead else None, **({"connect_first": True} if ahead else {}),
    )
    result, readings = _wait_reading(pending, server, read_split, expected_s)
    wall_s = time.monotonic() - began
    after_cores, others = cores.read(cpus), neighbours.between(before_others, neighbours.read())
    after_roles = cpu_by_role(server.pid)
    server.check()
    spent = {name: after_roles[name][0] - before_roles[name][0] for name in ROLES}
    usable = environment.usable_cpus(len(cpus))
    use = cores.between(before_cores, after_cores, wall_s, sum(spent.values()), usable)
    summary = metrics.summarize(result)
    done = summary.completed
    return Run(
        server=server.name, options=dict(getattr(server, "lesson_options", {})), handler=handler, path=path,
        users=users, keep_alive=keep_alive, completed=done, errors=summary.errors,
        rps=summary.rps, mean_ms=summary.mean_ms, p99_ms=summary.p99_ms, duration_s=summary.duration_s,
        **_demands_ms(spent, after_roles["app"][1] - before_roles["app"][1], use.interrupts_s, done),
        app_processes=after_roles["app"][2],
        client_demand_ms=summary.client_demand_ms,
        others_share=use.others_share,
        idle_share=use.idle_share,
        cores=usable,
        connections=connections_held(idle_sockets, readings),
        connections_at_go=at_go[0] if at_go else (),
        throttled=others.throttled,
        throttled_s=others.throttled_s,
        window_s=wall_s,
        neighbours=others.as_dict(),
    )


def _wait_reading(pending, server, read_split, expected_s):
    """Wait for a started load's result; with `read_split`, read the connections each application process holds at
    the SPLIT_AT shares of `expected_s` meanwhile. Returns (result, readings)."""
    readings = []
    try:
        for share in SPLIT_AT if read_split else ():
            while not pending.done() and pending.client_time_s < share * expected_s:
                time.sleep(0.01)
            reading = sockets_per_app_process(server)
            if pending.done():  # the users were leaving while we counted: the count is not the run's
                break
            readings.append(reading)
        return pending.wait(), readings
    finally:
        pending.stop()


def _demands_ms(spent, app_queued_s, interrupts_s, done):
    """Each party's seconds over the `done` requests, in ms per request (NaN where none was done)."""
    def per_request_ms(seconds):
        return seconds / done * 1000 if done else math.nan

    return {"server_demand_ms": per_request_ms(sum(spent.values())), "app_demand_ms": per_request_ms(spent["app"]),
            "nginx_demand_ms": per_request_ms(spent["nginx"]), "app_queued_ms": per_request_ms(app_queued_s),
            "kernel_demand_ms": per_request_ms(interrupts_s)}


def start(name, **options):
    """servers.start, remembering the options so every Run can say which configuration it measured."""
    server = servers.start(name, **options)
    server.lesson_options = options
    return server
