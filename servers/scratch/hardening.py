"""What HTTPConnection needs to survive real clients, kept out of its way.

Strict parsing, limits, timeouts, backpressure.

connection.py carries the idea (read a request, hand it to the application
with a reply callback, answer pipelined requests in order). Everything here is
what a server needs once clients are careless or hostile: a request line and
headers checked the way request smuggling needs them checked, limits on header
and body size, HEAD, the Date header, a 500 for a handler that raises, a 408
for a request that never finishes, and backpressure for a client that sends but
does not read. Read connection.py first.
"""

import os
import re
import sys
import time
import traceback
from email.utils import formatdate

from iolab.contract import BODY_TIMEOUT_S, HEAD_TIMEOUT_S, MAX_BODY_BYTES, MAX_HEAD_BYTES, REASONS
from scratch.loop import EVENT_READ

# Request line plus headers; more gets 431 (RFC 6585's status for exactly this). Others do
# otherwise: nginx answers 400 past its 8 KiB header buffers, and Tornado closes the
# connection without an answer past its 64 KiB limit.
MAX_HEADER_BYTES = MAX_HEAD_BYTES
# RFC 9110's grammar: a method and a header name are tokens; a target is visible ASCII; a header
# value may hold no control byte but a tab. Each byte a parser lets through beyond these is one
# that another parser on the way (a proxy, a cache) may read differently: request smuggling.
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
TARGET = re.compile(r"/[\x21-\x7e]*")
CONTROL_BYTE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
WRITE_HIGH_WATER = 1024 * 1024  # a client that sends but does not read gets no more answers until it reads
READ_HIGH_WATER = 64 * 1024  # pipelined requests queued behind a slow one: stop reading past this much


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


# --- reading a request ------------------------------------------------------------


def parse_request(buffer):
    """Take one complete request off the front of `buffer` (a bytearray), or return None if it is incomplete."""
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
    if version == "HTTP/1.1" and "host" not in headers:
        raise BadRequest(400, "an HTTP/1.1 request must carry a Host header (RFC 9112, section 3.2)")
    if "transfer-encoding" in headers:
        raise BadRequest(501, "Transfer-Encoding is not supported; send the body with Content-Length")
    length = parse_content_length(headers.get("content-length"))
    body_start = head_end + 4
    if len(buffer) < body_start + length:
        return None  # the body is still on its way
    body = bytes(buffer[body_start : body_start + length])
    del buffer[: body_start + length]
    return Request(method, target, version, headers, body)


def parse_request_line(line):
    """'GET /path?query HTTP/1.1' -> ('GET', '/path?query', 'HTTP/1.1'), or BadRequest."""
    parts = line.split(" ")
    if len(parts) != 3:
        raise BadRequest(400, f"request line must be 'METHOD /target HTTP/1.1', got {line[:80]!r}")
    method, target, version = parts
    if not (method.isascii() and method.isalpha() and method.isupper()):
        raise BadRequest(400, f"method must be upper-case letters, got {method[:20]!r}")
    if not TARGET.fullmatch(target):
        raise BadRequest(400, f"target must start with '/' and be visible ASCII, got {target[:80]!r}")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadRequest(400, f"version must be HTTP/1.1 or HTTP/1.0, got {version[:20]!r}")
    return method, target, version


def parse_headers(lines):
    """Header lines -> {lower-case name: value}; a repeated header's values are joined with ', '."""
    headers = {}
    for line in lines:
        name, colon, value = line.partition(":")
        # No colon, a name that is not a token (space before the colon is a request-smuggling trick,
        # and a line folded onto the one before starts with one), or a control byte in the value
        # (a bare CR or LF would end the line for some other parser) are all refused.
        if not colon or not TOKEN.fullmatch(name) or CONTROL_BYTE.search(value):
            raise BadRequest(400, f"header line must be 'Name: value' in visible characters, got {line[:80]!r}")
        name = name.lower()
        value = value.strip(" \t")
        if name == "host" and name in headers:
            raise BadRequest(400, "Host must be given once")
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


def keeps_alive(request):
    """May the connection carry another request after this one?"""
    connection = request.headers.get("connection", "").lower()
    if request.version == "HTTP/1.1":
        return "close" not in connection
    return "keep-alive" in connection  # HTTP/1.0 closes unless asked not to (ab -k asks)


# --- writing an answer --------------------------------------------------------------


def format_response(status, body, request, keep_alive):
    """The bytes of one answer; `request` is None when the request itself could not be read."""
    if isinstance(body, str):
        body = body.encode()
    if request is not None and request.version == "HTTP/1.1":
        connection = "" if keep_alive else "Connection: close\r\n"
    else:
        connection = "Connection: keep-alive\r\n" if keep_alive else "Connection: close\r\n"
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}\r\n"
        f"Date: {http_date()}\r\n"
        "Content-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"{connection}\r\n"
    ).encode("latin-1")
    if request is not None and request.method == "HEAD":
        return head  # same headers, Content-Length included, but no body
    return head + body


def error_response(error):
    """The answer to a request that broke the protocol; the connection closes after it."""
    return format_response(error.status, f"{error.status} {error}\n", None, keep_alive=False)


_date = {"second": None, "text": ""}


def http_date():
    """The Date header every answer must carry, formatted once per second rather than once per answer."""
    second = int(time.time())
    if second != _date["second"]:
        _date["second"], _date["text"] = second, formatdate(second, usegmt=True)
    return _date["text"]


