"""FastAPI under uvicorn in front of lesson 13's PostgreSQL.

`def` with the sync driver, `async def` with a pool.

Besides fastapi_app's routes, it answers:

- `/sync-query?ms=T`: a `def` endpoint running `select pg_sleep(T / 1000)`
  with psycopg's sync driver, one connection per thread of anyio's pool (40
  at once by default, --threads);
- `/async-query?ms=T&driver=psycopg|asyncpg`: an `async def` endpoint, the
  same query through psycopg_pool's AsyncConnectionPool or asyncpg's pool of
  `--pool` P, awaited on the loop;
- `/blocking-query?ms=T`: the mistake, an `async def` calling the sync driver,
  which holds the loop;
- `/rows?n=R&driver=D`, `/held?db_ms=&other_ms=&release=late|early&driver=D`
  and `/stats`, as tornado_db answers them (the pools' own figures, the CPU
  time, the requests in flight, the thread limit).

A database gone, no connection free in time, statement_timeout: a 503 at once,
its reason in the body.
"""

import anyio.to_thread
from fastapi import Request
from fastapi.responses import JSONResponse, PlainTextResponse

import _db_client
import fastapi_app
import uvicorn_app
from _db_client import Database, Refused
from iolab.contract import parse_args

IN_FLIGHT = {"requests_in_flight": 0, "requests_finished": 0}


def build_app(threads, database):
    app = fastapi_app.build_app(threads)

    @app.exception_handler(Refused)
    async def refused(request, error):
        return PlainTextResponse(f"{error.status} {error}\n", status_code=error.status)

    @app.get("/sync-query", response_class=PlainTextResponse)
    def sync_query(request: Request):
        """A `def` endpoint: the sync driver blocks one of anyio's threads, not the loop."""
        ms = _db_client.ms_of(request.url.query)
        database.sync_query("select pg_sleep(%s)", (ms / 1000,))
        return f"slept {ms} ms in the database (sync driver in a thread)\n"

    @app.get("/blocking-query", response_class=PlainTextResponse)
    async def blocking_query(request: Request):
        """The mistake: the sync driver inside an `async def` holds the loop for the whole query."""
        ms = _db_client.ms_of(request.url.query)
        await database.sleep("blocking", ms)
        return f"slept {ms} ms in the database (blocking the loop)\n"

    @app.get("/async-query", response_class=PlainTextResponse)
    async def async_query(request: Request):
        query = request.url.query
        ms = _db_client.ms_of(query)
        driver = _db_client.choice(query, "driver", _db_client.DRIVERS, default="psycopg")
        await database.sleep("pool" if driver == "psycopg" else "asyncpg", ms)
        return f"slept {ms} ms in the database ({driver} pool)\n"

    @app.get("/rows", response_class=PlainTextResponse)
    async def rows(request: Request):
        n = _db_client.rows_of(request.url.query)
        driver = _db_client.choice(request.url.query, "driver", _db_client.DRIVERS)
        return f"read {await database.rows(driver, n)} rows ({driver})\n"

    @app.get("/held", response_class=PlainTextResponse)
    async def held(request: Request):
        query = request.url.query
        db_ms, other_ms = _db_client.ms_of(query, "db_ms"), _db_client.ms_of(query, "other_ms")
        release = _db_client.choice(query, "release", _db_client.RELEASES)
        driver = _db_client.choice(query, "driver", _db_client.DRIVERS, default="psycopg")
        await database.held(driver, db_ms, other_ms, release)
        return (f"held a connection of the {driver} pool {db_ms} ms in the database, released {release},"
                f" waited {other_ms} ms\n")

    @app.get("/stats")
    async def stats():
        threads = anyio.to_thread.current_default_thread_limiter().total_tokens
        return JSONResponse({**database.stats(), **IN_FLIGHT, "threads": threads})

    return counting(app)


def counting(app):
    """The ASGI app, counting the HTTP requests in flight (all but /stats), on the loop where they start and end."""

    async def counted(scope, receive, send):
        if scope["type"] != "http" or scope["path"] == "/stats":
            return await app(scope, receive, send)
        IN_FLIGHT["requests_in_flight"] += 1
        try:
            return await app(scope, receive, send)
        finally:
            IN_FLIGHT["requests_in_flight"] -= 1
            IN_FLIGHT["requests_finished"] += 1

    return counted


def main():
    def add_arguments(parser):
        uvicorn_app.add_arguments(parser)
        parser.add_argument(
            "--threads", type=int, default=fastapi_app.DEFAULT_THREADS,
            help=f"`def` endpoints run at once in anyio's thread pool (default {fastapi_app.DEFAULT_THREADS}, anyio's own)",
        )
        _db_client.add_arguments(parser)

    args = parse_args(__doc__.splitlines()[0], add_arguments)
    if not 1 <= args.threads <= 1000:
        raise SystemExit(f"--threads must be between 1 and 1000, got {args.threads}")
    _db_client.check_arguments(args)
    uvicorn_app.serve(build_app(args.threads, Database(args)), args, lifespan="on")


if __name__ == "__main__":
    main()
