"""Subscribers: N long-lived connections of one transport, a row per message each gets.

The client kind "subscribers" of clients.kinds (lesson 12). `concurrency` is the
number of subscribers; `requests` is subscribers × messages, so each waits for
requests / concurrency messages. They connect one after another (the server
sends in subscription order, so a subscriber's user number is its place in
the send order, with one client process), then the process reports ready.
After the go, with `publish`, process 0 asks the server for the messages
itself (GET /publish, `interval_s` apart, once the server counts every
subscriber); without it, whoever drives the run publishes.

Each message makes one row: `start` (and `intended`) is the publish time the
payload carries (`t`, CLOCK_MONOTONIC, one clock for every process), `end` its
arrival, so a Sample's latency is the delivery time; `bytes` the payload's
length, `user` the subscriber, `connection` its connection. A subscriber whose
connection ends before its last message leaves a row with the error
"closed" (the server dropped it), one that cannot connect "refused" or
"timeout". The report in the done frame (LoadResult.reports) holds what
/publish answered (the server's wall and CPU time per broadcast), the time
it took to connect, and this process's CPU from the go to the end.

Each transport is a small asyncio Protocol, not a library client per connection,
so ten thousand fit in one process: WebSocket (the HTTP/1.1 upgrade and a frame
parser, RFC 6455; pings answered, permessage-deflate inflated when the server
agreed to it), server-sent events (an event parser over a chunked or plain
body) and long polling (a keep-alive GET /poll?cursor=K, then the next).
`slow` names one subscriber that stops reading once connected, with a small
receive buffer (the slow consumer). Every wait is bounded: a connect by
timeout_s, the run by max_duration_s after the go.

holder.py holds the same subscribers open instead, asked over a pipe (the
kind's held mode, driven by held_subscribers.Held): Subscriptions is what both
share. Whoever drives a run asks the push server through push_routes.py.
"""

import asyncio
import base64
import json
import math
import resource
import socket
import time
import zlib
from typing import Any, cast
from urllib.parse import urlsplit

from .. import environment, http1
from .recorder import Recorder
from .shares import Share

TRANSPORTS = ("ws", "sse", "poll")
PATHS = {"ws": "/ws", "sse": "/sse", "poll": "/poll"}
SLOW_RCVBUF = 4096  # the slow subscriber's receive buffer: its kernel holds little, so the server's own buffer grows
WS_KEY = base64.b64encode(b"iolab-subscriber").decode()  # any 16 bytes do; the server only hashes them
PONG, CLOSE = 0xA, 0x8
SEQ_END = b"}"
SLOW_DRAIN_S = 1.0  # at the end, how long the slow subscriber reads again to learn whether it was dropped


