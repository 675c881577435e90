"""Fan-out through one HTTP library, at its default limits.

`concurrency` workers (threads for requests, tasks on one event loop for the
others) share the run's calls: each starts its next call when its last is
answered. The library's own pool decides how many of them are on the wire.
Its default is left as it ships: that limit is what lesson 11 finds.
"""

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from .errors import error_kind
from .event_loops import new_event_loop
from .recorder import FLUSH_EVERY_S, Recorder
from .shares import Share
from .wire import NO_ERROR

# Threads for the blocking libraries, an event loop for the others; lesson 11 quotes where each limit is set.
THREADED = ("requests", "requests_pool_block")
ON_A_LOOP = ("aiohttp", "httpx", "tornado", "executor")
LIBRARIES = THREADED + ON_A_LOOP


class Calls:
    """The run's shared count of calls, and the rows they leave (one per call: started, answered)."""

    def __init__(self, spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
        self.spec, self.recorder = spec, recorder
        self.left = share["requests"]
        self.lock = threading.Lock()
        # A connection's object -> its number in the rows.
        self.numbers: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def take(self) -> bool:
        with self.lock:
            if self.left <= 0 or self.recorder.now() >= self.spec["max_duration_s"]:
                return False
            self.left -= 1
            self.recorder.in_flight += 1
            return True

    def connection(self, key: object) -> int:
        """The number of the connection `key` names (None: a call that always opens a new one)."""
        with self.lock:
            if key is None:
                return self.recorder.new_connection()
            number = self.numbers.get(key)
            if number is None:
                number = self.numbers[key] = self.recorder.new_connection()
            return number

    def answered(self, start: float, user: int, status: int, size: int, connection: int) -> None:
        self.recorder.add((start, start, self.recorder.now(), status, size, NO_ERROR, user, connection))
        self._done()

    def failed(self, start: float, user: int, error: BaseException) -> None:
        code = self.recorder.error_code(error_kind(error))
        self.recorder.add((start, start, self.recorder.now(), 0, 0, code, user, -1))
        self._done()

    def _done(self) -> None:
        with self.lock:
            self.recorder.in_flight -= 1


def run(spec: dict[str, Any], share: Share, recorder: Recorder) -> None:
    """The client process's entry: threads for requests, else an event loop of the run's choice."""
    calls = Calls(spec, share, recorder)
    if spec["library"] in THREADED:
        return _threads(spec, share, recorder, calls)
    loop = new_event_loop(spec["event_loop"])
    try:
        return loop.run_until_complete(_tasks(spec, share, recorder, calls))
    finally:
        loop.close()


def _threads(spec: dict[str, Any], share: Share, recorder: Recorder, calls: Calls) -> None:
    import requests  # here, not at the top: only these libraries need it

    session = requests.Session()
    if spec["library"] == "requests_pool_block":
        # requests/adapters.py:203-206 sets pool_maxsize=10, pool_block=False; True makes the 11th call wait.
        adapter = requests.adapters.HTTPAdapter(pool_block=True)
        session.mount("http://", adapter)

    def sock_of(response: requests.Response) -> object:
        sock = getattr(getattr(response.raw, "connection", None), "sock", None)
        return sock if sock is not None else object()  # no socket to name: count it as a connection of its own

    finished = threading.Semaphore(0)

    def worker(user: int) -> None:
        try:
            while calls.take():
                start = recorder.now()
                try:
                    # stream=True keeps the connection attached until the body is read, so it can be named.
                    response = session.get(spec["url"], timeout=spec["timeout_s"], stream=True)
                    connection = calls.connection(sock_of(response))
                    calls.answered(start, user, response.status_code, len(response.content), connection)
                except requests.RequestException as error:
                    calls.failed(start, user, error)
        finally:
            finished.release()
        # Idle from here until the process exits (a daemon thread): Linux keeps a thread's waits for a CPU only while
        # it lives, and the parent reads them when our last frame comes. Ended, they would drop out of the run's work.
        threading.Event().wait()

    threads = [threading.Thread(target=worker, args=(user,), daemon=True) for user in share["users"]]
    recorder.wait_for_go()
    for thread in threads:
        thread.start()
    for _ in threads:
        while not finished.acquire(timeout=FLUSH_EVERY_S):
            recorder.flush()
    recorder.flush()
    session.close()


async def _tasks(spec: dict[str, Any], share: Share, recorder: Recorder, calls: Calls) -> None:
    call, close, errors = await _library_call(spec, calls)
    try:
        await recorder.wait_for_go_async()
        flusher = asyncio.create_task(recorder.flush_periodically())

        async def worker(user: int) -> None:
            while calls.take():
                start = recorder.now()
                try:
                    status, size, connection = await call()
                    calls.answered(start, user, status, size, connection)
                except errors as error:
                    calls.failed(start, user, error)

        await asyncio.gather(*(worker(user) for user in share["users"]))
        flusher.cancel()
    finally:
        await close()


# What each library's call is made of: one GET at its default limits, how to close it, and what it raises.
Call = Callable[[], Awaitable[tuple[int, int, int]]]  # -> (status, body length, the connection's number)
LibraryCall = tuple[Call, Callable[[], Awaitable[None]], tuple[type[BaseException], ...]]


async def _library_call(spec: dict[str, Any], calls: Calls) -> LibraryCall:
    """(call, close, errors) for the run's library."""
    url, timeout_s, library = spec["url"], spec["timeout_s"], spec["library"]
    makers = {"aiohttp": _aiohttp_call, "httpx": _httpx_call, "tornado": _tornado_call, "executor": _executor_call}
    if library not in makers:
        raise ValueError(f"library must be one of {ON_A_LOOP}, got {library!r}")
    return makers[library](url, timeout_s, calls)


def _aiohttp_call(url: str, timeout_s: float, calls: Calls) -> LibraryCall:
    import aiohttp

    # aiohttp/connector.py:992 TCPConnector(limit=100): the 101st call waits for a connection.
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s))

    async def call() -> tuple[int, int, int]:
        async with session.get(url) as response:
            body = await response.read()
            return response.status, len(body), calls.connection(response._protocol)  # aiohttp names no other

    return call, session.close, (TimeoutError, aiohttp.ClientError, OSError)


