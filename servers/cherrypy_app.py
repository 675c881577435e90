"""CherryPy on its own threaded HTTP server (cheroot): a pool of --threads threads.

Each request runs on one of the pool's threads from start to end, so a
handler that sleeps holds its thread and there is no way to wait without
blocking: no /async-sleep. Idle keep-alive connections wait in cheroot's
selector, not on a thread.
"""

import functools
import logging
import sys
import time

import cherrypy

from _wrapper import count_between
from iolab.contract import (
    HELLO_BODY,
    BadParameter,
    announce,
    burn_cpu,
    die_with_parent,
    exit_on_sigterm,
    parse_args,
    parse_ms,
)

MAX_THREADS = 1024


def text(body, status=200):
    cherrypy.response.status = status
    cherrypy.response.headers["Content-Type"] = "text/plain"  # CherryPy adds Content-Length itself
    return body


def takes_ms(handler):
    """Call handler(self, ms) with ?ms= checked (the last one wins); a bad value gets a 400 with the reason."""

    @functools.wraps(handler)
    def checked(self, ms=None, **others):
        try:
            ms = parse_ms(ms[-1] if isinstance(ms, list) else ms)
        except BadParameter as error:
            return text(f"400 {error}\n", 400)
        return handler(self, ms)

    return checked


class Root:
    @cherrypy.expose
    def index(self):
        """Handler C: answers at once."""
        return text(HELLO_BODY)

    @cherrypy.expose
    @takes_ms
    def sync_sleep(self, ms):  # CherryPy's dispatcher turns /sync-sleep into sync_sleep
        """Handler A: sleeps, holding one of the pool's threads."""
        time.sleep(ms / 1000)
        return text(f"slept {ms} ms in one pool thread\n")

    @cherrypy.expose
    @takes_ms
    def cpu(self, ms):
        burn_cpu(ms)
        return text(f"burned {ms} ms of CPU\n")

    @cherrypy.expose
    def default(self, *path, **params):
        """Every path no other handler takes (CherryPy's own 404 page is HTML padded to 513 bytes)."""
        return text(f"404 no route for {cherrypy.request.path_info}\n", 404)


def main():
    def add_arguments(parser):
        parser.add_argument("--threads", type=count_between(1, MAX_THREADS), default=10,
                            help="the server's thread pool (CherryPy's default: 10)")

    args = parse_args(__doc__.splitlines()[0], add_arguments)
    die_with_parent()
    exit_on_sigterm()  # engine.block() catches the SystemExit, stops the server's threads, and exits 0
    cherrypy.log.error_log.addHandler(logging.StreamHandler(sys.stderr))  # errors to stderr, the screen log off
    cherrypy.config.update({
        "environment": "production",  # no autoreload, no screen log (it prints access lines to stdout)
        "server.socket_host": args.host,
        "server.socket_port": args.port,
        "server.socket_queue_size": 1024,  # the lab's backlog; CherryPy's default is 5
        "server.thread_pool": args.threads,
        "log.access_file": "",
    })
    cherrypy.log.error_log.setLevel(logging.WARNING)
    cherrypy.tree.mount(Root(), "/")
    cherrypy.engine.start()
    announce(*cherrypy.server.bound_addr)
    cherrypy.engine.block()


if __name__ == "__main__":
    main()
