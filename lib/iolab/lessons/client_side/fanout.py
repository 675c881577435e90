"""Lesson 11's forty calls of Z, four ways.

Lesson 11's forty calls of Z: one after another, in k threads, with gather, behind a semaphore of P.
"""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import aiohttp
import psutil
import requests

from iolab import neighbours, servers, usage

from . import model

TIMEOUT_S = 30  # every call gives up after this long: no call of this lesson may hang


# --- The four ways, at teaching size: each returns (sent, answered) for every call ----------------------


def get(session, url):
    """One call with requests: when it was sent, and when its answer was in."""
    sent = time.perf_counter()
    session.get(url, timeout=TIMEOUT_S).raise_for_status()
    return sent, time.perf_counter()


def one_after_another(session, url, n):
    return [get(session, url) for _ in range(n)]


def in_threads(session, url, n, k):
    with ThreadPoolExecutor(max_workers=k) as pool:
        return list(pool.map(lambda _: get(session, url), range(n)))


async def fetch(session, url):
    """One call with aiohttp: when it was sent, and when its answer was in."""
    sent = time.perf_counter()
    async with session.get(url) as response:
        response.raise_for_status()
        await response.read()
    return sent, time.perf_counter()


async def with_gather(session, url, n):
    return await asyncio.gather(*(fetch(session, url) for _ in range(n)))


async def with_semaphore(session, url, n, s):
    gate = asyncio.Semaphore(s)

    async def one():
        async with gate:
            return await fetch(session, url)

    return await asyncio.gather(*(one() for _ in range(n)))


# --- A fan-out the student writes, run and read back ------------------------------------------------------------


async def try_yours(fan_out, n, size, T_ms):
    """Run the student's `fan_out(session, url, n, size)` once against a fresh tornado_app with calls of T_ms.

    Returns None when it returned None (not written yet), else {"calls": what it returned, "n", "size", "T_s",
    "took_s"}: the judging is the exercise's (exercises.InBatches), so a wrong return value is explained there.
    """
    # A round's answers can land in one turn of the loop; then a pool refills only once all are in, as batches
    # do. Holding the k-th answer back k * 3 turns (microseconds) keeps them apart, so a pool shows as one.
    answers_in = 0

    async def hold_back(session, context, params):
        nonlocal answers_in
        answers_in += 1
        for _ in range(3 * answers_in):
            await asyncio.sleep(0)

    trace = aiohttp.TraceConfig()
    trace.on_request_end.append(hold_back)
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout, trace_configs=[trace]) as aio:
        with servers.serve("tornado_app") as server:
            began = time.perf_counter()
            calls = await asyncio.wait_for(fan_out(aio, f"{server.url}/async-sleep?ms={T_ms}", n, size), TIMEOUT_S)
            took_s = time.perf_counter() - began
    await asyncio.sleep(0)  # the closed connections' transports close on the loop's next turn
    if calls is None:
        return None
    return {"calls": calls, "n": n, "size": size, "T_s": T_ms / 1000, "took_s": took_s}


def waves(calls):
    """[(answers already in when sent, calls sent so)], in order: a batch is sent with the same count of answers in."""
    answered = sorted(answered for _, answered in calls)
    counts = {}
    for sent, _ in calls:
        already = sum(1 for moment in answered if moment <= sent)
        counts[already] = counts.get(already, 0) + 1
    return sorted(counts.items())


def most_at_once(calls):
    """The most calls in flight at one moment: sent, and not yet answered."""
    events = sorted([(sent, 1) for sent, _ in calls] + [(answered, -1) for _, answered in calls])
    in_flight = peak = 0
    for _, step in events:
        in_flight += step
        peak = max(peak, in_flight)
    return peak


# --- Running them against tornado_app, metered --------------------------------------------------------------


def own_work_s():
    """This process's CPU seconds (every thread's, ended ones too) and its live threads' waits for a CPU."""
    me = psutil.Process()
    return usage.process_cpu_s(me) + usage.queued_s(me)


def ways(plan):
    """{how: (P, the limit that holds it)} for the four ways, with this run's sizes."""
    return {
        "one after another": (1, "one call at a time"),
        f"{plan.threads} threads": (plan.threads, "k threads"),
        "gather": (plan.calls, "every call at once"),
        f"semaphore of {plan.semaphore}": (plan.semaphore, "s at once"),
    }


async def run_all(plan):
    """Each way's n calls of Z against a fresh tornado_app; {how: its row}, with its calls (sent, answered)."""
    T_s = plan.call_ms / 1000
    rows = {}
    with servers.serve("tornado_app") as server:
        url = f"{server.url}/async-sleep?ms={plan.call_ms}"
        timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as aio:
            with requests.Session() as session:
                get(session, url.replace(f"ms={plan.call_ms}", "ms=0"))  # connect once, outside the measured runs
                await fetch(aio, url.replace(f"ms={plan.call_ms}", "ms=0"))
                runs = {
                    "one after another": lambda: one_after_another(session, url, plan.calls),
                    f"{plan.threads} threads": lambda: in_threads(session, url, plan.calls, plan.threads),
                    "gather": lambda: with_gather(aio, url, plan.calls),
                    f"semaphore of {plan.semaphore}": lambda: with_semaphore(aio, url, plan.calls, plan.semaphore),
                }
                for how, (P, _) in ways(plan).items():
                    with neighbours.watching() as watch:  # what else held the CPUs over this way's run
                        server_meter, before = usage.measure(server), own_work_s()
                        calls = runs[how]()  # requests blocks this cell; aiohttp's ways give a coroutine to await
                        if asyncio.iscoroutine(calls):
                            calls = await calls
                        used = server_meter.stop()
                    work_s = own_work_s() - before + used.cpu_s + used.queued_s
                    rows[how] = model.predict(how, P, T_s, calls, work_s) | {
                        "neighbours": watch.found.as_dict(),
                        "calls_timed": [(sent - calls[0][0], answered - calls[0][0]) for sent, answered in calls]}
        await asyncio.sleep(0)  # the closed connections' transports close on the loop's next turn
    return rows
