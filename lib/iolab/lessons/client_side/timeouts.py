"""Lesson 11's timeouts, cancellation and retries.

Lesson 11's timeouts: asyncio.timeout, a TaskGroup against gather, the server after the client gave up, retries.
"""

import asyncio
import contextlib
import math
import time

import aiohttp

from iolab import servers
from iolab.params import ParameterError, check_range

CALL_LIMIT_S = 30  # no request of this module waits longer, whatever the lesson's own timeouts say
STATS_EVERY_S = 0.01  # how often we ask the server for its in-flight count while it drains
DRAIN_LIMIT_S = 10  # a server that has not finished our requests by then is broken, not slow


# --- The target and its counts ------------------------------------------------------------------------

@contextlib.asynccontextmanager
async def tornado():
    """tornado_app (it holds thousands of /async-sleep at once) and an aiohttp session with no limit of its own."""
    with servers.serve("tornado_app") as server:
        connector = aiohttp.TCPConnector(limit=0)  # 0: no cap, so only the lesson's timeouts limit the calls
        timeout = aiohttp.ClientTimeout(total=CALL_LIMIT_S)
        async with aiohttp.ClientSession(server.url, connector=connector, timeout=timeout) as session:
            yield session
        await asyncio.sleep(0)  # the closed connections' transports close on the loop's next turn


async def get(session, path):
    """One GET, read to the end; a status other than 2xx raises aiohttp.ClientResponseError."""
    async with session.get(path) as response:
        response.raise_for_status()
        return await response.read()


async def stats(session):
    """The server's own counts: connections_opened, connections_open, requests_in_flight, requests_finished."""
    async with session.get("/stats") as response:
        return await response.json()


async def drain(session, began):
    """Wait until the server has finished every request; returns its counts and the seconds since `began`."""
    deadline = time.monotonic() + DRAIN_LIMIT_S
    counts = await stats(session)
    while counts["requests_in_flight"] and time.monotonic() < deadline:
        await asyncio.sleep(STATS_EVERY_S)
        counts = await stats(session)
    return counts, time.monotonic() - began


def new_tasks(before):
    """Tasks on this loop that were not there `before` (a set from asyncio.all_tasks()), besides the one asking: what
    a run must leave behind is none. The baseline matters in a notebook, whose kernel keeps tasks of its own."""
    return len(asyncio.all_tasks() - before - {asyncio.current_task()})


def check_times(T_ms, timeout_ms):
    check_range("T_ms", T_ms, 100, 5000)
    check_range("timeout_ms", timeout_ms, 10, 5000)
    # Claims tell "gave up at the timeout" from "waited for T" by which is nearer: T / 2 apart leaves T / 4 of room.
    if not timeout_ms * 2 <= T_ms:
        raise ParameterError(f"timeout_ms must be at most T_ms / 2 so the two are told apart, got {timeout_ms} "
                             f"against T_ms={T_ms}")


# --- 1. A timeout frees the client, not the server -----------------------------------------------------

async def give_up(calls=1, T_ms=200, timeout_ms=100):
    """`calls` calls of T_ms in one gather, inside asyncio.timeout(timeout_ms): when the client gives up, and what
    the server is still doing right after, and when it is done."""
    check_range("calls", calls, 1, 200)
    check_times(T_ms, timeout_ms)
    tasks = asyncio.all_tasks()
    async with tornado() as session:
        before = await stats(session)
        sent = time.monotonic()
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await asyncio.gather(*(get(session, f"/async-sleep?ms={T_ms}") for _ in range(calls)))
            timed_out = False
        except TimeoutError:
            timed_out = True
        gave_up_s = time.monotonic() - sent
        tasks_left = new_tasks(tasks)  # gather cancelled its children before the timeout reached us
        right_after = await stats(session)
        read_s = time.monotonic() - sent  # the count was taken before this: before T, every call must still be held
        after, drained_s = await drain(session, sent)
    return {
        "calls": calls, "T_ms": T_ms, "timeout_ms": timeout_ms, "timed_out": timed_out,
        "gave_up_s": gave_up_s, "client_tasks_left": tasks_left, "stats_read_s": read_s,
        "in_flight_right_after": right_after["requests_in_flight"] - before["requests_in_flight"],
        "drained_s": drained_s, "finished": after["requests_finished"] - before["requests_finished"],
    }


# --- 2. One failing call: a TaskGroup cancels its siblings, gather leaves them running -----------------

async def fail_one(session):
    """A call that fails at once: the server answers 400 to a bad query, and raise_for_status raises."""
    await get(session, "/async-sleep?ms=banana")


