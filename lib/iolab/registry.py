"""Every server the lab can start.

Its file, concurrency model, routes, how many requests it serves at once, its arguments.
"""

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .contract import ROUTES, find_program

ALL_ROUTES = tuple(ROUTES)
# What a server's port may speak: "http", the contract's routes (load clients, wrk, ab and the HTTP tests drive it),
# or "redis", Redis's own protocol (lesson 10's broker: PING, queues; no HTTP request reaches it),
# or "postgres", PostgreSQL's (lesson 13's database and pgbouncer in front of it: a driver connects there).
PROTOCOLS = ("http", "redis", "postgres")
NO_WAIT_ROUTES = ("/", "/sync-sleep", "/cpu")  # for a model with no way to wait without blocking


@dataclass(frozen=True)
class Option:
    """One extra argument of a server: `serve(name, threads=4)` becomes `--threads 4`."""

    flag: str
    help: str
    default: object = None


@dataclass(frozen=True)
class ServerInfo:
    """What a lesson, a test or a Run panel needs to know about a server before it starts it."""

    name: str
    script: str  # the file under servers/ that speaks the contract (a wrapper, for nginx and gunicorn)
    model: str  # the concurrency model, in a few words
    routes: tuple[str, ...] = ALL_ROUTES  # the contract's routes it has; the others answer 404
    options: dict[str, Option] = field(default_factory=dict)  # keyword -> Option
    # How many blocking requests (/sync-sleep, /cpu) it serves at once, given its options;
    # None where only memory and file descriptors limit it (a thread per connection).
    serves_at_once: Callable[[dict[str, Any]], int | None] = lambda options: 1
    needs_programs: tuple[str, ...] = ()  # commands that must be on PATH (nginx)
    needs_modules: tuple[str, ...] = ()  # Python packages that must import (gunicorn)
    lesson: str = ""
    protocol: str = "http"  # what its LISTENING port speaks (PROTOCOLS): what a client, wrk or a test can drive there

    @property
    def waits_without_blocking(self) -> bool:
        """True when the model has a way to wait without holding a thread: it serves /async-sleep."""
        return "/async-sleep" in self.routes

    def option_values(self, **options: Any) -> dict[str, Any]:
        """The options with defaults filled in; an unknown keyword is refused by name."""
        unknown = set(options) - set(self.options)
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise ValueError(f"server {self.name!r} takes no option {sorted(unknown)}; its options: {known}")
        return {key: options.get(key, option.default) for key, option in self.options.items()}

    def arguments(self, **options: Any) -> list[str]:
        """The command-line arguments for `options` (only the ones given, so the server's defaults apply)."""
        self.option_values(**options)
        argv = []
        for key, value in options.items():
            if value is not None:
                argv += [self.options[key].flag, str(value)]
        return argv

    def at_once(self, **options: Any) -> int | None:
        """How many blocking requests it serves at once with these options (None: no fixed limit)."""
        return self.serves_at_once(self.option_values(**options))

    def missing(self) -> str | None:
        """Why this server cannot start on this machine (a program or package not installed), or None."""
        programs = [program for program in self.needs_programs if find_program(program) is None]
        modules = [module for module in self.needs_modules if importlib.util.find_spec(module) is None]
        if programs or modules:
            what = ", ".join([f"the program {p!r}" for p in programs] + [f"the Python package {m!r}" for m in modules])
            return f"server {self.name!r} needs {what}, which is not installed here"
        return None


# serves_at_once where whole-number options set the limit: what option_values gives for them is an int.
def _threads(options: Mapping[str, int]) -> int:
    return options["threads"]


def _workers(options: Mapping[str, int]) -> int:
    return options["workers"]


def _workers_times_threads(options: Mapping[str, int]) -> int:
    return options["workers"] * options["threads"]


def _concurrency(options: Mapping[str, int]) -> int:
    return options["concurrency"]


# Lesson 10's front ends all take these, for the backend route /backend?ms=N&how=...
BACKEND_OPTIONS = {
    "broker": Option("--broker", "the lab's Redis, redis://127.0.0.1:PORT/0 (without it /backend answers 503)"),
    "queue_limit": Option("--queue-limit", "answer /backend with 503 when the broker's queue holds this many (0: no limit)", 0),
    "timeout_ms": Option("--timeout-ms", "how long /backend waits for a result before it answers 504", 10_000),
}
BACKEND_MODULES = ("celery", "redis")

