"""Lesson 13's runs through a front end.

Loads on tornado_db and fastapi_db.

Lesson 13's runs through a web front end: a closed loop of N users on each way to call the database, the pool's own
figures, a connection held across another wait, asyncpg's acquire() without a timeout, and PostgreSQL killed mid-run.
"""

import asyncio
import json
import math
import os
import re
import signal
import time
import urllib.request

import aiohttp
import psutil

from iolab import environment, load, metrics, neighbours, registry, servers, usage

from . import model

RUN_SLACK_S = 15  # beyond a run's predicted length: what a loaded machine may add before a run is called stuck
STATS_TIMEOUT_S = 5


def missing():
    """Why the front ends cannot run here, or None: each must be in the lab and installed."""
    return registry.missing("tornado_db", "fastapi_db")


def stats(front):
    """The front end's /stats: its pool's own figures, its CPU and its requests in flight."""
    with urllib.request.urlopen(front.url + "/stats", timeout=STATS_TIMEOUT_S) as answer:
        return json.load(answer)


def tree_cpu_s(pid):
    """CPU seconds of a process and all its descendants (PostgreSQL's postmaster and its backends)."""
    total = 0.0
    try:
        tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return 0.0
    for process in tree:
        try:
            times = process.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


POOL_OF = {"pool": "psycopg_pool", "asyncpg": "asyncpg_pool", "async def": "psycopg_pool"}  # /stats's keys


def pool_delta(before, after, how):
    """What the pool `how` uses did between two /stats readings: its counters, subtracted (None: no pool)."""
    key = POOL_OF.get(how)
    if key is None:
        return None
    pool_before, pool_after = before.get(key) or {}, after.get(key) or {}
    keys = ("usage_ms", "requests_num", "requests_queued", "requests_wait_ms", "requests_errors")
    return {key: pool_after.get(key, 0) - pool_before.get(key, 0) for key in keys}


def closed_run(front, path, users, requests, T_s, db=None, how=None):
    """A closed loop of `users` on `path` for `requests` requests, after one unmeasured round (each user's first
    request opens its connections); the front end's CPU measured, PostgreSQL's too when `db` is given."""
    url = front.url + path
    warm_s = RUN_SLACK_S + users * T_s
    warm = re.sub(r"\b(ms|db_ms|other_ms)=\d+", r"\1=1", url)  # 1 ms each: opens the connections, quickly
    load.run_load(warm, requests=users, concurrency=users, timeout_s=warm_s, max_duration_s=2 * warm_s)
    before = stats(front)
    db_cpu = tree_cpu_s(db.pid) if db is not None else 0.0
    worst_s = requests * T_s + RUN_SLACK_S  # one at a time: the slowest way there is
    with neighbours.watching() as watch:  # what else held the CPUs over the measured run
        result = load.run_load(url, server=front, requests=requests, concurrency=users, timeout_s=worst_s,
                               max_duration_s=2 * worst_s)
    db_cpu = tree_cpu_s(db.pid) - db_cpu if db is not None else 0.0
    after = stats(front)
    summary = metrics.summarize(result)
    done = max(summary.completed, 1)
    return {"rps": summary.rps, "completed": summary.completed, "errors": summary.errors,
            "error_kinds": summary.error_kinds, "mean_ms": summary.mean_ms, "duration_s": summary.duration_s,
            "front_cpu_ms": summary.demand_ms, "client_cpu_ms": summary.client_demand_ms,
            "db_cpu_ms": db_cpu * 1000 / done, "pool_stats": pool_delta(before, after, how),
            "neighbours": watch.found.as_dict()}


def cpu_tiers(run, threads=1):
    """The CPU tiers of a run: the front end's one loop (or GIL) at D_front; the machine's usable CPUs at the CPU
    every process spent per request (front end, client, PostgreSQL), measured in the same run."""
    found = {}
    front = run["front_cpu_ms"] / 1000
    if front > 0 and math.isfinite(front):
        found["the front end's CPU"] = (1, front)
        every = sum(run[key] for key in ("front_cpu_ms", "client_cpu_ms", "db_cpu_ms")
                    if math.isfinite(run[key])) / 1000
        found["the machine's CPUs"] = (environment.usable_cpus(), every)
    return found


# --- 1. The three ways on Tornado, and FastAPI's two -----------------------------------------------------------

