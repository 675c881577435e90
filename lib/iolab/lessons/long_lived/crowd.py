"""N subscribers of one transport, held by a client process of their own.

The lesson's subscribers: a client process holds N of one transport (ws, sse or poll) against one server,
connected one after another (so the server's send order is theirs), and records when each got each message.
The kernel asks it over a pipe: `wait SEQ` (every subscriber's delivery of message SEQ, in send order, and the
client's CPU when the last arrived), `cpu`, `all`. Run as `python -m iolab.lessons.long_lived.crowd URL KIND N`.
"""

import asyncio
import base64
import contextlib
import json
import os
import re
import sys
import time
import urllib.parse
import zlib

from iolab import children, environment, http1
from iolab.contract import die_with_parent

MODULE = "iolab.lessons.long_lived.crowd"
KINDS = ("ws", "sse", "poll")
CONNECT_S = 60.0  # every subscriber connected within this, 10,000 included
ANSWER_S = 60.0  # the most the kernel waits for an answer on the pipe
HEAD = re.compile(rb'\{"seq":\s*(\d+),\s*"t":\s*([0-9.eE+-]+)\}')  # the payload's JSON head


class Crowd:
    """`with Crowd(url, "ws", 1000) as crowd:` starts the client process and returns once all 1000 are subscribed."""

    def __init__(self, url, kind, n, compression=False, timeout_s=CONNECT_S):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        self.n, self.kind = n, kind
        environment.raise_file_limit(n + 100)
        self.process = children.spawn(children.python("-m", MODULE, url, kind, n, "on" if compression else "off"),
                                      stdin=children.subprocess.PIPE)
        try:
            line = self._line(timeout_s)
        except BaseException:
            self.close()
            raise
        if not line.startswith("READY"):
            self.close()
            raise RuntimeError(f"the {kind} subscribers of {url} did not connect: {line}")

    @property
    def pid(self):
        return self.process.pid

    def _line(self, timeout_s):
        said = children.read_until(self.process.stdout, b"\n", timeout_s)
        if not said:
            raise RuntimeError(f"the subscribers' client exited with {self.process.poll()}")
        return said.decode().strip()

    def ask(self, command, timeout_s=ANSWER_S):
        self.process.stdin.write(f"{command}\n".encode())
        self.process.stdin.flush()
        return json.loads(self._line(timeout_s))

    def cpu_s(self):
        """The client's own CPU seconds so far, as it reads them."""
        return self.ask("cpu")["cpu_s"]

    def wait_for(self, seq, timeout_s=ANSWER_S):
        """Every subscriber's delivery of message `seq` in ms, in send order, once all have it (or `timeout_s` has
        passed: then fewer); `last_cpu_s` holds the client's CPU when the last one arrived."""
        found = self.ask(f"wait {seq} {timeout_s}", timeout_s + 5)
        self.last_cpu_s = found["cpu_s"]
        return found["deliveries"]

    def add(self, k):
        """k more subscribers, connected after those already held; returns how many are held now."""
        self.n = self.ask(f"add {k}", CONNECT_S)["held"]
        return self.n

    def repoll(self):
        """Long polls only: every subscriber sends its next poll now. The client's CPU when all were sent."""
        return self.ask("repoll")["cpu_s"]

    def deliveries(self):
        """Every delivery so far: {index, seq, t, received, delivery_ms}."""
        return self.ask("all")["rows"]

    def close(self):
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        self.process.kill()
        self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Crowds(contextlib.ExitStack):
    """Several crowds held at once (section 1 adds one per step), closed together."""

    def add(self, url, kind, n, **options):
        return self.enter_context(Crowd(url, kind, n, **options))


# --- The client process ------------------------------------------------------------------------------------------

class Subscriber(asyncio.Protocol):
    """One subscriber: the bytes it receives go to `parse` (its transport's), which records each message's head."""

    def __init__(self, index, record):
        self.index, self.record = index, record
        self.ready = asyncio.get_running_loop().create_future()
        self.buffer = b""
        self.headers_done = False
        self.inflate = None

    def connection_made(self, transport):
        self.transport = transport

    def connection_lost(self, exc):
        if not self.ready.done():
            self.ready.set_exception(ConnectionError("closed before it subscribed"))

    def data_received(self, data):
        self.buffer += data
        if not self.headers_done:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buffer = self.buffer[:end], self.buffer[end + 4:]
            self.headers_done = self.accept(head)
            if not self.ready.done():
                self.ready.set_result(None)
        self.parse()

    def accept(self, head):
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status and b" 200 " not in status:
            raise ConnectionError(f"subscribing answered {status.decode(errors='replace')}")
        if b"permessage-deflate" in head.lower():
            self.inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        return True

    def found(self, data):
        for match in HEAD.finditer(data):
            self.record(self.index, int(match.group(1)), float(match.group(2)))


class WebSocket(Subscriber):
    def parse(self):
        while len(self.buffer) >= 2:
            first, second = self.buffer[0], self.buffer[1] & 0x7F
            start = 2 + {126: 2, 127: 8}.get(second, 0)
            if len(self.buffer) < start:
                return
            length = int.from_bytes(self.buffer[2:start], "big") if second >= 126 else second
            if len(self.buffer) < start + length:
                return
            payload, self.buffer = self.buffer[start:start + length], self.buffer[start + length:]
            opcode = first & 0x0F
            if opcode == 0x9:  # a ping: answer with a pong (masked, as a client must; RFC 6455 5.5.2)
                self.transport.write(bytes((0x8A, 0x80 | len(payload))) + b"\0\0\0\0" + payload)
            elif opcode == 0x8:
                self.transport.close()
            elif opcode in (0x0, 0x1):
                if first & 0x40 and self.inflate:  # RSV1: compressed (RFC 7692)
                    payload = self.inflate.decompress(payload + b"\x00\x00\xff\xff")
                self.found(payload)


