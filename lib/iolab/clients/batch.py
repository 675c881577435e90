"""A batch client: numbered pipelined requests, every echoed number checked a read at a time.

Each connection writes `depth` numbered requests at once and checks every answer's echoed number.

The lab's pipelined client (pipelined.py) runs Python for every answer: it cuts
the answer out, compares its body, records a row. This client does per read and
per batch what that one does per answer, the way pipeline_batch_app serves:

  * a batch is `depth` requests GET /?seq=N, numbered in order, sent in one write;
  * ANSWERS.match finds how far whole hello-world answers, each with a Seq header,
    tile what has arrived; NUMBER.findall takes their numbers; one list comparison
    checks every number against the request at its place. An answer with another
    status, body or header, or a number out of place, is an error. (When the
    read is the rest of the batch, alike but for the numbers, as it usually is,
    one join rebuilds it from the first answer and one comparison checks it
    instead: _all_answers_alike);
  * the next batch leaves when the whole last one is answered (as wrk pipelines).

It counts, it does not keep a row per request: latency is not what it measures.
The numbers cycle through a few batches' worth per connection (each connection
its own numbers), which is enough to place every answer: only one batch is in
flight, so an answer left over from the last one would carry a number of its own.

It is the kind "batch" of clients.kinds, run by iolab.load in client processes
like every kind (`load.run_load(url, kind="batch", depth=16, concurrency=64,
max_duration_s=3)`), over the same frames: it reports requests, errors, wall
time and its own CPU for the timed window in its done frame, where the others
send rows (`load.run_batches` is that run with the batch client's own names,
its reports added up). Every run is bounded in requests, duration and time per
batch.
"""

import asyncio
import functools
import resource
import time
from typing import Any, cast
from urllib.parse import urlsplit

from ..http1 import LONGEST_NUMBERED_HELLO as LONGEST_ANSWER
from ..http1 import NUMBERED_HELLO as NUMBER
from ..http1 import NUMBERED_HELLOS as ANSWERS
from .recorder import Recorder
from .shares import Share

CYCLE = 64  # batches of numbers per connection before they repeat, at most
NUMBERS_KEPT = 1 << 20  # numbers built ahead for all connections together, at most: the memory they take is bounded
CONNECT_TIMEOUT_S = 10.0


class Batches(asyncio.Protocol):
    """One connection: a batch in flight, the numbers it must get back in order, answers checked a read at a time."""

    def __init__(self, run: "Run", first_number: int) -> None:
        self.run = run
        numbers = [b"%d" % (first_number + i) for i in range(run.cycle * run.depth)]
        depth = run.depth
        # Every batch of the cycle built once: the bytes to write and the numbers expected back.
        self.cycle = [(_requests(run.host, numbers[i : i + depth]), numbers[i : i + depth])
                      for i in range(0, len(numbers), depth)]
        self.next_batch = 0
        self.expected: list[bytes] = []  # the numbers of the batch in flight, in order
        self.position = 0  # how many of them have been answered
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.sent_at = 0.0
        self.done = run.loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP connection's

    def send(self) -> None:
        run = self.run
        if time.perf_counter() >= run.ends_at or run.issued >= run.max_requests:
            self.finish()
            return
        payload, self.expected = self.cycle[self.next_batch]
        self.position = 0
        self.next_batch = (self.next_batch + 1) % len(self.cycle)
        run.issued += len(self.expected)
        self.sent_at = time.perf_counter()
        transport = self.transport
        assert transport is not None  # Run.run sends only on the connections made
        transport.write(payload)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        position, expected = self.position, self.expected
        if _all_answers_alike(buffer, expected[position:]):
            # The usual read: the rest of the batch, whole, every answer its request's.
            self.buffer = b""
            self.run.answered += len(expected) - position
            self.position = len(expected)
            self.send()
            return
        # Whole answers back to back from the first byte ("(...)*+" matches any buffer, if only emptily).
        end = ANSWERS.match(buffer).end()  # type: ignore[union-attr]
        numbers = NUMBER.findall(buffer, 0, end)
        # One comparison in C for every answer of this read: each number must be its request's.
        if numbers != expected[position : position + len(numbers)]:
            self.fail("wrong answer")
            return
        self.position = position = position + len(numbers)
        self.run.answered += len(numbers)
        buffer = buffer[end:]
        waiting = position < len(expected)
        head_end = buffer.find(b"\r\n\r\n")
        # Left over after the whole answers: the start of the next one, or something that is not one of them (a
        # whole head and a body as long as hello world's, but another answer; too long; nothing was asked for).
        if (head_end >= 0 and len(buffer) >= head_end + 4 + 12) or len(buffer) > LONGEST_ANSWER or (
                buffer and not waiting):
            self.fail("wrong answer")
            return
        self.buffer = buffer
        if not waiting:
            self.send()

    def fail(self, kind: str) -> None:
        """Count what was in flight as lost to `kind`, and give this connection up."""
        run = self.run
        lost = max(len(self.expected) - self.position, 1)
        run.errors[kind] = run.errors.get(kind, 0) + lost
        self.expected, self.position = [], 0
        if self.transport is not None:  # always, once connected: only a connection's events fail it
            self.transport.abort()
        self.finish()

    def in_flight(self) -> bool:
        return self.position < len(self.expected)

    def connection_lost(self, error: Exception | None) -> None:
        if self.in_flight():
            self.fail("closed")
        self.finish()

    def finish(self) -> None:
        if not self.done.done():
            self.done.set_result(None)
            if self.transport is not None and not self.transport.is_closing():
                self.transport.close()