WAYS = (  # (front end, how, path template, what the lesson calls it)
    ("tornado_db", "blocking", "/query?ms={ms}&how=blocking", "psycopg on the loop"),
    ("tornado_db", "executor", "/query?ms={ms}&how=executor", "psycopg in the default executor"),
    ("tornado_db", "pool", "/query?ms={ms}&how=pool", "psycopg_pool, async"),
    ("tornado_db", "asyncpg", "/query?ms={ms}&how=asyncpg", "asyncpg's pool"),
    ("fastapi_db", "def", "/sync-query?ms={ms}", "FastAPI def, psycopg"),
    ("fastapi_db", "async def", "/async-query?ms={ms}", "FastAPI async def, psycopg_pool"),
)


def slots_of(front_end, how, users, pool, max_connections):
    """(slots, their tier's tiers dict) for one way: the bottleneck law's tiers with a wait of Z."""
    if front_end == "fastapi_db" and how == "def":
        threads = registry.get("fastapi_db").options["threads"].default if "threads" in registry.get(
            "fastapi_db").options else 40
        return model.tiers("executor", users, 1.0, max_connections=max_connections, threads=threads)
    return model.tiers("pool" if how == "async def" else how, users, 1.0, pool, max_connections)


def drivers(db, users, pool, T_ms, run_s, max_connections):
    """Every way of WAYS under a closed loop of `users`, each predicted by the bottleneck law from its tiers."""
    T = T_ms / 1000
    rows = []
    for front_end in ("tornado_db", "fastapi_db"):
        with servers.serve(front_end, db_port=db.port, pool=pool) as front:
            for name, how, path, label in WAYS:
                if name != front_end:
                    continue
                tiers = {tier: (count, T) for tier, (count, _) in
                         slots_of(front_end, how, users, pool, max_connections).items()}
                at_once = min(count for count, _ in tiers.values())
                requests = max(users, round(at_once / T * run_s))
                run = closed_run(front, path.format(ms=T_ms), users, requests, T, db, how)
                law = {**tiers, **cpu_tiers(run)}
                predicted, bottleneck = _law(law)
                rows.append({"front_end": front_end, "driver": label, "how": how, "pool": pool, "users": users,
                             "T_ms": T_ms, "requests": requests, "at_once": at_once, **run,
                             "predicted_rps": predicted, "bottleneck": bottleneck,
                             "ceiling_rps": model.most_rps(requests, at_once, T)})
    return rows


def _law(tiers):
    from iolab import theory

    return theory.bottleneck(tiers)


# --- 2. Past P; asyncpg's acquire() without a timeout ----------------------------------------------------------

async def acquire_wait(db, pool, hold_ms, timeout_s=None):
    """P requests each holding asyncpg's connection hold_ms, then one more: how long it waits, and its status."""
    options = {"db_port": db.port, "pool": pool}
    if timeout_s is not None:
        options["acquire_timeout_s"] = timeout_s
    with servers.serve("tornado_db", **options) as front:
        limit = aiohttp.ClientTimeout(total=hold_ms / 1000 + RUN_SLACK_S)
        async with aiohttp.ClientSession(front.url, timeout=limit,
                                         connector=aiohttp.TCPConnector(limit=0)) as session:

            async def get(path):
                began = time.monotonic()
                async with session.get(path) as response:
                    await response.read()
                    return response.status, time.monotonic() - began

            await asyncio.gather(*(get("/query?ms=1&how=asyncpg") for _ in range(pool)))  # the pool fills
            holders = [asyncio.ensure_future(get(f"/query?ms={hold_ms}&how=asyncpg")) for _ in range(pool)]
            await asyncio.sleep(min(0.05, hold_ms / 4000))  # the holders have their connections
            status, waited_s = await get("/query?ms=1&how=asyncpg")
            await asyncio.gather(*holders)
    return {"pool": pool, "hold_ms": hold_ms, "acquire_timeout_s": timeout_s, "status": status,
            "waited_ms": waited_s * 1000}


# --- 3. A connection held across another wait -------------------------------------------------------------------

def held_across(db, users, pool, db_ms, other_ms, run_s):
    """A closed loop on /held, the connection released late (after the other wait) and then early (before it)."""
    rows = []
    with servers.serve("tornado_db", db_port=db.port, pool=pool) as front:
        for release in ("late", "early"):
            predicted_pool = model.held_across_rps(pool, db_ms / 1000, other_ms / 1000, release)
            users_rps = users / ((db_ms + other_ms) / 1000)
            requests = max(users, round(min(predicted_pool, users_rps) * run_s))
            run = closed_run(front, f"/held?db_ms={db_ms}&other_ms={other_ms}&release={release}", users, requests,
                             (db_ms + other_ms) / 1000, db, "pool")
            held_s = (db_ms + other_ms) / 1000 if release == "late" else db_ms / 1000
            tiers = {"users": (users, (db_ms + other_ms) / 1000), "the pool": (pool, held_s), **cpu_tiers(run)}
            predicted, bottleneck = _law(tiers)
            rows.append({"release": release, "users": users, "pool": pool, "db_ms": db_ms, "other_ms": other_ms,
                         "requests": requests, **run, "predicted_rps": predicted, "bottleneck": bottleneck})
    return rows