async def one_fails(calls=10, T_ms=200):
    """`calls` - 1 calls of T_ms and one that fails at once, first in a TaskGroup, then in a plain gather."""
    check_range("calls", calls, 2, 200)
    check_range("T_ms", T_ms, 100, 5000)
    tasks = asyncio.all_tasks()
    async with tornado() as session:
        slow = f"/async-sleep?ms={T_ms}"
        group_tasks = []
        began = time.monotonic()
        try:
            async with asyncio.TaskGroup() as group:
                group_tasks = [group.create_task(get(session, slow)) for _ in range(calls - 1)]
                group_tasks.append(group.create_task(fail_one(session)))
        except* aiohttp.ClientResponseError:
            pass
        group_s = time.monotonic() - began

        gather_tasks = [asyncio.create_task(get(session, slow)) for _ in range(calls - 1)]
        gather_tasks.append(asyncio.create_task(fail_one(session)))
        began = time.monotonic()
        try:
            await asyncio.gather(*gather_tasks)
        except aiohttp.ClientResponseError:
            pass
        raised_s = time.monotonic() - began
        still_running = sum(not task.done() for task in gather_tasks)
        # They go on without anyone awaiting them: a program must wait for them (or cancel them) itself.
        await asyncio.wait(gather_tasks, timeout=CALL_LIMIT_S)
        ran_on_s = time.monotonic() - began
        tasks_left = new_tasks(tasks)
    return {
        "calls": calls, "T_ms": T_ms,
        "taskgroup": {"s": group_s, "cancelled": sum(task.cancelled() for task in group_tasks),
                      "answered": sum(done_ok(task) for task in group_tasks)},
        "gather": {"raised_s": raised_s, "still_running": still_running, "ran_on_s": ran_on_s,
                   "answered": sum(done_ok(task) for task in gather_tasks)},
        "client_tasks_left": tasks_left,
    }


def done_ok(task):
    return task.done() and not task.cancelled() and task.exception() is None


# --- 3. Retries on timeout multiply the load on a slow server -------------------------------------------

async def with_retries(session, path, timeout_s, retries, attempts):
    """Try up to 1 + retries times, each attempt under its own timeout; note every attempt's start."""
    for _ in range(1 + retries):
        attempts.append(time.monotonic())
        try:
            async with asyncio.timeout(timeout_s):
                return await get(session, path)
        except TimeoutError:
            continue
    return None  # gave up: the caller sees a failure, the server has served every attempt anyway


async def retry_load(rate=20, duration_s=1.0, T_ms=200, timeout_ms=100, retries=2):
    """An open loop of `rate` calls a second for `duration_s` to a server that takes T_ms, each call retried up to
    `retries` times on a timeout of timeout_ms: the attempts that reach the server, and how many it holds at once."""
    check_range("rate", rate, 1, 200, integer=False)
    check_range("duration_s", duration_s, 0.2, 30, integer=False)
    check_range("retries", retries, 0, 5)
    check_times(T_ms, timeout_ms)
    count = max(1, round(rate * duration_s))
    attempts, samples = [], []
    tasks = asyncio.all_tasks()
    async with tornado() as session:
        before = await stats(session)
        began = time.monotonic()
        async with asyncio.TaskGroup() as group:
            sampler = group.create_task(sample_in_flight(session, samples))
            for k in range(count):
                # Open loop: each call starts on its schedule, whether or not the earlier ones have answered.
                await asyncio.sleep(max(0.0, began + k / rate - time.monotonic()))
                group.create_task(with_retries(session, f"/async-sleep?ms={T_ms}", timeout_ms / 1000, retries, attempts))
            await asyncio.sleep(max(0.0, began + count / rate - time.monotonic()))
            sampler.cancel()
        client_done_s = time.monotonic() - began
        after, drained_s = await drain(session, began)
        tasks_left = new_tasks(tasks)
    # Steady state: from when the first call's last attempt has started and been held T, to the last call's start.
    steady_from = retries * timeout_ms / 1000 + T_ms / 1000
    steady = [in_flight for t, in_flight in samples if steady_from <= t - began <= count / rate]
    return {
        "rate": rate, "duration_s": count / rate, "T_ms": T_ms, "timeout_ms": timeout_ms, "retries": retries,
        "calls": count, "attempts_sent": len(attempts),
        "arrived": after["requests_finished"] - before["requests_finished"],
        "connections_opened": after["connections_opened"] - before["connections_opened"],
        "in_flight_mean": sum(steady) / len(steady) if steady else math.nan, "in_flight_samples": len(steady),
        "client_done_s": client_done_s, "drained_s": drained_s, "client_tasks_left": tasks_left,
    }


async def sample_in_flight(session, samples):
    """(time, the server's in-flight count) every STATS_EVERY_S, until cancelled."""
    while True:
        counts = await stats(session)
        samples.append((time.monotonic(), counts["requests_in_flight"]))
        await asyncio.sleep(STATS_EVERY_S)


# --- What the notebook prints, and the claims -------------------------------------------------------------

