"""The ladder: hello world with keep-alive on every server.

On every server the lab has, from a thread per connection to nginx, beside the write-ups' figures.
"""

from iolab import registry

# (label, registry name, options, what it is), slowest first as they usually come out.
RUNGS = [
    ("django_uvicorn", "django_uvicorn", {}, "Django's ASGI handler under uvicorn, async def views"),
    ("cherrypy_app", "cherrypy_app", {}, "CherryPy on its own server (cheroot), a pool of 10 threads"),
    ("django_gunicorn", "django_gunicorn", {"workers": 1}, "Django under gunicorn, 1 sync worker: WSGI, def views"),
    ("threaded_app", "threaded_app", {}, "a thread per connection (http.server)"),
    ("gunicorn gthread", "gunicorn_app", {"workers": 1, "threads": 4, "worker_class": "gthread"},
     "gunicorn, 1 worker of 4 threads, a WSGI app"),
    ("tornado_app", "tornado_app", {}, "Tornado on asyncio"),
    ("nginx + 4 tornado", "nginx_proxy", {"upstreams": 4, "upstream": "tornado_app", "workers": 1},
     "nginx in front of four Tornado processes, the seed's deployment"),
    ("falcon_gunicorn", "falcon_gunicorn", {"workers": 1}, "Falcon under gunicorn, 1 sync worker: WSGI"),
    ("bottle_gevent", "bottle_gevent", {}, "Bottle on gevent's WSGI server, a greenlet per connection"),
    ("aiohttp_app", "aiohttp_app", {}, "aiohttp's web server on asyncio"),
    ("twisted_app", "twisted_app", {}, "Twisted's web server on its reactor"),
    ("step4_event_loop", "step4_event_loop", {}, "lesson 05's hand-built event loop"),
    ("falcon_uvicorn", "falcon_uvicorn", {}, "Falcon's ASGI app under uvicorn, async def responders"),
    ("sanic_app", "sanic_app", {}, "Sanic on its own server (uvloop, httptools)"),
    ("uvicorn_app", "uvicorn_app", {}, "uvicorn (uvloop, httptools) and a bare ASGI app"),
    ("raw asyncio", "pipeline_app", {"loop": "asyncio", "parser": "ours"},
     "a bare asyncio Protocol, our parser (pipeline_app)"),
    ("uvloop + httptools", "pipeline_app", {"loop": "uvloop", "parser": "httptools"},
     "the same Protocol on uvloop, parsed by httptools (C)"),
    ("nginx", "nginx_hello", {"workers": 1}, "nginx, 1 worker: an event loop in C"),
]
# Quick mode keeps the ends of the ladder and the seed's Tornado claim: Tornado against Django and CherryPy.
QUICK_RUNGS = ("cherrypy_app", "django_gunicorn", "tornado_app", "aiohttp_app", "raw asyncio", "uvloop + httptools",
               "nginx")
FASTEST = "uvloop + httptools"  # the pipelining server at its fastest: the one the depth sweep drives
# The frameworks, besides the servers the lab wrote: in quick mode their system calls are not counted (a second run
# each, under strace), to keep CI's run short.
FRAMEWORKS = ("django_uvicorn", "cherrypy_app", "django_gunicorn", "falcon_gunicorn", "bottle_gevent", "twisted_app",
              "falcon_uvicorn", "sanic_app")
# strace follows one process: behind nginx, each of four Tornado processes makes a quarter of the calls.
NEVER_COUNTED = ("nginx + 4 tornado",)

# What the write-ups measured, with their conditions: never this machine's figures.
SEED_FIGURES = {
    "django_uvicorn": None,
    "cherrypy_app": None,
    "django_gunicorn": None,
    "threaded_app": None,
    "gunicorn gthread": ("882 req/s", "gunicorn + Flask, 1 process x 32 threads; wrk -t64 -c320, 8 cores"),
    "tornado_app": ("452 req/s", "Tornado hello world; wrk -t10 -c1000, a small cloud VM"),
    "nginx + 4 tornado": ("2,187 req/s", "nginx + 4 Tornado; nginx + 1 Tornado: 673 req/s; ab -n 20000"),
    "falcon_gunicorn": None,
    "bottle_gevent": None,
    "aiohttp_app": None,
    "twisted_app": None,
    "step4_event_loop": None,
    "falcon_uvicorn": None,
    "sanic_app": None,
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


def counted(label, quick=False):
    """Whether rung `label`'s system calls are counted (a second, traced run): not in quick mode for a framework."""
    return label not in NEVER_COUNTED and not (quick and label in FRAMEWORKS)


def missing(name):
    """Why server `name` cannot run here (a program or package not installed), or None."""
    return registry.missing(name)
