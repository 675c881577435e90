"""HTTP/1.1 over a BufferedStream: parse requests, answer them in order, keep connections alive (Tornado's HTTP1Connection and HTTPServer in miniature)."""

import errno
import socket
import sys
import time
import traceback
from email.utils import formatdate

from scratch.loop import EVENT_READ
from scratch.stream import BufferedStream

MAX_HEADER_BYTES = 8 * 1024  # request line plus headers; more gets 431, as nginx and Tornado do by default
MAX_BODY_BYTES = 1024 * 1024
WRITE_HIGH_WATER = 1024 * 1024  # a client that sends but does not read gets no more answers until it reads
READ_HIGH_WATER = 64 * 1024  # pipelined requests queued behind a slow one: stop reading past this much
LISTEN_BACKLOG = 1024  # connections the kernel may queue before we accept them; the lab opens hundreds at once
REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    408: "Request Timeout",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
}


class Request:
    """One parsed request. The body has been read in full: handlers never wait for it."""

    __slots__ = ("method", "target", "path", "query", "version", "headers", "body")

    def __init__(self, method, target, version, headers, body):
        self.method = method
        self.target = target
        self.path, _, self.query = target.partition("?")
        self.version = version
        self.headers = headers
        self.body = body

    def __repr__(self):
        return f"<Request {self.method} {self.target}>"


