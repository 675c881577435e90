"""The standard library's threaded HTTP server.

One thread per connection, or a bounded pool of k.

http.server's own request parsing is lenient (it takes a space before a colon, two Content-Lengths,
bare LFs, and never reads a GET's body, so a request hidden in one is answered as the next), so
LabHandler reads each request with the lab's strict parser (scratch/hardening.py) instead, within
the head and body timeouts of iolab.contract.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from iolab.contract import (
    BODY_TIMEOUT_S,
    HEAD_TIMEOUT_S,
    BadParameter,
    announce,
    burn_cpu,
    die_with_parent,
    exit_on_sigterm,
    parse_args,
    parse_ms,
)
from scratch import hardening


class LabHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so every answer carries Content-Length
    timeout = 30  # an idle keep-alive connection gives its thread back after this long (--idle-timeout)
    # The head and the body go out in two writes. With Nagle's algorithm on, the body waits for
    # the client to acknowledge the head, which a client delays by up to 40 ms: every answer would too.
    disable_nagle_algorithm = True

    def setup(self):
        super().setup()
        self.unread = bytearray()  # bytes received after the request being answered: the start of the next

    def handle_one_request(self):
        """Read one request strictly, answer it, and say whether the connection goes on (close_connection)."""
        self.close_connection = True
        try:
            request = self.read_request()
        except hardening.BadRequest as error:
            self.wfile.write(hardening.error_response(error))
            return
        except TimeoutError:
            if self.unread:  # half a request and then too slow: say so before hanging up
                too_slow = hardening.BadRequest(408, "the request did not arrive in time")
                self.wfile.write(hardening.error_response(too_slow))
            return
        except OSError:
            return  # reset by the client: nobody to answer
        if request is None:
            return  # the client closed the connection
        self.command, self.path, self.request_version = request.method, request.target, request.version
        self.requestline = f"{request.method} {request.target} {request.version}"
        self.headers = request.headers
        self.close_connection = not hardening.keeps_alive(request)
        if request.method == "GET":
            self.do_GET()
        else:
            self.send_error(501, f"Unsupported method ({request.method!r})")  # as http.server answers it
        self.wfile.flush()

    def read_request(self):
        """The next whole request, body included; None if the client left first.

        Between requests the connection may stay idle for `timeout` (--idle-timeout). Once a
        request's first byte is in, its head must arrive within HEAD_TIMEOUT_S and its body within
        BODY_TIMEOUT_S more, however the client spreads its bytes out.
        """
        deadline = None if not self.unread else time.monotonic() + HEAD_TIMEOUT_S
        waiting_for_body = False
        while (request := hardening.parse_request(self.unread)) is None:
            if deadline is not None and not waiting_for_body and b"\r\n\r\n" in self.unread:
                waiting_for_body = True
                deadline += BODY_TIMEOUT_S
            wait_s = self.timeout if deadline is None else deadline - time.monotonic()
            if wait_s <= 0:
                raise TimeoutError("the request did not arrive in time")
            self.connection.settimeout(wait_s)
            chunk = self.rfile.read1(65536)
            if not chunk:
                return None
            if deadline is None:
                deadline = time.monotonic() + HEAD_TIMEOUT_S
            self.unread += chunk
        return request

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        routes = {"/": self.instant, "/sync-sleep": self.sync_sleep, "/cpu": self.cpu}
        route = routes.get(url.path)
        if route is None:
            return self.answer(404, f"404 no route for {url.path}")
        try:
            route(query.get("ms", [None])[-1])
        except BadParameter as error:
            self.answer(400, f"400 {error}")

    def instant(self, _):
        self.answer(200, "hello world")

    def sync_sleep(self, raw_ms):
        # Only this connection's thread sleeps; the other threads keep serving.
        ms = parse_ms(raw_ms)
        time.sleep(ms / 1000)
        self.answer(200, f"slept {ms} ms in one thread")

    def cpu(self, raw_ms):
        ms = parse_ms(raw_ms)
        burn_cpu(ms)
        self.answer(200, f"burned {ms} ms of CPU")

    def answer(self, status, text):
        body = (text + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass  # access logs would dominate the cost of a hello-world request


class LabHTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # SIGTERM should not wait for sleeping handlers
    request_queue_size = 1024  # listen() backlog: room for the lab's bursts of connections


class PooledHTTPServer(LabHTTPServer):
    """Hands each connection to a pool of k threads; connections beyond k wait their turn."""

    def __init__(self, address, handler, threads):
        super().__init__(address, handler)
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="worker")

    def process_request(self, request, client_address):
        self.pool.submit(self.process_request_thread, request, client_address)


def main():
    def add_arguments(parser):
        parser.add_argument(
            "--threads",
            type=int,
            default=0,
            help="size of the worker pool; 0 (default) starts a thread per connection",
        )
        parser.add_argument(
            "--stack-size",
            type=int,
            default=0,
            help="KiB of stack each new thread reserves (threading.stack_size); 0 (default) keeps the system's",
        )
        parser.add_argument(
            "--idle-timeout",
            type=float,
            default=LabHandler.timeout,
            help=f"seconds an idle keep-alive connection keeps its thread (default {LabHandler.timeout})",
        )

    args = parse_args(__doc__, add_arguments)
    if args.threads < 0:
        raise SystemExit(f"--threads must be 0 (a thread per connection) or more, got {args.threads}")
    if args.stack_size and not 64 <= args.stack_size <= 1024 * 1024:
        raise SystemExit(f"--stack-size must be 0 (the system's) or from 64 to 1048576 KiB, got {args.stack_size}")
    if not 0 < args.idle_timeout <= 86_400:
        raise SystemExit(f"--idle-timeout must be more than 0 and at most 86400 seconds, got {args.idle_timeout}")
    if args.stack_size:
        threading.stack_size(args.stack_size * 1024)  # every thread started from now on reserves this much
    LabHandler.timeout = args.idle_timeout
    die_with_parent()
    exit_on_sigterm()
    if args.threads:
        server = PooledHTTPServer((args.host, args.port), LabHandler, args.threads)
    else:
        server = LabHTTPServer((args.host, args.port), LabHandler)
    host, port = server.server_address[:2]
    announce(host, port)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
