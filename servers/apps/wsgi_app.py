"""The lab's routes as a plain WSGI application.

One function per route, no framework, served by gunicorn.

WSGI is the contract between a Python web application and the server that runs
it: the server parses HTTP and calls `application(environ, start_response)`
once per request, in whatever process or thread it chose. The application never
sees a socket, so it cannot wait without blocking: there is no /async-sleep
here. Run it with `python servers/gunicorn_app.py --port 0 --workers 2`.
"""

import time
from urllib.parse import parse_qs

from iolab.contract import HELLO_BODY, BadParameter, burn_cpu, parse_ms, parse_whole


def instant(query):
    """Handler C: answers at once."""
    return "200 OK", HELLO_BODY


def sync_sleep(query):
    """Handler A: sleeps, holding the thread that serves it; a sync worker has no other thread."""
    ms = parse_ms(query.get("ms"))
    time.sleep(ms / 1000)
    return "200 OK", f"slept {ms} ms in one worker thread\n"


def cpu(query):
    """Burns CPU: in one process, the GIL lets only one thread at a time do this."""
    ms = parse_ms(query.get("ms"))
    burn_cpu(ms)
    return "200 OK", f"burned {ms} ms of CPU\n"


MAX_BYTES = 16 * 2**20  # the largest /bytes answer: bounded, like every run in the lab


def some_bytes(query):
    """n bytes of answer (lesson 14): a sync worker is held until the last of them is in its socket's buffer."""
    size = parse_whole(query.get("n"), "n", "bytes", MAX_BYTES, ", e.g. ?n=300000")
    return "200 OK", "x" * size


ROUTES = {"/": instant, "/sync-sleep": sync_sleep, "/cpu": cpu, "/bytes": some_bytes}


def application(environ, start_response):
    """The entry point gunicorn calls for every request."""
    path = environ["PATH_INFO"]
    query = {name: values[-1] for name, values in parse_qs(environ["QUERY_STRING"]).items()}
    route = ROUTES.get(path)
    if route is None:
        status, text = "404 Not Found", f"404 no route for {path}\n"
    else:
        try:
            status, text = route(query)
        except BadParameter as error:
            status, text = "400 Bad Request", f"400 {error}\n"
    body = text.encode()
    # Content-Length lets the client keep the connection for its next request.
    start_response(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
