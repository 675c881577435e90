"""The bytes of an HTTP/1.1 answer, and the clock that keeps its Date current once a second.

The same tick keeps hello world's whole answer, Date included, ready to send.
"""

import time
from email.utils import formatdate

from iolab.contract import HELLO_BODY, REASONS
from pipeline.parsers import Request

KEEP_ALIVE_GET = Request(b"GET", b"/", b"", True)  # what nearly every request of a benchmark looks like
SEQ_MARK = "\0"  # where the number goes in the numbered answer's two halves
MAX_SEQ_DIGITS = 16  # a request's number (GET /?seq=N), echoed in its answer's Seq header


class Clock:
    """Formatting the date costs more than a hello-world handler; a loop timer does it once a second instead."""

    def __init__(self):
        self.date = ""
        self.hello = b""  # the whole answer to a keep-alive GET /, which changes only with the date
        # The answer to a keep-alive GET /?seq=N cut where N goes: before + N + after.
        self.numbered_before = self.numbered_after = b""

    def tick(self):
        self.date = formatdate(time.time(), usegmt=True)
        self.hello = respond(KEEP_ALIVE_GET, 200, HELLO_BODY)
        numbered = respond(KEEP_ALIVE_GET, 200, HELLO_BODY, seq=SEQ_MARK)
        self.numbered_before, self.numbered_after = numbered.split(SEQ_MARK.encode())

    def keep_current(self, loop):
        self.tick()
        loop.call_at(loop.time() + 1.0 - time.time() % 1.0, self.keep_current, loop)


clock = Clock()


def respond(request, status, text, seq=None):
    """Status line, headers and body, saying whether the connection stays open as the request asked.

    `seq`: the request's number (GET /?seq=N), echoed in a Seq header so a pipelining client can match every answer
    to its request.
    """
    body = text.encode()
    # Said even where HTTP/1.1 would assume it: an HTTP/1.0 client (ab -k) closes unless told to keep the connection.
    connection = "keep-alive" if request.keep_alive else "close"
    head = (
        f"HTTP/1.1 {status} {REASONS[status]}\r\n"
        f"Date: {clock.date}\r\n"
        "Content-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {connection}\r\n"
        + (f"Seq: {seq}\r\n" if seq is not None else "")
        + "\r\n"
    ).encode("latin-1")
    return head if request.method == b"HEAD" else head + body  # HEAD: the same headers, no body


clock.tick()
