"""Malformed and adversarial HTTP requests, a strict reference parser's verdict on each (h11), and how a server answered."""

import contextlib
import random
import socket
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import registry
from .contract import check_loopback
from .http1 import statuses

if TYPE_CHECKING:  # annotations only: the servers module starts them, this one only talks to them
    from .servers import Server

# The servers whose HTTP parsing the lab wrote (or, for threaded_app, hardened) itself: these must be
# strict. Every other server in the registry is someone else's code, so its leniency is recorded, not failed.
OWN_HTTP = frozenset(
    {"step1_blocking", "step2_busy_wait", "step3_callbacks", "step4_event_loop", "step5_coroutines", "threaded_app",
     "pipeline_app", "pipeline_batch_app"}
)
CONNECT_TIMEOUT_S = 2.0
ANSWER_BOUND_S = 3.0  # a server must answer and close within this long of a case's bytes, or it hangs
FIRST_BYTE_S = 0.5  # no answer this long after the bytes: the server is waiting for more, so we send FIN
QUIET_S = 0.05  # nothing more this long after an answer: the server keeps the connection, so we send FIN
MAX_ANSWER_BYTES = 256 * 1024  # what we read of a server's answers to one case, at most
SMUGGLED = b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n"  # a request hidden where a body should be: `/` answers 200 everywhere
VALID_POST = b"POST / HTTP/1.1\r\nHost: lab\r\nContent-Length: 5\r\nX-Lab: one\r\n\r\nhello"


@dataclass(frozen=True)
class Case:
    """One hostile input: a name for the table and the bytes sent on one connection."""

    name: str
    data: bytes


def _get(
    *header_lines: bytes, target: bytes = b"/", version: bytes = b"HTTP/1.1", method: bytes = b"GET", body: bytes = b""
) -> bytes:
    head = method + b" " + target + b" " + version + b"\r\n" + b"".join(line + b"\r\n" for line in header_lines)
    return head + b"\r\n" + body


