"""Section 4: the ladder of broadcasters, against the floor.

Section 4: each server's broadcasters send to the same N WebSocket subscribers; each one's CPU per delivery is
the server's own figure for its loop; the floor, one bare send per subscriber, is measured beside them.
"""

import statistics

from iolab import push_floor, servers
from iolab.clients.held_subscribers import Held

from . import model
from .fanout import WAIT_S
from .memory import publish

# Each server's broadcasters (the `how` of /publish), from the library's own to the hand-built `frame`.
HOWS = (("tornado_push", ("loop", "await", "frame")), ("aiohttp_push", ("await", "tasks")),
        ("websockets_push", ("broadcast", "await")))


def rungs_of(server_name, hows, n, repeats, message_bytes):
    """One rung per broadcaster of one server: the median of its loop's CPU over `repeats` broadcasts, per delivery."""
    rungs = []
    with servers.serve(server_name) as server, Held(server.url, "ws", n) as subscribers:
        for how in hows:
            runs = []
            for attempt in range(repeats + 1):  # the first warms the broadcaster up
                answer = publish(server, message_bytes, how)
                subscribers.wait_for(answer["seq"], WAIT_S)
                if attempt:
                    runs.append(answer["cpu_s"] / n * 1e6)
            rungs.append({"server": server_name, "how": how, "label": f"{server_name} how={how}", "subscribers": n,
                          "runs_us": runs, "cpu_us_per_delivery": statistics.median(runs)})
    return rungs


def run(plan):
    """The floor over `subscribers` loopback connections, then every rung of HOWS over as many subscribers."""
    n = plan.subscribers
    found_floor = push_floor.floor(n, plan.message_bytes, plan.repeats)
    rungs = [rung for server, hows in HOWS for rung in rungs_of(server, hows, n, plan.repeats, plan.message_bytes)]
    for rung in rungs:
        rung["floor_ratio"] = model.floor_ratio(rung["cpu_us_per_delivery"], found_floor["cpu_us_per_send"])
        rung["reach_ms"] = model.time_to_reach(n, rung["cpu_us_per_delivery"] * 1e-6) * 1000
    return {"floor": found_floor, "rungs": rungs}


def table(found, n):
    rows = [[rung["label"], rung["cpu_us_per_delivery"], rung["floor_ratio"], rung["reach_ms"]]
            for rung in found["rungs"]]
    floor_us = found["floor"]["cpu_us_per_send"]
    rows.append(["the floor: one send() each", floor_us, 1.0, model.time_to_reach(n, floor_us * 1e-6) * 1000])
    return ["broadcaster", "µs per delivery", "× the floor", f"ms to reach {n:,}"], rows
