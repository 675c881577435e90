"""Lesson 13's runs that talk to PostgreSQL straight from the notebook.

Lesson 13's runs with the drivers in this process: a backend per connection and the refusal past max_connections;
the CPU per row of psycopg and asyncpg; round trips one by one, in a pipeline and in executemany; a timeout that
leaves the query running, and statement_timeout, which stops it.
"""

import asyncio
import contextlib
import statistics
import time

import psutil

from iolab import postgres, usage

CONNECT_TIMEOUT_S = 10
QUERY_TIMEOUT_MS = 30_000  # every session's statement_timeout: no query of this module runs longer


def dsn(server, **settings):
    return postgres.dsn(server.port, host=server.host, connect_timeout=CONNECT_TIMEOUT_S, **settings)


def session(server, timeout_ms=QUERY_TIMEOUT_MS):
    """A libpq DSN whose sessions stop any statement after timeout_ms: a bound on every query we send."""
    return dsn(server, options=f"-c statement_timeout={timeout_ms}")


# --- 4. A backend process per connection, and max_connections --------------------------------------------------

def memory_of(pid):
    """(RSS, PSS, USS) of one process in MB; PSS shares each shared page among the processes that map it."""
    info = psutil.Process(pid).memory_full_info()
    return info.rss / 2**20, info.pss / 2**20, info.uss / 2**20


def backends(server, connections):
    """Open `connections` connections, then count the postmaster's processes and weigh each connection's backend."""
    import psycopg

    before = len(psutil.Process(server_postmaster(server)).children())
    opened = []
    try:
        for _ in range(connections):
            opened.append(psycopg.connect(session(server), autocommit=True))
        pids = [connection.execute("select pg_backend_pid()").fetchone()[0] for connection in opened]
        children = {child.pid for child in psutil.Process(server_postmaster(server)).children()}
        after = len(children)
        sizes = [memory_of(pid) for pid in pids]
    finally:
        for connection in opened:
            connection.close()
    rss, pss, uss = (statistics.mean(size[k] for size in sizes) for k in range(3))
    # The counts before and after may include a backend still exiting from an earlier connection: the pids are exact.
    return {"connections": connections, "processes_before": before, "processes_after": after,
            "own_backends": len(set(pids) & children),
            "backend_rss_mb": rss, "backend_pss_mb": pss, "backend_uss_mb": uss}


