"""Slow clients (a slowloris), and a fresh client beside them.

Connections that send a head a byte at a time, or a body that never ends.
"""

import selectors
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from .contract import check_loopback
from .http1 import ProtocolError, answer_length

if TYPE_CHECKING:  # annotations only: the servers module starts them, this one only talks to them
    from .servers import Server

T = TypeVar("T")

DRIP_S = 1.0  # each slow client sends one more byte this often
CONNECT_TIMEOUT_S = 2.0
FRESH_BOUND_S = 2.0  # a fresh client not answered within this long counts as not served
# What each kind sends at once, then what it trickles a byte at a time, for ever.
KINDS = {
    "head": (b"GET / HTTP/1.1\r\nHost: lab\r\n", b"X-Slow: a\r\n"),  # the blank line that ends the head never comes
    "body": (b"POST / HTTP/1.1\r\nHost: lab\r\nContent-Length: 1000000\r\n\r\n", b"a"),  # nor the millionth byte
}
FRESH_REQUEST = b"GET / HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n"


class SlowClients:
    """Connections that each trickle a request a byte every DRIP_S, from one thread; it notes which the server closes."""

    def __init__(self, host: str, port: int, drip_s: float = DRIP_S) -> None:
        check_loopback(host)
        self.address = (host, port)
        self.drip_s = drip_s
        self.open: dict[socket.socket, tuple[str, int]] = {}  # socket -> (kind, position in its trickle)
        self.cut_off = {kind: 0 for kind in KINDS}  # closed by the server (or answered, 408 or otherwise)
        self.answers: dict[str, int] = {}  # what the server said before it closed: its status line, and how many times
        self.opened_at: dict[socket.socket, float] = {}  # socket -> time.monotonic() when it sent its first bytes
        self.lasted_s: dict[str, list[float]] = {kind: [] for kind in KINDS}  # how long each cut-off client lasted, by kind
        self.connect_failed = 0
        self.lock = threading.Lock()
        self.selector = selectors.DefaultSelector()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._drip, name="slowloris", daemon=True)
        self.thread.start()

    def add(self, count: int, kind: str) -> int:
        """Open `count` more slow clients of `kind` ('head' or 'body'); returns how many connected."""
        first, _ = KINDS[kind]
        connected = 0
        for _ in range(count):
            try:
                sock = socket.create_connection(self.address, timeout=CONNECT_TIMEOUT_S)
                sock.sendall(first)
            except OSError:
                self.connect_failed += 1
                continue
            sock.setblocking(False)
            with self.lock:
                self.open[sock] = (kind, 0)
                self.opened_at[sock] = time.monotonic()
                self.selector.register(sock, selectors.EVENT_READ)
            connected += 1
        return connected

    def still_open(self, kind: str | None = None) -> int:
        with self.lock:
            return sum(1 for k, _ in self.open.values() if kind in (None, k))

    def _forget(self, sock: socket.socket, said: bytes = b"") -> None:
        kind, _ = self.open.pop(sock)
        self.lasted_s[kind].append(time.monotonic() - self.opened_at.pop(sock))
        self.selector.unregister(sock)
        sock.close()
        self.cut_off[kind] += 1
        if said:
            line = said.split(b"\r\n", 1)[0].decode("latin-1")[:40]
            self.answers[line] = self.answers.get(line, 0) + 1

    def _drip(self) -> None:
        next_drip = time.monotonic() + self.drip_s
        while not self.stopping.is_set():
            # Between drips, watch for the server answering (a 408) or closing.
            for key, _ in self.selector.select(timeout=max(0.0, min(0.1, next_drip - time.monotonic()))):
                with self.lock:
                    if key.fileobj not in self.open:
                        continue
                    try:
                        said = key.fileobj.recv(4096)
                    except BlockingIOError:
                        continue
                    except OSError:
                        said = b""
                    self._forget(key.fileobj, said)
            if time.monotonic() < next_drip:
                continue
            next_drip += self.drip_s
            with self.lock:
                for sock, (kind, position) in list(self.open.items()):
                    trickle = KINDS[kind][1]
                    try:
                        sock.send(trickle[position % len(trickle) : position % len(trickle) + 1])
                    except BlockingIOError:
                        continue  # its buffers are full: the server stopped reading it, which is fine
                    except OSError:
                        self._forget(sock)
                        continue
                    self.open[sock] = (kind, position + 1)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        with self.lock:
            for sock in list(self.open):
                sock.close()
            self.open.clear()
        self.selector.close()

    def __enter__(self) -> "SlowClients":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fresh_request_s(host: str, port: int, bound_s: float = FRESH_BOUND_S) -> float | None:
    """Seconds until a fresh client's `GET /` is answered 200 and closed; None if not within `bound_s`."""
    check_loopback(host)
    began = time.perf_counter()
    try:
        with socket.create_connection((host, port), timeout=bound_s) as sock:
            sock.sendall(FRESH_REQUEST)
            raw = b""
            while True:
                left = bound_s - (time.perf_counter() - began)
                if left <= 0:
                    return None
                sock.settimeout(left)
                chunk = sock.recv(65536)
                if not chunk:
                    break
                raw += chunk
                if _whole_answer(raw):
                    break  # do not wait for the close too
    except OSError:
        return None
    return time.perf_counter() - began if raw.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")) else None


