"""Answers in order, checked.

Pipelined batches whose answers all differ, so an answer out of its place cannot pass unseen.
"""

import tempfile
from dataclasses import dataclass
from pathlib import Path

from iolab import benchtools, environment, load, metrics, wrk_lua

TIMEOUT_S = 10
# Four different answers; the 1 ms wait makes the instant answers behind it ready first, and only an
# in-order server sends them after it.
PATHS = ["/", "/cpu?ms=0", "/async-sleep?ms=1", "/async-sleep?ms=0"]
BODIES = ["hello world\n", "burned 0 ms of CPU\n", "waited 1 ms without blocking\n", "waited 0 ms without blocking\n"]


def batch(depth):
    """The paths of one batch of `depth`, cycling through PATHS, and the body each must get."""
    return [PATHS[i % len(PATHS)] for i in range(depth)], [BODIES[i % len(BODIES)] for i in range(depth)]


@dataclass(frozen=True)
class OrderCheck:
    """One pipelined run whose every answer was compared with the one its request must get."""

    client: str
    depth: int
    connections: int
    checked: int
    out_of_order: int  # answers that were not their request's
    other_errors: int  # no answer at all (timeouts, resets)

    def row(self):
        return {"client": self.client, "depth": self.depth, "connections": self.connections, "checked": self.checked,
                "out_of_order": self.out_of_order, "other_errors": self.other_errors}


def with_lab_client(server, depth=16, connections=8, requests=16_000):
    """The lab's pipelined client: it learns each path's answer alone first, then checks every pipelined one."""
    paths, _ = batch(depth)
    result = load.run_load(
        server.url + "/", kind="pipelined", pipeline_depth=depth, pipeline_paths=paths, concurrency=connections,
        requests=requests, timeout_s=TIMEOUT_S, max_duration_s=60, processes=min(environment.usable_cores(), connections),
    )
    kinds = metrics.summarize(result).error_kinds
    out_of_order = kinds.get("out of order", 0)
    return OrderCheck("lab client", depth, connections, result.completed, out_of_order,
                      sum(kinds.values()) - out_of_order)


def with_wrk(server, depth=16, connections=4, duration_s=1):
    """wrk with a Lua script that compares every body with the one expected at its place; None without wrk."""
    if benchtools.missing_reason("wrk"):
        return None
    paths, bodies = batch(depth)
    with tempfile.TemporaryDirectory() as scratch:
        report = wrk_lua.run_pipelined(server.url + "/", paths, connections, duration_s,
                                       script_path=Path(scratch) / "order.lua",
                                       expected_bodies=bodies, threads=connections, timeout_s=TIMEOUT_S)
    return OrderCheck("wrk + Lua", depth, connections, report["checked"] or 0, report["order_errors"] or 0,
                      report["socket_errors"] + report["non_2xx"])
