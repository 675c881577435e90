"""A pipelining HTTP/1.1 server on a raw asyncio Protocol.

Every request in a read parsed, answered in order, written back in one call.

Lesson 08's server, and the idea that made Japronto answer a million requests a
second from one Python process. A client that pipelines sends many requests
without waiting for the answers, so one read can bring sixteen of them. Then

  1. data_received parses every complete request in that read,
  2. on_request answers each one, in the order they came, and
  3. write_ready sends all the answers that are ready with one transport.write:
     one system call for the whole batch instead of one per request.

A request that must wait (/async-sleep) does not stop the requests behind it
from being answered, but their answers wait in line behind it, because HTTP/1.1
sends answers back in the order the requests came: head-of-line blocking. At
most --max-waiting requests wait at once on one connection; past that, the rest
are held, parsed but not started, and the connection is not read from until they
drain. A deep pipeline of waits therefore costs bounded memory and never crashes
the server. Only safe methods (GET, HEAD...) run beside one another: a POST, PUT
or DELETE starts once every answer ahead of it has been written, and nothing
behind it starts until its own has (RFC 9112, section 9.3.2).

    --loop asyncio|uvloop           the event loop (uvloop: libuv underneath, as Japronto)
    --parser ours|httptools         pipeline/parsers.py: ours, to be read, or llhttp in C
    --write batched|per-response    one transport.write per batch, or one per answer
    --max-waiting N                 requests that may wait at once on one connection

The line (waits, held requests, the unsafe methods' turn) lives in pipeline/line.py;
the limits that keep one connection from taking all memory, back-pressure and
closing in pipeline/hardening.py; the bytes of an answer in pipeline/answers.py.
pipeline_batch_app.py puts a batch path in front of this connection's parser: a
read of hello worlds answered without Python per request.
"""

import asyncio
import importlib.util
import signal
import socket
import time
import traceback
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from iolab.contract import HELLO_BODY, BadParameter, announce, burn_cpu, die_with_parent, log, parse_args, parse_ms
from pipeline.answers import MAX_SEQ_DIGITS, clock, respond
from pipeline.hardening import Hardening
from pipeline.line import SAFE_METHODS, InLine, Wait
from pipeline.parsers import PARSERS, BadRequest

DEFAULT_MAX_WAITING = 100


class PipelinedHTTP(InLine, Hardening, asyncio.Protocol):
    """One connection: every complete request in a read is answered in order, and the ready answers leave in one write."""

    def __init__(self, settings):
        super().__init__()  # pipeline/line.py: the answers ready, the ones behind a wait, the requests held
        self.settings = settings
        self.parser = settings.parser(self.on_request)  # calls on_request once per complete request

    def data_received(self, data):
        try:
            self.parser.feed(data)  # one read may hold many requests, and the start of the next
        except BadRequest as error:
            self.on_request(error)  # a broken request takes its place in line; its 400 closes the connection
        self.write_ready()

    def on_request(self, request):
        if self.held or not self.may_start(request):
            self.held.append(request)  # behind too many waits, or an unsafe method's turn (pipeline/line.py)
        else:
            self.start(request)

    def start(self, request):
        if self.closing:
            return  # after 'Connection: close' nothing more is answered
        reply = answer(request, self)
        if self.blocked or type(reply) is Wait:
            self.blocked.append(reply)  # head-of-line blocking: it goes after the answers ahead of it
        else:
            self.ready.append(reply)  # nothing ahead of it waits: it leaves with this batch
        self.alone = request.method not in SAFE_METHODS  # POST, PUT...: nothing behind it starts until it is answered
        self.closing = not request.keep_alive

    def write_ready(self):
        while self.ready:
            if self.settings.batched:
                self.transport.write(b"".join(self.ready))  # one system call for the whole batch
            else:
                for reply in self.ready:
                    self.transport.write(reply)  # one system call per answer
            self.ready.clear()
            self.start_held()  # requests held until these answers had left (pipeline/line.py)
        self.after_writing()  # close, or stop or resume reading (pipeline/hardening.py)


# --- The contract's routes: each returns the bytes of its answer, or a Wait -----------------------


def answer(request, connection):
    """The answer to one request: a route's, a 404, or the 400 of a request that broke the protocol."""
    if type(request) is BadRequest:
        return respond(request, request.status, f"{request.status} {request}\n")
    route = ROUTES.get(request.path)
    if route is None:
        return respond(request, 404, f"404 no route for {request.path.decode('latin-1')}\n")
    try:
        return route(request, connection)
    except BadParameter as error:
        return respond(request, 400, f"400 {error}\n")
    except Exception:
        # A bug in a route costs this request a 500, not the connection its place in line.
        log(f"exception answering {request}:\n{traceback.format_exc()}")
        return respond(request, 500, "500 the route raised an exception; see the server's stderr\n")


