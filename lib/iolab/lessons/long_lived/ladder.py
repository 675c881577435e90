"""Section 4: each server's broadcasters against the floor.

The floor is one bare send() per subscriber, at the same moments.

Each server's broadcasters send to the same N WebSocket subscribers; each one's CPU per delivery is the server's
own figure for its loop. The floor is measured by Tornado's server too (`how=floor`: push_floor.send_to_all over
its subscribers' sockets), to the same subscribers, taking its turn between the broadcasters.
"""

import statistics

from iolab import neighbours, servers
from iolab.clients.held_subscribers import Held

from . import model
from .fanout import WAIT_S
from .memory import publish

# Each server's broadcasters (the `how` of /publish), from the library's own to the hand-built `frame`. Tornado's
# server also runs the floor, so the floor meets the receivers the hand-built one meets.
HOWS = (("tornado_push", ("loop", "await", "frame", "floor")), ("aiohttp_push", ("await", "tasks")),
        ("websockets_push", ("broadcast", "await")))
FLOOR = "floor"


def runs_of(server_name, hows, n, repeats, message_bytes):
    """({how: each broadcast's CPU per delivery (µs)}, what else held the CPUs meanwhile) for one server's
    broadcasters, `repeats` each. They take turns, a round of every `how` after another, so a slower or faster moment
    of the machine falls on all of them."""
    runs = {how: [] for how in hows}
    with neighbours.watching() as watch, servers.serve(server_name) as server, Held(server.url, "ws", n) as subscribers:
        for attempt in range(repeats + 1):  # the first round warms each broadcaster up
            for how in hows:
                answer = publish(server, message_bytes, how)
                subscribers.wait_for(answer["seq"], WAIT_S)
                if attempt:
                    runs[how].append(answer["cpu_s"] / n * 1e6)
    return runs, watch.found.as_dict()


def run(plan):
    """Every rung of HOWS and the floor, over `subscribers` WebSocket subscribers per server."""
    n = plan.subscribers
    rungs, found_floor = [], None
    for server_name, hows in HOWS:
        found, others = runs_of(server_name, hows, n, plan.repeats, plan.message_bytes)
        for how, runs in found.items():
            median = statistics.median(runs)
            if how == FLOOR:
                found_floor = {"server": server_name, "subscribers": n, "size": plan.message_bytes,
                               "cpu_us_per_send": median, "runs_us": runs, "neighbours": others}
                continue
            rungs.append({"server": server_name, "how": how, "label": f"{server_name} how={how}", "subscribers": n,
                          "runs_us": runs, "cpu_us_per_delivery": median, "neighbours": others})
    for rung in rungs:
        rung["floor_ratio"] = model.floor_ratio(rung["cpu_us_per_delivery"], found_floor["cpu_us_per_send"])
        rung["reach_ms"] = model.time_to_reach(n, rung["cpu_us_per_delivery"] * 1e-6) * 1000
    return {"floor": found_floor, "rungs": rungs}


def table(found, n):
    rows = [[rung["label"], rung["cpu_us_per_delivery"], rung["floor_ratio"], rung["reach_ms"],
             neighbours.held(rung.get("neighbours"))] for rung in found["rungs"]]
    floor_us = found["floor"]["cpu_us_per_send"]
    rows.append(["the floor: one send() each", floor_us, 1.0, model.time_to_reach(n, floor_us * 1e-6) * 1000,
                 neighbours.held(found["floor"].get("neighbours"))])
    return ["broadcaster", "µs per delivery", "× the floor", f"ms to reach {n:,}", neighbours.COLUMN], rows
