"""Lesson 13's front ends' side of PostgreSQL: drivers, pools, timeouts, the 503s.

What tornado_db.py and fastapi_db.py share: the query values they accept, the
sync driver (psycopg, one connection per thread, on the loop or in a thread
pool), the async drivers through their pools (psycopg_pool's
AsyncConnectionPool, asyncpg's pool), each query bounded by PostgreSQL's
statement_timeout and a client-side deadline behind it, and the pool's own
figures for /stats. A database that is gone, a pool with no connection free in
time, a query cancelled: each is a `Refused` whose reason the front end
answers with a 503 at once.
"""

import argparse
import asyncio
import contextlib
import os
import socket
import threading
import time
import urllib.parse

import asyncpg
import psycopg
import psycopg_pool

from _wrapper import count_between
from iolab import postgres
from iolab.contract import LOOPBACK, MAX_MS, BadParameter, parse_ms, parse_whole

HOWS = ("blocking", "executor", "pool", "asyncpg")
DRIVERS = ("psycopg", "asyncpg")
RELEASES = ("late", "early")
MAX_ROWS = 1_000_000
MAX_POOL = 1000
CONNECT_TIMEOUT_S = 5  # psycopg's connect_timeout (whole seconds) and asyncpg's `timeout` for a new connection
# The defaults the pools use when --pool and --acquire-timeout-s are not given (the pinned sources):
PSYCOPG_POOL_SIZE = 4  # psycopg_pool/pool_async.py:55, AsyncConnectionPool(min_size=4, max_size=None: = min_size)
PSYCOPG_POOL_TIMEOUT_S = 30.0  # psycopg_pool/pool_async.py:63, timeout=30.0, for getconn()/connection()
ASYNCPG_POOL_SIZE = 10  # asyncpg/pool.py:1203-1204, create_pool(min_size=10, max_size=10)
ASYNCPG_ACQUIRE_TIMEOUT_S = None  # asyncpg/pool.py:969, Pool.acquire(*, timeout=None): waits for ever
FOREVER_S = 24 * 3600.0  # "none" for psycopg_pool, whose timeout must be a number
DEADLINE_MARGIN_S = 1.0  # the client's deadline, after statement_timeout: time for the server to cancel it first
PROBE_EVERY_S = 0.1  # while the database is unreachable, how often a connection is tried
# get_stats()'s counters (psycopg_pool/base.py:29-39), which it leaves out while they are 0.
PSYCOPG_COUNTERS = ("requests_num", "requests_queued", "requests_wait_ms", "requests_errors", "usage_ms",
                    "returns_bad", "connections_num", "connections_ms", "connections_errors", "connections_lost")


def default_executor_threads():
    """What loop.run_in_executor(None, ...) gets: concurrent/futures/thread.py:142 (Python 3.11),
    min(32, (os.cpu_count() or 1) + 4): the machine's CPUs, not the ones this process may use."""
    return min(32, (os.cpu_count() or 1) + 4)


class Refused(Exception):
    """A request the database side cannot serve now; its text is the one-line reason of the 503."""

    status = 503


# --- The query values ----------------------------------------------------------------------------------

def choice(query, name, choices, default=None):
    values = urllib.parse.parse_qs(query).get(name)
    if not values:
        if default is None:
            raise BadParameter(f"{name} is required: one of {', '.join(choices)}")
        return default
    if values[-1] not in choices:
        raise BadParameter(f"{name} must be one of {', '.join(choices)}, got {values[-1]!r}")
    return values[-1]


def last_value(query, name):
    """The last value of `name` in the query string, or None."""
    values = urllib.parse.parse_qs(query, keep_blank_values=True).get(name)
    return values[-1] if values else None


def ms_of(query, name="ms"):
    return parse_ms(last_value(query, name), name)


def rows_of(query):
    return parse_whole(last_value(query, "n"), "n", "rows", MAX_ROWS, ", the rows to read, e.g. ?n=1000")


# --- The command line ---------------------------------------------------------------------------------