def show(result):
    """A few lines on what one run measured, in words."""
    if "taskgroup" in result:
        group, gather = result["taskgroup"], result["gather"]
        print(f"TaskGroup: failed after {group['s'] * 1000:.0f} ms; {group['cancelled']} of its "
              f"{result['calls'] - 1} other calls cancelled, {group['answered']} answered.")
        print(f"gather:    raised after {gather['raised_s'] * 1000:.0f} ms with {gather['still_running']} calls still "
              f"running; they answered {gather['ran_on_s'] * 1000:.0f} ms after the start ({gather['answered']} answers"
              " nobody asked for).")
    elif "retries" in result:
        print(f"{result['calls']} calls at {result['rate']:g}/s, each retried up to {result['retries']} times: "
              f"{result['attempts_sent']} attempts sent, {result['arrived']} served by the server.")
        print(f"The server held {result['in_flight_mean']:.1f} requests at once on average "
              f"(without retries: {result['rate'] * result['T_ms'] / 1000:.1f}).")
    else:
        print(f"The client gave up after {result['gave_up_s'] * 1000:.0f} ms "
              f"({result['client_tasks_left']} of its tasks left).")
        print(f"Right after, the server still had {result['in_flight_right_after']} of our {result['calls']} requests "
              f"in flight; it finished them {result['drained_s'] * 1000:.0f} ms after they were sent.")


def predicted_in_flight(result):
    """Little's law at the server: attempts arrive at rate x (1 + retries), each held Z."""
    return result["rate"] * (1 + result["retries"]) * result["T_ms"] / 1000


def add_claims(claims, result):
    """Add this module's claims about `result` (the notebook's "timeouts" dict: give_up runs under "one" and
    "gather", one_fails under "cancel", retry_load under "retries") to an iolab.claims.Claims; missing parts skip."""
    for key in ("one", "gather"):
        run = result.get(key)
        if run is None:
            claims.skip(f"timeouts, {key}: the client gives up at its timeout, the server serves on", "not run")
            continue
        name = f"timeouts, {run['calls']} call(s) of {run['T_ms']} ms under a {run['timeout_ms']} ms timeout"
        claims.check(f"{name}: timed out, no task left", run["timed_out"] and run["client_tasks_left"] == 0,
                     f"timed out {run['timed_out']}, {run['client_tasks_left']} tasks left")
        # Bounds no load can move: a timeout never fires early, and the client was free before the server was.
        claims.within(f"{name}: the client gave up at its timeout, before the server was done", run["gave_up_s"] * 1000,
                      run["timeout_ms"], run["drained_s"] * 1000, unit="ms", digits=0)
        if run["stats_read_s"] * 1000 < run["T_ms"]:
            claims.nearer(f"{name}: right after, the server still held every call", run["in_flight_right_after"],
                          run["calls"], 0, spec=".0f")
        else:
            claims.skip(f"{name}: right after, the server still held every call",
                        f"its count came {run['stats_read_s'] * 1000:.0f} ms after sending, past Z (a loaded machine)")
        claims.nearer(f"{name}: the server finished them about Z after they were sent", run["drained_s"] * 1000,
                      run["T_ms"], run["timeout_ms"], "ms", ".0f")
        claims.check(f"{name}: the server finished every call the client gave up on", run["finished"] == run["calls"],
                     f"{run['finished']} of {run['calls']}")
    run = result.get("cancel")
    if run is None:
        claims.skip("timeouts: a TaskGroup cancels its siblings, gather leaves them running", "not run")
    else:
        others, T = run["calls"] - 1, run["T_ms"]
        group, gather = run["taskgroup"], run["gather"]
        claims.check(f"TaskGroup: one failure cancels the other {others} calls",
                     group["cancelled"] == others and group["answered"] == 0,
                     f"{group['cancelled']} cancelled, {group['answered']} answered")
        claims.within("TaskGroup: it fails at once, before T", group["s"] * 1000, 0, T, unit="ms", digits=0)
        claims.check(f"gather: raises with the other {others} calls still running, and they all answer later",
                     gather["still_running"] == others and gather["answered"] == others and run["client_tasks_left"] == 0,
                     f"{gather['still_running']} running, {gather['answered']} answered, {run['client_tasks_left']} left")
        claims.within("gather: it raises at once, before T", gather["raised_s"] * 1000, 0, T, unit="ms", digits=0)
        claims.nearer("gather: the calls it left running answered about Z after the start", gather["ran_on_s"] * 1000,
                      T, 0, "ms", ".0f")
    run = result.get("retries")
    if run is None:
        claims.skip("timeouts: retries multiply the load on a slow server", "not run")
        return
    r, sent = run["retries"], run["calls"] * (1 + run["retries"])
    name = f"retries: {run['calls']} calls, each retried {r} times on a {run['timeout_ms']} ms timeout"
    claims.check(f"{name}: no task left", run["client_tasks_left"] == 0, f"{run['client_tasks_left']} left")
    claims.nearer(f"{name}: every call timed out {1 + r} times", run["attempts_sent"], sent, run["calls"], "attempts", ".0f")
    claims.nearer(f"{name}: the server served calls x (1 + retries) requests, not calls", run["arrived"], sent,
                  run["calls"], "requests", ".0f")
    claims.nearer(f"{name}: the server held rate x (1 + retries) x Z at once (Little)", run["in_flight_mean"],
                  predicted_in_flight(run), run["rate"] * run["T_ms"] / 1000, spec=".1f")
