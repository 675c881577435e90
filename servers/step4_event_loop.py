"""Step 4 of lesson 05: the lab's routes on an event loop built from scratch.

Read step1_blocking.py, step2_busy_wait.py and step3_callbacks.py first: each
adds one idea, and this server puts them together on the standard library's
selectors (epoll on Linux), in three parts in scratch/ that mirror Tornado's:

    scratch/loop.py       EventLoop       (tornado.ioloop.IOLoop)
    scratch/stream.py     BufferedStream  (tornado.iostream.IOStream)
    scratch/connection.py HTTPConnection  (tornado.http1connection.HTTP1Connection)

What it adds over step 3: buffers that survive a partial send(), an interest
set that follows them, HTTP/1.1 keep-alive and pipelining answered in order,
a warning when a callback blocks the loop, and an optional trace of every
iteration (--trace PATH writes one JSON line per iteration). What a server
needs against careless clients (400 / 408 / 413 / 431 / 501, idle timeouts,
backpressure) is in scratch/hardening.py, beside the connection.

Next: step5_coroutines.py writes handlers as coroutines on this same loop.
"""

import time
from urllib.parse import parse_qs

from iolab.contract import BadParameter, announce, burn_cpu, die_with_parent, exit_on_sigterm, parse_args, parse_ms
from scratch.connection import HTTPServer
from scratch.loop import SELECTORS, EventLoop


class LabRoutes:
    """The application: the article's handlers A, B and C, plus CPU work, as plain functions of a request."""

    def __init__(self, loop):
        self.loop = loop
        self.routes = {
            "/": self.hello,
            "/sync-sleep": self.sync_sleep,
            "/async-sleep": self.async_sleep,
            "/cpu": self.cpu,
        }

    def __call__(self, request, reply):
        route = self.routes.get(request.path)
        if route is None:
            return reply(404, f"404 no route for {request.path}\n")
        try:
            route(request, reply)
        except BadParameter as error:
            reply(400, f"400 {error}\n")

    def hello(self, request, reply):
        """Handler C: answers at once."""
        reply(200, "hello world\n")

    def sync_sleep(self, request, reply):
        """Handler A: time.sleep stops the only thread, so the whole loop stops with it.

        The loop notices afterwards and prints "callback ... took N ms, blocking the loop".
        """
        ms = query_ms(request)
        time.sleep(ms / 1000)
        reply(200, f"slept {ms} ms blocking the loop\n")

    def async_sleep(self, request, reply):
        """Handler B: ask the loop to call us back later, and return at once so it can serve others."""
        ms = query_ms(request)
        self.loop.call_later(ms / 1000, reply, 200, f"waited {ms} ms without blocking\n")

    def cpu(self, request, reply):
        """CPU work blocks the loop just like time.sleep does: no event loop can overlap it."""
        ms = query_ms(request)
        burn_cpu(ms)
        reply(200, f"burned {ms} ms of CPU\n")


def query_ms(request):
    # The last ?ms= wins, as with Tornado's get_query_argument.
    return parse_ms(parse_qs(request.query).get("ms", [None])[-1])


def main():
    def add_arguments(parser):
        parser.add_argument("--trace", metavar="PATH", help="write one JSON line per loop iteration to PATH")
        parser.add_argument(
            "--slow-callback-ms",
            type=float,
            default=100.0,
            help="warn on stderr when a callback runs longer than this (default 100, as asyncio's debug mode)",
        )
        parser.add_argument(
            "--idle-timeout",
            type=float,
            default=60.0,
            help="close a connection that completes no request for this many seconds (default 60)",
        )

        parser.add_argument(
            "--selector",
            choices=sorted(SELECTORS),
            default=None,
            help="the system call the loop waits in (default: the platform's best, epoll on Linux)",
        )

    args = parse_args(__doc__.splitlines()[0], add_arguments)
    if args.slow_callback_ms <= 0:
        raise SystemExit(f"--slow-callback-ms must be more than 0, got {args.slow_callback_ms}")
    if not 0 < args.idle_timeout <= 86_400:
        raise SystemExit(f"--idle-timeout must be between 0 and 86400 seconds (excluding 0), got {args.idle_timeout}")
    die_with_parent()
    exit_on_sigterm()
    loop = EventLoop(slow_callback_s=args.slow_callback_ms / 1000, trace_path=args.trace, selector=args.selector)
    serve(loop, LabRoutes(loop), args.host, args.port, idle_timeout_s=args.idle_timeout)


def serve(loop, routes, host, port, **options):
    """Serve `routes` on host:port with the hand-built loop until SIGTERM, then close both (step 5 serves so too)."""
    server = HTTPServer(loop, routes, host, port, **options)
    announce(*server.address)
    try:
        loop.run_forever()  # SIGTERM arrives here as SystemExit
    finally:
        server.close()
        loop.close()


if __name__ == "__main__":
    main()