class Subscriber(asyncio.Protocol):
    """One connection: the request that subscribes, the answer's head, then messages, each handed to its `run`
    (a Subscriptions: the bounded Run below, or held_subscribers.Holder)."""

    expected_status: str  # the answer's status that means subscribed
    headers: dict[str, str]  # the answer's headers, once its head is in

    def __init__(self, run: "Subscriptions", user: int) -> None:
        self.run = run
        self.user = user
        self.connection = run.new_connection()
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.head_done = False
        self.ready: asyncio.Future[None] = run.loop.create_future()  # set once the server has answered the subscription
        self.ready.add_done_callback(lambda future: future.cancelled() or future.exception())  # seen: no warning
        self.received = 0
        self.ended = False  # no more rows come from this subscriber: it has them all, failed, or was closed
        self.counted = False  # the run no longer waits for it

    # --- asyncio.Protocol ---
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a TCP connection's
        self.transport.write(self.request())

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        buffer = self.buffer + data if self.buffer else data
        if not self.head_done:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                self.buffer = buffer
                return
            head, buffer = buffer[:end].decode("latin-1"), buffer[end + 4:]
            problem = self.answer_head(head)
            if problem:
                self.fail(problem)
                return
            self.head_done = True
            if not self.ready.done():
                self.ready.set_result(None)
        self.buffer = self.parse(buffer, now)

    def connection_lost(self, error: Exception | None) -> None:
        if not self.ready.done():
            self.ready.set_exception(ConnectionError("the server closed the connection before it answered"))
        if not self.ended:
            self.fail("closed")

    # --- what every transport shares ---
    def request(self) -> bytes:
        """The bytes that subscribe (and for a long poll, each poll after)."""
        raise NotImplementedError

    def parse(self, buffer: bytes, now: float) -> bytes:
        """Hand every whole message in `buffer` (which arrived at `now`) to `message`; what is left of it."""
        raise NotImplementedError

    def message(self, payload: bytes, now: float) -> None:
        """Hand one message to the run, read from its JSON head: {"seq": n, "t": publish time}."""
        head = json.loads(payload[: payload.index(SEQ_END) + 1])
        self.run.delivered(self, head["seq"], head["t"], len(payload), now)
        self.received += 1
        if self.received >= self.run.messages:
            self.ended = True
            self.count_out()

    def count_out(self) -> None:
        if not self.counted:
            self.counted = True
            self.run.subscriber_done(self)

    def fail(self, kind: str) -> None:
        """A row with the error `kind` (no more messages will come on this connection), and give it up."""
        if self.ended:
            return
        self.ended = True
        self.run.failed(self, kind)
        if not self.ready.done():
            self.ready.set_exception(ConnectionError(kind))
        self.count_out()
        if self.transport is not None:
            self.transport.abort()

    def answer_head(self, head: str) -> str | None:
        """None when the head says subscribed (its headers kept), else what went wrong."""
        status = head.split(" ", 2)[1] if head.count(" ") >= 1 else "?"
        expected = self.expected_status
        if status != expected:
            return f"status {status}"
        self.headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in head.split("\r\n")[1:])
        }
        return None

    def close(self) -> None:
        self.ended = True
        if self.transport is not None:
            self.transport.abort()


class WebSocketSubscriber(Subscriber):
    expected_status = "101"

    def request(self) -> bytes:
        offer = "Sec-WebSocket-Extensions: permessage-deflate\r\n" if self.run.compression else ""
        return (f"GET {self.run.path} HTTP/1.1\r\nHost: {self.run.host}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {WS_KEY}\r\nSec-WebSocket-Version: 13\r\n"
                f"{offer}\r\n").encode()

    def answer_head(self, head: str) -> str | None:
        problem = super().answer_head(head)
        # Inflate only if the server agreed; the inflater is made at the first compressed message (an idle
        # subscriber holds none: its memory is the server's to measure, not ours).
        self.inflater: Any = None  # a zlib decompressor, once needed
        self.deflate = "permessage-deflate" in self.headers.get("sec-websocket-extensions", "")
        self.fragments: list[bytes] = []
        self.compressed = False
        return problem

    def parse(self, buffer: bytes, now: float) -> bytes:
        position, size = 0, len(buffer)
        while size - position >= 2:
            first, second = buffer[position], buffer[position + 1]
            length, start = second & 0x7F, position + 2
            if length == 126:
                if size - start < 2:
                    break
                length, start = int.from_bytes(buffer[start:start + 2], "big"), start + 2
            elif length == 127:
                if size - start < 8:
                    break
                length, start = int.from_bytes(buffer[start:start + 8], "big"), start + 8
            if second & 0x80:  # a server never masks (RFC 6455 5.1)
                self.fail("masked frame")
                return b""
            end = start + length
            if end > size:
                break
            self.frame(first, buffer[start:end], now)
            position = end
        return buffer[position:]

    def frame(self, first: int, data: bytes, now: float) -> None:
        opcode = first & 0x0F
        if opcode in (0x0, 0x1, 0x2):
            if opcode and first & 0x40:  # RSV1 on a message's first frame: compressed (RFC 7692)
                self.compressed = True
            elif opcode:
                self.compressed = False
            self.fragments.append(data)
            if not first & 0x80:
                return
            data = b"".join(self.fragments)
            self.fragments = []
            if self.compressed:
                if self.inflater is None:
                    self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                data = self.inflater.decompress(data + b"\x00\x00\xff\xff")
            self.message(data, now)
        elif opcode == 0x9:  # ping: the same data back in a pong (websockets closes a peer that never answers)
            self.send_control(PONG, data)
        elif opcode == CLOSE:
            self.send_control(CLOSE, data[:2])
            self.fail("closed")

    def send_control(self, opcode: int, data: bytes) -> None:
        # A client masks every frame (RFC 6455 5.3); a zero key leaves the data as it is.
        assert self.transport is not None  # a frame came in on it
        self.transport.write(bytes((0x80 | opcode, 0x80 | len(data))) + b"\0\0\0\0" + data)


