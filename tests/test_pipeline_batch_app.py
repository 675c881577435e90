"""pipeline_batch_app's batch path.

Exact tiling, numbers echoed, and every byte stream answered as pipeline_app's full path answers it.
"""

import random
import socket
import time

import pytest

from iolab import servers, syscalls
from iolab.http1 import AnswerReader, get_request

TIMEOUT_S = 10
CLOSE = get_request("/?seq=999", keep_alive=False)  # ends a stream: the server answers it, then closes


def numbered(seq, host="lab"):
    return f"GET /?seq={seq} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


def connect(server):
    sock = socket.create_connection((server.host, server.port), timeout=TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def answers_to(server, stream, piece=None):
    """Every answer to `stream` until the server closes: (status, its Seq header, its Connection header, body).

    Sent in one write, or `piece` bytes at a time with a pause between, so the server reads it in many pieces.
    The answer to a HEAD has no body; a HEAD's place is counted by the blank lines before it (no stream here has a
    body before one).
    """
    with connect(server) as sock:
        if piece is None:
            sock.sendall(stream)
        else:
            try:
                for start in range(0, len(stream), piece):
                    sock.sendall(stream[start : start + piece])
                    time.sleep(0.002)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server closed after a broken request, as it must: what it answered before counts
        reader = AnswerReader(sock)
        answers = []
        heads = [stream.count(b"\r\n\r\n", 0, at) for at in _finds(stream, b"HEAD ")]  # which answers are to a HEAD
        while True:
            try:
                status, headers, body = reader.read(head_only=len(answers) in heads)
            except ConnectionResetError:
                # We sent after the server closed, and its reset can discard answers not read yet: a prefix.
                assert piece is not None, "the server reset a connection that sent everything in one write"
                return answers
            except EOFError:
                assert reader.buffer == b"", f"the server closed in the middle of an answer: {reader.buffer!r}"
                return answers
            answers.append((status, headers.get("seq"), headers["connection"], body))


def _finds(data, word):
    at = data.find(word)
    while at >= 0:
        yield at
        at = data.find(word, at + 1)


@pytest.fixture(scope="module", params=["ours", "httptools"])
def pair(request):
    """pipeline_app and pipeline_batch_app with the same full parser: the second must answer as the first does."""
    with servers.serve("pipeline_app", loop="uvloop", parser=request.param) as full, \
            servers.serve("pipeline_batch_app", loop="uvloop", parser=request.param) as batch:
        yield full, batch


# What a hostile or merely unusual client might send; each ends by asking to close, if nothing before closed it.
STREAMS = {
    "recognised only": numbered(1) + numbered(2) + get_request("/") + numbered(3, "127.0.0.1:8080") + CLOSE,
    "mixed in one read": (
        numbered(1) + get_request("/async-sleep?ms=30") + numbered(2) + get_request("/missing") + numbered(3)
        + b"GET /?seq=4 HTTP/1.1\r\nHost: lab\r\nAccept: */*\r\n\r\n"  # a header the pattern does not know
        + b"HEAD /?seq=5 HTTP/1.1\r\nHost: lab\r\n\r\n" + get_request("/cpu?ms=0") + numbered(6) + numbered(7) + CLOSE
    ),
    "a body is not a request": (
        numbered(1) + b"GET / HTTP/1.1\r\nHost: lab\r\nContent-Length: 35\r\n\r\n" + numbered(2) + numbered(3) + CLOSE
    ),
    "junk between requests": numbered(1) + numbered(2) + b"xx" + numbered(3) + numbered(4) + CLOSE,
    "a stray line end": numbered(1) + b"\r\n" + numbered(2) + CLOSE,
    "chunked is refused": (numbered(1) + b"GET /?seq=2 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                           + numbered(3) + CLOSE),
    "a folded header": numbered(1) + b"GET /?seq=2 HTTP/1.1\r\nHost: lab\r\n x\r\n\r\n" + numbered(3) + CLOSE,
    "a space before the colon": numbered(1) + b"GET /?seq=2 HTTP/1.1\r\nHost : lab\r\n\r\n" + numbered(3) + CLOSE,
    "bad numbers": (
        numbered(1) + get_request("/?seq=12345678901234567") + get_request("/?seq=-1") + get_request("/?seq=") + CLOSE
    ),
    "http/1.0 is not recognised": b"GET /?seq=1 HTTP/1.0\r\n\r\n" + numbered(2) + CLOSE,
    "lower-case method": numbered(1) + b"get /?seq=2 HTTP/1.1\r\n\r\n" + numbered(3) + CLOSE,
    "a Host too long for the pattern": numbered(1, "h" * 300) + numbered(2) + CLOSE,
    "no Host in HTTP/1.1": numbered(1) + b"GET /?seq=2 HTTP/1.1\r\n\r\n" + numbered(3) + CLOSE,  # 400, then closed
    "a head that never ends": numbered(1) + numbered(2) + b"GET /" + b"a" * 9000,  # past the 8 KiB limit: 431
    "connection close in the middle": numbered(1) + get_request("/?seq=2", keep_alive=False) + numbered(3) + numbered(4) + CLOSE,
}


@pytest.mark.parametrize("name", STREAMS)
def test_every_stream_is_answered_as_the_full_path_answers_it(pair, name):
    full, batch = pair
    expected = answers_to(full, STREAMS[name])
    assert expected, "the full path answered nothing: the stream is not testing anything"
    assert answers_to(batch, STREAMS[name]) == expected
    # Cut into pieces of 7 bytes, so that requests are split across reads: the same answers. (Where the server closes
    # at a broken request while pieces are still coming, its reset may cut the answers short: then a prefix of them.)
    in_pieces = answers_to(batch, STREAMS[name], piece=7 if len(STREAMS[name]) < 2000 else 1000)
    assert in_pieces == expected[: len(in_pieces)]
    if expected[-1][1] == "999":  # nothing closed the connection before the last request
        assert in_pieces == expected
    full.check(), batch.check()


def test_recognised_and_unrecognised_requests_in_one_read_keep_their_order(pair):
    _, batch = pair
    answers = answers_to(batch, STREAMS["mixed in one read"])
    assert [(status, seq, body) for status, seq, _, body in answers] == [
        (200, "1", "hello world\n"), (200, None, "waited 30 ms without blocking\n"), (200, "2", "hello world\n"),
        (404, None, "404 no route for /missing\n"), (200, "3", "hello world\n"), (200, "4", "hello world\n"),
        (200, "5", ""), (200, None, "burned 0 ms of CPU\n"), (200, "6", "hello world\n"), (200, "7", "hello world\n"),
        (200, "999", "hello world\n"),
    ]


def test_a_body_is_never_answered_as_a_request(pair):
    _, batch = pair
    assert [seq for _, seq, _, _ in answers_to(batch, STREAMS["a body is not a request"])] == ["1", None, "3", "999"]


def test_junk_between_requests_gets_a_400_in_its_place_and_the_close(pair):
    _, batch = pair
    answers = answers_to(batch, STREAMS["junk between requests"])
    assert [(status, seq) for status, seq, _, _ in answers] == [(200, "1"), (200, "2"), (400, None)]
    assert answers[-1][2] == "close"


def test_the_batch_answers_are_the_full_paths_bytes(pair):
    full, batch = pair
    stream = numbered(41) + get_request("/") + numbered(0)
    got = {}
    for server in (full, batch):
        with connect(server) as sock:
            sock.sendall(stream)
            data = b""
            while data.count(b"hello world\n") < 3:
                data += sock.recv(65536)
        got[server.name] = data
    # The Date headers may fall either side of a second: compare without them.
    assert _without_dates(got["pipeline_batch_app"]) == _without_dates(got["pipeline_app"])
    assert got["pipeline_app"].count(b"\r\nSeq: 41\r\n") == 1 and got["pipeline_app"].count(b"\r\nSeq: 0\r\n") == 1


def _without_dates(data):
    return b"\r\n".join(line for line in data.split(b"\r\n") if not line.startswith(b"Date: "))


def test_a_deep_batch_is_answered_in_order_and_a_partial_request_waits():
    with servers.serve("pipeline_batch_app", loop="uvloop", parser="httptools") as server, connect(server) as sock:
        first = b"".join(numbered(i) for i in range(5000))  # about 40 reads' worth in one write
        sock.sendall(first + numbered(5000)[:10])
        reader = AnswerReader(sock)
        assert [reader.read()[1]["seq"] for _ in range(5000)] == [str(i) for i in range(5000)]
        sock.settimeout(0.2)
        with pytest.raises(TimeoutError):
            sock.recv(1)  # the cut request is not answered before its end arrives
        sock.settimeout(TIMEOUT_S)
        sock.sendall(numbered(5000)[10:])
        assert reader.read()[1]["seq"] == "5000"
        server.check()


# --- the pattern itself ----------------------------------------------------------------------------


@pytest.fixture
def batch_module(monkeypatch):
    monkeypatch.syspath_prepend(str(servers.SERVERS_DIR))
    import pipeline.batch

    return pipeline.batch


def test_the_pattern_tiles_exactly_and_findall_cuts_where_it_did(batch_module):
    rng = random.Random(8)
    pieces = [numbered(7), numbered(123456), get_request("/"), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", numbered(1, "[::1]:80")]
    numbers = [b"7", b"123456", b"", b"", b"1"]
    for _ in range(200):
        picks = [rng.randrange(len(pieces)) for _ in range(rng.randrange(1, 40))]
        whole = b"".join(pieces[i] for i in picks)
        tail = rng.choice([b"", b"G", numbered(9)[:-1], b"POST / HTTP/1.1\r\n\r\n", b" GET / HTTP/1.1\r\n\r\n"])
        data = whole + tail
        end = batch_module.RECOGNISED.match(data).end()
        assert end == len(whole) + (len(tail) if tail == numbered(9) else 0)
        assert batch_module.NUMBERS.findall(data, 0, end) == [numbers[i] for i in picks]
    for refused in (b"GET / HTTP/1.1\r\n\r\n", b"GET /?seq=1 HTTP/1.1\r\n\r\n",  # HTTP/1.1 without its Host
                    b"GET  / HTTP/1.1\r\n\r\n", b"GET /?seq=1&x HTTP/1.1\r\n\r\n", b"GET /?seq=1 HTTP/1.1\r\nhost: a\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", b"GET / HTTP/1.1\n\n",
                    b"GET /?seq=12345678901234567 HTTP/1.1\r\n\r\n",
                    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"):
        assert batch_module.RECOGNISED.match(refused).end() == 0, refused


@pytest.mark.skipif(syscalls.missing_reason() is not None, reason=syscalls.missing_reason() or "")
def test_one_write_per_read_of_recognised_requests():
    batches, depth = 50, 16
    with servers.serve("pipeline_batch_app", loop="uvloop", parser="httptools") as server, connect(server) as sock:
        reader = AnswerReader(sock)
        sock.sendall(numbered(0))
        reader.read()  # the connection is up before we start counting
        try:
            with syscalls.counting(server.pid, only=syscalls.WRITES) as counts:
                for _ in range(batches):
                    sock.sendall(b"".join(numbered(i) for i in range(depth)))  # one write, so it arrives in one read
                    for _ in range(depth):
                        reader.read()
                time.sleep(0.1)  # the tracer records a call as it returns: let it catch up with the last one
        except syscalls.SyscallCountUnavailable as error:
            pytest.skip(str(error))
    assert batches <= counts.of(syscalls.WRITES) <= batches + 2


def test_the_split_for_alike_requests_agrees_with_the_pattern(batch_module):
    """recognise() cuts a read of one request repeated by a split; on any read it must agree with the pattern."""
    rng = random.Random(16)
    tails = [b"", b"G", numbered(5)[:-3], get_request("/x"), b"\r\n", b"GET /?seq=12345678901234567 HTTP/1.1\r\n\r\n",
             b"GET /?seq=1 HTTP/1.1\r\nHost: lab\r\n\r\n\r\n", numbered(3, "other")]
    for _ in range(500):
        numbers = [rng.choice([b"0", b"7", b"42", b"1234567890123456", b"99999"]) for _ in range(rng.randrange(1, 20))]
        data = b"".join(numbered(number.decode()) for number in numbers) + rng.choice(tails)
        if rng.random() < 0.2:  # a byte changed anywhere
            at = rng.randrange(len(data))
            data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]
        end = batch_module.RECOGNISED.match(data).end()
        assert batch_module.recognise(data) == (end, batch_module.NUMBERS.findall(data, 0, end)), data
