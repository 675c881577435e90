"""Lesson 11's limits nobody sees, one library at a time.

Lesson 11's limits nobody sees: each library's fan-out above its default limit, in a client process.
"""

import json
import os
import urllib.request
from dataclasses import dataclass

from iolab import load, neighbours, servers
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


def churns(library):
    """True for requests without pool_block: past its pool it opens more connections instead of waiting."""
    return library.library == "requests"


def calls_at_once(library):
    """The program's concurrency: twice the library's limit, so the limit is what stops it."""
    return 2 * library.limit


def slots(library):
    """P: how many calls are on the wire at once, the smaller of the program's and the library's limits."""
    return calls_at_once(library) if churns(library) else min(calls_at_once(library), library.limit)


def stats(server):
    """tornado_app's own counts (connections_opened, ...); {} from another server."""
    if server.name != "tornado_app":
        return {}
    with urllib.request.urlopen(server.url + "/stats", timeout=STATS_TIMEOUT_S) as answer:
        return json.load(answer)


def fan_out(library, server, rounds, T_ms, timeout_s):
    """rounds × P calls of Z through `library`, at twice its limit; returns the row the lesson keeps."""
    P = slots(library)
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
    return row | {
        "library": library.name, "option": library.library, "default_limit": library.limit, "where": library.where,
        "concurrency": calls_at_once(library), "errors": result.errors, "completed": result.completed,
        "expected_calls": rounds * P, "neighbours": watch.found.as_dict(),
        # Our own /stats call opens one connection too.
        "connections_opened": after["connections_opened"] - before["connections_opened"] - 1 if before else None,
        "client_cpu_ms_per_call": used.client_cpu_s / max(1, result.completed) * 1000,
        "calls_timed": [(sent - calls[0][0], answered - calls[0][0]) for sent, answered in sorted(calls)],
    }


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