class EventsSubscriber(Subscriber):
    expected_status = "200"

    def request(self) -> bytes:
        return (f"GET {self.run.path} HTTP/1.1\r\nHost: {self.run.host}\r\nAccept: text/event-stream\r\n"
                "Cache-Control: no-cache\r\n\r\n").encode()

    def answer_head(self, head: str) -> str | None:
        problem = super().answer_head(head)
        self.chunked = "chunked" in self.headers.get("transfer-encoding", "")
        self.raw = b""
        self.body = b""
        return problem

    def parse(self, buffer: bytes, now: float) -> bytes:
        if self.chunked:
            raw = self.raw + buffer
            position, body = 0, []
            while True:
                line_end = raw.find(b"\r\n", position)
                if line_end < 0:
                    break
                length = int(raw[position:line_end].split(b";")[0], 16)
                if length == 0:
                    self.fail("closed")
                    return b""
                end = line_end + 2 + length
                if len(raw) < end + 2:
                    break
                body.append(raw[line_end + 2:end])
                position = end + 2
            self.raw = raw[position:]
            events = self.body + b"".join(body)
        else:
            events = self.body + buffer
        *whole, self.body = events.split(b"\n\n")
        for event in whole:
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    self.message(line[5:].lstrip(b" "), now)
        return b""


class PollSubscriber(Subscriber):
    """Long polling on one kept connection: a GET that the server parks, its answer, the next GET."""

    expected_status = "200"

    def request(self) -> bytes:
        cursor = "" if self.cursor is None else f"?cursor={self.cursor}"
        return f"GET {self.run.path}{cursor} HTTP/1.1\r\nHost: {self.run.host}\r\n\r\n".encode()

    def __init__(self, run: "Subscriptions", user: int) -> None:
        super().__init__(run, user)
        self.cursor: int | None = None  # the first poll waits for the next message
        self.ready.set_result(None)  # parked once sent: the server answers only when there is a message

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        buffer = self.buffer + data if self.buffer else data
        while True:
            try:
                length = http1.answer_length(buffer)
            except http1.ProtocolError as error:
                self.fail(str(error))
                return
            if not length:
                break
            answer, buffer = buffer[:length], buffer[length:]
            if not answer.startswith(b"HTTP/1.1 200 "):
                self.fail(f"status {answer[9:12].decode(errors='replace')}")
                return
            for line in answer[answer.index(http1.HEADER_END) + 4:].split(b"\n"):
                if line:  # a payload a line: {"seq":N,"t":...} padded with spaces
                    self.cursor = max(self.cursor or 0, int(line[7:line.index(b",")]))
                    self.message(line, now)
            if self.ended:
                return
            if self.run.repoll_at_once:  # else the run tells it when: held_subscribers.Holder's `repoll`
                self.poll()
        self.buffer = buffer

    def poll(self) -> None:
        """The next long poll, from the cursor of the last message it got."""
        assert self.transport is not None  # polls again only once answered
        self.transport.write(self.request())


# Each transport's protocol class: the subscriber that one connection of it is.
PROTOCOLS = {"ws": WebSocketSubscriber, "sse": EventsSubscriber, "poll": PollSubscriber}