class Events(Subscriber):
    def parse(self):
        # Events end at a blank line; whatever framing (chunks) lies around them, the head is found in the bytes.
        end = self.buffer.rfind(b"\n\n")
        if end >= 0:
            self.found(self.buffer[:end])
            self.buffer = self.buffer[end + 2:]


class Poll(Subscriber):
    def __init__(self, index, record, host, path):
        super().__init__(index, record)
        self.host, self.path, self.cursor = host, path, None

    def ask(self):
        cursor = "" if self.cursor is None else f"?cursor={self.cursor}"
        self.transport.write(f"GET {self.path}{cursor} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())

    def connection_made(self, transport):
        super().connection_made(transport)
        self.ask()
        # A long poll parks without answering: it is subscribed once the server holds it, which we learn from the
        # server's count; the lab's own sequence of connect-then-next keeps the order.
        asyncio.get_running_loop().call_later(0.0, lambda: self.ready.done() or self.ready.set_result(None))

    def data_received(self, data):
        self.buffer += data
        while True:
            size = http1.answer_length(self.buffer)
            if not size:
                return
            body, self.buffer = self.buffer[self.buffer.find(b"\r\n\r\n") + 4:size], self.buffer[size:]
            seqs = [int(m.group(1)) for m in HEAD.finditer(body)]
            self.found(body)
            if seqs:
                self.cursor = max(seqs)
            # The next poll waits for the kernel's `repoll`: so one message's answers and its re-polls are measured
            # apart (a browser's would go out at once, among the answers still being sent).


def upgrade_request(host, path, compression):
    key = base64.b64encode(os.urandom(16)).decode()
    extension = "Sec-WebSocket-Extensions: permessage-deflate\r\n" if compression else ""
    return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extension}\r\n").encode()


class Client:
    """The client process's subscribers, the deliveries they recorded, and the pipe that answers the kernel."""

    def __init__(self, url, kind, compression):
        self.parts = urllib.parse.urlsplit(url)
        self.kind, self.compression = kind, compression
        self.loop = asyncio.get_running_loop()
        self.rows, self.counts, self.complete, self.held = [], {}, {}, []

    def record(self, index, seq, t):
        self.rows.append((index, seq, t, time.monotonic()))
        self.counts[seq] = self.counts.get(seq, 0) + 1
        if self.counts[seq] == len(self.held):  # the last one: the client's CPU now is what this message cost it
            done = self.complete.setdefault(seq, self.loop.create_future())
            if not done.done():
                done.set_result(time.process_time())

    def make(self, index):
        if self.kind == "poll":
            return Poll(index, self.record, self.parts.netloc, "/poll")
        return (WebSocket if self.kind == "ws" else Events)(index, self.record)

    async def add(self, k):
        """k more subscribers, each connected and subscribed before the next: the server's send order is ours."""
        for _ in range(k):
            transport, subscriber = await self.loop.create_connection(
                lambda: self.make(len(self.held)), self.parts.hostname, self.parts.port)
            if self.kind == "ws":
                transport.write(upgrade_request(self.parts.netloc, "/ws", self.compression))
            elif self.kind == "sse":
                transport.write(f"GET /sse HTTP/1.1\r\nHost: {self.parts.netloc}\r\n\r\n".encode())
            await asyncio.wait_for(subscriber.ready, CONNECT_S)
            self.held.append((transport, subscriber))
        if self.kind == "poll":
            await asyncio.sleep(0.05)  # the last polls reach the server and park before we say we hold them

    def wait_answer(self, seq):
        got = sorted((i, (r - t) * 1000) for i, s, t, r in self.rows if s == seq)
        done = self.complete[seq]
        return {"deliveries": [d for _, d in got], "cpu_s": done.result() if done.done() else time.process_time()}

    async def serve_pipe(self):
        """Answer the kernel's commands, one JSON line each."""
        reader = asyncio.StreamReader()
        await self.loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := (await reader.readline()).decode().split():
            if line[0] == "add":
                await self.add(int(line[1]))
                reply({"held": len(self.held)})
            elif line[0] == "cpu":
                reply({"cpu_s": time.process_time()})
            elif line[0] == "repoll":
                for _, subscriber in self.held:
                    subscriber.ask()
                reply({"cpu_s": time.process_time()})
            elif line[0] == "all":
                reply({"rows": [{"index": i, "seq": s, "t": t, "received": r, "delivery_ms": (r - t) * 1000}
                                for i, s, t, r in self.rows]})
            elif line[0] == "wait":
                seq = int(line[1])
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.complete.setdefault(seq, self.loop.create_future())),
                                           float(line[2]))
                reply(self.wait_answer(seq))


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def client(url, kind, n, compression):
    subscribers = Client(url, kind, compression)
    await subscribers.add(n)
    print(f"READY {n}", flush=True)
    await subscribers.serve_pipe()
    for transport, _ in subscribers.held:
        transport.close()


def main(argv):
    die_with_parent()
    environment.raise_file_limit(20_000)
    asyncio.run(client(argv[0], argv[1], int(argv[2]), argv[3] == "on"))


if __name__ == "__main__":
    main(sys.argv[1:])