def own_work_s():
    """This process's CPU seconds and its threads' waits for a CPU so far: the client's side of a run's work."""
    me = psutil.Process()
    return usage.process_cpu_s(me) + usage.queued_s(me)


# --- 7. PostgreSQL killed mid-run -------------------------------------------------------------------------------

async def killed(db, pool, T_ms, calls, deadline_s=10.0):
    """Calls to the async pool while PostgreSQL is SIGKILLed, then started again on its port: how fast the errors
    come, and how soon the pool answers again. Returns the new database server, which the caller stops."""
    port = db.port
    with servers.serve("tornado_db", db_port=port, pool=pool) as front:
        timeout = aiohttp.ClientTimeout(total=RUN_SLACK_S + T_ms / 1000)
        async with aiohttp.ClientSession(front.url, timeout=timeout) as session:

            async def get():
                began = time.monotonic()
                async with session.get(f"/query?ms={T_ms}&how=pool") as response:
                    body = await response.text()
                    return response.status, time.monotonic() - began, body[:200]

            ok = await asyncio.gather(*(get() for _ in range(calls)))
            os.killpg(db.pid, signal.SIGKILL)
            db.stop()
            with neighbours.watching() as watch:  # the front end's work on the errors, and what else ran meanwhile
                meter, ours = usage.measure(front), own_work_s()
                down = await asyncio.gather(*(get() for _ in range(calls)))
                used = meter.stop()
                work_s = used.cpu_s + used.queued_s + own_work_s() - ours
            began = time.monotonic()
            db = servers.start("postgres", port=port)
            back_s = None
            while time.monotonic() - began < deadline_s:
                status, _, _ = await get()
                if status == 200:
                    back_s = time.monotonic() - began
                    break
                await asyncio.sleep(0.05)
    return db, {"calls": calls, "T_ms": T_ms,
                "before": {"statuses": sorted({s for s, _, _ in ok}), "max_ms": max(t for _, t, _ in ok) * 1000},
                "down": {"statuses": sorted({s for s, _, _ in down}), "max_ms": max(t for _, t, _ in down) * 1000,
                         "body": down[0][2], "work_ms": work_s * 1000, "neighbours": watch.found.as_dict()},
                "back_after_s": back_s, "deadline_s": deadline_s}


# --- 5. Rows decoded on the loop ---------------------------------------------------------------------------------

def rows_law(per_request_s, run, rows_s):
    """The CPU tiers of a /rows run, with the loop's CPU per request predicted: D_query + R · D_row (rows_s), and
    the client's and PostgreSQL's CPU per request from the run itself."""
    loop_s = per_request_s + rows_s
    others = sum(run[key] for key in ("client_cpu_ms", "db_cpu_ms") if math.isfinite(run[key])) / 1000
    return _law({"the loop's CPU": (1, loop_s), "the machine's CPUs": (environment.usable_cpus(), loop_s + others)})


def rows_runs(db, users, pool, rows, per_row_us, query_cpu_ms, run_s):
    """A closed loop on /rows?n=R for each driver: X predicted from the CPU per row measured in this process and
    the front end's CPU per query measured in section 1, against X if the rows cost nothing."""
    found = []
    with servers.serve("tornado_db", db_port=db.port, pool=pool) as front:
        for driver, how in (("asyncpg", "asyncpg"), ("psycopg", "pool")):
            if driver not in per_row_us or how not in query_cpu_ms:
                continue
            per_query_s, rows_s = query_cpu_ms[how] / 1000, rows * per_row_us[driver] / 1e6
            guess = 1 / (per_query_s + rows_s)
            requests = max(users, round(guess * run_s))
            run = closed_run(front, f"/rows?n={rows}&driver={driver}", users, requests, per_query_s + rows_s, db, how)
            predicted, bottleneck = rows_law(per_query_s, run, rows_s)
            free, _ = rows_law(per_query_s, run, 0.0)
            found.append({"driver": driver, "rows": rows, "users": users, "requests": requests, **run,
                          "predicted_rps": predicted, "bottleneck": bottleneck, "rows_free_rps": free,
                          "predicted_cpu_ms": (per_query_s + rows_s) * 1000})
    return found