class BadRequest(Exception):
    """The client broke the protocol: answer with this status and reason, then close."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status


class HTTPConnection:
    """Speaks HTTP/1.1 on one stream: requests in, answers out, strictly in order.

    `application(request, reply)` answers by calling reply(status, body) either
    at once or later (from a timer, say). Until it has replied, the requests
    behind this one stay unparsed in the read buffer: that is how pipelined
    requests are answered in the order they came, even when the first one is
    slow. Other connections are not affected: they have their own buffers.
    """

    def __init__(self, server, sock):
        self.server = server
        self.loop = server.loop
        self.stream = BufferedStream(server.loop, sock, self)
        self.waiting_for_reply = False  # a request is with the application and has not been answered yet
        self.closing = False
        self._batch = None  # answers produced in one pass over the read buffer, sent with one send()
        # A connection that completes no request for idle_timeout_s is closed. One
        # timer per connection, checked lazily, instead of re-arming it on every request.
        self.last_progress = self.loop.time()
        self.loop.call_later(server.idle_timeout_s, self._close_if_idle)

    # --- events from the stream ---------------------------------------------------

    def on_data(self):
        self._answer_buffered_requests()

    def on_eof(self):
        # The client will send nothing more. Answer what it has already asked, then close.
        if self.waiting_for_reply:
            self.closing = True
        else:
            self.stream.close_when_drained()

    def on_drain(self):
        # The client has read what we owed it: go on with its next requests.
        if not self.closing:
            self._answer_buffered_requests()

    def on_close(self):
        self.server.connections.discard(self)

    # --- parsing and answering ----------------------------------------------------

    def _answer_buffered_requests(self):
        """Parse and answer every complete request in the read buffer, then send all answers at once."""
        self._batch = []
        try:
            while not self.waiting_for_reply and not self.closing:
                request = self._parse_one()
                if request is None:
                    break  # the rest of a request has not arrived yet; we will be called again
                self.last_progress = self.loop.time()
                self.stream.label = f"{request.method} {request.target}"
                self.waiting_for_reply = True
                self._call_application(request)
                if len(self.stream.write_buffer) > WRITE_HIGH_WATER:
                    break  # the client is not reading its answers; on_drain picks up from here
        except BadRequest as error:
            self._batch.append(self._format(error.status, f"{error.status} {error}\n", None, keep_alive=False))
            self.closing = True
        batch, self._batch = self._batch, None
        if batch:
            self.stream.write(b"".join(batch))
        self._apply_backpressure()

    def _call_application(self, request):
        reply = self._reply_to(request)
        try:
            self.server.application(request, reply)
        except Exception:
            # A bug in a handler costs this request a 500, not the connection its place in line.
            print(f"exception answering {request!r}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
            if self.waiting_for_reply:
                reply(500, "500 the handler raised an exception; see the server's stderr\n")

    def _apply_backpressure(self):
        """Read more only while the client reads its answers and we are not piling up its requests."""
        stream = self.stream
        if self.closing:
            if not self.waiting_for_reply:
                stream.close_when_drained()
        elif len(stream.write_buffer) > WRITE_HIGH_WATER or (
            self.waiting_for_reply and len(stream.read_buffer) > READ_HIGH_WATER
        ):
            # Not reading lets the kernel's buffers fill, and TCP then slows the client down for us.
            stream.pause_reading()
        else:
            stream.resume_reading()

    def _reply_to(self, request):
        def reply(status, body):
            if self.stream.closed:
                return  # the client left while we were working on its answer
            keep_alive = self._keep_alive(request) and not self.closing
            data = self._format(status, body, request, keep_alive)
            self.waiting_for_reply = False
            if not keep_alive:
                self.closing = True
            if self._batch is not None:
                self._batch.append(data)  # answered at once: it leaves with the rest of this batch
            else:
                # Answered later, from a timer: send it, then go back to the requests queued behind it.
                self.stream.write(data)
                if self.closing:
                    self.stream.close_when_drained()
                else:
                    self._answer_buffered_requests()

        return reply

    def _parse_one(self):
        """Take one complete request off the front of the read buffer, or return None if it is incomplete."""
        buffer = self.stream.read_buffer
        if buffer[:2] == b"\r\n":
            del buffer[:2]  # RFC 9112 asks servers to skip a stray empty line before a request
        head_end = buffer.find(b"\r\n\r\n", 0, MAX_HEADER_BYTES + 4)
        if head_end < 0:
            if len(buffer) > MAX_HEADER_BYTES:
                raise BadRequest(431, f"request line and headers exceed {MAX_HEADER_BYTES} bytes")
            return None
        lines = buffer[:head_end].decode("latin-1").split("\r\n")
        method, target, version = parse_request_line(lines[0])
        headers = parse_headers(lines[1:])
        if "transfer-encoding" in headers:
            raise BadRequest(501, "Transfer-Encoding is not supported; send the body with Content-Length")
        length = parse_content_length(headers.get("content-length"))
        body_start = head_end + 4
        if len(buffer) < body_start + length:
            return None  # the body is still on its way
        body = bytes(buffer[body_start : body_start + length])
        del buffer[: body_start + length]
        return Request(method, target, version, headers, body)

    def _keep_alive(self, request):
        connection = request.headers.get("connection", "").lower()
        if request.version == "HTTP/1.1":
            return "close" not in connection
        return "keep-alive" in connection  # HTTP/1.0 closes unless asked not to (ab -k asks)

    def _format(self, status, body, request, keep_alive):
        if isinstance(body, str):
            body = body.encode()
        if request is not None and request.version == "HTTP/1.1":
            connection = "" if keep_alive else "Connection: close\r\n"
        else:
            connection = "Connection: keep-alive\r\n" if keep_alive else "Connection: close\r\n"
        head = (
            f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}\r\n"
            f"Date: {self.server.date()}\r\n"
            "Content-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"{connection}\r\n"
        ).encode("latin-1")
        if request is not None and request.method == "HEAD":
            return head  # same headers, Content-Length included, but no body
        return head + body

    # --- timeouts -----------------------------------------------------------------

    def _close_if_idle(self):
        if self.stream.closed:
            return
        now = self.loop.time()
        if self.waiting_for_reply or self.stream.write_buffer:
            self.last_progress = now  # we are the slow one, not the client
        idle_for = now - self.last_progress
        if idle_for < self.server.idle_timeout_s:
            self.loop.call_later(self.server.idle_timeout_s - idle_for, self._close_if_idle)
            return
        if self.stream.read_buffer:
            # Half a request and then silence: say so before hanging up.
            self.stream.write(self._format(408, "408 the rest of the request never came\n", None, keep_alive=False))
            self.stream.close_when_drained()
        else:
            self.stream.close()


def parse_request_line(line):
    """'GET /path?query HTTP/1.1' -> ('GET', '/path?query', 'HTTP/1.1'), or BadRequest."""
    parts = line.split(" ")
    if len(parts) != 3:
        raise BadRequest(400, f"request line must be 'METHOD /target HTTP/1.1', got {line[:80]!r}")
    method, target, version = parts
    if not method.isalpha() or not method.isupper():
        raise BadRequest(400, f"method must be upper-case letters, got {method[:20]!r}")
    if not target.startswith("/"):
        raise BadRequest(400, f"target must start with '/', got {target[:80]!r}")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadRequest(400, f"version must be HTTP/1.1 or HTTP/1.0, got {version[:20]!r}")
    return method, target, version


def parse_headers(lines):
    """Header lines -> {lower-case name: value}; a repeated header's values are joined with ', '."""
    headers = {}
    for line in lines:
        name, colon, value = line.partition(":")
        # No colon, an empty name, or space before the colon (a request-smuggling trick) are all refused.
        if not colon or not name or name != name.strip():
            raise BadRequest(400, f"header line must be 'Name: value', got {line[:80]!r}")
        name = name.lower()
        value = value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def parse_content_length(raw):
    if raw is None:
        return 0
    # isascii() too: isdigit() alone accepts '²', which int() then refuses.
    if not (raw.isascii() and raw.isdigit()):
        raise BadRequest(400, f"Content-Length must be one whole number of bytes, got {raw[:40]!r}")
    length = int(raw)
    if length > MAX_BODY_BYTES:
        raise BadRequest(413, f"body of {length} bytes exceeds the limit of {MAX_BODY_BYTES}")
    return length