class Subscriptions:
    """What a client process's subscribers share: the server, the transport, connecting one after another, and
    what becomes of each message (`delivered`) and of a subscriber that ends early (`failed`).

    Two kinds of run build on it: Run below (the client kind's bounded run, a row per message) and
    held_subscribers.Holder (held until the driving process lets go, asked over a pipe)."""

    messages: float = math.inf  # how many messages a subscriber waits for before it ends
    repoll_at_once = True  # a long poll asks again as soon as it is answered
    slow: int | None = None  # the user that stops reading once connected

    def __init__(self, url: str, transport: str, compression: bool, timeout_s: float) -> None:
        parts = urlsplit(url)
        # Every url here names its host: LoadSpec.validate checked a run's, a lesson passes its server's.
        self.host, self.port = cast(str, parts.hostname), parts.port
        self.transport_name = transport  # ws, sse or poll
        self.path = PATHS[transport]
        self.protocol = PROTOCOLS[transport]
        self.compression = compression
        self.timeout_s = timeout_s
        self.loop = asyncio.get_running_loop()
        # A payload's t is time.monotonic(); `now` is time.perf_counter(): on Linux both read CLOCK_MONOTONIC.
        self.clock_offset = time.monotonic() - time.perf_counter()
        self.subscribers: list[Subscriber] = []
        self.lost: dict[str, int] = {}  # error kind -> messages (Run) or subscribers (Holder) lost with it

    def new_connection(self) -> int:
        return len(self.subscribers)

    def delivered(self, subscriber: Subscriber, seq: int, t: float, size: int, now: float) -> None:
        """A message arrived: `t` its publish time (monotonic), `now` its arrival (perf_counter)."""
        raise NotImplementedError

    def failed(self, subscriber: Subscriber, kind: str) -> None:
        self.lost[kind] = self.lost.get(kind, 0) + 1

    def subscriber_done(self, subscriber: Subscriber) -> None:
        pass

    async def connect(self, user: int) -> Subscriber:
        """One subscriber, connected and subscribed (the server holds it) before this returns; a failure is the
        subscriber's (`failed`), not raised."""
        subscriber = self.protocol(self, user)
        self.subscribers.append(subscriber)
        try:
            sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
            sock.setblocking(False)
            if user == self.slow:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SLOW_RCVBUF)  # before connect: the window
            await asyncio.wait_for(self.loop.sock_connect(sock, (self.host, self.port)), self.timeout_s)
            await self.loop.create_connection(lambda: subscriber, sock=sock)
            await asyncio.wait_for(asyncio.shield(subscriber.ready), self.timeout_s)
        except TimeoutError:
            if subscriber.transport is None:  # else the transport owns the socket; fail() aborts it
                sock.close()
            subscriber.fail("timeout")
            return subscriber
        except (ConnectionError, OSError) as error:
            if subscriber.transport is None:
                sock.close()
            subscriber.fail("refused" if isinstance(error, ConnectionRefusedError) else "closed")
            return subscriber
        if user == self.slow and subscriber.transport is not None:  # connected: it is
            subscriber.transport.pause_reading()
        return subscriber


