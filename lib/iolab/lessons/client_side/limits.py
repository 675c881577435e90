"""Lesson 11's limits nobody sees, one library at a time.

Lesson 11's limits nobody sees: each library's fan-out above its default limit, in a client process.
"""

import json
import os
import urllib.request
from dataclasses import dataclass

from iolab import environment, load, neighbours, servers
from iolab.clients.library import LIBRARIES

from . import model

STATS_TIMEOUT_S = 5


def executor_threads():
    """The default executor's threads: min(32, os.cpu_count() + 4), from the CPUs the machine has, not the ones
    this process may use (concurrent/futures/thread.py:142 in Python 3.11)."""
    return min(32, (os.cpu_count() or 1) + 4)


@dataclass(frozen=True)
class Library:
    """One row of the lesson's table: a library, the limit it ships with, and where that limit is set."""

    name: str  # as the lesson prints it
    library: str  # the `library` client kind's option
    limit: int
    where: str  # file:line in the pinned version
    server: str = "tornado_app"
    route: str = "/async-sleep"


def libraries(fastapi_threads=40):
    """Every library the lesson measures, in the order it shows them."""
    return [
        Library("requests Session", "requests", 10, "requests/adapters.py:203-206 (pool_maxsize=10, pool_block=False)"),
        Library("requests, pool_block=True", "requests_pool_block", 10,
                "requests/adapters.py:206, urllib3/connectionpool.py:280"),
        Library("aiohttp ClientSession", "aiohttp", 100, "aiohttp/connector.py:992 (TCPConnector limit=100)"),
        Library("httpx AsyncClient", "httpx", 100, "httpx/_config.py:247 (Limits(max_connections=100))"),
        Library("Tornado AsyncHTTPClient", "tornado", 10, "tornado/simple_httpclient.py:116 (max_clients=10)"),
        Library("run_in_executor(None, ...)", "executor", executor_threads(),
                "concurrent/futures/thread.py:142 (min(32, os.cpu_count() + 4))"),
        Library("FastAPI def endpoint", "aiohttp", fastapi_threads,
                "anyio/_backends/_asyncio.py:3257 (CapacityLimiter(40))", "fastapi_app", "/sync-sleep"),
    ]


# httpx keeps at most 20 idle connections (httpx/_config.py:248, Limits(max_keepalive_connections=20)). httpcore
# 1.0.9 closes a freed connection while its pool holds more than that, idle or not: it counts every connection
# (httpcore/_async/connection_pool.py:292-295).
HTTPX_KEEPALIVE = 20
# Each library's T is at least this many times limit × D_c: the CPU of a round's calls then takes at most a third
# of the round, so the library's limit binds before its CPU does.
T_OVER_CPU = 3
T_STEP_MS = 50  # each T is rounded up to a whole step, so the table reads easily
MAX_T_MS = 5000  # a machine slower than that is judged by its CPU instead (the utilization law)


def churns(library):
    """True for requests without pool_block: past its pool it opens more connections instead of waiting."""
    return library.library == "requests"


def calls_at_once(library):
    """The program's concurrency: twice the library's limit, so the limit is what stops it."""
    return 2 * library.limit


def slots(library):
    """P: how many calls are on the wire at once, the smaller of the program's and the library's limits."""
    return calls_at_once(library) if churns(library) else min(calls_at_once(library), library.limit)


def connections_predicted(library, n):
    """(fewest, most) connections a library opens for n calls at its limit, from how it keeps them; None where the
    server does not count them. A pool that waits opens at most its limit. requests without pool_block opens one
    per thread past its pool of 10 and keeps 10. Tornado's simple client and urllib keep none: one per call. httpx
    past its 20 kept connections closes each one freed: one per call, bar those freed once 20 or fewer are left."""
    if library.server != "tornado_app":
        return None  # only tornado_app counts the connections it accepted
    if library.library == "requests":
        return library.limit + 1, n
    if library.library in ("tornado", "executor"):
        return n, n
    if library.library == "httpx" and slots(library) > HTTPX_KEEPALIVE:
        return max(1, n - HTTPX_KEEPALIVE), n
    return 1, min(library.limit, n)


def predicted_text(found):
    """A row's predicted connections as the table prints them: "200", or "11 to 20"."""
    if found is None:
        return "not counted"
    low, high = found
    return f"{low}" if low == high else f"{low} to {high}"


def cpu_per_call_ms(library, server, timeout_s):
    """D_c: the client's CPU per call in a short run with no wait, as many calls asked at once as the real run
    asks (httpx's pool spends more CPU a call the more calls queue in it). Its start-up CPU is spread over those
    calls, so D_c comes out a little high: T chosen from it errs long."""
    result = load.run_load(f"{server.url}{library.route}?ms=0", server=server, kind="library",
                           library=library.library, requests=calls_at_once(library),
                           concurrency=calls_at_once(library),
                           timeout_s=timeout_s, max_duration_s=2 * timeout_s, event_loop="asyncio")
    return result.usage.client_cpu_s / max(1, result.completed) * 1000


