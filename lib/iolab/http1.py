"""HTTP/1.1 from the client's side.

GET requests as bytes, answers cut apart by Content-Length (standard library only).
"""

import re
import socket
import time
from typing import TYPE_CHECKING, Protocol
from urllib.parse import urlsplit

if TYPE_CHECKING:  # for annotations only: the processes that read answers off a blocking socket never import it
    import asyncio

HEADER_END = b"\r\n\r\n"
CONTENT_LENGTH = (b"Content-Length:", b"content-length:")  # (the usual spelling, lower case)
CONNECTION = (b"Connection:", b"connection:")
REMEMBERED_READ_MAX = 4096  # bytes: a connection remembers its last whole answer up to this size (AnswerProtocol)

# pipeline_batch_app's (and pipeline_app's) answer to GET /?seq=N on a kept-alive connection, and nothing else:
# the batch client checks a whole read of them with two patterns instead of cutting each answer apart.
_NUMBERED_HELLO = (rb"HTTP/1\.1 200 OK\r\nDate: [ -~]{1,64}\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n"
                   rb"Connection: keep-alive\r\nSeq: ([0-9]{1,16})\r\n\r\nhello world\n")
NUMBERED_HELLOS = re.compile(b"(?:" + _NUMBERED_HELLO.replace(b"([0-9]", b"(?:[0-9]") + b")*+")  # back to back
NUMBERED_HELLO = re.compile(_NUMBERED_HELLO)  # one of them; its group is the echoed number
LONGEST_NUMBERED_HELLO = 256  # bytes (64 of date, 16 of number): more left over is not one of them


class ProtocolError(ValueError):
    """The server's bytes are not an HTTP/1.1 answer this client can read (no Content-Length, a bad status line)."""


class AnswerOwner(Protocol):
    """What an AnswerProtocol reports to: each answer, a broken stream, the connection's end."""

    def answered(self, status: int, length: int, closes: bool, body: bytes | None) -> None: ...

    def broken(self, error: ProtocolError) -> None: ...

    def lost(self, protocol: "AnswerProtocol", error: Exception | None) -> None: ...


