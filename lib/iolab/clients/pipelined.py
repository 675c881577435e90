"""Pipelined: each connection writes `depth` requests in one go and reads the answers back, checking each belongs to its request.

HTTP/1.1 lets a client send requests without waiting, and obliges the server to
answer them in the order they came. Requests cycle through `paths`; before the
run, one answer per path is fetched alone, and every pipelined answer must match
the one for its own request's path (status and body), else it counts as an
error "out of order". Like wrk's pipelining, a connection writes its next batch
once the whole last one is answered.
"""

import asyncio
import collections
from collections.abc import Sequence
from typing import Any

from .. import http1
from .errors import OUT_OF_ORDER
from .raw_connection import RawConnection, RawRun
from .recorder import Recorder
from .shares import Share
from .wire import NO_ERROR


class FirstAnswer:
    """Waits for one answer on a connection: how the answer to each path alone is learned before the run."""

    def __init__(self) -> None:
        self.answer: asyncio.Future[tuple[int, bytes | None]] = asyncio.get_running_loop().create_future()

    def answered(self, status: int, length: int, closes: bool, body: bytes | None) -> None:
        if not self.answer.done():
            self.answer.set_result((status, body))

    def broken(self, error: BaseException) -> None:
        if not self.answer.done():
            self.answer.set_exception(error)

    def lost(self, reader: http1.AnswerProtocol, error: BaseException | None) -> None:
        self.broken(error or ConnectionResetError("the server closed the connection"))


async def learn_answers(host: str | None, port: int | None, requests: Sequence[bytes],
                        timeout_s: float) -> list[tuple[int, bytes | None]] | None:
    """The (status, body) each request gets when sent alone, or None if the server cannot be asked."""
    # Any: asyncio takes any object with a protocol's methods, and http1's readers do not subclass asyncio.Protocol.
    loop: Any = asyncio.get_running_loop()
    answers: list[tuple[int, bytes | None]] = []
    try:
        for request in requests:
            waiter = FirstAnswer()
            transport, _ = await asyncio.wait_for(
                loop.create_connection(lambda waiter=waiter: http1.BodyKeepingProtocol(waiter), host, port), timeout_s
            )
            try:
                transport.write(request)
                answers.append(await asyncio.wait_for(waiter.answer, timeout_s))
            finally:
                transport.close()
    except (OSError, TimeoutError, ValueError):
        return None
    return answers


class Pipeline(RawRun):
    """One process's pipelined connections and the bounds they share."""

    def __init__(self, spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
        super().__init__(spec, recorder)
        paths = spec.get("pipeline_paths") or [None]
        self.requests_by_path = [http1.get_request(spec["url"], True, path) for path in paths]
        self.depth = spec["pipeline_depth"]
        self._batches: dict[tuple[int, int], bytes] = {}  # (position in the cycle of paths, count) -> the bytes of that batch
        self.requests = share["requests"]
        self.issued = 0
        self.max_duration_s = spec["max_duration_s"]
        self.expected: list[tuple[int, bytes | None]] | None = None  # (status, body) per path, learned first
        self.connections = [PipelinedConnection(number, self) for number in share["users"]]
        self.active = len(self.connections)
        self.finished = self.loop.create_future()
        self.out_of_order = recorder.error_code(OUT_OF_ORDER)

    def take(self, wanted: int, now: float) -> int:
        """How many more requests a connection may send now: up to `wanted`, within the count and the duration."""
        if now >= self.max_duration_s:
            return 0
        granted = min(wanted, self.requests - self.issued)
        self.issued += granted
        return granted

    def batch(self, first: int, count: int) -> bytes:
        """The bytes of `count` requests, the first of them number `first` in the cycle of paths."""
        key = (first % len(self.requests_by_path), count)
        payload = self._batches.get(key)
        if payload is None:
            cycle = self.requests_by_path
            payload = self._batches[key] = b"".join(cycle[(first + i) % len(cycle)] for i in range(count))
        return payload

    def stopped(self) -> None:
        self.active -= 1
        if not self.active and not self.finished.done():
            self.finished.set_result(None)

    async def run(self) -> None:
        self.expected = await learn_answers(self.host, self.port, self.requests_by_path, self.timeout_s)
        await self.recorder.wait_for_go_async()
        flusher = asyncio.create_task(self.recorder.flush_periodically())
        sweeper = asyncio.create_task(self.sweep(self.connections))
        now = self.recorder.now()
        for connection in self.connections:
            connection.next_batch(now)
        if self.active:
            await self.finished
        sweeper.cancel()
        flusher.cancel()


class PipelinedConnection(RawConnection):
    """One user: a connection with up to `depth` requests in flight, their paths remembered in order."""

    __slots__ = ("number", "start", "waiting", "sent")
    run: Pipeline
    start: float  # always a time: with nothing waiting, the last batch's
    reader_type = http1.BodyKeepingProtocol  # each answer's body too, to check it is its own request's

    def __init__(self, number: int, run: Pipeline) -> None:
        self.number = number
        self.run = run
        self.reader = None
        self.connection = -1
        self.start = 0.0  # when the batch in flight was written
        # The cycle position of each request still unanswered, oldest first.
        self.waiting: collections.deque[int] = collections.deque()
        self.sent = 0  # requests sent on this user so far: the next one's position in the cycle of paths
        self.attempt = 0

    def next_batch(self, now: float) -> None:
        run = self.run
        count = run.take(run.depth, now)
        if not count:
            run.stopped()
            if self.reader is not None:
                self.reader.transport.close()
                self.reader = None
            return
        self.waiting.extend(range(self.sent, self.sent + count))
        payload = run.batch(self.sent, count)
        self.sent += count
        self.start = now
        self.attempt += 1
        run.recorder.in_flight += count
        self.write(payload)

    def answered(self, status: int, length: int, closes: bool, body: bytes | None) -> None:
        run = self.run
        recorder = run.recorder
        if not self.waiting or self.reader is None:
            self.broken(http1.ProtocolError("an answer to a request never sent"))
            return
        now = self.reader.read_at - recorder.time_zero
        position = self.waiting.popleft()
        error = NO_ERROR
        if run.expected is not None:
            paths = len(run.expected)
            if (status, body) != run.expected[position % paths]:
                error = run.out_of_order
        recorder.add((self.start, self.start, now, status, length, error, self.number, self.connection))
        recorder.in_flight -= 1
        if closes:
            # The server answers no more on this connection: what is still waiting is lost with it.
            reader, self.reader = self.reader, None
            if self.waiting:
                self.fail("disconnected")
                reader.transport.close()
                return
            reader.transport.close()
        if not self.waiting:
            self.next_batch(now)

    def in_flight(self) -> bool:
        return bool(self.waiting)

    def fail(self, kind: str) -> None:
        """Record every request still waiting as an error of `kind`, drop the connection, and go on."""
        recorder = self.run.recorder
        code = recorder.error_code(kind)
        now = recorder.now()
        for _ in self.waiting:
            recorder.add((self.start, self.start, now, 0, 0, code, self.number, self.connection))
        recorder.in_flight -= len(self.waiting)
        self.waiting.clear()
        self.drop()
        self.next_batch(now)


async def run(spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
    await Pipeline(spec, share, recorder).run()