def _httpx_call(url: str, timeout_s: float, calls: Calls) -> LibraryCall:
    import httpx

    # httpx/_config.py:247 DEFAULT_LIMITS = Limits(max_connections=100, ...): the 101st call waits.
    # The pool timeout (5 s by default) is the run's timeout here, so a queued call is never cut short.
    client = httpx.AsyncClient(timeout=httpx.Timeout(timeout_s))

    async def call() -> tuple[int, int, int]:
        response = await client.get(url)
        return response.status_code, len(response.content), calls.connection(
            response.extensions.get("network_stream"))

    return call, client.aclose, (httpx.HTTPError, OSError)


def _tornado_call(url: str, timeout_s: float, calls: Calls) -> LibraryCall:
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError

    # tornado/simple_httpclient.py:116 max_clients=10: the 11th fetch waits in the client's queue.
    client = AsyncHTTPClient(force_instance=True)

    async def call() -> tuple[int, int, int]:
        response = await client.fetch(url, request_timeout=timeout_s)
        return response.code, len(response.body), calls.connection(None)  # a new connection each fetch

    async def close() -> None:
        client.close()

    return call, close, (HTTPClientError, OSError)


def _executor_call(url: str, timeout_s: float, calls: Calls) -> LibraryCall:
    import http.client
    import urllib.request

    loop = asyncio.get_running_loop()

    def blocking_get() -> tuple[int, int]:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, len(response.read())

    async def call() -> tuple[int, int, int]:
        # asyncio/base_events.py:824 makes the default pool, concurrent/futures/thread.py:142 sizes it:
        # min(32, os.cpu_count() + 4) threads.
        status, size = await loop.run_in_executor(None, blocking_get)
        return status, size, calls.connection(None)  # urlopen opens a new connection each call

    async def close() -> None:
        await loop.shutdown_default_executor()

    return call, close, (OSError, http.client.HTTPException)  # urllib's errors are OSErrors