def server_postmaster(server):
    """The postmaster: the launcher's child that runs `postgres`."""
    for child in psutil.Process(server.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.name() == "postgres" and child.ppid() == server.pid:
                return child.pid
    raise RuntimeError(f"no postmaster under the launcher {server.pid}")


def too_many(server, max_connections):
    """Open connections until PostgreSQL refuses one: which one it was, and its words."""
    import psycopg

    opened, refused = [], None
    try:
        for number in range(1, max_connections + 2):
            try:
                opened.append(psycopg.connect(session(server), autocommit=True))
            except psycopg.OperationalError as error:
                refused = {"number": number, "message": str(error).strip().splitlines()[-1]}
                break
    finally:
        for connection in opened:
            connection.close()
    return {"max_connections": max_connections, "opened": len(opened), "refused": refused}


# --- 5. The driver's CPU per row --------------------------------------------------------------------------------

async def cpu_of(fetch, repeats):
    """This thread's CPU for `repeats` calls of fetch(): the driver's work, decoding included (the server is
    another process, and a driver on the event loop runs on this thread)."""
    await fetch()  # the first call prepares and warms: not counted
    began = time.thread_time()
    for _ in range(repeats):
        await fetch()
    return (time.thread_time() - began) / repeats


async def row_costs(server, rows, repeats):
    """The CPU each driver spends on a query of `rows` rows and on a query of 1 row, and the difference per row."""
    import asyncpg
    import psycopg

    query = f"select * from {postgres.TABLE} order by id limit $1"
    found = []
    connection = await asyncpg.connect(postgres.url(server.port, host=server.host), timeout=CONNECT_TIMEOUT_S,
                                       server_settings={"statement_timeout": str(QUERY_TIMEOUT_MS)})
    try:
        found.append(await costs("asyncpg", lambda n: connection.fetch(query, n), rows, repeats))
    finally:
        await connection.close()
    async with await psycopg.AsyncConnection.connect(session(server), autocommit=True) as connection:
        async def fetch(n):
            cursor = await connection.execute(query.replace("$1", "%s"), (n,))
            return await cursor.fetchall()

        found.append(await costs("psycopg", fetch, rows, repeats))
    return found


async def costs(driver, fetch, rows, repeats):
    many = await cpu_of(lambda: fetch(rows), repeats)
    one = await cpu_of(lambda: fetch(1), repeats)
    per_row = (many - one) / (rows - 1)
    return {"driver": driver, "rows": rows, "cpu_us_per_query": one * 1e6, "cpu_us_many": many * 1e6,
            "cpu_us_per_row": per_row * 1e6}


# --- 6. Round trips -----------------------------------------------------------------------------------------------

def waited_ns(before, after):
    """Nanoseconds waited for a CPU between two usage.queued_ns readings; 0 where the kernel did not say."""
    return after - before if None not in (before, after) else 0


async def round_trips(server, statements, repeats=3):
    """n inserts one by one, in psycopg's pipeline mode and as one executemany; the round trip of `select 1`; for
    each way, our CPU, the server process's CPU and the time each side waited for a CPU."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(session(server), autocommit=True) as connection:
        await connection.execute("create temporary table trips (k integer)")
        # The connection's backend process, our child's child on this machine: its CPU and its waits for a CPU.
        backend = psutil.Process((await (await connection.execute("select pg_backend_pid()")).fetchone())[0])
        trips = []
        for _ in range(max(20, statements)):
            began = time.perf_counter()
            await connection.execute("select 1")
            trips.append(time.perf_counter() - began)
        rtt = statistics.median(trips)
        insert = "insert into trips values (%s)"

        async def one_by_one():
            for k in range(statements):
                await connection.execute(insert, (k,))

        async def pipeline():
            async with connection.pipeline():
                for k in range(statements):
                    await connection.execute(insert, (k,))

        async def executemany():
            async with connection.cursor() as cursor:
                await cursor.executemany(insert, [(k,) for k in range(statements)])

        found = {"statements": statements, "rtt_ms": rtt * 1000}
        for name, run in (("one_by_one", one_by_one), ("pipeline", pipeline), ("executemany", executemany)):
            times = []
            for _ in range(repeats):
                ours, theirs, server_cpu = usage.queued_ns(), usage.queued_ns(backend.pid), usage.process_cpu_s(backend)
                began, cpu = time.perf_counter(), time.thread_time()
                await run()
                wall, cpu = time.perf_counter() - began, time.thread_time() - cpu
                waited = waited_ns(ours, usage.queued_ns()) + waited_ns(theirs, usage.queued_ns(backend.pid))
                times.append({"ms": wall * 1000, "client_cpu_ms": cpu * 1000,
                              "server_cpu_ms": (usage.process_cpu_s(backend) - server_cpu) * 1000,
                              "waited_ms": waited / 1e6})
            found[name] = min(times, key=lambda one: one["ms"])  # the least disturbed of the repeats
    return found


# --- 7. A timeout that leaves the query running; statement_timeout, which stops it ------------------------------

def active_sleeps(server, marker):
    """Queries now running on the server whose text holds `marker`, read from pg_stat_activity."""
    import psycopg

    with psycopg.connect(session(server), autocommit=True) as connection:
        return connection.execute(
            "select count(*) from pg_stat_activity where state = 'active' and query like %s and pid <> pg_backend_pid()",
            (f"%{marker}%",)).fetchone()[0]


def sleep_query(ms, marker):
    return f"select pg_sleep({ms / 1000}) /* {marker} */"


async def client_timeout(server, T_ms, timeout_ms):
    """A query of T_ms that the client stops waiting for after timeout_ms: is it still running on the server?

    The sync driver runs in a thread; asyncio.wait_for gives up on it, as an HTTP client gives up on a server. Nobody
    tells PostgreSQL, so the query runs on. Then the same query under statement_timeout = timeout_ms.
    """
    import psycopg

    marker = f"iolab-timeout-{time.monotonic_ns()}"

    def run(dsn_):
        began = time.monotonic()
        with psycopg.connect(dsn_, autocommit=True) as connection:
            try:
                connection.execute(sleep_query(T_ms, marker))
                outcome = "finished"
            except psycopg.errors.QueryCanceled as error:
                outcome = f"cancelled: {str(error).strip().splitlines()[0]}"
        return outcome, time.monotonic() - began

    query = asyncio.ensure_future(asyncio.to_thread(run, session(server)))
    began = time.monotonic()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(query), timeout_ms / 1000)
    gave_up_s = time.monotonic() - began
    running_after = await asyncio.to_thread(active_sleeps, server, marker)
    outcome, ran_s = await query  # it ends by itself, at T
    marker_2 = marker + "-stopped"
    began = time.monotonic()

    def stopped():
        with psycopg.connect(session(server, timeout_ms), autocommit=True) as connection:
            try:
                connection.execute(sleep_query(T_ms, marker_2))
                return "finished"
            except psycopg.errors.QueryCanceled as error:
                return f"cancelled: {str(error).strip().splitlines()[0]}"

    outcome_2 = await asyncio.to_thread(stopped)
    stopped_s = time.monotonic() - began
    running_after_2 = await asyncio.to_thread(active_sleeps, server, marker_2)
    return {"T_ms": T_ms, "timeout_ms": timeout_ms,
            "client": {"gave_up_ms": gave_up_s * 1000, "running_after": running_after, "outcome": outcome,
                       "ran_ms": ran_s * 1000},
            "statement_timeout": {"ended_ms": stopped_s * 1000, "outcome": outcome_2,
                                  "running_after": running_after_2}}


# --- 4b. pgbouncer: many clients, a few backends -----------------------------------------------------------------

BOUNCER_QUERY_MS = 10  # each client's query: short, so a thousand of them through a few backends take a second or two


async def bouncer(server, clients, pool, T_ms=BOUNCER_QUERY_MS):
    """`clients` connections through pgbouncer (transaction mode, `pool` backends), each running one query of T_ms
    at once: how many are answered, how long it takes, and how many backends ran those queries.

    The queries carry a marker; PostgreSQL's pg_stat_activity keeps each backend's last query, so the backends that
    ran one are pgbouncer's, whatever else connects meanwhile (or is still closing from an earlier section).
    """
    import psycopg

    from iolab import servers

    marker = f"iolab-bouncer-{time.monotonic_ns()}"
    query = sleep_query(T_ms, marker)
    with servers.serve("pgbouncer", db_port=server.port, pool_size=pool, max_client_conn=clients) as proxy:
        # pgbouncer hands each transaction to any backend: no prepared statements, no startup options.
        address = postgres.dsn(proxy.port, host=proxy.host, connect_timeout=CONNECT_TIMEOUT_S)
        connections = await asyncio.gather(*(psycopg.AsyncConnection.connect(address, autocommit=True,
                                                                             prepare_threshold=None)
                                             for _ in range(clients)))
        seen = set()
        try:
            async with await psycopg.AsyncConnection.connect(session(server), autocommit=True) as watcher:

                async def look():
                    cursor = await watcher.execute("select pid from pg_stat_activity where query like %s"
                                                   " and pid <> pg_backend_pid()", (f"%{marker}%",))
                    seen.update(pid for (pid,) in await cursor.fetchall())

                async def watch():
                    while True:
                        await look()
                        await asyncio.sleep(0.05)

                watching = asyncio.ensure_future(watch())
                began = time.monotonic()
                answered = await asyncio.gather(*(connection.execute(query) for connection in connections),
                                                return_exceptions=True)
                took_s = time.monotonic() - began
                watching.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watching
                await look()
        finally:
            await asyncio.gather(*(connection.close() for connection in connections))
    failed = [a for a in answered if isinstance(a, BaseException)]
    return {"clients": clients, "pool": pool, "T_ms": T_ms, "answered": len(answered) - len(failed),
            "errors": sorted({str(a).splitlines()[0] for a in failed})[:3], "seconds": took_s, "backends": len(seen)}
