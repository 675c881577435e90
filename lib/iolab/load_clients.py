"""The closed-loop clients behind iolab.load: `concurrency` users, each sending its next request when the last one answers."""

import asyncio
import errno
import itertools
import json
import os
import sys
import threading
import time
from urllib.parse import urlsplit

DISCONNECTED = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED)
FLUSH_EVERY_S = 0.05  # how often finished samples travel to the parent: live plots want 5 Hz or more


class Recorder:
    """Collects one sample per request and tracks how many are in flight right now."""

    def __init__(self, out):
        self.t0 = time.perf_counter()
        self.out = out
        self.pending = []
        self.in_flight = 0
        self.lock = threading.Lock()

    def start_clock(self):
        """Time zero is when the first user is about to send, not when the client began setting up."""
        self.t0 = time.perf_counter()

    def now(self):
        return time.perf_counter() - self.t0

    def began(self):
        with self.lock:
            self.in_flight += 1
        return self.now()

    def ended(self, start, status, size, error, user):
        end = self.now()
        with self.lock:
            self.in_flight -= 1
            self.pending.append((start, end, status, size, error, user))

    def flush(self):
        with self.lock:
            batch, self.pending = self.pending, []
            in_flight = self.in_flight
        self.out.write(json.dumps({"t": self.now(), "in_flight": in_flight, "samples": batch}) + "\n")
        self.out.flush()


def error_kind(error):
    """Short, stable names for what went wrong, so metrics can count errors by kind."""
    # Each client imports only its own library: aiohttp alone takes most of a second to import.
    aiohttp, requests = sys.modules.get("aiohttp"), sys.modules.get("requests")
    if aiohttp and isinstance(error, aiohttp.ClientConnectorError):
        error = error.os_error  # aiohttp wraps the socket error; the socket error says what happened
    if isinstance(error, TimeoutError) or (requests and isinstance(error, requests.Timeout)):
        return "timeout"
    # By errno, so that wrappers which are OSErrors too (aiohttp's ClientOSError) count the same.
    if isinstance(error, ConnectionRefusedError) or getattr(error, "errno", None) == errno.ECONNREFUSED:
        return "refused"
    if isinstance(error, (ConnectionResetError, BrokenPipeError)) or getattr(error, "errno", None) in DISCONNECTED:
        return "disconnected"
    if aiohttp and isinstance(error, aiohttp.ServerDisconnectedError):
        return "disconnected"
    if requests and isinstance(error, requests.exceptions.ChunkedEncodingError):
        return "disconnected"
    if requests and isinstance(error, requests.ConnectionError):
        text = str(error).lower()
        if "refused" in text:
            return "refused"
        if "reset" in text or "aborted" in text or "disconnected" in text:
            return "disconnected"
        return "connect"
    return type(error).__name__


def next_request_allowed(issued, spec, recorder):
    """A user may send another request while the run is within its count and its duration."""
    return next(issued) < spec["requests"] and recorder.now() < spec["max_duration_s"]


async def flush_periodically(recorder):
    while True:
        await asyncio.sleep(FLUSH_EVERY_S)
        recorder.flush()


