"""One raw keep-alive connection's life, shared by the raw clients.

Connect for a request, survive a broken or lost one.

closed_raw's users, open_loop's slots and pipelined's connections differ in what
they send and how they count answers, not in how they hold a connection. Each
says what it has in flight (`in_flight`) and how to give that up (`fail`); this
class opens the connection when a request needs one and turns a refusal, a
garbled answer or a server hanging up into `fail` with the error's kind.
"""

import asyncio
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .. import http1
from .errors import TIMEOUT, error_kind
from .recorder import Recorder


def sweep_interval(timeout_s: float) -> float:
    """How often to look for requests past their timeout: a tenth of it, between 1 ms and 100 ms."""
    return min(max(timeout_s / 10, 0.001), 0.1)


class RawRun:
    """What a raw client's connections share, whatever the client: the loop, where to connect, the recorder, and
    each request's timeout."""

    def __init__(self, spec: dict[str, Any], recorder: Recorder) -> None:
        self.recorder = recorder
        self.loop = asyncio.get_running_loop()
        url = urlsplit(spec["url"])
        self.host, self.port = url.hostname, url.port
        self.timeout_s: float = spec["timeout_s"]

    async def sweep(self, connections: Sequence["RawConnection"]) -> None:
        """Fail each request in flight past its timeout, looking a few times per timeout: one sweep over all the
        connections costs less than a timer per request, and no server can hang the run."""
        while True:
            await asyncio.sleep(sweep_interval(self.timeout_s))
            late = self.recorder.now() - self.timeout_s
            for connection in connections:
                start = connection.start
                if start is not None and start < late and connection.in_flight():
                    connection.fail(TIMEOUT)


class RawConnection:
    """Base of a raw client's per-connection object, which says `in_flight()` and how to `fail(kind)`.

    Its slots: `run` (the client's shared state: host, port, loop, recorder),
    `reader` (the connection's http1 reader, None while there is none),
    `connection` (the recorder's number for it, for its rows) and `attempt`
    (counts requests, so a connect that finishes after its request failed is dropped).
    """

    # The clients keep their per-request objects small: slots, no __dict__; a subclass adds its own.
    __slots__ = ("run", "reader", "connection", "attempt")
    reader_type: type[http1.AnswerProtocol] = http1.AnswerProtocol  # parses each answer, calls self.answered(...)
    run: RawRun  # each client's connection names its own run, a subclass
    start: float | None  # when the request (or batch) in flight was sent: a subclass's slot
    reader: http1.AnswerProtocol | None
    connection: int
    attempt: int

    def in_flight(self) -> bool:
        raise NotImplementedError

    def answered(self, status: int, length: int, closes: bool, body: bytes | None) -> None:
        """One answer off the connection (http1.AnswerOwner's): record it, and send what comes next."""
        raise NotImplementedError

    def fail(self, kind: str) -> None:
        raise NotImplementedError

    async def open(self) -> None:
        """Connect ahead of the first request; if that fails, the first request connects (and records why not)."""
        run = self.run
        protocol: Any = self.reader_type  # an asyncio protocol by its methods (slots, no base class): typeshed cannot tell
        try:
            _, self.reader = await run.loop.create_connection(lambda: protocol(self), run.host, run.port)
            self.connection = run.recorder.new_connection()
        except OSError:
            self.reader = None

    async def connect(self, attempt: int, payload: bytes) -> None:
        """Open a connection and write `payload`, unless the request it was for has timed out meanwhile."""
        run = self.run
        protocol: Any = self.reader_type  # as in open()
        try:
            transport, reader = await run.loop.create_connection(lambda: protocol(self), run.host, run.port)
        except OSError as error:
            if attempt == self.attempt and self.in_flight():
                self.fail(error_kind(error))
            return
        if attempt != self.attempt or not self.in_flight():
            transport.close()  # a timeout gave this request up, and started a new attempt, while we connected
            return
        self.reader = reader
        self.connection = run.recorder.new_connection()
        transport.write(payload)

    def write(self, payload: bytes) -> None:
        """Send `payload` on the connection, or open one for it first (for the attempt now in flight)."""
        if self.reader is None:
            self.run.loop.create_task(self.connect(self.attempt, payload))
        else:
            self.reader.transport.write(payload)

    def drop(self) -> None:
        """Abort the connection, if there is one: nothing on it can be trusted any more."""
        if self.reader is not None:
            self.reader.transport.abort()
            self.reader = None

    def broken(self, error: BaseException) -> None:
        """The reader could not parse the answer: fail what is in flight, or just drop an idle connection."""
        if self.in_flight():
            self.fail(error_kind(error))
        else:
            self.drop()

    def lost(self, reader: http1.AnswerProtocol, error: BaseException | None) -> None:
        """The connection closed: if it was ours and a request was on it, that request failed."""
        if reader is not self.reader:
            return  # a connection already let go of
        self.reader = None
        if self.in_flight():
            self.fail(error_kind(error or ConnectionResetError("the server closed the connection")))
