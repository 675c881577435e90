"""Two HTTP/1.1 request parsers with one interface: ours, written to be read, and httptools (llhttp, Node's parser, in C).

Both are fed whatever one read brought and call `on_request(request)` once for
every complete request in it, in order; the bytes of a request not yet complete
wait for the next read. A request that breaks the protocol raises BadRequest,
after the complete requests in front of it have been delivered.
"""

import re
from collections import namedtuple

from iolab.contract import MAX_BODY_BYTES, MAX_HEAD_BYTES  # more head gets 431 (RFC 6585), more body 413

# RFC 9110's grammar, checked on each head by one regular expression (in C): the method and every
# header name a token, the target visible ASCII, no control byte but a tab in a header value. A byte a
# parser lets through beyond these is one that another parser on the way may read differently:
# the root of request smuggling.
_TOKEN = rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+"
STRICT_HEAD = re.compile(rb"[A-Z]+ /[!-~]* HTTP/1\.[01](?:\r\n" + _TOKEN + rb":[\t -~\x80-\xff]*)*")

# What a route needs to know about a request, nothing more.
Request = namedtuple("Request", "method path query keep_alive")
# Request(...) runs a Python function; tuple.__new__(Request, (...)) builds the same tuple in C, in half the time.
new_request = tuple.__new__


class BadRequest(Exception):
    """The client broke the protocol: answer with this status and reason, then close the connection.

    It takes the broken request's place in line, so it has the fields a route's answer looks at.
    """

    method, keep_alive = b"", False

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status


class OurParser:
    """Finds every complete request in the bytes received so far: split at the blank line, read the head, skip the body."""

    def __init__(self, on_request):
        self.on_request = on_request
        self.unparsed = b""  # the start of a request whose end has not arrived yet
        self.broken = False  # after a bad request we cannot tell where the next one starts
        self.completed = 0  # requests delivered so far: hardening.py's slow-request clock watches it

    @property
    def pending(self):
        """True while part of a request waits for the rest."""
        return bool(self.unparsed) and not self.broken

    def feed(self, data):
        if self.broken:
            return
        try:
            self.parse(self.unparsed + data if self.unparsed else data)
        except BadRequest:
            self.broken = True
            raise

    def parse(self, buffer):
        start = 0
        while True:
            end_of_head = buffer.find(b"\r\n\r\n", start)
            if end_of_head < 0:
                break  # the rest of this request is still on its way
            if end_of_head - start > MAX_HEAD_BYTES:
                raise BadRequest(431, f"request line and headers exceed {MAX_HEAD_BYTES} bytes")
            request, body_length = parse_head(buffer[start:end_of_head])
            end = end_of_head + 4 + body_length
            if end > len(buffer):
                break  # its body is still on its way
            start = end
            self.completed += 1
            self.on_request(request)
        self.unparsed = buffer[start:]
        if len(self.unparsed) > MAX_HEAD_BYTES and self.unparsed.find(b"\r\n\r\n", 0, MAX_HEAD_BYTES + 4) < 0:
            raise BadRequest(431, f"request line and headers exceed {MAX_HEAD_BYTES} bytes")


def parse_head(head):
    """The request line and headers of one request -> (Request, length of its body)."""
    if head.startswith(b"\r\n"):
        head = head[2:]  # RFC 9112 asks servers to skip a stray empty line before a request (one, not more)
    if not STRICT_HEAD.fullmatch(head):
        raise BadRequest(400, why_not_strict(head))
    request_line, *header_lines = head.split(b"\r\n")
    method, target, version = request_line.split(b" ")
    connection, body_length, hosts = b"", None, 0
    for line in header_lines:
        name, _, value = line.partition(b":")
        name = name.lower()
        if name == b"connection":
            connection = value.strip().lower()
        elif name == b"content-length":
            body_length = parse_content_length(value.strip(), body_length)
        elif name == b"transfer-encoding":
            raise BadRequest(501, "Transfer-Encoding is not supported; send the body with Content-Length")
        elif name == b"host":
            hosts += 1
    http10 = version == b"HTTP/1.0"
    if hosts > 1 or (hosts == 0 and not http10):
        raise BadRequest(400, "an HTTP/1.1 request must carry one Host header (RFC 9112, section 3.2)")
    # HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 closes unless asked to keep it.
    keep_alive = b"keep-alive" in connection if http10 else b"close" not in connection
    path, _, query = target.partition(b"?")
    return Request(method, path, query, keep_alive), body_length or 0