def _whole_answer(raw: bytes) -> bool:
    try:
        return answer_length(raw) > 0
    except (ProtocolError, ValueError):  # no Content-Length (chunked, or read to the close): wait for the close
        return False


@dataclass
class Siege:
    """One server against one kind of slow client: when it stopped answering others, and what a fresh request took."""

    server: str
    kind: str
    blocked_at: int | None = None  # slow clients attached when a fresh client was first not served in time
    attached: int = 0
    served_beside: int = 0  # the most slow clients a fresh client was answered beside
    fresh_ms: list[float] = field(default_factory=list)  # the fresh requests beside `served_beside` slow clients
    cut_off: int = 0  # slow clients the server closed during the run
    connect_failed: int = 0

    def row(self) -> dict[str, Any]:
        fresh = self.fresh_ms
        return {
            "server": self.server, "kind": self.kind, "blocked_at": self.blocked_at, "attached": self.attached,
            "served_beside": self.served_beside,
            "fresh_p50_ms": round(statistics.median(fresh), 2) if fresh else None,
            "fresh_max_ms": round(max(fresh), 2) if fresh else None,
            "cut_off": self.cut_off, "connect_failed": self.connect_failed,
        }


def steps_up_to(most: int) -> list[int]:
    """1, 2, 4, ... and `most`: the slow-client counts a siege climbs through."""
    steps: list[int] = []
    count = 1
    while count < most:
        steps.append(count)
        count *= 2
    return steps + [most]


def fresh_requests_ms(
    host: str, port: int, count: int, spread_s: float = 0.0, bound_s: float = FRESH_BOUND_S
) -> list[float] | None:
    """`count` fresh requests, `spread_s` apart, in ms; stops at the first not served in time (None)."""
    timings: list[float] = []
    for index in range(count):
        if index and spread_s:
            time.sleep(spread_s)
        seconds = fresh_request_s(host, port, bound_s)
        if seconds is None:
            return None
        timings.append(seconds * 1000)
    return timings


def siege(
    server: "Server",
    kind: str,
    most: int = 1000,
    fresh_requests: int = 3,
    final_requests: int = 20,
    bound_s: float = FRESH_BOUND_S,
) -> Siege:
    """Attach slow clients of `kind` to a running server, doubling, until a fresh client is not served or `most` are on.

    At `most`, `final_requests` fresh requests are spread over two drips, so the slow clients are trickling meanwhile.
    """
    result = Siege(server.name, kind)
    with SlowClients(server.host, server.port) as slow:
        for count in steps_up_to(most):
            slow.add(count - result.attached, kind)
            result.attached = count
            time.sleep(0.05)  # let the server take in what they sent
            last = count == most
            timings = fresh_requests_ms(server.host, server.port, final_requests if last else fresh_requests,
                                        spread_s=2 * slow.drip_s / final_requests if last else 0.0, bound_s=bound_s)
            if timings is None:
                result.blocked_at = count
                break
            result.served_beside, result.fresh_ms = count, timings
            if not server.alive():
                break
        result.cut_off = sum(slow.cut_off.values())
        result.connect_failed = slow.connect_failed
    return result


TABLE_HEADERS = ["server", "slow client", "blocked at", "most a fresh client was answered beside", "its p50 (ms)",
                 "its max (ms)", "cut off by the server"]


def table_rows(sieges: Iterable[Siege]) -> list[list[Any]]:
    return [
        [r["server"], r["kind"], r["blocked_at"] if r["blocked_at"] is not None else "never", r["served_beside"],
         r["fresh_p50_ms"], r["fresh_max_ms"], r["cut_off"]]
        for r in (s.row() for s in sieges)
    ]


def wait_for(condition: Callable[[], T], within_s: float, poll_s: float = 0.1) -> T:
    """Poll until `condition()` is true or `within_s` passes; returns its last value."""
    deadline = time.monotonic() + within_s
    while not (met := condition()) and time.monotonic() < deadline:
        time.sleep(poll_s)
    return met