def hello(request, connection):
    """Handler C: answers at once. GET /?seq=N echoes N in a Seq header, so a pipelining client can check the order."""
    seq = query_seq(request) if request.query else None
    if request.keep_alive and request.method == b"GET":
        if seq is None:
            return clock.hello  # this answer changes only with the date, so the clock makes it once a second
        return clock.numbered_before + seq.encode() + clock.numbered_after
    return respond(request, 200, HELLO_BODY, seq=seq)


def sync_sleep(request, connection):
    """Handler A: time.sleep blocks the only thread, so every connection waits, not just this one."""
    ms = query_ms(request)
    time.sleep(ms / 1000)
    return respond(request, 200, f"slept {ms} ms blocking the loop\n")


def async_sleep(request, connection):
    """Handler B: a timer on the loop answers later; the loop serves everyone else meanwhile."""
    ms = query_ms(request)
    return connection.wait(ms / 1000, lambda: respond(request, 200, f"waited {ms} ms without blocking\n"))


def cpu(request, connection):
    ms = query_ms(request)
    burn_cpu(ms)
    return respond(request, 200, f"burned {ms} ms of CPU\n")


def query_ms(request):
    # The last ?ms= wins, as with Tornado's get_query_argument.
    return parse_ms(parse_qs(request.query.decode("latin-1")).get("ms", [None])[-1])


def query_seq(request):
    """The request's number in ?seq=N (the last one wins, as with ms), or None; anything but 1 to 16 digits is refused."""
    seq = parse_qs(request.query.decode("latin-1")).get("seq", [None])[-1]
    if seq is not None and not (seq.isascii() and seq.isdigit() and len(seq) <= MAX_SEQ_DIGITS):
        raise BadParameter(f"seq must be a whole number of 1 to {MAX_SEQ_DIGITS} digits, got {seq[:40]!r}")
    return seq


ROUTES = {b"/": hello, b"/sync-sleep": sync_sleep, b"/async-sleep": async_sleep, b"/cpu": cpu}


# --- Start-up: the server contract, the loop and the parser chosen by argument --------------------


@dataclass
class Settings:
    """What every connection shares: the parser class, how to write, the bound on waits, who is connected."""

    parser: type
    batched: bool
    max_waiting: int
    connections: set = field(default_factory=set)


def new_loop(name):
    if name == "uvloop":
        import uvloop  # only needed when asked for

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


async def serve(args, settings, protocol):
    loop = asyncio.get_running_loop()
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    listener = socket.create_server((args.host, args.port), family=family, backlog=1024)
    server = await loop.create_server(lambda: protocol(settings), sock=listener)
    clock.keep_current(loop)
    stopping = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):  # Ctrl-C in a terminal stops it as quietly as the launcher does
        loop.add_signal_handler(signum, stopping.set)
    announce(*listener.getsockname()[:2])
    await stopping.wait()
    server.close()
    for connection in list(settings.connections):
        connection.transport.abort()


def add_common_arguments(parser):
    """The options pipeline_app shares with pipeline_batch_app."""
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio", help="the event loop (default asyncio)")
    parser.add_argument("--parser", choices=sorted(PARSERS), default="ours", help="the request parser (default ours)")
    parser.add_argument(
        "--max-waiting", type=int, default=DEFAULT_MAX_WAITING,
        help=f"requests that may wait at once on one connection; the rest are held (default {DEFAULT_MAX_WAITING})",
    )


def run(args, settings, protocol):
    """Check the common options, then serve connections of `protocol` until SIGTERM."""
    if not 1 <= args.max_waiting <= 100_000:
        raise SystemExit(f"--max-waiting must be between 1 and 100000, got {args.max_waiting}")
    for option, module in (("loop", args.loop), ("parser", args.parser)):
        if module in ("uvloop", "httptools") and importlib.util.find_spec(module) is None:
            raise SystemExit(f"--{option} {module} needs the Python package {module!r}, which is not installed")
    die_with_parent()
    with asyncio.Runner(loop_factory=lambda: new_loop(args.loop)) as runner:
        runner.run(serve(args, settings, protocol))


def main():
    def add_arguments(parser):
        add_common_arguments(parser)
        parser.add_argument(
            "--write", choices=["batched", "per-response"], default="batched",
            help="one transport.write per batch of answers, or one per answer (default batched)",
        )

    args = parse_args(__doc__.splitlines()[0], add_arguments)
    run(args, Settings(PARSERS[args.parser], args.write == "batched", args.max_waiting), PipelinedHTTP)


if __name__ == "__main__":
    main()
