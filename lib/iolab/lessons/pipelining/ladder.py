"""The ladder: hello world with keep-alive on every server.

On every server the lab has, from a thread per connection to nginx, beside the write-ups' figures.
"""

from iolab import registry

# (label, registry name, options, what it is), slowest first as they usually come out.
RUNGS = [
    ("threaded_app", "threaded_app", {}, "a thread per connection (http.server)"),
    ("gunicorn gthread", "gunicorn_app", {"workers": 1, "threads": 4, "worker_class": "gthread"},
     "gunicorn, 1 worker of 4 threads, a WSGI app"),
    ("tornado_app", "tornado_app", {}, "Tornado on asyncio"),
    ("aiohttp_app", "aiohttp_app", {}, "aiohttp's web server on asyncio"),
    ("step4_event_loop", "step4_event_loop", {}, "lesson 05's hand-built event loop"),
    ("uvicorn_app", "uvicorn_app", {}, "uvicorn (uvloop, httptools) and a bare ASGI app"),
    ("raw asyncio", "pipeline_app", {"loop": "asyncio", "parser": "ours"},
     "a bare asyncio Protocol, our parser (pipeline_app)"),
    ("uvloop + httptools", "pipeline_app", {"loop": "uvloop", "parser": "httptools"},
     "the same Protocol on uvloop, parsed by httptools (C)"),
    ("nginx", "nginx_hello", {"workers": 1}, "nginx, 1 worker: an event loop in C"),
]
QUICK_RUNGS = ("tornado_app", "aiohttp_app", "raw asyncio", "uvloop + httptools", "nginx")
FASTEST = "uvloop + httptools"  # the pipelining server at its fastest: the one the depth sweep drives

# What the write-ups measured, with their conditions: never this machine's figures.
SEED_FIGURES = {
    "threaded_app": None,
    "gunicorn gthread": ("882 req/s", "gunicorn + Flask, 1 process x 32 threads; wrk -t64 -c320, 8 cores"),
    "tornado_app": ("452 req/s", "Tornado hello world; wrk -t10 -c1000, a small cloud VM"),
    "aiohttp_app": None,
    "step4_event_loop": None,
    "uvicorn_app": None,
    "raw asyncio": None,
    "uvloop + httptools": None,
    "nginx": ("24,458 req/s", "nginx's fixed hello world, all workers; wrk -t64 -c320, 8 cores"),
}
JAPRONTO = {
    "server": "Japronto, 1 worker process",
    "rps": 1_000_000.0,
    "cores": 8,
    "client": "wrk -t1 -c100",
    "depth": 24,
    "how": "picohttpparser (C, SSE4.2), uvloop, answers written in one call per batch, few Python objects",
}


def rungs(quick=False):
    """[(label, name, options, what)] to run: all of them, or in quick mode a few that span the ladder."""
    return [rung for rung in RUNGS if not quick or rung[0] in QUICK_RUNGS]


def missing(name):
    """Why server `name` cannot run here (a program or package not installed), or None."""
    if name not in registry.SERVERS:
        return f"server {name!r} is not in this lab's registry"
    return registry.get(name).missing()
