"""HTTP/1.1 for the raw clients: the bytes of a GET, and a protocol that cuts what it receives into answers by Content-Length."""

import asyncio
from urllib.parse import urlsplit

from .errors import ProtocolError

HEADER_END = b"\r\n\r\n"


def get_request(url, keep_alive=True, path=None):
    """The bytes of a GET for `url` (or for `path` on the url's server)."""
    parts = urlsplit(url)
    target = path or (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    close = b"" if keep_alive else b"Connection: close\r\n"
    return f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n".encode() + close + b"\r\n"


CONTENT_LENGTH = (b"Content-Length:", b"content-length:")  # (the usual spelling, lower case)
CONNECTION = (b"Connection:", b"connection:")


def _header(data, start, header_end, spellings):
    """The value of a header between start and header_end, or None; `spellings` is (usual, lower case)."""
    # The usual spelling first: lower-casing every head would cost more than the rest of the parse.
    usual, name = spellings
    at = data.find(usual, start, header_end)
    if at < 0:
        at = data.find(name, start, header_end)
    if at < 0:
        head = data[start:header_end].lower()
        at = head.find(b"\r\n" + name)
        if at < 0:
            return None
        data, start, header_end, at = head, 0, len(head), at + 2
    line_end = data.find(b"\r\n", at, header_end)
    return data[at + len(name) : line_end if line_end > 0 else header_end].strip()


class AnswerReader(asyncio.Protocol):
    """A client connection that hands each complete answer to `owner.answered(status, length, closes, body)`.

    `closes` is True when the server says it will close the connection after this
    answer. The body is passed only when `keep_bodies` is set (the pipelined
    client compares bodies); otherwise None, to keep the hot path cheap.
    """

    keep_bodies = False

    def __init__(self, owner):
        self.owner = owner
        self.transport = None
        self.buffer = b""

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if self.buffer:
            data = self.buffer + data
        start = 0
        size = len(data)
        try:
            while start < size:
                header_end = data.find(HEADER_END, start)
                if header_end < 0:
                    break
                length = _header(data, start, header_end, CONTENT_LENGTH)
                if length is None:
                    raise ProtocolError("an answer without Content-Length")
                body_start = header_end + 4
                body_end = body_start + int(length)
                if body_end > size:
                    break
                if data[start : start + 5] != b"HTTP/":
                    raise ProtocolError(f"an answer that does not start with HTTP/: {data[start:start + 20]!r}")
                status = int(data[start + 9 : start + 12])
                connection = _header(data, start, header_end, CONNECTION)
                # Without a Connection header, HTTP/1.0 closes after the answer and HTTP/1.1 keeps the connection.
                closes = data[start + 5 : start + 8] == b"1.0" if connection is None else connection.lower() == b"close"
                self.owner.answered(status, body_end - body_start, closes, data[body_start:body_end] if self.keep_bodies else None)
                start = body_end
        except (ProtocolError, ValueError) as error:
            self.buffer = b""
            self.owner.broken(ProtocolError(str(error)))
            return
        self.buffer = data[start:] if start < size else b""

    def connection_lost(self, error):
        self.owner.lost(self, error)


class BodyKeepingReader(AnswerReader):
    keep_bodies = True