def choose_T_ms(library, D_c_ms, floor_ms):
    """The library's T: the lesson's limit_ms, or T_OVER_CPU × P × D_c if that is longer, in whole steps (P: the
    calls it keeps on the wire, 20 for requests, which does not wait)."""
    wanted = min(MAX_T_MS, max(floor_ms, T_OVER_CPU * slots(library) * D_c_ms))
    return int(T_STEP_MS * -(-wanted // T_STEP_MS))


def limit_read_back(row, cpus=None):
    """The L = X · Z a run should read back: P · Z / (Z + P · D). Each round's P calls pass one CPU (or two, the
    client's and the server's side by side) one after another, D each, so a round lasts Z + P · D; D is the
    client's CPU a call plus the server's on one CPU, the larger of the two on more, from this run. `cpus`: the
    CPUs to count (default: the run's usable CPUs, row["cpus"])."""
    client, server = row["client_cpu_ms_per_call"], row["server_cpu_ms_per_call"]
    D = client + server if (row["cpus"] if cpus is None else cpus) < 2 else max(client, server)
    P, T = row["limit"], row["T_ms"]
    return P * T / (T + P * D)


def round_burst_s(row):
    """The seconds of CPU one round's P calls need, client and server: the burst a CFS quota may run on more
    CPUs than its share, where the period's unused quota allows (environment.cpus_within)."""
    return row["limit"] * (row["client_cpu_ms_per_call"] + row["server_cpu_ms_per_call"]) / 1000


def predictions(plan):
    """Before the run: each library's limit, its calls, and the connections we predict it opens for them."""
    return [[library.name, slots(library), plan.rounds * slots(library),
             predicted_text(connections_predicted(library, plan.rounds * slots(library)))]
            for library in libraries(plan.fastapi_threads)]


def stats(server):
    """tornado_app's own counts (connections_opened, ...); {} from another server."""
    if server.name != "tornado_app":
        return {}
    with urllib.request.urlopen(server.url + "/stats", timeout=STATS_TIMEOUT_S) as answer:
        return json.load(answer)


def fan_out(library, server, rounds, floor_ms, timeout_s):
    """rounds × P calls of Z through `library`, at twice its limit, Z chosen by choose_T_ms from a short run's
    D_c; returns the row the lesson keeps."""
    P = slots(library)
    D_c_ms = cpu_per_call_ms(library, server, timeout_s)
    T_ms = choose_T_ms(library, D_c_ms, floor_ms)
    before = stats(server)
    with neighbours.watching() as watch:  # what else held the CPUs over this library's run
        result = load.run_load(f"{server.url}{library.route}?ms={T_ms}", server=server, kind="library",
                               library=library.library, requests=rounds * P, concurrency=calls_at_once(library),
                               timeout_s=timeout_s, max_duration_s=timeout_s * (rounds + 1), event_loop="asyncio")
    after = stats(server)
    used = result.usage
    # Every CPU second of the client and the server, and every second each waited for a CPU, in this run.
    work_s = used.client_cpu_s + used.client_queued_s + used.server.cpu_s + used.server.queued_s
    calls = [(sample.start, sample.end) for sample in result.samples]
    row = model.predict(library.name, P, T_ms / 1000, calls, work_s) if calls else {"how": library.name}
    row |= {
        "library": library.name, "option": library.library, "default_limit": library.limit, "where": library.where,
        "concurrency": calls_at_once(library), "errors": result.errors, "completed": result.completed,
        "expected_calls": rounds * P, "neighbours": watch.found.as_dict(), "short_run_cpu_ms": D_c_ms,
        "connections_predicted": connections_predicted(library, rounds * P),
        # Our own /stats call opens one connection too.
        "connections_opened": after["connections_opened"] - before["connections_opened"] - 1 if before else None,
        "client_cpu_ms_per_call": used.client_cpu_s / max(1, result.completed) * 1000,
        "server_cpu_ms_per_call": used.server.cpu_s / max(1, result.completed) * 1000,
        "cpus": environment.usable_cpus(),
        "calls_timed": [(sent - calls[0][0], answered - calls[0][0]) for sent, answered in sorted(calls)],
    }
    # Under a quota of one CPU, a round's short burst may still run client and server side by side.
    return row | {"burst_cpus": environment.cpus_within(round_burst_s(row)) if "limit" in row else row["cpus"]}


def run_all(plan):
    """Every library's fan-out, each server started and stopped here; a list of rows."""
    rows = []
    chosen = libraries(plan.fastapi_threads)
    for name in dict.fromkeys(library.server for library in chosen):
        options = {"threads": plan.fastapi_threads} if name == "fastapi_app" else {}
        with servers.serve(name, **options) as server:
            for library in chosen:
                if library.server == name:
                    rows.append(fan_out(library, server, plan.rounds, plan.limit_ms, plan.timeout_s))
    return rows


assert {library.library for library in libraries()} <= set(LIBRARIES)
