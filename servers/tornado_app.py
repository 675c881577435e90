"""One Tornado process serving the lab's common routes.

The article's handlers A, B and C, CPU work D, and A offloaded (A′).

Besides the contract's routes, this server alone answers /offload-sleep?ms=N
(lesson 03's handler A′: A's time.sleep run in a thread pool), /stats, its
own counts as JSON (lesson 11: connections a client opened, and requests still
being served after their client gave up), and /bytes?n=N, an answer of N bytes
(lesson 14's slow clients). None is in iolab.contract.ROUTES, which every
server must answer.
"""

import asyncio
import json
import time

import tornado.httpserver
import tornado.netutil
import tornado.web

from iolab.contract import (
    BadParameter,
    announce,
    burn_cpu,
    die_with_parent,
    exit_on_sigterm,
    parse_args,
    parse_ms,
    parse_whole,
)

MAX_BYTES = 16 * 2**20  # the largest /bytes answer: bounded, like every run in the lab
# What /stats reports. Only a client can tell a request's end from its answer; the server counts what it sees:
# connections accepted and not yet closed, handlers started and not yet finished.
STATS = {"connections_opened": 0, "connections_open": 0, "requests_in_flight": 0, "requests_finished": 0}


class CountingHTTPServer(tornado.httpserver.HTTPServer):
    """Tornado's HTTPServer, counting the connections it accepts and closes."""

    def handle_stream(self, stream, address):
        STATS["connections_opened"] += 1
        STATS["connections_open"] += 1
        super().handle_stream(stream, address)

    def on_close(self, server_conn):
        STATS["connections_open"] -= 1
        super().on_close(server_conn)


class LabHandler(tornado.web.RequestHandler):
    """Shared plumbing: plain-text answers, one-line 400s for bad query values, and the in-flight count."""

    def prepare(self):
        STATS["requests_in_flight"] += 1

    def on_finish(self):
        # Tornado calls this even when the client hung up before the answer: the handler ran to its end regardless.
        STATS["requests_in_flight"] -= 1
        STATS["requests_finished"] += 1

    def ms(self):
        return parse_ms(self.get_query_argument("ms", None))

    def answer(self, text):
        self.set_header("Content-Type", "text/plain")
        self.finish(text + "\n")

    def write_error(self, status_code, **kwargs):
        error = kwargs.get("exc_info", (None, None))[1]
        reason = str(error) if isinstance(error, BadParameter) else self._reason
        self.set_header("Content-Type", "text/plain")
        self.finish(f"{status_code} {reason}\n")

    def _handle_request_exception(self, error):
        # A bad query value is the client's fault: answer 400 instead of logging a traceback.
        if isinstance(error, BadParameter):
            self.send_error(400, exc_info=(type(error), error, None))
        else:
            super()._handle_request_exception(error)


class Instant(LabHandler):
    """Handler C: answers at once."""

    def get(self):
        self.answer("hello world")


class SyncSleep(LabHandler):
    """Handler A: time.sleep blocks the only thread, so the whole IOLoop stops with it."""

    def get(self):
        ms = self.ms()
        time.sleep(ms / 1000)
        self.answer(f"slept {ms} ms blocking the loop")


class AsyncSleep(LabHandler):
    """Handler B: awaiting a timer hands the thread back to the IOLoop while we wait."""

    async def get(self):
        ms = self.ms()
        await asyncio.sleep(ms / 1000)
        self.answer(f"waited {ms} ms without blocking")


class Cpu(LabHandler):
    """Handler D: burns CPU. There is nothing to await, so the IOLoop waits for it like it waits for A."""

    def get(self):
        ms = self.ms()
        burn_cpu(ms)
        self.answer(f"burned {ms} ms of CPU")


class OffloadedSleep(LabHandler):
    """Handler A′: A's blocking time.sleep, run on a thread of the loop's thread pool; the IOLoop awaits the result.

    time.sleep releases the GIL while it waits, so the loop's own thread runs on
    meanwhile. CPU work handed over the same way would hold the GIL, and the loop
    would get it back only every sys.getswitchinterval() (5 ms by default).
    """

    async def get(self):
        ms = self.ms()
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, ms / 1000)
        self.answer(f"slept {ms} ms in a worker thread")


class SomeBytes(LabHandler):
    """n bytes: Tornado keeps what the socket cannot take yet in the connection's buffer, and the loop moves on."""

    def get(self):
        size = parse_whole(self.get_query_argument("n", None), "n", "bytes", MAX_BYTES, ", e.g. ?n=300000")
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(b"x" * size)


class Stats(tornado.web.RequestHandler):
    """This server's counts, as JSON; not counted in them."""

    def get(self):
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(STATS) + "\n")


class NotFound(LabHandler):
    def prepare(self):
        super().prepare()
        self.set_status(404)
        self.answer(f"404 no route for {self.request.path}")


def make_app():
    return tornado.web.Application(
        [
            (r"/", Instant),
            (r"/sync-sleep", SyncSleep),
            (r"/async-sleep", AsyncSleep),
            (r"/cpu", Cpu),
            (r"/offload-sleep", OffloadedSleep),  # this server only: lesson 03's A′
            (r"/stats", Stats),  # this server only: lesson 11's counts
            (r"/bytes", SomeBytes),  # this server only, and gunicorn_app: lesson 14's large answers
        ],
        default_handler_class=NotFound,
        # Access logs would cost more than the hello-world handler itself.
        log_function=lambda handler: None,
    )


TORNADO_BACKLOG = 128  # what tornado.netutil.bind_sockets asks listen() for unless told otherwise


async def main():
    def add_arguments(parser):
        parser.add_argument(
            "--backlog", type=int, default=TORNADO_BACKLOG,
            help=f"connections the kernel may queue for accept() (default {TORNADO_BACKLOG}, Tornado's own)",
        )

    args = parse_args(__doc__, add_arguments)
    if not 1 <= args.backlog <= 65535:
        raise SystemExit(f"--backlog must be between 1 and 65535, got {args.backlog}")
    die_with_parent()
    exit_on_sigterm()
    sockets = tornado.netutil.bind_sockets(args.port, address=args.host, backlog=args.backlog)
    server = CountingHTTPServer(make_app())
    server.add_sockets(sockets)
    host, port = sockets[0].getsockname()[:2]
    announce(host, port)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