UVICORN_OPTIONS = {  # every server uvicorn runs: the lab's bare ASGI app, Django's, Falcon's
    "loop": Option("--loop", "the event loop: asyncio, uvloop, or auto (uvloop when installed)", "auto"),
    "http": Option("--http", "the HTTP parser: h11 (pure Python), httptools (C), or auto", "auto"),
}


# Lesson 13's front ends all take these: where the database is, the pools' size and timeouts.
DB_OPTIONS = {
    "db_port": Option("--db-port", "the port of the lab's PostgreSQL (the postgres server); without it, 503s"),
    "pool": Option("--pool", "P, connections in each async pool (default: psycopg_pool's 4, asyncpg's 10)"),
    "acquire_timeout_s": Option("--acquire-timeout-s",
                                "seconds a request waits for a free connection, or none (default: psycopg_pool's 30,"
                                " asyncpg's none)"),
    "statement_timeout_ms": Option("--statement-timeout-ms", "PostgreSQL's statement_timeout on every connection", 10_000),
}
DB_MODULES = ("psycopg", "psycopg_pool", "asyncpg")
PUSH_OPTIONS = {  # lesson 12's push servers all take these
    "compression": Option("--compression", "permessage-deflate on /ws: off or on", "off"),
    "max_buffer_kib": Option("--max-buffer-kib", "drop a subscriber whose unsent bytes pass this many KiB", 1024),
    "send_timeout_s": Option("--send-timeout-s", "with how=await, drop a subscriber whose send takes longer (s)", 10.0),
}


def _upstreams_times_theirs(options: dict[str, Any]) -> int | None:
    theirs = get(options["upstream"]).at_once()
    return None if theirs is None else options["upstreams"] * theirs