class HTTPServer:
    """A listening socket on the loop: accepts connections and gives each an HTTPConnection."""

    def __init__(self, loop, application, host, port, idle_timeout_s=60.0):
        self.loop = loop
        self.application = application
        self.idle_timeout_s = idle_timeout_s
        self.connections = set()
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        # create_server sets SO_REUSEADDR, so a restarted server can bind while old connections linger in TIME_WAIT.
        self.listener = socket.create_server((host, port), family=family, backlog=LISTEN_BACKLOG)
        self.listener.setblocking(False)  # accept() must return EAGAIN, not wait, when the queue is empty
        self.address = self.listener.getsockname()[:2]
        self._date_second = None
        self._date_text = ""
        loop.register(self.listener, EVENT_READ, self._on_acceptable)

    def _on_acceptable(self, mask):
        # One readiness event can stand for many queued connections: take them all.
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return  # EAGAIN: the queue is empty
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE):
                    self._pause_accepting(error)
                    return
                if error.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue  # the client gave up while queued; take the next one
                raise
            sock.setblocking(False)
            # Each answer leaves in one send(), so there is nothing for Nagle's algorithm to coalesce.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connections.add(HTTPConnection(self, sock))

    def _pause_accepting(self, error):
        # Out of file descriptors. Accepting again at once would spin: the listening
        # socket stays readable. Stop watching it for a moment instead.
        print(f"accept failed ({error.strerror}); pausing accept for 100 ms", file=sys.stderr, flush=True)
        self.loop.unregister(self.listener)
        self.loop.call_later(0.1, self.loop.register, self.listener, EVENT_READ, self._on_acceptable)

    def date(self):
        """The Date header every answer must carry, formatted once per second rather than once per answer."""
        second = int(time.time())
        if second != self._date_second:
            self._date_second = second
            self._date_text = formatdate(second, usegmt=True)
        return self._date_text

    def close(self):
        """Shutdown: close every socket; the loop is closed next, which forgets their registrations."""
        for connection in list(self.connections):
            connection.stream.abort()
        self.listener.close()