class Run(Subscriptions):
    """The client kind's run: every subscriber waits for requests / concurrency messages, a row each."""

    messages: int

    def __init__(self, spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
        super().__init__(spec["url"], spec["transport"], spec["compression"], spec["timeout_s"])
        self.spec = spec
        self.users = share["users"]
        self.recorder = recorder
        self.messages = spec["requests"] // spec["concurrency"]
        self.slow = spec["slow"]
        self.waiting = 0
        self.all_done = self.loop.create_future()
        self.last_seq = 0
        self.published: list[dict[str, Any]] = []  # what each /publish answered

    def new_connection(self) -> int:
        return self.recorder.new_connection()

    def delivered(self, subscriber: Subscriber, seq: int, t: float, size: int, now: float) -> None:
        zero = self.recorder.time_zero
        published = t - self.clock_offset - zero
        self.recorder.add((published, published, now - zero, 200, size, 0, subscriber.user, subscriber.connection))
        self.last_seq = max(self.last_seq, seq)

    def failed(self, subscriber: Subscriber, kind: str) -> None:
        """A row with the error `kind`; the messages the subscriber will never get are lost with it."""
        now = self.recorder.now()
        self.recorder.add((now, now, now, 0, 0, self.recorder.error_code(kind), subscriber.user, subscriber.connection))
        self.lost[kind] = self.lost.get(kind, 0) + self.messages - subscriber.received

    def subscriber_done(self, subscriber: Subscriber) -> None:
        self.waiting -= 1
        self.recorder.in_flight = self.waiting
        if self.waiting <= 0 and not self.all_done.done():
            self.all_done.set_result(None)

    async def connect(self, user: int) -> Subscriber:
        self.waiting += 1
        return await super().connect(user)

    async def run(self) -> dict[str, Any]:
        started = time.perf_counter()
        for user in self.users:  # one after another: the server's send order is this order
            await self.connect(user)
        connect_s = time.perf_counter() - started
        await self.recorder.wait_for_go_async()
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        went = time.perf_counter()
        flusher = asyncio.create_task(self.recorder.flush_periodically())
        publisher = None
        if self.spec["publish"] and self.spec["process"] == 0:
            publisher = asyncio.create_task(self.publish())
        self.recorder.in_flight = self.waiting
        if self.slow in self.users:
            # The slow one stops reading: the run does not wait for its messages, only records whether it is dropped.
            next(s for s in self.subscribers if s.user == self.slow).count_out()
        elif self.waiting <= 0 and not self.all_done.done():
            self.all_done.set_result(None)
        try:
            await asyncio.wait_for(asyncio.shield(self.all_done), self.spec["max_duration_s"])
        except TimeoutError:
            pass
        seconds = time.perf_counter() - went
        used = resource.getrusage(resource.RUSAGE_SELF)  # before the closing: it is not the deliveries' work
        await self.hear_from_the_slow_one()
        if publisher is not None:
            # Its last answer may still be on the way when the last message is in: wait for it, within bounds.
            done, _ = await asyncio.wait([publisher], timeout=self.timeout_s)
            if publisher in done and publisher.exception() is not None:
                self.published.append({"error": f"{type(publisher.exception()).__name__}: {publisher.exception()}"})
            publisher.cancel()
        for subscriber in self.subscribers:
            subscriber.close()
        flusher.cancel()
        # Messages accounted for: received, or lost with a subscriber's connection (the batch client counts so).
        return {"requests": sum(s.received for s in self.subscribers) + sum(self.lost.values()), "lost": self.lost,
                "seconds": seconds,
                "connect_s": connect_s, "client_cpu_s": used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime,
                "published": self.published}

    async def hear_from_the_slow_one(self) -> None:
        """Let the stopped subscriber read again, briefly: what its kernel held arrives late, then the end of the
        connection if the server dropped it (a subscriber that does not read cannot see its connection close)."""
        slow = next((s for s in self.subscribers if s.user == self.slow and not s.ended), None)
        if slow is None or slow.transport is None:
            return
        slow.transport.resume_reading()
        deadline = time.monotonic() + min(SLOW_DRAIN_S, self.timeout_s)
        while not slow.ended and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    async def publish(self) -> None:
        """Wait until the server counts every subscriber of the run, then ask for the messages, interval_s apart."""
        spec = self.spec
        deadline = time.monotonic() + self.timeout_s
        while True:
            stats = json.loads(await http_get(self.host, self.port, "/stats", self.timeout_s))
            if sum(stats["subscribers"].values()) >= spec["concurrency"] or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.01)
        for index in range(self.messages):
            if index:
                await asyncio.sleep(spec["interval_s"])
            query = f"/publish?size={spec['size']}" + (f"&how={spec['how']}" if spec["how"] else "")
            self.published.append(json.loads(await http_get(self.host, self.port, query, self.timeout_s)))


async def http_get(host: str | None, port: int | None, path: str, timeout_s: float) -> str:
    """The body of one GET on a new connection (the server answers 200, or this raises with what it said)."""

    async def get() -> str:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
            answer = await reader.read()
        finally:
            writer.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise ConnectionError(f"GET {path} answered {answer[:200]!r}")
        return body.decode()

    return await asyncio.wait_for(get(), timeout_s)


async def run(spec: dict[str, Any], share: Share, recorder: Recorder) -> dict[str, Any]:
    problem = environment.file_limit_reason(len(share["users"]))
    if problem:
        raise SystemExit(problem)
    return await Run(spec, share, recorder).run()
