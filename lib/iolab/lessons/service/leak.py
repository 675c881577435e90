"""Section 4: a pool whose holders a deadline cancels.

A pool of c slots, its handler written two ways.
service_app's /pool holds one of --pool slots for T ms under a deadline of t ms. A request asking to hold longer
than t is cancelled while it holds its slot: the leaky handler gives the slot back on the line after its wait,
which never runs; `async with` gives it back however the block ends.
"""

import math
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from iolab import neighbours
from iolab.load import run_load
from iolab.servers import serve

from . import model

TIMEOUT_S = 10


def cancel(url, count, timeout_ms, safe):
    """`count` requests at once that each ask to hold a slot twice the deadline: every one is cancelled."""
    query = {"ms": 2 * timeout_ms, "timeout_ms": timeout_ms, "safe": int(safe)}
    with ThreadPoolExecutor(max(1, count)) as pool:
        answers = list(pool.map(lambda _: requests.get(f"{url}/pool", params=query, timeout=TIMEOUT_S).status_code,
                                range(count)))
    return sum(1 for status in answers if status == 504)


def free_slots(url):
    return requests.get(f"{url}/stats", timeout=TIMEOUT_S, params={"reset": 1}).json()["pool_free"]


def throughput(url, slots, hold_ms, timeout_ms, safe, calls):
    """`calls` requests holding a slot hold_ms each, from 2 × `slots` users (a closed loop, so a request always
    waits for each slot as it frees): the rate they got through, and how many were cancelled instead (all of them
    once the pool is empty)."""
    with neighbours.watching() as watch:  # a rate over a fraction of a second: a neighbour's burst can halve it
        result = run_load(f"{url}/pool?ms={hold_ms}&timeout_ms={timeout_ms}&safe={int(safe)}", requests=calls,
                          concurrency=2 * slots, timeout_s=TIMEOUT_S)
    answered = [s for s in result.samples if s.status == 200]
    began = min(s.start for s in result.samples)
    ended = max(s.end for s in answered) if answered else began
    return {"answered": len(answered), "cancelled": sum(1 for s in result.samples if s.status == 504),
            "rate": len(answered) / (ended - began) if answered else 0.0, "seconds": ended - began,
            "neighbours": watch.found.as_dict() if watch.found else None}


def one_way(safe, slots, hold_ms, timeout_ms, cancelled, calls):
    """On a fresh server: the rate with the whole pool, then after `cancelled` cancellations, then after enough
    more to cancel every slot; the free slots after each."""
    row = {"how": "async with" if safe else "release on the next line", "safe": safe, "slots": slots,
           "hold_ms": hold_ms, "timeout_ms": timeout_ms, "steps": []}
    with serve("service_app", pool=slots) as server:
        before = throughput(server.url, slots, hold_ms, timeout_ms, safe, calls)
        row["steps"].append({"cancelled_so_far": 0, "free": free_slots(server.url), **before})
        for count in (cancelled, slots - cancelled):
            done = cancel(server.url, count, timeout_ms, safe)
            time.sleep(0.02)
            free = free_slots(server.url)
            after = throughput(server.url, slots, hold_ms, timeout_ms, safe, calls)
            so_far = row["steps"][-1]["cancelled_so_far"] + done
            row["steps"].append({"cancelled_so_far": so_far, "free": free, **after})
    predict(row, calls)
    return row


def predict(row, calls):
    """Each step's free slots, and its rate: n calls through s slots take ⌈n/s⌉ rounds of T, plus the run's ramp
    (its first request's way in, its last answer's way out), which the first step measures with the whole pool."""
    hold_s, first = row["hold_ms"] / 1000, row["steps"][0]
    row["ramp_s"] = max(0.0, first["seconds"] - math.ceil(calls / row["slots"]) * hold_s)
    for step in row["steps"]:
        step["predicted_free"] = row["slots"] if row["safe"] else max(0, row["slots"] - step["cancelled_so_far"])
        step["bottleneck_rate"] = model.pool_rate(step["predicted_free"], hold_s)
        step["predicted_rate"] = rate_through(step["predicted_free"], calls, hold_s, row["ramp_s"])


def rate_through(slots, calls, hold_s, ramp_s):
    """n calls through `slots` slots held T each, a closed loop always waiting at the pool: n/(⌈n/s⌉·T + ramp)."""
    return calls / (math.ceil(calls / slots) * hold_s + ramp_s) if slots else 0.0


def measure(slots, hold_ms, timeout_ms, cancelled, calls):
    """Both ways: the leaky one, then `async with`."""
    return [one_way(safe, slots, hold_ms, timeout_ms, cancelled, calls) for safe in (False, True)]
