"""hypercorn serving apps/asgi_app.py under the lab's contract, HTTP/1.1 and HTTP/2 in cleartext on one port.

Lesson 14's server for "one connection or six". hypercorn (asyncio, one worker) speaks HTTP/1.1 to a client that
sends an HTTP/1.1 request and HTTP/2 to one that opens with HTTP/2's preface (h2c "prior knowledge", what h2load
sends), on the same port: the same server, the same loop, so only the protocol differs. One route more than the
contract's, /bytes?n=N, answers N bytes (a page's small answers). --congestion sets the TCP congestion control on
the listening socket, which each accepted connection inherits: the sender's choice decides how a transfer meets
loss, and this kernel's default, BBR, ignores random loss. We bind the socket ourselves and hand it to hypercorn
(fd://), so the port we announce is already listening.
"""

import asyncio
import signal
import socket
from urllib.parse import parse_qs

from hypercorn.asyncio import serve
from hypercorn.config import Config

from apps.asgi_app import answer
from apps.asgi_app import app as lab_app
from iolab.contract import BadParameter, announce, die_with_parent, parse_args, parse_whole

MAX_BYTES = 4 * 2**20  # the largest answer of /bytes: bounded, like every run in the lab
CONGESTION = ("default", "reno", "cubic", "bbr")  # "default": the kernel's own (tcp_congestion_control)


async def app(scope, receive, send):
    """The lab's ASGI app, and /bytes?n=N."""
    if scope["type"] != "http" or scope["path"] != "/bytes":
        return await lab_app(scope, receive, send)
    try:
        raw = parse_qs(scope["query_string"].decode("latin-1")).get("n", [None])[-1]
        size = parse_whole(raw, "n", "bytes", MAX_BYTES, ", e.g. ?n=20000")
    except BadParameter as error:
        return await answer(send, 400, f"400 {error}\n")
    headers = [(b"content-type", b"application/octet-stream"), (b"content-length", str(size).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"x" * size})


def add_arguments(parser):
    parser.add_argument("--congestion", choices=CONGESTION, default="default",
                        help="TCP congestion control of every connection (default: the kernel's)")


def listener(args):
    """The listening socket, its congestion control set (an accepted connection inherits it)."""
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.create_server((args.host, args.port), family=family, backlog=1024)
    if args.congestion != "default":
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, args.congestion.encode())
        except OSError as error:  # an algorithm this kernel lacks, or may not let this user choose
            raise SystemExit(f"--congestion {args.congestion} refused here: {error.strerror}") from None
    return sock


async def run(sock):
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    config.accesslog = None  # a log line per request costs more than the answer; stdout is the contract's
    config.errorlog = "-"  # hypercorn's "-" is stderr
    config.loglevel = "WARNING"
    config.graceful_timeout = 1.0  # a request still in flight at SIGTERM gets a second, not forever
    config.include_server_header = False
    # hypercorn closes a connection idle for 5 s by default. Under heavy loss an answer's retransmissions can take
    # longer than that to arrive, and the client's next request would then find the connection closed.
    config.keep_alive_timeout = 60.0
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    announce(*sock.getsockname()[:2])
    await serve(app, config, shutdown_trigger=stop.wait, mode="asgi")


def main():
    args = parse_args(__doc__.splitlines()[0], add_arguments)
    die_with_parent()
    sock = listener(args)
    asyncio.run(run(sock))


if __name__ == "__main__":
    main()