def get_request(url: str, keep_alive: bool = True, path: str | None = None) -> bytes:
    """The bytes of a GET for `url` (or for `path` on the url's server); a bare path ("/cpu?ms=5") goes to Host: lab."""
    if url.startswith("/"):
        host, target = "lab", path or url
    else:
        parts = urlsplit(url)
        host, target = parts.netloc, path or (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    close = b"" if keep_alive else b"Connection: close\r\n"
    return f"GET {target} HTTP/1.1\r\nHost: {host}\r\n".encode() + close + b"\r\n"


def header(data: bytes, start: int, header_end: int, spellings: tuple[bytes, bytes], missing: bytes | None = None) -> bytes:
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


def closes(data: bytes, start: int, header_end: int) -> bool:
    """True when the answer whose head lies between start and header_end says the server will close the connection."""
    if data.startswith(b"HTTP/1.0 ", start):
        return header(data, start, header_end, CONNECTION, b"").lower() != b"keep-alive"
    return header(data, start, header_end, CONNECTION, b"").lower() == b"close"


def answer_length(data: bytes, start: int = 0) -> int:
    """Bytes of the complete answer at `start` of `data`, head and body, or 0 while it is incomplete."""
    header_end = data.find(HEADER_END, start)
    if header_end < 0:
        return 0
    end = header_end + 4 + int(header(data, start, header_end, CONTENT_LENGTH))
    return end - start if len(data) >= end else 0


def statuses(raw: bytes) -> list[int]:
    """The final (non-1xx) status codes of the answers in `raw`, in order, as far as they can be told apart.

    Lenient on purpose, for servers under attack: a chunked answer or one read to the close ends the list.
    """
    found: list[int] = []
    rest = raw
    while rest.startswith(b"HTTP/"):
        end = rest.find(b"\r\n\r\n")
        if end < 0:
            break
        lines = rest[:end].split(b"\r\n")
        try:
            status = int(lines[0].split(b" ")[1])
        except (IndexError, ValueError):
            break
        headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        rest = rest[end + 4 :]
        if status >= 200:
            found.append(status)
        if b"content-length" in headers and headers[b"content-length"].isdigit():
            rest = rest[int(headers[b"content-length"]) :]
        elif status >= 200 and status not in (204, 304):
            break  # chunked or read to the close: its body is the rest, and no answer follows it here
    return found


class AnswerReader:
    """Reads HTTP/1.1 answers one at a time off a blocking socket, keeping any bytes of the next one (pipelining)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError(f"server closed the connection with {len(self.buffer)} bytes unread")
        self.buffer += chunk

    def read(self, head_only: bool = False) -> tuple[int, dict[str, str], str]:
        """(status, headers with lower-case names, body text) of the next answer; `head_only` for a HEAD's answer."""
        while HEADER_END not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(HEADER_END, 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
        length = 0 if head_only else int(headers["content-length"])
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, headers, body.decode()

    def body(self) -> str:
        """The next answer's body text."""
        return self.read()[2]

    def closed_by_server(self, wait_s: float = 10.0) -> bool:
        """True once the server has closed its end (recv returns b'' or the connection was reset)."""
        self.sock.settimeout(wait_s)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


class AnswerProtocol:
    """An asyncio protocol for a client connection: hands each complete answer to `owner.answered(status, length,
    closes, body)`.

    `closes` is True when the server says it will close the connection after this
    answer. The body is passed only when `keep_bodies` is set (the pipelined
    client compares bodies); otherwise None, to keep the hot path cheap. asyncio
    and uvloop take any object with a protocol's methods: not subclassing
    asyncio.Protocol keeps asyncio out of the processes that read answers off a
    blocking socket.
    """

    keep_bodies = False

    def __init__(self, owner: AnswerOwner) -> None:
        self.owner = owner
        self.answered = owner.answered
        # A TCP connection's, from connection_made, which asyncio calls before create_connection returns this reader
        # to anyone: its owners write to it, close and abort it without a None to look for.
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.buffer = b""
        self.read_at = 0.0  # time.perf_counter() when the bytes being parsed arrived: the answers' end time
        # The last read that held exactly one whole answer, and what it was cut into. A server answering the same
        # route sends the same bytes until its Date header ticks: such a read is that answer again, found by one
        # comparison instead of four searches (its bytes decide every argument of answered()). Against nginx this
        # took the raw client's Python work per answer from 1.9 to 0.7 us.
        self.last_read: bytes | None = None
        self.last_answer: tuple[int, int, bool, bytes | None] | None = None

    def connection_made(self, transport: "asyncio.Transport") -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        # The hot path of every raw client: a few searches per answer, every other case in header().
        self.read_at = time.perf_counter()
        if self.buffer:
            data = self.buffer + data
        elif data == self.last_read:
            self.answered(*self.last_answer)  # type: ignore[misc]  # set together with last_read
            return
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
                    length = int(header(data, start, header_end, CONTENT_LENGTH))
                body_start = header_end + 4
                body_end = body_start + length
                if body_end > size:
                    break
                if data.startswith(b"HTTP/1.1 ", start):
                    # HTTP/1.1 keeps the connection unless the answer says close: rare, so looked for by one search.
                    closing = find(b"lose", start, header_end) >= 0 and closes(data, start, header_end)
                elif data.startswith(b"HTTP/1.0 ", start):
                    closing = closes(data, start, header_end)
                else:
                    raise ProtocolError(f"an answer that does not start with HTTP/1.x: {data[start:start + 20]!r}")
                answer = (int(data[start + 9 : start + 12]), length, closing,
                          data[body_start:body_end] if self.keep_bodies else None)
                if start == 0 and body_end == size <= REMEMBERED_READ_MAX:
                    self.last_read, self.last_answer = data, answer
                self.answered(*answer)
                start = body_end
        except (ProtocolError, ValueError) as error:
            self.buffer = b""
            self.owner.broken(ProtocolError(str(error)))
            return
        self.buffer = data[start:] if start < size else b""

    def eof_received(self) -> None:
        return None  # let the transport close itself; connection_lost follows

    def pause_writing(self) -> None:
        pass  # the clients write one small request at a time: nothing to hold back

    def resume_writing(self) -> None:
        pass

    def connection_lost(self, error: Exception | None) -> None:
        self.owner.lost(self, error)


class BodyKeepingProtocol(AnswerProtocol):
    keep_bodies = True
