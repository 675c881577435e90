"""Lesson 11's blocking call, and how to find it.

Lesson 11's blocking call: requests.get in an async def, asyncio's debug mode catching it, FastAPI's def and async def.
"""

import asyncio
import contextlib
import itertools
import logging
import math
import re
import threading
import time

import aiohttp
import requests

from iolab import registry, servers
from iolab.params import check_range

CALL_LIMIT_S = 30  # no request of this module waits longer
FASTAPI_THREADS = registry.get("fastapi_app").options["threads"].default  # anyio's 40, set where fastapi_app.py says
_demo_numbers = itertools.count(1)


@contextlib.asynccontextmanager
async def session_for(server):
    """An aiohttp session with no connection limit of its own: the calls we start are the calls that go out."""
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(server.url, connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=CALL_LIMIT_S)) as session:
        yield session
    await asyncio.sleep(0)  # the closed connections' transports close on the loop's next turn


async def timed(call, began):
    """Run one call; returns (sent, answered) in seconds since `began`."""
    sent = time.monotonic() - began
    await call()
    return sent, time.monotonic() - began


async def fan_out(calls, make_call):
    """`calls` calls started at once under gather: (seconds until the last answered, [(sent, answered), ...])."""
    began = time.monotonic()
    rows = await asyncio.gather(*(timed(make_call, began) for _ in range(calls)))
    return time.monotonic() - began, [list(row) for row in rows]


# --- 1. requests.get inside an async def: one call at a time, whatever gather asked for --------------

async def fetch_blocking(url):
    """The mistake: requests.get waits on the thread, and the thread is the event loop's."""
    requests.get(url, timeout=CALL_LIMIT_S).raise_for_status()


async def in_async_def(calls=5, T_ms=200):
    """`calls` calls of T_ms to tornado_app under gather: with requests.get in an async def, then with aiohttp."""
    check_range("calls", calls, 2, 40)
    check_range("T_ms", T_ms, 50, 2000)
    with servers.serve("tornado_app") as server:
        path = f"/async-sleep?ms={T_ms}"
        blocking_s, blocking_rows = await fan_out(calls, lambda: fetch_blocking(server.url + path))
        async with session_for(server) as session:

            async def fetch(path=path):
                async with session.get(path) as response:
                    response.raise_for_status()
                    await response.read()

            await fetch("/async-sleep?ms=0")  # the first connection's cost kept out of the comparison
            overhead_s, _ = await fan_out(calls, lambda: fetch("/async-sleep?ms=0"))
            awaiting_s, awaiting_rows = await fan_out(calls, fetch)
    return {
        "calls": calls, "T_ms": T_ms, "overhead_s": overhead_s,
        "blocking": {"s": blocking_s, "predicted_s": calls * T_ms / 1000, "rows": blocking_rows},
        "awaiting": {"s": awaiting_s, "predicted_s": T_ms / 1000, "rows": awaiting_rows},
    }


# --- 2. asyncio's debug mode names the coroutine that held the loop ------------------------------------

async def fetch_with_time_sleep(ms):
    """Stands for any blocking call (requests.get, a driver that is not async): the loop waits with it."""
    time.sleep(ms / 1000)


async def fetch_with_asyncio_sleep(ms):
    """The same wait, awaited: the loop runs other callbacks meanwhile."""
    await asyncio.sleep(ms / 1000)


_TOOK = re.compile(r"coro=<(?P<coroutine>\w+)\(\).*took (?P<seconds>[\d.]+) seconds")


class SlowCallbacks(logging.Filter):
    """Catches the "Executing ... took N seconds" warnings that one thread's loop writes to the "asyncio" logger.

    A filter on the logger, not a handler: records from our thread stop here, so the worker thread never prints
    (neither through the notebook's handlers nor Python's last-resort stderr); other threads' records pass untouched.
    """

    def __init__(self, thread_name):
        super().__init__()
        self.thread_name = thread_name
        self.warnings = []

    def filter(self, record):
        if record.threadName != self.thread_name:
            return True
        match = _TOOK.search(record.getMessage())
        if match:
            self.warnings.append({"coroutine": match["coroutine"], "took_s": float(match["seconds"]),
                                  "message": record.getMessage()})
        return False


