"""Bottle on gevent's pywsgi.WSGIServer, monkey-patched: the C10k write-up's gevent + Bottle pairing.

gevent must patch the standard library before anything else imports it, so
the patch comes first. After it time.sleep, sockets and threading are
cooperative: a greenlet that sleeps lets every other one run, so even
/sync-sleep's time.sleep waits without blocking, and /async-sleep is the same
call. Only /cpu holds the one thread every greenlet runs on.
"""

from gevent import monkey

monkey.patch_all()

import time  # noqa: E402

import bottle  # noqa: E402
import gevent  # noqa: E402

import _wrapper  # noqa: E402
from iolab.contract import HELLO_BODY, BadParameter, burn_cpu, die_with_parent, parse_args, parse_ms  # noqa: E402

app = bottle.Bottle()


def text(body, status=200):
    bottle.response.status = status
    bottle.response.content_type = "text/plain"  # Bottle adds Content-Length for a str body
    return body


def takes_ms(handler):
    """Call handler(ms) with ?ms= checked (the last one wins); a bad value gets a 400 with the reason."""

    def checked():
        try:
            ms = parse_ms((bottle.request.query.getall("ms") or [None])[-1])
        except BadParameter as error:
            return text(f"400 {error}\n", 400)
        return handler(ms)

    return checked


@app.get("/")
def hello():
    """Handler C: answers at once."""
    return text(HELLO_BODY)


@app.get("/sync-sleep")
@takes_ms
def sync_sleep(ms):
    """Handler A, patched: gevent's time.sleep parks this greenlet, the others run."""
    time.sleep(ms / 1000)
    return text(f"slept {ms} ms in one greenlet\n")


@app.get("/async-sleep")
@takes_ms
def async_sleep(ms):
    """Handler B: the same cooperative sleep, the write-up's way of waiting under gevent."""
    gevent.sleep(ms / 1000)
    return text(f"waited {ms} ms without blocking (a greenlet)\n")


@app.get("/cpu")
@takes_ms
def cpu(ms):
    burn_cpu(ms)
    return text(f"burned {ms} ms of CPU\n")


@app.error(404)
def not_found(error):
    return text(f"404 no route for {bottle.request.path}\n", 404)


def main():
    args = parse_args(__doc__.splitlines()[0])
    die_with_parent()
    _wrapper.serve_wsgi_on_gevent(_wrapper.bind_listener(args.host, args.port), app)  # backlog 1024; gevent's: 128


if __name__ == "__main__":
    main()
