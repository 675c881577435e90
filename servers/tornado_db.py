"""Tornado in front of lesson 13's PostgreSQL.

The blocking driver, a thread pool, or an async pool.

Besides the contract's routes (tornado_app's handlers), it answers:

- `/query?ms=T&how=H` runs `select pg_sleep(T / 1000)`, with H one of
  `blocking` (psycopg's sync connection called on the loop: the mistake),
  `executor` (the same in loop.run_in_executor(None, ...): the default thread
  pool, min(32, os.cpu_count() + 4) threads), `pool` (psycopg_pool's
  AsyncConnectionPool of `--pool` P) or `asyncpg` (asyncpg's pool of P);
- `/rows?n=R&driver=psycopg|asyncpg` reads R rows of iolab.postgres's table,
  decoded on the loop (the driver's CPU per row);
- `/held?db_ms=&other_ms=&release=late|early&driver=` holds a pooled
  connection across a wait for another service (late), or releases it first;
- `/stats`: the pools' own figures (psycopg_pool's get_stats(), the same
  names kept for asyncpg), the process's CPU time and the requests in flight.

A database gone, a pool with no connection free within the acquire timeout, a
query past statement_timeout: a 503 at once, its reason in the body.
"""

import asyncio
import json

import tornado.httpserver
import tornado.netutil
import tornado.web

import _db_client
from _db_client import Database, Refused
from iolab.contract import announce, die_with_parent, exit_on_sigterm, parse_args
from tornado_app import AsyncSleep, Cpu, Instant, LabHandler, NotFound, SyncSleep

IN_FLIGHT = {"requests_in_flight": 0, "requests_finished": 0}


class DatabaseHandler(LabHandler):
    """A route that calls the database: counted in flight, its Refused a one-line 503."""

    def prepare(self):
        IN_FLIGHT["requests_in_flight"] += 1

    def on_finish(self):
        IN_FLIGHT["requests_in_flight"] -= 1
        IN_FLIGHT["requests_finished"] += 1

    async def get(self):
        database = self.settings["database"]
        try:
            text = await self.work(database, self.request.query)
        except Refused as refused:
            self.set_status(refused.status)
            text = f"{refused.status} {refused}"
        self.answer(text)


class Query(DatabaseHandler):
    async def work(self, database, query):
        ms = _db_client.ms_of(query)
        how = _db_client.choice(query, "how", _db_client.HOWS)
        await database.sleep(how, ms)
        return f"slept {ms} ms in the database ({how})"


class Rows(DatabaseHandler):
    async def work(self, database, query):
        n = _db_client.rows_of(query)
        driver = _db_client.choice(query, "driver", _db_client.DRIVERS)
        return f"read {await database.rows(driver, n)} rows ({driver})"


class Held(DatabaseHandler):
    async def work(self, database, query):
        db_ms, other_ms = _db_client.ms_of(query, "db_ms"), _db_client.ms_of(query, "other_ms")
        release = _db_client.choice(query, "release", _db_client.RELEASES)
        driver = _db_client.choice(query, "driver", _db_client.DRIVERS, default="psycopg")
        await database.held(driver, db_ms, other_ms, release)
        return f"held a connection of the {driver} pool {db_ms} ms in the database, released {release}, waited {other_ms} ms"


class Stats(tornado.web.RequestHandler):
    """The pools' figures, the CPU time and the requests in flight, as JSON; not counted in them."""

    def get(self):
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({**self.settings["database"].stats(), **IN_FLIGHT}) + "\n")


def make_app(database):
    return tornado.web.Application(
        [
            (r"/", Instant),
            (r"/sync-sleep", SyncSleep),
            (r"/async-sleep", AsyncSleep),
            (r"/cpu", Cpu),
            (r"/query", Query),
            (r"/rows", Rows),
            (r"/held", Held),
            (r"/stats", Stats),
        ],
        default_handler_class=NotFound,
        log_function=lambda handler: None,
        database=database,
    )


async def main():
    args = parse_args(__doc__, _db_client.add_arguments)
    _db_client.check_arguments(args)
    die_with_parent()
    exit_on_sigterm()
    database = Database(args)
    sockets = tornado.netutil.bind_sockets(args.port, address=args.host)
    server = tornado.httpserver.HTTPServer(make_app(database))
    server.add_sockets(sockets)
    announce(*sockets[0].getsockname()[:2])
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