def seconds_or_none(text):
    """An acquire timeout: seconds, or none (no limit), kept as infinity (None is each library's default)."""
    if text.lower() == "none":
        return float("inf")
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds or none, got {text!r}") from None
    if not 0 < seconds <= MAX_MS / 1000:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most {MAX_MS // 1000} s, or none, got {text!r}")
    return seconds


def add_arguments(parser):
    parser.add_argument("--db-port", type=int, default=0,
                        help="the port of the lab's PostgreSQL (servers/postgres_server.py); without it, 503s")
    parser.add_argument("--pool", type=count_between(1, MAX_POOL), default=None,
                        help=f"P, connections in each async pool (default: each library's own, psycopg_pool"
                             f" {PSYCOPG_POOL_SIZE}, asyncpg {ASYNCPG_POOL_SIZE})")
    parser.add_argument("--acquire-timeout-s", type=seconds_or_none, default=None,
                        help=f"how long a request waits for a free connection, or none (default: each library's"
                             f" own, psycopg_pool {PSYCOPG_POOL_TIMEOUT_S:g} s, asyncpg none: for ever)")
    parser.add_argument("--statement-timeout-ms", type=int, default=10_000,
                        help="PostgreSQL's statement_timeout on every connection (0: none); a client-side deadline"
                             f" {DEADLINE_MARGIN_S:g} s later stops the wait too")


def check_arguments(args):
    if not 0 <= args.db_port <= 65535:
        raise SystemExit(f"--db-port must be between 0 and 65535, got {args.db_port}")
    if not 0 <= args.statement_timeout_ms <= MAX_MS:
        raise SystemExit(f"--statement-timeout-ms must be between 0 and {MAX_MS}, got {args.statement_timeout_ms}")


# --- The database, as the front ends see it ------------------------------------------------------------

class SyncDeadlines:
    """The client's deadline for the sync driver, which has none of its own: a query still running at its deadline
    has its connection cut by a watcher thread, so the blocked call returns with an error.

    (A database that stops answering, SIGSTOPped or cut off, would otherwise hold the thread, or the loop, for
    ever: statement_timeout is enforced by the server.)
    """

    CHECK_EVERY_S = 0.1

    def __init__(self, seconds):
        self.seconds = seconds
        self.running = {}  # a query's key -> [its deadline, its connection, whether it expired]
        self.lock = threading.Lock()
        self.watcher = None

    @contextlib.contextmanager
    def bounded(self, connection):
        """Bound the query run inside; yields a list that is true once the deadline cut it short."""
        entry = [time.monotonic() + self.seconds, connection, []]
        key = id(entry)
        with self.lock:
            self.running[key] = entry
            if self.watcher is None:
                self.watcher = threading.Thread(target=self.watch, name="sync-deadlines", daemon=True)
                self.watcher.start()
        try:
            yield entry[2]
        finally:
            with self.lock:
                self.running.pop(key, None)

    def watch(self):
        while True:
            time.sleep(self.CHECK_EVERY_S)
            now = time.monotonic()
            with self.lock:
                for entry in self.running.values():
                    if entry[0] <= now and not entry[2]:
                        entry[2].append(cut(entry[1]))


def cut(connection):
    """End a connection's wait at once: its socket shut down, the driver fails the query as a lost connection."""
    if isinstance(connection, psycopg.Connection | psycopg.AsyncConnection):
        # A duplicate of the connection's socket: shutting it down ends the wait on the original.
        with contextlib.suppress(OSError, psycopg.Error), socket.socket(fileno=os.dup(connection.fileno())) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    else:
        connection.terminate()  # asyncpg: closes its transport; the pending fetch fails at once
    return True


class Usage:
    """A pool's figures as psycopg_pool's get_stats() names them, kept by us for asyncpg, which has none."""

    def __init__(self):
        self.stats = {"requests_num": 0, "requests_waiting": 0, "requests_wait_ms": 0, "usage_ms": 0,
                      "requests_errors": 0}

    @contextlib.asynccontextmanager
    async def acquire(self, pool, timeout):
        self.stats["requests_num"] += 1
        self.stats["requests_waiting"] += 1
        began = time.monotonic()
        try:
            connection = await pool.acquire(timeout=timeout)
        except BaseException:
            self.stats["requests_errors"] += 1
            raise
        finally:
            self.stats["requests_waiting"] -= 1
            self.stats["requests_wait_ms"] += int(1000 * (time.monotonic() - began))
        got = time.monotonic()
        try:
            yield connection
        finally:
            self.stats["usage_ms"] += int(1000 * (time.monotonic() - got))
            await pool.release(connection)


class Database:
    """The drivers and pools of one front end, made on first use, each query bounded in time."""

    def __init__(self, args):
        self.port = args.db_port
        self.psycopg_size = args.pool or PSYCOPG_POOL_SIZE
        self.asyncpg_size = args.pool or ASYNCPG_POOL_SIZE
        given = args.acquire_timeout_s
        if given is None:
            self.psycopg_timeout_s, self.asyncpg_timeout_s = PSYCOPG_POOL_TIMEOUT_S, ASYNCPG_ACQUIRE_TIMEOUT_S
        elif given == float("inf"):
            self.psycopg_timeout_s, self.asyncpg_timeout_s = FOREVER_S, None
        else:
            self.psycopg_timeout_s = self.asyncpg_timeout_s = given
        self.statement_timeout_ms = args.statement_timeout_ms
        # Behind statement_timeout, the client's own deadline: a server that stops answering cannot hold us for ever.
        self.deadline_s = (self.statement_timeout_ms or MAX_MS) / 1000 + DEADLINE_MARGIN_S
        self.sync_deadlines = SyncDeadlines(self.deadline_s)
        self.psycopg_pool = None
        self.asyncpg_pool = None
        self.asyncpg_usage = Usage()
        self.opening = {}  # driver -> the future of its pool, made on the loop on first use
        self.local = threading.local()  # the sync driver: one connection per thread that runs queries
        self.sync_connections = 0
        self.down = None  # why the database is unreachable, while it is
        self.probe = None
        self.generation = 0  # how many times the async pools were remade after the database came back
        self.began = time.monotonic()

    # -- connections --

    def dsn(self):
        if not self.port:
            raise Refused("no database: start this server with --db-port, the port of the lab's PostgreSQL")
        return postgres.dsn(self.port, host=LOOPBACK, connect_timeout=CONNECT_TIMEOUT_S,
                            options=f"-c statement_timeout={self.statement_timeout_ms}")

    def sync_connection(self):
        """This thread's connection (the sync driver), opened on first use."""
        connection = getattr(self.local, "connection", None)
        if connection is None or connection.closed:
            try:
                connection = psycopg.connect(self.dsn(), autocommit=True)
            except psycopg.OperationalError as error:
                raise Refused(f"database unreachable: {first_line(error)}") from None
            self.local.connection = connection
            self.sync_connections += 1
        return connection

    def sync_query(self, sql, params=()):
        """Run `sql` on this thread's connection, blocking this thread (the loop's own, or one of a pool's)."""
        connection = self.sync_connection()
        try:
            with self.sync_deadlines.bounded(connection) as expired:
                return connection.execute(sql, params).fetchall()
        except psycopg.Error as error:
            if connection.broken or connection.closed:
                connection.close()
                self.local.connection = None
            if expired:
                raise Refused(f"no answer from the database within {self.deadline_s:g} s") from None
            raise refusal(error, self) from None

    async def pool(self, driver):
        """The driver's pool, opened full on its first use (so no measured request pays for connecting); only the
        drivers a run uses hold backends."""
        if self.down:
            raise Refused(self.down)
        opening = self.opening.get(driver)
        if opening is None:
            opening = self.opening[driver] = asyncio.ensure_future(self._open(driver))
        try:
            return await asyncio.shield(opening)
        except Refused:
            if self.opening.get(driver) is opening:
                del self.opening[driver]
            raise

    async def _open(self, driver):
        dsn = self.dsn()  # refuses at once without --db-port
        try:
            if driver == "psycopg":
                pool = psycopg_pool.AsyncConnectionPool(
                    dsn, min_size=self.psycopg_size, max_size=self.psycopg_size, timeout=self.psycopg_timeout_s,
                    kwargs={"autocommit": True}, open=False, name="lesson13",
                )
                try:
                    await self._fill(pool, dsn)
                except BaseException:
                    await pool.close(timeout=0)
                    raise
                self.psycopg_pool = pool
            else:
                self.asyncpg_pool = pool = await asyncpg.create_pool(
                    postgres.url(self.port), min_size=self.asyncpg_size, max_size=self.asyncpg_size,
                    timeout=CONNECT_TIMEOUT_S, ssl=False,
                    server_settings={"statement_timeout": str(self.statement_timeout_ms)},
                )
        except (psycopg.Error, psycopg_pool.PoolTimeout, asyncpg.PostgresError, OSError) as error:
            size = self.psycopg_size if driver == "psycopg" else self.asyncpg_size
            raise Refused(f"could not open the {driver} pool of {size}: {first_line(error)}") from None
        return pool

    async def _fill(self, pool, dsn):
        """Open psycopg_pool and wait until it holds its P connections; fail at its first refused connection.

        pool.open(wait=True) would retry a refused connection until its timeout, and then say only that the pool is
        incomplete: a pool larger than max_connections would answer after 10 s without the reason.
        """
        await pool.open(wait=False)
        filled = asyncio.ensure_future(pool.wait(timeout=CONNECT_TIMEOUT_S + 5))
        errors = 0
        try:
            while not filled.done():
                if pool.get_stats().get("connections_errors", 0) > errors:
                    errors = pool.get_stats()["connections_errors"]
                    try:  # the pool keeps the reason to itself; one connection of our own hears it too
                        probe = await psycopg.AsyncConnection.connect(dsn)
                    except psycopg.OperationalError as refused:
                        raise Refused(f"could not open the psycopg pool of {self.psycopg_size}:"
                                      f" {first_line(refused)}") from None
                    await probe.close()  # it passed, this time: let the pool go on trying
                await asyncio.sleep(0.01)
            await filled
        finally:
            filled.cancel()

    @contextlib.asynccontextmanager
    async def connection(self, driver):
        """A connection from the driver's pool, waiting at most the acquire timeout; its errors become Refused."""
        pool = await self.pool(driver)
        try:
            if driver == "psycopg":
                async with pool.connection(timeout=self.psycopg_timeout_s) as connection:
                    yield connection
            else:
                async with self.asyncpg_usage.acquire(pool, self.asyncpg_timeout_s) as connection:
                    yield connection
        except Refused:
            raise
        except (psycopg.Error, asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as error:
            raise refusal(error, self, driver) from None

    async def query(self, connection, driver, sql, *params):
        """Run `sql` on a pooled connection within the client's deadline; the rows.

        At the deadline the connection is cut, not cancelled: both drivers' cancellation asks the server first
        (psycopg waits up to 5 + 5 s for it, connection_async.py:540; asyncpg's release waits for the cancellation
        and the reset with no timeout, pool.py:257-274, release(timeout=None) at 1019), and a server that stopped
        answering would hold us that long.
        """
        expired = []
        timer = asyncio.get_running_loop().call_later(self.deadline_s, lambda: expired.append(cut(connection)))
        try:
            if driver == "psycopg":
                cursor = await connection.execute(sql.replace("$1", "%s"), params)
                return await cursor.fetchall()
            return await connection.fetch(sql, *params)
        except (psycopg.Error, asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
            if expired:
                raise Refused(f"no answer from the database within {self.deadline_s:g} s") from None
            raise
        finally:
            timer.cancel()

    # -- the routes' work --

    async def sleep(self, how, ms):
        """select pg_sleep(ms / 1000), the way `how` names."""
        sql = "select pg_sleep($1)"
        if how == "blocking":  # the mistake: the sync driver on the loop's own thread
            self.sync_query(sql.replace("$1", "%s"), (ms / 1000,))
        elif how == "executor":
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self.sync_query, sql.replace("$1", "%s"), (ms / 1000,))
        else:
            driver = "psycopg" if how == "pool" else "asyncpg"
            async with self.connection(driver) as connection:
                await self.query(connection, driver, sql, ms / 1000)

    async def rows(self, driver, n):
        """The first n rows of iolab.postgres's table, decoded by the driver on the loop."""
        sql = f"select id, name, score, created from {postgres.TABLE} limit $1"
        async with self.connection(driver) as connection:
            try:
                return len(await self.query(connection, driver, sql, n))
            except (psycopg.errors.UndefinedTable, asyncpg.UndefinedTableError):
                raise Refused(f"no table {postgres.TABLE}: make it first, iolab.postgres.make_table(port, rows)") from None

    async def held(self, driver, db_ms, other_ms, release):
        """A query of db_ms, and a wait of other_ms for another service: with the connection held (late) or not."""
        async with self.connection(driver) as connection:
            await self.query(connection, driver, "select pg_sleep($1)", db_ms / 1000)
            if release == "late":  # e.g. a call to another service inside the transaction
                await asyncio.sleep(other_ms / 1000)
        if release == "early":
            await asyncio.sleep(other_ms / 1000)

    # -- the database gone and back --

    def gone(self, reason):
        """The database stopped answering: refuse at once from now on, and try it until it answers again."""
        if self.down:
            return
        self.down = reason
        if self.probe is None or self.probe.done():
            self.probe = asyncio.get_running_loop().create_task(self._wait_until_back())

    async def _wait_until_back(self):
        # Requests waiting in the pools for a connection that will never come get their error now, not at their
        # timeout (psycopg_pool's 30 s, asyncpg's never): the pools are closed and made anew once it is back.
        old = (self.psycopg_pool, self.asyncpg_pool)
        self.psycopg_pool = self.asyncpg_pool = None
        self.opening = {}
        if old[0] is not None:
            await old[0].close(timeout=0)
        if old[1] is not None:
            old[1].terminate()
        while True:
            try:
                probe = await psycopg.AsyncConnection.connect(self.dsn(), autocommit=True)
            except psycopg.OperationalError:
                await asyncio.sleep(PROBE_EVERY_S)
                continue
            await probe.close()
            break
        self.generation += 1
        self.down = None

    # -- /stats --

    def stats(self):
        if self.psycopg_pool is not None:
            # psycopg_pool/base.py:154: counters since the pool opened; those still at 0 are left out, so named here.
            psycopg_stats = {**dict.fromkeys(PSYCOPG_COUNTERS, 0), **self.psycopg_pool.get_stats()}
        else:
            psycopg_stats = None
        if self.asyncpg_pool is not None:
            asyncpg_stats = {**self.asyncpg_usage.stats, "pool_size": self.asyncpg_pool.get_size(),
                             "pool_available": self.asyncpg_pool.get_idle_size(),
                             "pool_max": self.asyncpg_pool.get_max_size()}
        else:
            asyncpg_stats = None
        return {
            "t": time.monotonic(),  # shared with every process on the machine: a client lines it up with its own
            "uptime_s": time.monotonic() - self.began,
            "cpu_s": time.process_time(),  # every thread of the front end: the loop's and the executor's
            "psycopg_pool": psycopg_stats,
            "asyncpg_pool": asyncpg_stats,
            "sync_connections": self.sync_connections,
            "executor_threads": default_executor_threads(),
            "pool_sizes": {"psycopg": self.psycopg_size, "asyncpg": self.asyncpg_size},
            "acquire_timeout_s": {"psycopg": self.psycopg_timeout_s, "asyncpg": self.asyncpg_timeout_s},
            "statement_timeout_ms": self.statement_timeout_ms,
            "database_down": self.down,
            "pool_generation": self.generation,
        }


def first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


# What a connection lost looks like from each driver: the database shut down, crashed, or its socket closed.
LOST = (psycopg.OperationalError, asyncpg.InterfaceError, asyncpg.PostgresConnectionError,
        asyncpg.OperatorInterventionError, OSError)


def refusal(error, database, driver=None):
    """The Refused a driver's error becomes; a connection lost from a pool marks the database gone."""
    if isinstance(error, psycopg_pool.PoolTimeout) or (driver == "asyncpg" and isinstance(error, TimeoutError)):
        size = database.psycopg_size if driver == "psycopg" else database.asyncpg_size
        return Refused(f"no connection free in the {driver} pool of {size} in time ({first_line(error) or 'timeout'})")
    if isinstance(error, psycopg.errors.QueryCanceled | asyncpg.QueryCanceledError):
        return Refused(f"query cancelled by statement_timeout ({database.statement_timeout_ms} ms)")
    if isinstance(error, TimeoutError):
        return Refused(f"no answer from the database within {database.deadline_s:g} s")
    if not isinstance(error, LOST):
        return Refused(f"the database refused the query: {first_line(error)}")
    reason = f"database unreachable: {first_line(error)}"
    if driver is not None:  # the pools' errors, on the loop; the sync driver just connects anew next time
        database.gone(reason)
    return Refused(reason)