async def run_async(spec, recorder):
    """aiohttp users on one event loop; with keep_alive each user reuses its connection."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=0, force_close=not spec["keep_alive"])
    timeout = aiohttp.ClientTimeout(total=spec["timeout_s"])
    issued = itertools.count()

    async def user(number):
        while next_request_allowed(issued, spec, recorder):
            start = recorder.began()
            try:
                async with session.get(spec["url"]) as response:
                    body = await response.read()
                recorder.ended(start, response.status, len(body), None, number)
            except (TimeoutError, aiohttp.ClientError, OSError) as error:
                recorder.ended(start, 0, 0, error_kind(error), number)

    async with aiohttp.ClientSession(connector=connector, timeout=timeout, auto_decompress=False) as session:
        flusher = asyncio.create_task(flush_periodically(recorder))
        recorder.start_clock()  # creating the session can take a quarter of a second
        await asyncio.gather(*(user(n) for n in range(spec["concurrency"])))
        flusher.cancel()


CONTENT_LENGTH = b"\r\ncontent-length:"


class RawHTTPConnection(asyncio.Protocol):
    """Just enough HTTP/1.1 to send a GET and read a Content-Length answer, with no per-request objects."""

    def __init__(self):
        self.buffer = bytearray()
        self.waiter = None
        self.closed = False

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buffer += data
        header_end = self.buffer.find(b"\r\n\r\n")
        if header_end < 0 or self.waiter is None:
            return
        head = bytes(self.buffer[:header_end]).lower()
        length_at = head.find(CONTENT_LENGTH)
        if length_at < 0:
            self.fail(ValueError("response without Content-Length"))
            return
        line_end = head.find(b"\r\n", length_at + 2)
        length = int(head[length_at + len(CONTENT_LENGTH) : line_end if line_end > 0 else len(head)])
        total = header_end + 4 + length
        if len(self.buffer) < total:
            return
        del self.buffer[:total]
        waiter, self.waiter = self.waiter, None
        waiter.set_result((int(head[9:12]), length, b"\r\nconnection: close" in head))

    def connection_lost(self, error):
        self.closed = True
        self.fail(ConnectionResetError("the server closed the connection"))

    def fail(self, error):
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(error)
        self.waiter = None

    def request(self, payload):
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(payload)
        return self.waiter


async def run_raw(spec, recorder):
    """The fast client: asyncio protocols speaking raw HTTP/1.1, so the server, not the client, is the bottleneck."""
    url = urlsplit(spec["url"])
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    close = b"" if spec["keep_alive"] else b"Connection: close\r\n"
    payload = f"GET {target} HTTP/1.1\r\nHost: {url.netloc}\r\n".encode() + close + b"\r\n"
    loop = asyncio.get_running_loop()
    issued = itertools.count()

    async def user(number):
        connection = None
        while next_request_allowed(issued, spec, recorder):
            start = recorder.began()
            try:
                async with asyncio.timeout(spec["timeout_s"]):
                    if connection is None:
                        _, connection = await loop.create_connection(RawHTTPConnection, url.hostname, url.port)
                    status, size, server_closes = await connection.request(payload)
                recorder.ended(start, status, size, None, number)
                if server_closes or not spec["keep_alive"]:
                    connection.transport.close()
                    connection = None
            except (OSError, ValueError, TimeoutError) as error:
                recorder.ended(start, 0, 0, error_kind(error), number)
                if connection is not None:
                    connection.transport.abort()
                    connection = None
        if connection is not None:
            connection.transport.close()

    flusher = asyncio.create_task(flush_periodically(recorder))
    recorder.start_clock()
    await asyncio.gather(*(user(n) for n in range(spec["concurrency"])))
    flusher.cancel()


def run_sync(spec, recorder):
    """One thread per user, each with its own requests.Session (a Session is not thread-safe)."""
    import requests

    issued = itertools.count()
    issued_lock = threading.Lock()
    headers = {} if spec["keep_alive"] else {"Connection": "close"}

    def user(number):
        with requests.Session() as session:
            while True:
                with issued_lock:
                    if not next_request_allowed(issued, spec, recorder):
                        return
                start = recorder.began()
                try:
                    response = session.get(spec["url"], headers=headers, timeout=spec["timeout_s"])
                    recorder.ended(start, response.status_code, len(response.content), None, number)
                except requests.RequestException as error:
                    recorder.ended(start, 0, 0, error_kind(error), number)

    users = [threading.Thread(target=user, args=(n,), daemon=True) for n in range(spec["concurrency"])]
    recorder.start_clock()
    for thread in users:
        thread.start()
    while any(thread.is_alive() for thread in users):
        time.sleep(FLUSH_EVERY_S)
        recorder.flush()


def exit_when_parent_exits():
    """The parent holds our stdin open; end of file means it is gone, however it died."""

    def watch():
        # os.read, not sys.stdin: a buffered read would hold a lock that
        # interpreter shutdown then waits for.
        while os.read(0, 4096):
            pass
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main():
    spec = json.loads(sys.argv[1])
    exit_when_parent_exits()
    recorder = Recorder(sys.stdout)
    if spec["client"] == "async":
        asyncio.run(run_async(spec, recorder))
    elif spec["client"] == "raw":
        asyncio.run(run_raw(spec, recorder))
    else:
        run_sync(spec, recorder)
    recorder.flush()
    sys.stdout.write(json.dumps({"done": True, "t": recorder.now()}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