def fixed_cases() -> list[Case]:
    """The hand-written corpus: each line is one trick a parser has been caught by."""
    host = b"Host: lab"
    chunked = b"Transfer-Encoding: chunked"
    cases = {
        # Controls: every server must answer these.
        "valid GET": _get(host),
        "valid pipelined pair": _get(host) * 2,
        # Line endings and folding.
        "bare LF everywhere": b"GET / HTTP/1.1\nHost: lab\n\n",
        "bare LF in one header": b"GET / HTTP/1.1\r\nHost: lab\nX-A: b\r\n\r\n",
        "bare CR in a header": b"GET / HTTP/1.1\r\nHost: lab\rX-A: b\r\n\r\n",
        "obs-fold continuation": _get(host, b"X-A: one", b" two"),
        "obs-fold as first header": _get(b" Host: lab"),
        "space before the colon": _get(b"Host : lab"),
        "tab before the colon": _get(host, b"X-A\t: b"),
        "no colon": _get(host, b"no colon here"),
        "empty header name": _get(host, b": value"),
        "NUL in a header value": _get(host, b"X-A: a\x00b"),
        "NUL in a header name": _get(host, b"X-\x00A: b"),
        "control byte in a value": _get(host, b"X-A: a\x01b"),
        "DEL in a value": _get(host, b"X-A: a\x7fb"),
        "vertical tab in a value": _get(host, b"X-A: a\x0bb"),
        "non-ASCII header name": _get(host, "X-Ä: b".encode("latin-1")),
        "leading blank lines": b"\r\n\r\n" + _get(host),
        # Request line.
        "missing Host (HTTP/1.1)": _get(),
        "two Host headers": _get(host, b"Host: other"),
        "lower-case method": _get(host, method=b"get"),
        "non-ASCII method": _get(host, method="GÉT".encode("latin-1")),
        "tabs for spaces": b"GET\t/\tHTTP/1.1\r\nHost: lab\r\n\r\n",
        "two spaces": b"GET  / HTTP/1.1\r\nHost: lab\r\n\r\n",
        "NUL in the target": _get(host, target=b"/\x00"),
        "DEL in the target": _get(host, target=b"/\x7f"),
        "high byte in the target": _get(host, target=b"/\xff"),
        "empty target": _get(host, target=b""),
        "HTTP/0.9 request": b"GET /\r\n\r\n",
        "version HTTP/1.2": _get(host, version=b"HTTP/1.2"),
        "version HTTP/2.0": _get(host, version=b"HTTP/2.0"),
        "version HTTP/11": _get(host, version=b"HTTP/11"),
        "version lower-case": _get(host, version=b"http/1.1"),
        "version with a trailing space": _get(host, version=b"HTTP/1.1 "),
        "version HTTP/1.1.1": _get(host, version=b"HTTP/1.1.1"),
        # Content-Length.
        "two different Content-Lengths": _get(host, b"Content-Length: 4", b"Content-Length: 5", method=b"POST", body=b"abcde"),
        "Content-Length list": _get(host, b"Content-Length: 4, 5", method=b"POST", body=b"abcde"),
        "Content-Length +4": _get(host, b"Content-Length: +4", method=b"POST", body=b"abcd"),
        "Content-Length -1": _get(host, b"Content-Length: -1", method=b"POST"),
        "Content-Length hex": _get(host, b"Content-Length: 0x4", method=b"POST", body=b"abcd"),
        "Content-Length with inner space": _get(host, b"Content-Length: 4 4", method=b"POST", body=b"abcd"),
        "Content-Length empty": _get(host, b"Content-Length" b":", method=b"POST"),
        "Content-Length huge": _get(host, b"Content-Length: 99999999999999999999999", method=b"POST", body=b"abcd"),
        "Content-Length too large": _get(host, b"Content-Length: 1099511627776", method=b"POST", body=b"abcd"),
        "Content-Length shorter than sent": _get(host, b"Content-Length: 2", method=b"POST", body=b"ab" + SMUGGLED),
        "body on a GET hides a request": _get(host, b"Content-Length: %d" % len(SMUGGLED), body=SMUGGLED),
        "body never finishes": _get(host, b"Content-Length: 100", method=b"POST", body=b"abc"),
        # Transfer-Encoding, alone and with Content-Length.
        "CL and TE together": _get(host, b"Content-Length: 4", chunked, method=b"POST", body=b"0\r\n\r\n" + SMUGGLED),
        "TE and CL together": _get(host, chunked, b"Content-Length: 40", method=b"POST", body=b"0\r\n\r\n" + SMUGGLED),
        "TE chunked, identity": _get(host, b"Transfer-Encoding: chunked, identity", method=b"POST", body=b"0\r\n\r\n"),
        "TE xchunked": _get(host, b"Transfer-Encoding: xchunked", method=b"POST", body=b"0\r\n\r\n"),
        "TE with space before the colon": _get(host, b"Transfer-Encoding : chunked", method=b"POST", body=b"0\r\n\r\n"),
        "TE twice": _get(host, chunked, chunked, method=b"POST", body=b"0\r\n\r\n"),
        "chunk size not hex": _get(host, chunked, method=b"POST", body=b"zz\r\nhello\r\n0\r\n\r\n"),
        "chunk size negative": _get(host, chunked, method=b"POST", body=b"-5\r\nhello\r\n0\r\n\r\n"),
        "chunk size 0x-prefixed": _get(host, chunked, method=b"POST", body=b"0x5\r\nhello\r\n0\r\n\r\n"),
        "chunk size huge": _get(host, chunked, method=b"POST", body=b"ffffffffffffffffffff\r\nhello\r\n0\r\n\r\n"),
        "chunk data overruns its size": _get(host, chunked, method=b"POST", body=b"3\r\nhello\r\n0\r\n\r\n" + SMUGGLED),
        "chunk size with bare LF": _get(host, chunked, method=b"POST", body=b"5\nhello\r\n0\r\n\r\n"),
        "a chunked body then a request": _get(host, chunked, method=b"POST", body=b"5\r\nhello\r\n0\r\n\r\n") + SMUGGLED,
        # Size.
        "head of 12 KiB": _get(host, b"X-Pad: " + b"a" * 12 * 1024),
        "head of 100 KiB": _get(host, b"X-Pad: " + b"a" * 100 * 1024),
        "head that never ends (64 KiB)": b"GET / HTTP/1.1\r\nHost: lab\r\n" + b"X-Pad: a\r\n" * 6500,
        "200 headers": _get(host, *[b"X-%d: v" % i for i in range(200)]),
        "4000 headers": _get(host, *[b"X-%d: v" % i for i in range(4000)]),
        "target of 64 KiB": _get(host, target=b"/?" + b"a" * 64 * 1024),
        # Not HTTP/1 at all.
        "TLS ClientHello": bytes.fromhex("16030100a5010000a10303") + bytes(range(32)) + b"\x00\x20" + bytes(32),
        "HTTP/2 preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "only CRLFs": b"\r\n" * 50,
        "NUL bytes": b"\x00" * 100,
    }
    garbage = random.Random(26)
    for size in (16, 512, 8192):
        cases[f"binary garbage ({size} bytes)"] = garbage.randbytes(size)
    return [Case(name, data) for name, data in cases.items()]