SERVERS = {
    info.name: info
    for info in [
        # tornado_app alone also answers /offload-sleep?ms=N (lesson 03's A′: time.sleep in a thread
        # pool); `routes` lists only the contract's, which every server must answer.
        ServerInfo(
            "tornado_app", "tornado_app.py", "one thread, an event loop (Tornado on asyncio)",
            options={"backlog": Option("--backlog", "connections the kernel may queue for accept() (Tornado's: 128)")},
            lesson="02-sync-vs-async",
        ),
        ServerInfo(
            "threaded_app", "threaded_app.py",
            "one process, a thread per connection, or a pool of --threads (http.server)",
            routes=NO_WAIT_ROUTES,
            options={
                "threads": Option("--threads", "a fixed pool of this many threads instead of one per connection"),
                "stack_size": Option("--stack-size", "KiB of stack each new thread reserves (threading.stack_size)"),
                "idle_timeout": Option("--idle-timeout", "seconds an idle keep-alive connection keeps its thread"),
            },
            serves_at_once=_threads,
            lesson="01-bank-queue",
        ),
        ServerInfo(
            "step1_blocking", "step1_blocking.py", "one thread, blocking sockets: one client at a time",
            routes=NO_WAIT_ROUTES, lesson="05-event-loop-from-scratch",
        ),
        ServerInfo(
            "step2_busy_wait", "step2_busy_wait.py", "one thread, non-blocking sockets polled in a busy loop",
            lesson="05-event-loop-from-scratch",
        ),
        ServerInfo(
            "step3_callbacks", "step3_callbacks.py", "one thread, a select() loop calling callbacks",
            lesson="05-event-loop-from-scratch",
        ),
        ServerInfo(
            "step4_event_loop", "step4_event_loop.py",
            "one thread, the hand-built event loop: loop, stream and HTTP connection as in Tornado",
            options={
                "trace": Option("--trace", "write one JSON line per loop iteration to this path"),
                "slow_callback_ms": Option("--slow-callback-ms", "warn when one callback holds the loop this long"),
                "idle_timeout": Option("--idle-timeout", "close a connection idle this many seconds"),
                "selector": Option("--selector", "the system call the loop waits in: epoll (Linux's default), poll or select"),
            },
            lesson="05-event-loop-from-scratch",
        ),
        ServerInfo(
            "step5_coroutines", "step5_coroutines.py",
            "one thread, the hand-built event loop running handlers as coroutines (a Future and a Task)",
            lesson="05-event-loop-from-scratch",
        ),
        ServerInfo(
            "gunicorn_app", "gunicorn_app.py",
            "gunicorn: an arbiter forking --workers processes of --threads threads each, running a WSGI app",
            routes=NO_WAIT_ROUTES,
            options={
                "workers": Option("--workers", "worker processes forked by gunicorn's arbiter", 1),
                "threads": Option("--threads", "threads per worker; above 1, gunicorn uses gthread workers", 1),
                "worker_class": Option(
                    "--worker-class", "sync (one request at a time, closes every connection) or gthread", "sync"
                ),
                "keepalive": Option("--keep-alive", "seconds gthread keeps an idle keep-alive connection (gunicorn's 2)", 2),
            },
            serves_at_once=_workers_times_threads,
            needs_modules=("gunicorn",),
            lesson="06-workers-threads-processes",
        ),
        ServerInfo(
            "nginx_hello", "nginx_hello.py", "nginx answering / itself: an event loop in C in each worker process",
            routes=("/",),
            options={"workers": Option("--workers", "worker processes, each an event loop", 1)},
            serves_at_once=_workers,  # no blocking routes: what it has is one request on a CPU per worker
            needs_programs=("nginx",),
            lesson="06-workers-threads-processes",
        ),
        ServerInfo(
            "nginx_proxy", "nginx_proxy.py",
            "nginx as a keep-alive reverse proxy to --upstreams lab servers it starts and stops with itself",
            routes=ALL_ROUTES,  # its upstream's: these are tornado_app's, the default upstream
            options={
                "upstreams": Option("--upstreams", "how many upstream servers nginx spreads the requests over", 2),
                "upstream": Option("--upstream", "which lab server each upstream is", "tornado_app"),
                "workers": Option("--workers", "nginx worker processes", 1),
            },
            serves_at_once=_upstreams_times_theirs,
            needs_programs=("nginx",),
            lesson="06-workers-threads-processes",
        ),
        ServerInfo(
            "aiohttp_app", "aiohttp_app.py", "one thread, an event loop (aiohttp's web server on asyncio)",
            needs_modules=("aiohttp",),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "uvicorn_app", "uvicorn_app.py",
            "one thread, an event loop: uvicorn running a bare ASGI app (apps/asgi_app.py), no framework",
            options=UVICORN_OPTIONS,
            needs_modules=("uvicorn",),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "fastapi_app", "fastapi_app.py",
            "one thread, an event loop (FastAPI under uvicorn); `def` endpoints run in anyio's pool of --threads",
            options={"threads": Option("--threads", "`def` endpoints run at once in anyio's thread pool (FastAPI's 40)", 40)},
            serves_at_once=_threads,  # /sync-sleep and /cpu are `def` endpoints; /blocking-sleep (not listed) serves 1
            needs_modules=("fastapi", "uvicorn"),
            lesson="11-the-client-side",
        ),
        ServerInfo(
            "pipeline_app", "pipeline_app.py",
            "one thread, a raw asyncio Protocol: every pipelined request in a read answered in order, in one write",
            options={
                "loop": Option("--loop", "the event loop: asyncio or uvloop", "asyncio"),
                "parser": Option("--parser", "the request parser: ours (pipeline/parsers.py) or httptools", "ours"),
                "write": Option("--write", "batched (one write per batch of answers) or per-response", "batched"),
                "max_waiting": Option("--max-waiting", "requests that may wait at once on one connection", 100),
            },
            lesson="08-pipelining",
        ),
        ServerInfo(
            "pipeline_batch_app", "pipeline_batch_app.py",
            "pipeline_app with a batch path: a read of hello worlds recognised by one compiled pattern, answered by one"
            " join; anything else by pipeline_app's full path",
            options={
                "loop": Option("--loop", "the event loop: asyncio or uvloop", "asyncio"),
                "parser": Option("--parser", "the full parser, for what the pattern does not recognise: ours or httptools",
                                 "ours"),
                "max_waiting": Option("--max-waiting", "requests that may wait at once on one connection", 100),
            },
            lesson="08-pipelining",
        ),
        ServerInfo(
            "django_gunicorn", "django_gunicorn.py",
            "gunicorn's arbiter forking --workers sync workers running Django's def views: one request at a time each",
            routes=NO_WAIT_ROUTES,
            options={"workers": Option("--workers", "sync worker processes forked by gunicorn's arbiter", 1)},
            serves_at_once=_workers,
            needs_modules=("gunicorn", "django"),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "django_uvicorn", "django_uvicorn.py",
            "one thread, an event loop: uvicorn running Django's ASGI handler with async def views",
            options=UVICORN_OPTIONS,
            needs_modules=("uvicorn", "django"),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "falcon_gunicorn", "falcon_gunicorn.py",
            "gunicorn's arbiter forking --workers sync workers running Falcon's WSGI app: one request at a time each",
            routes=NO_WAIT_ROUTES,
            options={"workers": Option("--workers", "sync worker processes forked by gunicorn's arbiter", 1)},
            serves_at_once=_workers,
            needs_modules=("gunicorn", "falcon"),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "falcon_uvicorn", "falcon_uvicorn.py",
            "one thread, an event loop: uvicorn running Falcon's ASGI app with async def responders",
            options=UVICORN_OPTIONS,
            needs_modules=("uvicorn", "falcon"),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "cherrypy_app", "cherrypy_app.py",
            "CherryPy on its own server (cheroot): a pool of --threads threads, one request on each",
            routes=NO_WAIT_ROUTES,
            options={"threads": Option("--threads", "the server's thread pool (CherryPy's default: 10)", 10)},
            serves_at_once=_threads,
            needs_modules=("cherrypy",),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "bottle_gevent", "bottle_gevent.py",
            "one thread, gevent's WSGIServer running Bottle, monkey-patched: a greenlet per connection",
            serves_at_once=lambda options: None,
            needs_modules=("gevent", "bottle"),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "sanic_app", "sanic_app.py",
            "one thread, an event loop: Sanic's own server (uvloop, httptools), one worker in this process",
            needs_modules=("sanic",),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "twisted_app", "twisted_app.py",
            "one thread, an event loop: Twisted's web server on its reactor (epoll)",
            needs_modules=("twisted",),
            lesson="08-pipelining",
        ),
        ServerInfo(
            "redis_server", "redis_server.py",
            "Redis (Debian's redis-server) as broker and result store: one thread, loopback, no persistence, a memory cap",
            routes=(),
            options={"maxmemory_mb": Option("--maxmemory-mb", "Redis's memory cap in MB; past it, writes fail", 64)},
            needs_programs=("redis-server",),
            lesson="10-slow-backend",
            protocol="redis",
        ),
        ServerInfo(
            "celery_worker", "celery_worker.py",
            "a Celery worker pool running apps/backend_tasks.py: --concurrency tasks at once; its port is a status page",
            routes=("/",),
            options={
                "broker": Option("--broker", "the lab's Redis (without it, the worker starts a Redis of its own)"),
                "pool": Option("--pool", "threads, prefork, gevent or solo", "threads"),
                "concurrency": Option("--concurrency", "tasks run at once: c, the backend tier's servers", 4),
            },
            serves_at_once=_concurrency,
            needs_programs=("redis-server",),
            needs_modules=BACKEND_MODULES,
            lesson="10-slow-backend",
        ),
        ServerInfo(
            "tornado_backend", "tornado_backend.py",
            "one thread, an event loop (Tornado) calling the Celery backend: blocking, forgetting, k threads or awaiting",
            options={**BACKEND_OPTIONS, "threads": Option("--threads", "k, the threads that wait for results in how=pool", 4)},
            needs_modules=BACKEND_MODULES,
            lesson="10-slow-backend",
        ),
        ServerInfo(
            "gevent_flask", "gevent_flask.py",
            "one thread, gevent's WSGIServer running Flask: a greenlet per connection, monkey-patched unless --patch no",
            options={
                **BACKEND_OPTIONS,
                "patch": Option("--patch", "yes (gevent's monkey-patching) or no: every blocking call blocks the server", "yes"),
            },
            serves_at_once=lambda options: None,
            needs_modules=BACKEND_MODULES + ("gevent", "flask"),
            lesson="10-slow-backend",
        ),
        ServerInfo(
            "gunicorn_flask", "gunicorn_flask.py",
            "gunicorn's arbiter forking --workers sync workers running Flask: one request at a time each",
            routes=NO_WAIT_ROUTES,
            options={
                **BACKEND_OPTIONS,
                "workers": Option("--workers", "sync worker processes forked by gunicorn's arbiter", 1),
            },
            serves_at_once=_workers,
            needs_modules=BACKEND_MODULES + ("gunicorn", "flask"),
            lesson="10-slow-backend",
        ),
        ServerInfo(
            "postgres", "postgres_server.py",
            "PostgreSQL (Debian's): a throwaway cluster, a backend process per connection, loopback, no fsync",
            routes=(),
            options={
                "max_connections": Option("--max-connections", "connections it accepts at once; past it: too many clients",
                                          100),
                "shared_buffers_mb": Option("--shared-buffers-mb", "its shared buffer cache in MB", 128),
            },
            serves_at_once=lambda options: options["max_connections"],
            needs_programs=("postgres",),
            lesson="13-a-real-database",
            protocol="postgres",
        ),
        ServerInfo(
            "pgbouncer", "pgbouncer_server.py",
            "pgbouncer (Debian's) in transaction mode in front of a postgres server: many clients share --pool-size"
            " server connections, one event loop in C",
            routes=(),
            options={
                "db_port": Option("--db-port", "the port of the lab's PostgreSQL; without it, a cluster of its own"),
                "pool_size": Option("--pool-size", "server connections it opens (default_pool_size)", 20),
                "max_client_conn": Option("--max-client-conn", "clients connected at once (max_client_conn)", 100),
            },
            serves_at_once=lambda options: options["pool_size"],
            needs_programs=("pgbouncer", "postgres"),
            lesson="13-a-real-database",
            protocol="postgres",
        ),
        # tornado_db also answers /query?ms=T&how=H, /rows?n=R&driver=D, /held?db_ms=&other_ms=&release= and /stats.
        ServerInfo(
            "tornado_db", "tornado_db.py",
            "one thread, an event loop (Tornado) calling PostgreSQL: the sync driver on the loop or in the default"
            " executor, or an async driver through its pool",
            options=DB_OPTIONS,
            needs_modules=DB_MODULES + ("tornado",),
            lesson="13-a-real-database",
        ),
        # fastapi_db also answers /sync-query, /async-query, /blocking-query, /rows, /held and /stats.
        ServerInfo(
            "fastapi_db", "fastapi_db.py",
            "one thread, an event loop (FastAPI under uvicorn) calling PostgreSQL: `def` endpoints with the sync driver"
            " in anyio's --threads, `async def` ones through an async driver's pool",
            options={
                **UVICORN_OPTIONS,
                "threads": Option("--threads", "`def` endpoints run at once in anyio's thread pool (FastAPI's 40)", 40),
                **DB_OPTIONS,
            },
            serves_at_once=_threads,
            needs_modules=DB_MODULES + ("fastapi", "uvicorn"),
            lesson="13-a-real-database",
        ),
        ServerInfo(
            "gunicorn_longpoll", "gunicorn_longpoll.py",
            "gunicorn's sync workers running a Flask long poll: each parked /poll holds a whole worker",
            routes=("/",),  # and /poll?cursor=K, /publish, /stats (SIGUSR1 to the wrapper publishes too)
            options={
                "workers": Option("--workers", "sync worker processes: each holds one long poll", 2),
                "timeout": Option("--timeout", "gunicorn's --timeout: seconds a silent worker lives before it is killed", 90),
            },
            serves_at_once=_workers,
            needs_modules=("gunicorn", "flask"),
            lesson="12-long-lived-connections",
        ),
        ServerInfo(
            "nginx_ws_proxy", "nginx_ws_proxy.py",
            "nginx in front of one lab push server it starts and stops with itself: WebSocket, SSE and long polls",
            routes=("/",),  # its upstream's: tornado_push answers the contract's / (and /ws, /sse, /poll, /publish)
            options={
                "upstream": Option("--upstream", "which lab server nginx proxies to", "tornado_push"),
                "upgrade_headers": Option("--upgrade-headers", "on: pass Upgrade and Connection on, as a WebSocket needs", "on"),
                "read_timeout_s": Option("--read-timeout-s", "proxy_read_timeout: seconds nginx waits for the upstream", 60),
            },
            serves_at_once=lambda options: 1,  # its one upstream's, an event loop
            needs_programs=("nginx",),
            lesson="12-long-lived-connections",
        ),
        ServerInfo(
            "tornado_push", "tornado_push.py",
            "one thread, an event loop (Tornado) holding WebSocket, SSE and long-poll subscribers; /publish?how= loop,"
            " await, frame, or floor (one bare send() each)",
            routes=("/",),
            options=PUSH_OPTIONS,
            lesson="12-long-lived-connections",
        ),
        ServerInfo(
            "aiohttp_push", "aiohttp_push.py",
            "one thread, an event loop (aiohttp) holding WebSocket and SSE subscribers; /publish?how= await or tasks",
            routes=("/",),
            options=PUSH_OPTIONS,
            needs_modules=("aiohttp",),
            lesson="12-long-lived-connections",
        ),
        ServerInfo(
            "websockets_push", "websockets_push.py",
            "one thread, an event loop (the websockets library's asyncio server) holding WebSocket subscribers;"
            " /publish?how= broadcast or await",
            routes=("/",),
            options=PUSH_OPTIONS,
            needs_modules=("websockets",),
            lesson="12-long-lived-connections",
        ),
        ServerInfo(
            "service_app", "service_app.py",
            "one thread, an event loop (Tornado) that measures its own lag: a blocker and a heartbeat in a window,"
            " a pool of slots held leaky or with async with, and a drain on SIGTERM",
            options={"pool": Option("--pool", "slots in the pool of /pool", 8),
                     "drain_ms": Option("--drain-ms", "how long SIGTERM waits for requests in flight (0: exit at once)",
                                        0)},
            lesson="15-running-a-service",
        ),
        ServerInfo(
            "uvicorn_drain", "uvicorn_drain.py",
            "one thread, an event loop: uvicorn (asyncio, h11) on the bare ASGI app, its graceful shutdown's timeout"
            " set by --timeout-graceful-shutdown",
            options={"timeout_graceful_shutdown": Option(
                "--timeout-graceful-shutdown", "seconds SIGTERM waits for requests in flight (uvicorn's own: no limit)")},
            needs_modules=("uvicorn",),
            lesson="15-running-a-service",
        ),
        ServerInfo(
            "bulk_sender", "bulk_sender.py",
            "one process, a thread per connection (http.server); /bytes?n=N&cc= sends N bytes with that congestion"
            " control",
            routes=NO_WAIT_ROUTES, serves_at_once=lambda options: None, lesson="14-the-network",
        ),
        ServerInfo(
            "hypercorn_app", "hypercorn_app.py",
            "one thread, an event loop: hypercorn (asyncio) running the bare ASGI app, HTTP/1.1 and HTTP/2 in cleartext"
            " (h2c) on one port; /bytes?n=N answers N bytes",
            options={"congestion": Option(
                "--congestion", "TCP congestion control of every connection: default (the kernel's), reno, cubic or"
                " bbr", "default")},
            needs_modules=("hypercorn",),
            lesson="14-the-network",
        ),
        ServerInfo(
            "gunicorn_drain", "gunicorn_drain.py",
            "gunicorn as gunicorn_app (an arbiter, --workers of --threads each), its graceful timeout set by"
            " --graceful-timeout",
            routes=NO_WAIT_ROUTES,
            options={
                "workers": Option("--workers", "worker processes forked by gunicorn's arbiter", 1),
                "threads": Option("--threads", "threads per worker; above 1, gunicorn uses gthread workers", 1),
                "worker_class": Option("--worker-class", "sync (one request at a time) or gthread", "sync"),
                "graceful_timeout": Option(
                    "--graceful-timeout", "whole seconds SIGTERM waits for requests in flight before SIGKILL", 1),
            },
            serves_at_once=_workers_times_threads,
            needs_modules=("gunicorn",),
            lesson="15-running-a-service",
        ),
        ServerInfo(
            "nginx_balancer", "nginx_balancer.py",
            "nginx taking turns over upstream servers listed in --upstreams-file, read again on SIGHUP (a reload);"
            " without it, two tornado_app of its own",
            options={
                "upstreams_file": Option("--upstreams-file", "one HOST:PORT a line, 'HOST:PORT down' for one taken out"),
                "workers": Option("--workers", "nginx worker processes", 1),
            },
            # Its own pair of tornado_app serve one blocking request each; upstreams started elsewhere are theirs.
            serves_at_once=lambda options: None if options["upstreams_file"] else 2,
            needs_programs=("nginx",),
            lesson="15-running-a-service",
        ),
    ]
}


def get(name: str) -> ServerInfo:
    try:
        return SERVERS[name]
    except KeyError:
        raise ValueError(f"server must be one of {sorted(SERVERS)}, got {name!r}") from None


def missing(*names: str) -> str | None:
    """Why the servers `names` cannot all start here, or None: the first one not in the lab (its name),
    or the first that needs a program or Python package not installed (which, and that it is not)."""
    for name in names:
        if name not in SERVERS:
            return f"server {name!r} is not in this lab's registry"
        reason = SERVERS[name].missing()
        if reason:
            return reason
    return None


def names(protocol: str | None = None) -> list[str]:
    """Every server's name, sorted; with `protocol`, only those whose port speaks it (one of PROTOCOLS)."""
    if protocol is None:
        return sorted(SERVERS)
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {list(PROTOCOLS)}, got {protocol!r}")
    return sorted(name for name, info in SERVERS.items() if info.protocol == protocol)