def answer_with_500(connection, request, reply):
    """A bug in a handler costs this request a 500, not the connection its place in line."""
    print(f"exception answering {request!r}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
    if connection.waiting_for_reply:
        reply(500, "500 the handler raised an exception; see the server's stderr\n")


# --- a client that reads too slowly, or sends too slowly -----------------------------


def apply_backpressure(connection):
    """Read more only while the client reads its answers and we are not piling up its requests."""
    stream = connection.stream
    if connection.closing:
        if not connection.waiting_for_reply:
            stream.close_when_drained()
    elif len(stream.write_buffer) > WRITE_HIGH_WATER or (
        connection.waiting_for_reply and len(stream.read_buffer) > READ_HIGH_WATER
    ):
        # Not reading lets the kernel's buffers fill, and TCP then slows the client down for us.
        stream.pause_reading()
    else:
        stream.resume_reading()


def writing_too_much(connection):
    """True when the client is not reading its answers: stop answering; on_drain picks up from there."""
    return len(connection.stream.write_buffer) > WRITE_HIGH_WATER


class IdleTimeout:
    """Closes a connection that completes no request for `timeout_s`: with a 408 if it sent half of one.

    A request begun must also arrive whole in time: its head within HEAD_TIMEOUT_S of its first
    byte and its body within BODY_TIMEOUT_S more, or it gets a 408. Without that, a client sending
    a byte every few seconds (a slowloris) would keep its connection for as long as it liked.
    One timer per connection, checked lazily, instead of re-arming it on every request.
    """

    def __init__(self, connection, timeout_s):
        self.connection = connection
        self.loop = connection.server.loop
        self.timeout_s = timeout_s
        self.last_progress = self.loop.time()
        self.request_began = None  # when the first byte of a request not yet whole arrived
        self.deadline_armed = False
        self.loop.call_later(timeout_s, self._close_if_idle)

    def progress(self):
        """A whole request arrived: the connection is not idle."""
        self.last_progress = self.loop.time()
        self.request_began = None

    def watch_partial_request(self):
        """After a read: if part of a request is left waiting for the rest, start its clock."""
        if self.request_began is None and self.connection.stream.read_buffer:
            self.request_began = self.loop.time()
            if not self.deadline_armed:
                self.deadline_armed = True
                self.loop.call_later(HEAD_TIMEOUT_S, self._cut_off_slow_request)

    def _cut_off_slow_request(self):
        self.deadline_armed = False
        connection, stream = self.connection, self.connection.stream
        if stream.closed or self.request_began is None:
            return
        now = self.loop.time()
        if connection.waiting_for_reply or stream.write_buffer:
            self.request_began = now  # the rest waits behind an answer of ours, not for the client
        head_whole = stream.read_buffer.find(b"\r\n\r\n", 0, MAX_HEADER_BYTES + 4) >= 0
        left_s = self.request_began + HEAD_TIMEOUT_S + (BODY_TIMEOUT_S if head_whole else 0) - now
        if left_s > 0:
            self.deadline_armed = True
            self.loop.call_later(left_s, self._cut_off_slow_request)
            return
        what = "body" if head_whole else "head"
        stream.write(format_response(408, f"408 the request's {what} did not arrive in time\n", None, keep_alive=False))
        stream.close_when_drained()

    def _close_if_idle(self):
        connection, stream = self.connection, self.connection.stream
        if stream.closed:
            return
        now = self.loop.time()
        if connection.waiting_for_reply or stream.write_buffer:
            self.last_progress = now  # we are the slow one, not the client
        idle_for = now - self.last_progress
        if idle_for < self.timeout_s:
            self.loop.call_later(self.timeout_s - idle_for, self._close_if_idle)
            return
        if stream.read_buffer:
            # Half a request and then silence: say so before hanging up.
            stream.write(format_response(408, "408 the rest of the request never came\n", None, keep_alive=False))
            stream.close_when_drained()
        else:
            stream.close()


def pause_accepting(server, error):
    """Out of file descriptors: stop watching the listening socket for 100 ms.

    Accepting again at once would spin, since the listening socket stays readable.
    """
    print(f"accept failed ({error.strerror}); pausing accept for 100 ms", file=sys.stderr, flush=True)
    server.loop.unregister(server.listener)
    server.loop.call_later(0.1, server.loop.register, server.listener, EVENT_READ, server.on_acceptable)


class ReserveDescriptor:
    """One file descriptor kept spare, so that a server out of them can still take a queued connection and close it.

    Out of descriptors, accept() fails with EMFILE and leaves the connection queued: the listening socket stays
    readable, so a loop that only logs the error is woken for it again at once, and spins (Tornado writes 'Too many
    open files' to its log over and over, at full CPU). With a spare: close it, accept, close what was accepted (the
    client learns at once, instead of waiting in the queue), and open the spare again.
    """

    def __init__(self):
        self.fd = os.open(os.devnull, os.O_RDONLY)
        self.shed_count = 0

    def shed(self, listener):
        """Accept one queued connection on the spare descriptor and close it: True if one was, None if none was
        queued (out of descriptors, accept() says EMFILE before it looks), False if it could not be done."""
        if self.fd is None:
            return False
        os.close(self.fd)
        self.fd = None
        try:
            sock, _ = listener.accept()
            sock.close()  # before the spare is opened again: until then this is the one free descriptor
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return False
        finally:
            try:
                self.fd = os.open(os.devnull, os.O_RDONLY)
            except OSError:  # someone took it meanwhile (ENFILE: the whole machine is out): pause instead
                self.fd = None
        self.shed_count += 1
        if self.shed_count == 1 or self.shed_count % 1000 == 0:  # a line, not a flood
            print(f"accept failed (Too many open files): closed {self.shed_count} queued connection(s) with the"
                  " reserve descriptor", file=sys.stderr, flush=True)
        return True

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