# Bytes a mutation likes to insert: the ones parsers disagree about.
_INTERESTING = b"\x00\r\n \t:;,\x7f\xff-+0x9aF"


def mutated_cases(count: int, seed: int = 0) -> list[Case]:
    """`count` seeded random mutations (flip, insert, delete, duplicate a line) of a valid POST and a GET behind it."""
    rng = random.Random(seed)
    original = VALID_POST + SMUGGLED
    cases: list[Case] = []
    for index in range(count):
        data = bytearray(original)
        for _ in range(rng.randint(1, 3)):
            kind = rng.choice(("flip", "insert", "delete", "duplicate line"))
            at = rng.randrange(len(data))
            if kind == "flip":
                data[at] = rng.choice(_INTERESTING) if rng.random() < 0.7 else rng.randrange(256)
            elif kind == "insert":
                data[at:at] = bytes([rng.choice(_INTERESTING)])
            elif kind == "delete":
                del data[at]
            else:
                start = data.rfind(b"\n", 0, at) + 1
                end = data.find(b"\n", at) + 1 or len(data)
                data[start:start] = data[start:end]
        cases.append(Case(f"mutation {seed}-{index}", bytes(data)))
    return cases


def corpus(mutations: int = 60, seed: int = 0) -> list[Case]:
    """The fixed corpus plus `mutations` seeded random mutations."""
    return fixed_cases() + mutated_cases(mutations, seed)


# --- The reference: what a strict parser makes of the bytes ------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """How many whole requests h11 accepts from the front of the bytes, and why it stopped."""

    accepted: int
    ending: str  # "rejected", "incomplete" (it wants more bytes), "closed" (a request asked to close) or "complete"
    reason: str = ""


def reference(data: bytes) -> Verdict:
    """h11's reading of `data`, as a server would read it, answering each request with an empty 200 to go on."""
    import h11  # installed with the lab (uvicorn and httpx use it); imported here so the core does not need it

    connection = h11.Connection(h11.SERVER)
    connection.receive_data(data)
    accepted = 0
    while True:
        try:
            event = connection.next_event()
        except h11.RemoteProtocolError as error:
            return Verdict(accepted, "rejected", str(error))
        if event is h11.NEED_DATA:
            return Verdict(accepted, "incomplete" if connection.their_state is not h11.IDLE or data else "complete")
        if isinstance(event, h11.EndOfMessage):
            accepted += 1
            connection.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
            connection.send(h11.EndOfMessage())
            try:
                connection.start_next_cycle()
            except h11.LocalProtocolError:
                return Verdict(accepted, "closed")
        elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
            return Verdict(accepted, "closed")


# --- What a server did with the bytes ---------------------------------------------------------------


@dataclass
class Outcome:
    """The final statuses a server sent for one case, in order, and whether it closed within the bound."""

    statuses: list[int]
    closed: bool
    seconds: float
    error: str = ""


def http_servers() -> list[str]:
    """The registry's servers whose port speaks HTTP (Redis's speaks its own protocol, so no HTTP request judges it)."""
    return registry.names(protocol="http")