def why_not_strict(head):
    """The reason a head that STRICT_HEAD refused gets, naming the part that broke the grammar."""
    request_line, *header_lines = head.split(b"\r\n")
    parts = request_line.split(b" ")
    if len(parts) != 3:
        return f"request line must be 'METHOD /target HTTP/1.1', got {request_line[:80]!r}"
    method, target, version = parts
    if not (method.isalpha() and method.isupper()):
        return f"method must be upper-case letters, got {method[:20]!r}"
    if not STRICT_HEAD.fullmatch(b"GET " + target + b" HTTP/1.1"):
        return f"target must start with '/' and be visible ASCII, got {target[:80]!r}"
    if version != b"HTTP/1.1" and version != b"HTTP/1.0":
        return f"version must be HTTP/1.1 or HTTP/1.0, got {version[:20]!r}"
    for line in header_lines:
        if not STRICT_HEAD.fullmatch(b"GET / HTTP/1.1\r\n" + line):
            # No colon, a name that is not a token (space before the colon is a request-smuggling trick),
            # or a control byte in the value (a bare CR or LF ends the line for some other parser).
            return f"header line must be 'Name: value' in visible characters, got {line[:80]!r}"
    return f"request line or headers break HTTP/1.1's grammar: {head[:80]!r}"


def parse_content_length(raw, earlier):
    if not raw.isdigit() or earlier is not None:
        raise BadRequest(400, f"Content-Length must be one whole number of bytes, given once, got {raw[:40]!r}")
    length = int(raw)
    if length > MAX_BODY_BYTES:
        raise BadRequest(413, f"body of {length} bytes exceeds the limit of {MAX_BODY_BYTES}")
    return length


class HttptoolsParser:
    """The same interface on httptools: llhttp parses in C and calls us back for the parts we asked for."""

    def __init__(self, on_request):
        import httptools  # imported here so the server runs without it when --parser ours

        self.errors = (httptools.HttpParserError, httptools.HttpParserUpgrade)
        self.on_request = on_request
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.broken = False  # llhttp refuses every byte after an error; so do we, once
        self.completed = 0  # requests delivered so far: hardening.py's slow-request clock watches it
        self.pending = False  # part of a request waits for the rest

    def feed(self, data):
        if self.broken:
            return
        self.pending = True  # until on_message_complete says the last byte ended a request
        try:
            self.parser.feed_data(data)
        except self.errors as error:
            self.broken = True
            cause = error.__context__  # what one of our callbacks raised, if it was one of them
            if isinstance(cause, BadRequest):
                raise cause from None
            if cause is not None:
                raise cause from error  # a bug of ours, not the client's fault: let it be seen
            raise BadRequest(400, f"httptools could not parse the request: {error}") from None

    # Callbacks from llhttp. We define no on_header or on_body: it skips what nobody asked for.
    def on_url(self, url):
        self.url += url  # a URL split across two reads arrives in two pieces
        if len(self.url) > MAX_HEAD_BYTES:
            raise BadRequest(414, f"the URL exceeds {MAX_HEAD_BYTES} bytes")

    def on_message_begin(self):
        self.pending = True

    def on_message_complete(self):
        self.completed += 1
        self.pending = False
        path, _, query = self.url.partition(b"?")
        self.url = b""
        parser = self.parser
        self.on_request(new_request(Request, (parser.get_method(), path, query, parser.should_keep_alive())))


PARSERS = {"ours": OurParser, "httptools": HttptoolsParser}