def _all_answers_alike(buffer: bytes, numbers: list[bytes]) -> bool:
    """True when `buffer` is exactly the answers to `numbers`, alike but for their numbers, as they usually come.

    The first answer is checked by the pattern; the rest are rebuilt from it and the numbers expected, and compared
    with what arrived byte for byte: one join and one comparison in C, instead of the pattern's two passes.
    """
    first = NUMBER.match(buffer)
    if first is None or not numbers:
        return False
    before, after = buffer[: first.start(1)], buffer[first.end(1) : first.end()]
    return before + (after + before).join(numbers) + after == buffer


def _requests(host: str, numbers: list[bytes]) -> bytes:
    """The bytes of one batch: a GET /?seq=N for each number, back to back."""
    before, after = b"GET /?seq=", b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n\r\n"
    return before + (after + before).join(numbers) + after


class Run:
    """What the connections of one client process share: the bounds, and the counts."""

    def __init__(self, spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
        url = urlsplit(spec["url"])
        self.host, self.port = url.hostname, url.port
        self.recorder = recorder
        self.depth = spec["depth"]
        self.users = share["users"]  # this process's connections, numbered across the run's processes
        self.duration_s = spec["max_duration_s"]
        self.timeout_s = spec["timeout_s"]
        self.max_requests = share["requests"]
        # Two batches in the cycle are enough to tell this batch's answers from the last one's.
        self.cycle = max(2, min(CYCLE, NUMBERS_KEPT // (self.depth * spec["concurrency"])))
        self.loop = asyncio.get_running_loop()
        self.issued = self.answered = 0
        self.errors: dict[str, int] = {}  # kind -> requests lost to it
        self.ends_at = float("inf")

    async def run(self) -> dict[str, Any]:
        batches: list[Batches] = []
        for number in self.users:
            try:
                _, protocol = await asyncio.wait_for(self.loop.create_connection(
                    functools.partial(Batches, self, number * self.cycle * self.depth), self.host, self.port),
                    CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as error:
                kind = "refused" if isinstance(error, ConnectionRefusedError) else "timeout"
                self.errors[kind] = self.errors.get(kind, 0) + 1
                continue
            batches.append(protocol)
        await self.recorder.wait_for_go_async()  # every process connected: all start at the run's time zero
        cpu_before, began = _cpu_s(), time.perf_counter()
        self.ends_at = began + self.duration_s
        for connection in batches:
            connection.send()
        sweeper = self.loop.create_task(self.sweep(batches))
        await asyncio.gather(*(connection.done for connection in batches))
        seconds, cpu = time.perf_counter() - began, _cpu_s() - cpu_before
        sweeper.cancel()
        return {"requests": self.answered, "errors": self.errors, "seconds": seconds, "client_cpu_s": cpu}

    async def sweep(self, batches: list[Batches]) -> None:
        """A batch not answered within timeout_s is lost, and so is its connection."""
        while True:
            await asyncio.sleep(min(self.timeout_s / 4, 0.25))
            late = time.perf_counter() - self.timeout_s
            for connection in batches:
                if connection.in_flight() and connection.sent_at < late:
                    connection.fail("timeout")


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def run(spec: dict[str, Any], share: Share, recorder: Recorder) -> dict[str, Any]:
    """The kind's entry in its client process (clients.process): the totals it returns go in its done frame."""
    return await Run(spec, share, recorder).run()
