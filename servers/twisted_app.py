"""Twisted's web server (twisted.web) on its reactor: one thread, an event loop (epoll on Linux).

A Resource renders each request. It returns its body at once, or returns
NOT_DONE_YET and writes the body later from a callback: that is how
/async-sleep waits without blocking, with a timer on the reactor.
"""

import sys
import time
from urllib.parse import parse_qs

from twisted.internet import reactor
from twisted.logger import (
    FilteringLogObserver,
    LogLevel,
    LogLevelFilterPredicate,
    globalLogBeginner,
    textFileLogObserver,
)
from twisted.web import resource, server

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


def answer(request, status, body):
    """Status, headers and body of one answer, written on the request."""
    data = body.encode()
    request.setResponseCode(status)
    request.setHeader(b"content-type", b"text/plain")
    request.setHeader(b"content-length", str(len(data)).encode())
    request.write(data)
    request.finish()


class Routes(resource.Resource):
    """One leaf resource for every path: it looks the path up itself, so an unknown one gets our 404."""

    isLeaf = True

    def render_GET(self, request):
        path = request.path.decode("latin-1")
        query = parse_qs(request.uri.partition(b"?")[2].decode("latin-1"))
        route = {"/": hello, "/sync-sleep": sync_sleep, "/async-sleep": async_sleep, "/cpu": cpu}.get(path)
        if route is None:
            answer(request, 404, f"404 no route for {path}\n")
            return server.NOT_DONE_YET
        try:
            ms = parse_ms(query.get("ms", [None])[-1]) if path != "/" else None  # the last ?ms= wins
        except BadParameter as error:
            answer(request, 400, f"400 {error}\n")
            return server.NOT_DONE_YET
        route(request, ms)
        return server.NOT_DONE_YET  # every route writes its own answer, now or later


def hello(request, ms):
    """Handler C: answers at once."""
    answer(request, 200, HELLO_BODY)


def sync_sleep(request, ms):
    """Handler A: time.sleep blocks the reactor's only thread, so every connection waits."""
    time.sleep(ms / 1000)
    answer(request, 200, f"slept {ms} ms blocking the reactor\n")


def async_sleep(request, ms):
    """Handler B: a timer on the reactor answers later; the thread serves others meanwhile."""
    timer = reactor.callLater(ms / 1000, answer, request, 200, f"waited {ms} ms without blocking\n")

    def client_left(failure):
        if timer.active():
            timer.cancel()  # nobody to answer any more

    request.notifyFinish().addErrback(client_left)


def cpu(request, ms):
    burn_cpu(ms)
    answer(request, 200, f"burned {ms} ms of CPU\n")


class Site(server.Site):
    def log(self, request):
        pass  # no access log: a line per request costs more than hello world


def main():
    args = parse_args(__doc__.splitlines()[0])
    die_with_parent()
    # Twisted's log to stderr, warnings and worse only; stdout stays ours (Twisted would redirect it to its log).
    only_warnings = [LogLevelFilterPredicate(LogLevel.warn)]
    globalLogBeginner.beginLoggingTo(
        [FilteringLogObserver(textFileLogObserver(sys.stderr), only_warnings)], redirectStandardIO=False
    )
    exit_on_sigterm()  # until reactor.run() puts its own SIGTERM handler in place
    port = reactor.listenTCP(args.port, Site(Routes()), backlog=1024, interface=args.host)
    announce(args.host, port.getHost().port)
    reactor.run()  # the reactor stops on SIGTERM by itself, and run() returns: a clean exit


if __name__ == "__main__":
    main()