def send_case(host: str, port: int, data: bytes, bound_s: float = ANSWER_BOUND_S, half_close: bool = True) -> Outcome:
    """Send `data` on a new connection and read what comes back until the server closes, or `bound_s` has passed.

    Some servers drop a request whose client has said it will send nothing more (aiohttp, nginx
    proxying), so we say so (FIN) only once the server has gone quiet: nothing for FIRST_BYTE_S, or
    QUIET_S after its last byte. A server waiting for the rest of a request then learns there is none.
    """
    check_loopback(host)
    began = time.monotonic()
    raw = b""
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as sock:
            try:
                sock.sendall(data)
            except OSError:
                pass  # the server closed on us mid-send: what it answered is still worth reading
            deadline = began + bound_s
            quiet_at = time.monotonic() + FIRST_BYTE_S
            said_done = not half_close
            while len(raw) < MAX_ANSWER_BYTES:
                now = time.monotonic()
                if now >= deadline:
                    return Outcome(statuses(raw), False, now - began)
                if not said_done and now >= quiet_at:
                    said_done = True
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_WR)
                sock.settimeout(max(0.001, (deadline if said_done else min(quiet_at, deadline)) - now))
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    break  # reset: closed, and rudely
                if not chunk:
                    break
                raw += chunk
                quiet_at = time.monotonic() + QUIET_S
    except OSError as error:
        return Outcome([], True, time.monotonic() - began, f"connect: {error}")
    return Outcome(statuses(raw), True, time.monotonic() - began)


def next_client_served(host: str, port: int, bound_s: float = ANSWER_BOUND_S) -> bool:
    """True when a fresh client's `GET /` gets a 200 within `bound_s`."""
    outcome = send_case(host, port, b"GET / HTTP/1.1\r\nHost: lab\r\nConnection: close\r\n\r\n", bound_s, half_close=False)
    return outcome.statuses[:1] == [200]


# --- One server against the corpus ------------------------------------------------------------------


@dataclass
class Report:
    """One server's results: cases tried, and the ones that crashed it, hung, got a lenient 2xx, or left it deaf."""

    server: str
    own: bool
    tried: int = 0
    crashed: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    lenient: list[tuple[str, str]] = field(default_factory=list)  # 2xx to bytes h11 rejects or has not finished
    deaf_after: list[str] = field(default_factory=list)  # the next client was not served after these
    seconds: float = 0.0

    @property
    def strict(self) -> bool:
        return not (self.crashed or self.hung or self.lenient or self.deaf_after)

    def row(self) -> dict[str, Any]:
        return {
            "server": self.server, "ours": self.own, "cases": self.tried, "crashes": len(self.crashed),
            "hangs": len(self.hung), "lenient_2xx": len(self.lenient), "next_client_failed": len(self.deaf_after),
            "lenient_examples": [name for name, _ in self.lenient[:4]], "seconds": round(self.seconds, 1),
        }


def lenient_answers(outcome: Outcome, verdict: Verdict) -> list[int]:
    """The 2xx answers that go past what the reference accepted: the root of request smuggling."""
    return [status for status in outcome.statuses[verdict.accepted :] if 200 <= status < 300]


def try_one(server: "Server", case: Case) -> tuple[Case, Outcome, bool]:
    """(case, outcome, served) for one case: its answer, and whether a fresh client is served afterwards."""
    outcome = send_case(server.host, server.port, case.data)
    return case, outcome, next_client_served(server.host, server.port)


def fuzz(server: "Server", cases: Iterable[Case], workers: int = 4) -> Report:
    """Run every case against a running server (`servers.start`'s Server), `workers` at a time; returns a Report."""
    report = Report(server.name, server.name in OWN_HTTP)
    began = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hostile") as pool:
        for case, outcome, served in pool.map(lambda case: try_one(server, case), cases):
            report.tried += 1
            if not server.alive():
                report.crashed.append(case.name)
                break
            if not outcome.closed:
                report.hung.append(case.name)
            verdict = reference(case.data)
            if lenient_answers(outcome, verdict):
                report.lenient.append((case.name, f"{outcome.statuses} where h11 accepted {verdict.accepted}"
                                                  f" ({verdict.ending}{': ' + verdict.reason if verdict.reason else ''})"))
            if not served:
                report.deaf_after.append(case.name)
    report.seconds = time.monotonic() - began
    return report


TABLE_HEADERS = ["server", "ours", "cases", "crashes", "hangs", "lenient 2xx", "next client failed", "lenient to"]


def table_rows(reports: Iterable[Report]) -> list[list[Any]]:
    return [
        [r.server, "yes" if r.own else "no", r.tried, len(r.crashed), len(r.hung), len(r.lenient), len(r.deaf_after),
         ", ".join(name for name, _ in r.lenient[:3]) + (" ..." if len(r.lenient) > 3 else "")]
        for r in reports
    ]