async def debug_mode(calls=3, T_ms=200):
    """`calls` blocking coroutines, then `calls` awaiting ones, on a loop in debug mode with slow_callback_duration
    at Z/2: the warnings it writes, each with the coroutine's name and how long it held the loop.

    The demo runs on a loop of its own, in a thread of its own, not on the notebook's: the kernel's loop runs
    ipykernel's callbacks too, so debug mode there would report their slow steps along with ours, and switching a
    running loop's debug flag on and off leaves whatever it started meanwhile half-instrumented. A fresh loop sees
    only our coroutines and is closed with the thread.
    """
    check_range("calls", calls, 1, 10)
    check_range("T_ms", T_ms, 50, 2000)
    threshold_s = T_ms / 2000  # below T, so a blocking call of T is caught; far above an awaiting step's few µs

    async def demo(coroutine):
        asyncio.get_running_loop().slow_callback_duration = threshold_s
        began = time.monotonic()
        await asyncio.gather(*(coroutine(T_ms) for _ in range(calls)))
        return time.monotonic() - began

    result = {"calls": calls, "T_ms": T_ms, "threshold_s": threshold_s}
    for key, coroutine in (("blocking", fetch_with_time_sleep), ("awaiting", fetch_with_asyncio_sleep)):
        caught = SlowCallbacks(f"iolab-asyncio-debug-{next(_demo_numbers)}")
        logger = logging.getLogger("asyncio")
        logger.addFilter(caught)
        try:
            took_s = await in_a_thread(caught.thread_name, lambda coroutine=coroutine: asyncio.run(demo(coroutine), debug=True))
        finally:
            logger.removeFilter(caught)
        result[key] = {"coroutine": coroutine.__name__, "s": took_s, "warnings": caught.warnings}
    return result


