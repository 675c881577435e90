"""HTTP/1.1 for the raw clients: the bytes of a GET, and a protocol that cuts what it receives into answers by Content-Length."""

import asyncio
import time
from urllib.parse import urlsplit

from .clients.errors import ProtocolError

HEADER_END = b"\r\n\r\n"


def get_request(url, keep_alive=True, path=None):
    """The bytes of a GET for `url` (or for `path` on the url's server)."""
    parts = urlsplit(url)
    target = path or (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    close = b"" if keep_alive else b"Connection: close\r\n"
    return f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n".encode() + close + b"\r\n"


CONTENT_LENGTH = (b"Content-Length:", b"content-length:")  # (the usual spelling, lower case)
CONNECTION = (b"Connection:", b"connection:")


def _slow_header(data, start, header_end, spellings, missing=None):
    """The value of a header between start and header_end, however it is spelled; `missing` if there is none
    (for Content-Length, an error)."""
    usual, name = spellings
    head = data[start:header_end].lower()
    at = head.find(b"\r\n" + name)
    if at < 0:
        if missing is None:
            raise ProtocolError(f"an answer without {usual.decode().rstrip(':')}")
        return missing
    at += 2 + len(name)
    line_end = head.find(b"\r\n", at)
    return head[at : line_end if line_end > 0 else len(head)].strip()


def _closes(data, start, header_end):
    return _slow_header(data, start, header_end, CONNECTION, b"").lower() == b"close"


class AnswerReader(asyncio.Protocol):
    """A client connection that hands each complete answer to `owner.answered(status, length, closes, body)`.

    `closes` is True when the server says it will close the connection after this
    answer. The body is passed only when `keep_bodies` is set (the pipelined
    client compares bodies); otherwise None, to keep the hot path cheap.
    """

    keep_bodies = False

    def __init__(self, owner):
        self.owner = owner
        self.answered = owner.answered
        self.transport = None
        self.buffer = b""
        self.read_at = 0.0  # time.perf_counter() when the bytes being parsed arrived: the answers' end time

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        # The hot path of every raw client: a few searches per answer, every other case in _slow_header.
        self.read_at = time.perf_counter()
        if self.buffer:
            data = self.buffer + data
        find = data.find
        start = 0
        size = len(data)
        try:
            while start < size:
                header_end = find(b"\r\n\r\n", start)
                if header_end < 0:
                    break
                at = find(b"\r\nContent-Length: ", start, header_end)
                if at >= 0:
                    length = int(data[at + 18 : find(b"\r", at + 18, header_end + 1)])
                else:
                    length = int(_slow_header(data, start, header_end, CONTENT_LENGTH))
                body_start = header_end + 4
                body_end = body_start + length
                if body_end > size:
                    break
                if data.startswith(b"HTTP/1.1 ", start):
                    # HTTP/1.1 keeps the connection unless the answer says close: rare, so looked for by one search.
                    closes = find(b"lose", start, header_end) >= 0 and _closes(data, start, header_end)
                elif data.startswith(b"HTTP/1.0 ", start):
                    closes = _slow_header(data, start, header_end, CONNECTION, b"").lower() != b"keep-alive"
                else:
                    raise ProtocolError(f"an answer that does not start with HTTP/1.x: {data[start:start + 20]!r}")
                self.answered(
                    int(data[start + 9 : start + 12]), length, closes,
                    data[body_start:body_end] if self.keep_bodies else None,
                )
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
