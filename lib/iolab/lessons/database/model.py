"""Lesson 13's predictions: the pool as a tier of the bottleneck law.

Lesson 13's theory, each law written once: the bottleneck law with the event loop, the executor, the pool and the
database as tiers; Little's law on the pool; the wait past P as a closed system; a connection held across another
wait; the CPU per row; round trips.
"""

import math
import os

from iolab import theory


def executor_threads(cpu_count=None):
    """The default executor's threads: min(32, os.cpu_count() + 4). It counts the machine's CPUs, not the ones this
    process may use (concurrent/futures/thread.py in Python 3.8 and later)."""
    cpus = os.cpu_count() if cpu_count is None else cpu_count
    return min(32, (cpus or 1) + 4)


def tiers(how, users, T_s, pool=None, max_connections=100, threads=None):
    """The tiers a request of `how` crosses, each as (slots, seconds a request holds one), for theory.bottleneck.

    blocking: the loop waits with the query, one slot. executor: the default executor's threads (or `threads`).
    pool: the async pool's P. Every way also meets the users (a closed loop keeps N in flight) and the database's
    max_connections.
    """
    found = {"users": (users, T_s), "max_connections": (max_connections, T_s)}
    if how == "blocking":
        found["the event loop"] = (1, T_s)
    elif how == "executor":
        found["the executor's threads"] = (threads or executor_threads(), T_s)
    elif how in ("pool", "asyncpg"):
        found["the pool"] = (pool, T_s)
    else:
        raise ValueError(f"how must be blocking, executor, pool or asyncpg, got {how!r}")
    return found


def predict(how, users, T_s, pool=None, max_connections=100, threads=None, cpu_s=None):
    """(X in req/s, the bottleneck's name): the bottleneck law over the tiers, and the CPU bound 1 / D when the front
    end's CPU per request D was measured (one event loop is one CPU at most)."""
    found = tiers(how, users, T_s, pool, max_connections, threads)
    if cpu_s:
        found["the front end's CPU"] = (1, cpu_s)
    return theory.bottleneck(found)


def slots(how, users, pool=None, max_connections=100, threads=None):
    """Requests served at once: the fewest slots of any tier with a wait of Z."""
    return min(count for count, _ in tiers(how, users, 1.0, pool, max_connections, threads).values())


def most_rps(requests, at_once, T_s):
    """A hard ceiling for a closed run of `requests` that each hold a slot at least Z: ⌈n / slots⌉ rounds of Z at
    least, since no query ends before its pg_sleep does."""
    return requests / (math.ceil(requests / at_once) * T_s)


def pool_in_use(usage_ms, elapsed_s):
    """Little's law read by the pool itself: L = connections' time out of the pool / the run's time."""
    return usage_ms / 1000 / elapsed_s if elapsed_s > 0 else math.nan


def pool_wait_s(users, pool, T_s):
    """The mean wait for a connection when N users share P connections, each held Z: a closed system of P servers.

    Mean-value analysis (iolab.theory.mva) gives R for N users at P servers of demand Z; the wait is R − Z. With
    N ≤ P nobody waits. Past P the pool runs flat out: X = P / Z, so R = N / X = N·Z / P (Little) and the wait is
    (N / P − 1)·Z; MVA gives the same figure once N is well past P.
    """
    if users <= pool:
        return 0.0
    return theory.mva(users, T_s, servers=pool)[-1].response_s - T_s


def held_across_rps(pool, db_s, other_s, release="late"):
    """A connection held across another wait: P / (T_db + T_other); released before it: P / T_db."""
    return pool / (db_s + other_s) if release == "late" else pool / db_s


def cpu_per_row_s(cpu_many_s, cpu_few_s, rows_many, rows_few):
    """The CPU a driver spends per row: the difference of two queries' CPU over the difference of their rows."""
    return (cpu_many_s - cpu_few_s) / (rows_many - rows_few)


def rows_rps(rows, per_row_s, per_query_s=0.0):
    """The loop's CPU bound for a route that decodes `rows` rows: X = 1 / (R · D_row + D_query)."""
    return 1 / (rows * per_row_s + per_query_s)


def one_by_one_s(statements, rtt_s):
    """n statements, each waiting for its answer before the next is sent: n round trips."""
    return statements * rtt_s