async def in_a_thread(name, work):
    """Run `work()` in a new thread named `name`; await its result without blocking the caller's loop."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def settle(outcome, value):
        if not done.done():
            (done.set_result if outcome == "result" else done.set_exception)(value)

    def run():
        try:
            value = ("result", work())
        except BaseException as error:  # handed to the awaiting side, which raises it: the thread never prints
            value = ("error", error)
        loop.call_soon_threadsafe(settle, *value)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    try:
        return await done
    finally:
        thread.join(CALL_LIMIT_S)  # it is done or ends within its own bounded run


# --- 3. FastAPI: def endpoints in a pool of 40, an async def that calls time.sleep one at a time --------

async def fastapi_endpoints(calls=5, pool_calls=80, T_ms=200, threads=None):
    """fastapi_app's three ways to wait T_ms, each called at once by an aiohttp client: /blocking-sleep (async def
    calling time.sleep) `calls` times; /sync-sleep (def, anyio's pool) and /async-sleep (async def awaiting)
    `pool_calls` times. Each predicted as rounds x Z plus the same run's overhead (pool_calls calls of ms=0)."""
    check_range("calls", calls, 2, 40)
    check_range("pool_calls", pool_calls, 2, 400)
    check_range("T_ms", T_ms, 50, 2000)
    options = {} if threads is None else {"threads": check_range("threads", threads, 1, 200)}
    limit = registry.get("fastapi_app").at_once(**options)
    with servers.serve("fastapi_app", **options) as server:
        async with session_for(server) as session:

            async def fetch(path):
                async with session.get(path) as response:
                    response.raise_for_status()
                    await response.read()

            await fan_out(pool_calls, lambda: fetch("/sync-sleep?ms=0"))  # starts the pool's threads: not measured
            overhead_s, _ = await fan_out(pool_calls, lambda: fetch("/async-sleep?ms=0"))
            runs = {}
            for key, path, count, rounds in (
                ("async_def_awaiting", "/async-sleep", pool_calls, 1),
                ("def_in_pool", "/sync-sleep", pool_calls, math.ceil(pool_calls / limit)),
                ("async_def_blocking", "/blocking-sleep", calls, calls),
            ):
                s, rows = await fan_out(count, lambda path=path: fetch(f"{path}?ms={T_ms}"))
                runs[key] = {"path": path, "calls": count, "rounds": rounds, "s": s, "rows": rows,
                             "predicted_s": rounds * T_ms / 1000 + overhead_s,
                             "read_back_limit": count / s * T_ms / 1000}  # Little: L = X x T
    return {"T_ms": T_ms, "threads": limit, "overhead_s": overhead_s, **runs}


# --- What the notebook prints, and the claims -------------------------------------------------------------

def show(result):
    """A few lines on what one run measured, in words."""
    if "blocking" in result and "warnings" in result["blocking"]:
        print(f"Debug mode, slow_callback_duration = {result['threshold_s'] * 1000:.0f} ms:")
        if result["blocking"]["warnings"]:
            print("  asyncio's own words, the first time:", result["blocking"]["warnings"][0]["message"])
        for key in ("blocking", "awaiting"):
            run = result[key]
            print(f"  {run['coroutine']}: {len(run['warnings'])} warnings, {run['s'] * 1000:.0f} ms in all")
            for warning in run["warnings"]:
                print(f"    {warning['coroutine']}() held the loop {warning['took_s'] * 1000:.0f} ms")
    elif "blocking" in result:
        for key, how in (("blocking", "requests.get in an async def"), ("awaiting", "aiohttp, awaited")):
            run = result[key]
            print(f"{how}: {result['calls']} calls of {result['T_ms']} ms took {run['s'] * 1000:.0f} ms "
                  f"(predicted {run['predicted_s'] * 1000:.0f} ms plus overhead).")
    else:
        for key, how in (("async_def_awaiting", "async def, await asyncio.sleep"),
                         ("def_in_pool", f"def, in anyio's pool of {result['threads']}"),
                         ("async_def_blocking", "async def, time.sleep")):
            run = result[key]
            print(f"{how}: {run['calls']} calls took {run['s'] * 1000:.0f} ms, predicted {run['predicted_s'] * 1000:.0f}"
                  f" ({run['rounds']} round(s) of {result['T_ms']} ms); served {run['read_back_limit']:.1f} at once.")


def add_claims(claims, result):
    """Add this module's claims about `result` (the notebook's "blocking" dict: in_async_def under "gather",
    debug_mode under "debug", fastapi_endpoints under "fastapi") to an iolab.claims.Claims; missing parts skip."""
    run = result.get("gather")
    if run is None:
        claims.skip("blocking: requests.get in an async def runs one call at a time", "not run")
    else:
        n, T = run["calls"], run["T_ms"] / 1000
        claims.nearer(f"blocking: {n} requests.get calls in async defs under gather take n x Z",
                      run["blocking"]["s"], n * T + run["overhead_s"], T + run["overhead_s"], "s", ".3f")
        claims.nearer(f"blocking: {n} aiohttp calls under gather take Z", run["awaiting"]["s"],
                      T + run["overhead_s"], n * T + run["overhead_s"], "s", ".3f")
    run = result.get("debug")
    if run is None:
        claims.skip("blocking: asyncio's debug mode names the blocking coroutine", "not run")
    else:
        warned, quiet = run["blocking"]["warnings"], run["awaiting"]["warnings"]
        names = sorted({warning["coroutine"] for warning in warned})
        claims.check("debug mode: one slow-callback warning per blocking call, naming its coroutine",
                     len(warned) == run["calls"] and names == [run["blocking"]["coroutine"]],
                     f"{len(warned)} warnings naming {names}")
        T = run["T_ms"] / 1000
        if warned:
            # Bounds from this run: each call slept T, and every hold lies inside the run's own time (asyncio rounds
            # to the ms). A CPU shared with a hog can add to a hold; it cannot make one shorter than Z.
            held = sum(warning["took_s"] for warning in warned)
            claims.within("debug mode: the warnings account for the run: n x Z ≤ their sum ≤ the run's time", held,
                          len(warned) * T - 0.0005 * len(warned), run["blocking"]["s"] + 0.0005 * len(warned),
                          unit="s", digits=3)
        claims.check("debug mode: no warning for the awaiting version", not quiet, f"{len(quiet)} warnings")
    run = result.get("fastapi")
    if run is None:
        claims.skip("blocking: FastAPI's def endpoints run 40 at once, an async def with time.sleep one", "not run")
        return
    T, overhead = run["T_ms"] / 1000, run["overhead_s"]
    awaiting, pool, blocking = run["async_def_awaiting"], run["def_in_pool"], run["async_def_blocking"]
    claims.nearer(f"FastAPI: {awaiting['calls']} calls to an async def that awaits take Z, not n x Z", awaiting["s"],
                  awaiting["predicted_s"], awaiting["calls"] * T + overhead, "s", ".3f")  # the opposite: one at a time
    claims.nearer(f"FastAPI: {pool['calls']} calls to a def endpoint take ⌈n/{run['threads']}⌉ x Z",
                  pool["s"], pool["predicted_s"], pool_wrong(pool["calls"], run["threads"], T) + overhead, "s", ".3f")
    claims.check(f"FastAPI: {pool['calls']} calls to a def endpoint take at least ⌈n/{run['threads']}⌉ x Z",
                 pool["s"] >= pool["rounds"] * T, f"{pool['s']:.3f} s", f"[{pool['rounds'] * T:.3f}, ∞) s")
    claims.nearer(f"FastAPI: {blocking['calls']} calls to an async def calling time.sleep take n x Z", blocking["s"],
                  blocking["predicted_s"], T + overhead, "s", ".3f")


def pool_wrong(calls, threads, T):
    """The opposite prediction for the def endpoint: one round if the pool held them all, else one round more."""
    rounds = math.ceil(calls / threads)
    return T if rounds > 1 else 2 * T
