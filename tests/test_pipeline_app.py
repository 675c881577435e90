"""pipeline_app and pipeline_batch_app, lesson 08's pipelining servers.

Answers in order, head-of-line blocking, deep pipelines, half batches, one write per batch.
"""

import math
import shutil
import socket
import subprocess
import threading
import time

import psutil
import pytest
from test_servers import follows_contract

from iolab import load, metrics, servers, syscalls, wrk_lua
from iolab.http1 import AnswerReader, get_request

TIMEOUT_S = 10
# (loop, parser, write): the teaching default, the fast one, and each switch flipped once.
VARIANTS = [
    ("asyncio", "ours", "batched"),
    ("uvloop", "httptools", "batched"),
    ("asyncio", "httptools", "per-response"),
    ("uvloop", "ours", "per-response"),
]
IDS = ["-".join(variant) for variant in VARIANTS]
# pipeline_batch_app (write "batch"): its batch path answers the reads it recognises; its full path, pipeline_app's,
# everything else. The tests of order, head-of-line blocking and bad input run on it too.
BATCH_VARIANTS = [("asyncio", "ours", "batch"), ("uvloop", "httptools", "batch")]
BATCH_IDS = ["-".join(variant) for variant in BATCH_VARIANTS]
FAST = [VARIANTS[1], BATCH_VARIANTS[1]]  # each server at its fastest
FAST_IDS = ["uvloop-httptools-batched", "uvloop-httptools-batch"]
HOL_WAIT_MS = 300
# An answer held behind a 300 ms timer cannot arrive before it fires; asyncio may run a timer up to its
# clock's resolution early, far less than this.
TIMER_EARLY_AT_MOST_S = 0.005
# An answer nothing holds up arrives within a loaded machine's scheduling, well short of the 300 ms wait.
NOT_HELD_UP_S = 0.2
NOT_HELD_UP_BY_A_GREEDY_CLIENT_S = 0.5  # the loop also parses and answers the greedy client's 256 KiB reads meanwhile
RSS_GROWTH_AT_MOST = 40 * 1024 * 1024  # what one connection may cost while it pipelines 18 MB of waits


def start(variant, *args):
    loop, parser, write = variant
    if write == "batch":
        return servers.serve("pipeline_batch_app", *args, loop=loop, parser=parser)
    return servers.serve("pipeline_app", *args, loop=loop, parser=parser, write=write)


@pytest.fixture(scope="module")
def running(request):
    """One server of a variant (request.param) for every test of this module that takes `server`.

    Those tests each open connections of their own, read every answer they asked for, and close them: the next
    finds the server as they found it. Set up before a test, it is that test's baseline in conftest's leak check.
    """
    with start(request.param) as server:
        yield server


@pytest.fixture
def server(running):
    yield running
    running.check()  # a server that died in this test fails this test, not the next one to share it


def shared(variants, ids):
    """Parametrizes a test over `variants`, each test getting the module's one running server of its variant."""
    return pytest.mark.parametrize("running", variants, ids=ids, indirect=True)


def connect(server):
    sock = socket.create_connection((server.host, server.port), timeout=TIMEOUT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def mixed_batch(count):
    """`count` requests whose answers all differ, where later waits end sooner: only an in-order server gets them right."""
    paths, bodies = [], []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            paths.append("/"), bodies.append("hello world\n")
        elif kind == 1:
            paths.append(f"/cpu?ms={i % 2}"), bodies.append(f"burned {i % 2} ms of CPU\n")
        elif kind == 2:
            ms = 2 * (count - i)  # the first wait is the longest
            paths.append(f"/async-sleep?ms={ms}"), bodies.append(f"waited {ms} ms without blocking\n")
        else:
            paths.append(f"/missing-{i}"), bodies.append(f"404 no route for /missing-{i}\n")
    return paths, bodies


# --- the contract, for every variant -------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_every_variant_follows_the_contract(variant):
    loop, parser, write = variant
    follows_contract("pipeline_app", "--loop", loop, "--parser", parser, "--write", write)


@pytest.mark.parametrize("variant", BATCH_VARIANTS, ids=BATCH_IDS)
def test_the_batch_server_follows_the_contract(variant):
    loop, parser, _ = variant
    follows_contract("pipeline_batch_app", "--loop", loop, "--parser", parser)


def test_bad_command_line_values_are_refused(python):
    for script, args in (
        ("pipeline_app.py", ["--max-waiting", "0"]), ("pipeline_app.py", ["--loop", "trio"]),
        ("pipeline_app.py", ["--parser", "regex"]), ("pipeline_app.py", ["--write", "sometimes"]),
        ("pipeline_batch_app.py", ["--max-waiting", "0"]), ("pipeline_batch_app.py", ["--parser", "regex"]),
        ("pipeline_batch_app.py", ["--write", "batched"]),  # the batch server always writes once per read
    ):
        completed = subprocess.run(
            [python, str(servers.SERVERS_DIR / script), *args], capture_output=True, text=True, timeout=10
        )
        assert completed.returncode != 0 and args[0] in completed.stderr and completed.stdout == "", (script, args)


# --- order ---------------------------------------------------------------------------


@shared(VARIANTS + BATCH_VARIANTS, IDS + BATCH_IDS)
def test_32_requests_in_one_write_are_answered_in_order(server):
    paths, bodies = mixed_batch(32)
    with connect(server) as sock:
        sock.sendall(b"".join(get_request(path) for path in paths))  # one write: the server reads them at once
        reader = AnswerReader(sock)
        answers = [reader.read() for _ in paths]
    assert [body for _, _, body in answers] == bodies
    assert [status for status, _, _ in answers] == [404 if i % 4 == 3 else 200 for i in range(32)]


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed (Debian package wrk)")
@shared(VARIANTS[:2] + BATCH_VARIANTS, IDS[:2] + BATCH_IDS)
def test_wrk_pipelining_16_deep_gets_every_answer_in_order(server, tmp_path):
    paths, bodies = mixed_batch(16)
    report = wrk_lua.run_pipelined(server.url + "/", paths, 1, 1, script_path=tmp_path / "order.lua",
                                   expected_bodies=bodies)
    server.check()
    assert report["socket_errors"] == 0, report["output"]
    # Three whole batches at least, so order is checked across a batch's end. How many a second is speed, a
    # benchmark's business: a lane's one CPU shared with other work managed 8 (110 ms each), where a batch's own
    # 28 ms sleep allows 35.
    assert report["checked"] == report["requests"] >= 3 * len(paths), report["output"]
    assert report["order_errors"] == 0, report["output"]


@shared(VARIANTS[:2] + BATCH_VARIANTS, IDS[:2] + BATCH_IDS)
def test_the_labs_pipelined_client_finds_every_answer_in_order(server):
    paths, _ = mixed_batch(16)
    result = load.run_load(
        server.url + "/", kind="pipelined", pipeline_depth=16, pipeline_paths=paths, requests=16 * 40,
        concurrency=4, timeout_s=TIMEOUT_S,
    )
    server.check()
    assert result.stop_reason == "completed" and len(result.samples) == 16 * 40
    assert result.errors == 0, metrics.summarize(result).error_kinds  # "out of order" would be one of them


@pytest.mark.parametrize("write", ["batched", "batch"])
def test_a_broken_request_is_answered_in_its_place_then_the_connection_closes(write):
    for parser in ("ours", "httptools"):
        with start(("asyncio", parser, write)) as server, connect(server) as sock:
            sock.sendall(get_request("/async-sleep?ms=100") + get_request("/") + b"BLAH\r\n\r\n" + get_request("/"))
            reader = AnswerReader(sock)
            assert reader.read()[2] == "waited 100 ms without blocking\n"
            assert reader.read()[2] == "hello world\n"
            status, headers, body = reader.read()
            assert status == 400 and body.startswith("400 ") and body.count("\n") == 1, parser
            assert headers["connection"] == "close" and reader.closed_by_server(), parser


@pytest.mark.parametrize("write", ["batched", "batch"])
@pytest.mark.parametrize("parser", ["ours", "httptools"])
def test_connection_close_head_and_http_1_0(parser, write):
    with start(("asyncio", parser, write)) as server:
        with connect(server) as sock:
            sock.sendall(get_request("/async-sleep?ms=50", keep_alive=False) + get_request("/"))  # the second is never answered
            reader = AnswerReader(sock)
            status, headers, _ = reader.read()
            assert status == 200 and headers["connection"] == "close"
            assert reader.closed_by_server() and reader.buffer == b""
        with connect(server) as sock:
            sock.sendall(b"HEAD / HTTP/1.1\r\nHost: lab\r\n\r\n" + get_request("/"))
            reader = AnswerReader(sock)
            assert reader.read(head_only=True)[1]["content-length"] == "12"
            assert reader.read()[2] == "hello world\n"  # HEAD sent no body, or this would be garbled
        with connect(server) as sock:
            sock.sendall(b"GET / HTTP/1.0\r\n\r\n")  # HTTP/1.0 closes unless asked not to
            reader = AnswerReader(sock)
            assert reader.read()[1]["connection"] == "close" and reader.closed_by_server()
        with connect(server) as sock:
            sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" * 2)  # ab -k
            reader = AnswerReader(sock)
            assert [reader.read()[1]["connection"] for _ in range(2)] == ["keep-alive", "keep-alive"]


# --- head-of-line blocking -----------------------------------------------------------


@shared(VARIANTS[:2] + BATCH_VARIANTS, IDS[:2] + BATCH_IDS)
def test_a_wait_first_in_a_batch_of_8_holds_back_all_8(server):
    batch = [f"/async-sleep?ms={HOL_WAIT_MS}"] + ["/"] * 7
    with connect(server) as held, connect(server) as other:
        began = time.perf_counter()
        held.sendall(b"".join(get_request(path) for path in batch))
        other.sendall(get_request("/"))  # another connection is not behind the wait
        assert AnswerReader(other).read()[2] == "hello world\n"
        other_after = time.perf_counter() - began
        reader = AnswerReader(held)
        arrivals, bodies = [], []
        for _ in batch:
            bodies.append(reader.read()[2])
            arrivals.append(time.perf_counter() - began)
    assert bodies == [f"waited {HOL_WAIT_MS} ms without blocking\n"] + ["hello world\n"] * 7
    assert min(arrivals) >= HOL_WAIT_MS / 1000 - TIMER_EARLY_AT_MOST_S, arrivals
    assert other_after < NOT_HELD_UP_S, f"another connection waited {other_after * 1000:.0f} ms"


# --- RFC 9112, section 9.3.2: an unsafe method runs alone ---------------------------------------

# The block outlasts the wait by more than NOT_HELD_UP_S, so running the two side by side shows in both answers' times.
SHORT_WAIT_MS, LONG_BLOCK_MS = 200, 600


def post(path):
    return f"POST {path} HTTP/1.1\r\nHost: lab\r\nContent-Length: 0\r\n\r\n".encode()


# (first request, second request, their bodies): a slow safe request ahead of an unsafe one that blocks the loop,
# and an unsafe request that waits ahead of a safe one that blocks the loop.
UNSAFE_ORDERS = {
    "post-behind-a-slow-get": (
        get_request(f"/async-sleep?ms={SHORT_WAIT_MS}"), post(f"/sync-sleep?ms={LONG_BLOCK_MS}"),
        [f"waited {SHORT_WAIT_MS} ms without blocking\n", f"slept {LONG_BLOCK_MS} ms blocking the loop\n"]),
    "get-behind-a-slow-post": (
        post(f"/async-sleep?ms={SHORT_WAIT_MS}"), get_request(f"/sync-sleep?ms={LONG_BLOCK_MS}"),
        [f"waited {SHORT_WAIT_MS} ms without blocking\n", f"slept {LONG_BLOCK_MS} ms blocking the loop\n"]),
}


@pytest.mark.parametrize("order", UNSAFE_ORDERS)
@shared(VARIANTS[:2] + BATCH_VARIANTS, IDS[:2] + BATCH_IDS)
def test_an_unsafe_method_starts_after_the_answers_ahead_and_before_the_requests_behind(server, order):
    """Two requests in one write: the second blocks the loop for 0.6 s once its handler starts.

    Run side by side (allowed only for safe methods), the second would start at once and hold the first's 200 ms
    timer until it was done: both answers at about 0.6 s. One at a time, the first answer is written at 200 ms, and
    only then does the second start: its answer comes at 0.8 s or later.
    """
    first, second, bodies = UNSAFE_ORDERS[order]
    with connect(server) as sock:
        began = time.perf_counter()
        sock.sendall(first + second)
        reader = AnswerReader(sock)
        answers, arrivals = [], []
        for _ in bodies:
            answers.append(reader.read()[2])
            arrivals.append(time.perf_counter() - began)
        server.check()
    assert answers == bodies
    assert arrivals[0] < (SHORT_WAIT_MS / 1000) + NOT_HELD_UP_S, f"the first answer waited for the second: {arrivals}"
    assert arrivals[1] >= (SHORT_WAIT_MS + LONG_BLOCK_MS) / 1000 - TIMER_EARLY_AT_MOST_S, arrivals


@shared([VARIANTS[0], BATCH_VARIANTS[1]], [IDS[0], BATCH_IDS[1]])
def test_safe_requests_around_unsafe_ones_keep_their_places(server):
    """GETs, POSTs, a DELETE and waits mixed in one write: every answer in its request's place, none lost."""
    parts, bodies = [], []
    for i in range(24):
        if i % 3 == 0:
            parts.append(get_request(f"/async-sleep?ms={30 - i}")), bodies.append(f"waited {30 - i} ms without blocking\n")
        elif i % 3 == 1:
            method = "DELETE" if i % 2 else "POST"
            parts.append(f"{method} /async-sleep?ms={i} HTTP/1.1\r\nHost: lab\r\nContent-Length: 2\r\n\r\nhi".encode())
            bodies.append(f"waited {i} ms without blocking\n")
        else:
            parts.append(get_request("/")), bodies.append("hello world\n")
    with connect(server) as sock:
        sock.sendall(b"".join(parts))
        reader = AnswerReader(sock)
        assert [reader.read()[2] for _ in bodies] == bodies
        server.check()


# --- deep pipelines of waits -----------------------------------------------------------


@pytest.mark.parametrize("variant", [VARIANTS[0], BATCH_VARIANTS[0]], ids=[IDS[0], BATCH_IDS[0]])
def test_1000_waits_in_one_write_are_all_answered_in_order_within_the_bound(variant):
    """Japronto's worker aborted past 10 waiting requests; here at most --max-waiting wait, the rest are held."""
    count, max_waiting, base_ms = 1000, 100, 50
    paths = [f"/async-sleep?ms={base_ms + i % 10}" for i in range(count)]
    with start(variant, "--max-waiting", max_waiting) as server, connect(server) as sock:
        began = time.perf_counter()
        sock.sendall(b"".join(get_request(path) for path in paths))
        reader = AnswerReader(sock)
        bodies = [reader.read()[2] for _ in paths]
        elapsed = time.perf_counter() - began
        server.check()
    assert bodies == [f"waited {base_ms + i % 10} ms without blocking\n" for i in range(count)]
    # 1000 waits of 50 ms or more, at most 100 at a time: at least 10 rounds. All at once would take one.
    at_least_s = math.ceil(count / max_waiting) * base_ms / 1000
    assert elapsed >= at_least_s - TIMER_EARLY_AT_MOST_S, f"{count} waits took {elapsed:.2f} s: the bound was not kept"


@pytest.mark.parametrize("variant", FAST, ids=FAST_IDS)
def test_a_pipeline_of_waits_deeper_than_memory_is_not_read_ahead(variant):
    """400,000 long waits (18 MB) in a pipeline: the server stops reading, TCP stops the client, memory stays flat."""
    depth = 400_000
    request = get_request("/async-sleep?ms=5000")
    with start(variant) as server:
        process = psutil.Process(server.pid)
        rss_before = process.memory_info().rss
        greedy = connect(server)
        sender = threading.Thread(target=_send_quietly, args=(greedy, request * depth), daemon=True)
        sender.start()
        try:
            time.sleep(1.0)
            assert sender.is_alive(), "the server read all 18 MB of requests: it does not stop reading"
            growth = process.memory_info().rss - rss_before
            assert growth < RSS_GROWTH_AT_MOST, f"the server grew by {growth / 2**20:.0f} MB"
            with connect(server) as other:  # and it still serves everyone else
                other.sendall(get_request("/"))
                assert AnswerReader(other).read()[2] == "hello world\n"
        finally:
            # Shut down first: a close() alone leaves the sender blocked in sendall until the server gives up on
            # the connection; shutdown wakes it at once, and the server drops the connection and its timers.
            greedy.shutdown(socket.SHUT_RDWR)
            greedy.close()
            sender.join(TIMEOUT_S)
        with connect(server) as after:
            after.sendall(get_request("/"))
            assert AnswerReader(after).read()[2] == "hello world\n"
        server.check()


def _send_quietly(sock, data):
    try:
        sock.sendall(data)
    except OSError:
        pass  # the test closed the socket under us, as it meant to


@pytest.mark.parametrize("variant", [VARIANTS[0], BATCH_VARIANTS[0]], ids=[IDS[0], BATCH_IDS[0]])
def test_a_client_that_does_not_read_is_buffered_and_others_go_on(variant):
    depth = 20_000  # 2.5 MB of answers: more than the socket buffers, so the server must stop reading
    with start(variant) as server, connect(server) as greedy:
        sender = threading.Thread(target=greedy.sendall, args=(get_request("/") * depth,), daemon=True)
        sender.start()
        time.sleep(0.3)
        with connect(server) as other:
            began = time.perf_counter()
            other.sendall(get_request("/"))
            assert AnswerReader(other).read()[2] == "hello world\n"
            assert time.perf_counter() - began < NOT_HELD_UP_BY_A_GREEDY_CLIENT_S
        reader = AnswerReader(greedy)
        bodies = {reader.read()[2] for _ in range(depth)}
        sender.join(TIMEOUT_S)
    assert bodies == {"hello world\n"}


# --- half a batch ------------------------------------------------------------------------


@shared(VARIANTS[:2] + BATCH_VARIANTS, IDS[:2] + BATCH_IDS)
def test_half_a_batch_is_answered_as_far_as_it_goes(server):
    whole = get_request("/") + get_request("/async-sleep?ms=20") + get_request("/cpu?ms=0")
    last = get_request("/async-sleep?ms=1")
    with connect(server) as dawdler:
        dawdler.sendall(whole + last[:20])  # three requests and a third of the fourth, then nothing
        reader = AnswerReader(dawdler)
        assert [reader.read()[2] for _ in range(3)] == [
            "hello world\n", "waited 20 ms without blocking\n", "burned 0 ms of CPU\n",
        ]
        with connect(server) as other:  # the half request holds nobody else up
            began = time.perf_counter()
            other.sendall(get_request("/"))
            assert AnswerReader(other).read()[2] == "hello world\n"
            assert time.perf_counter() - began < NOT_HELD_UP_S
        dawdler.settimeout(0.2)
        with pytest.raises(TimeoutError):
            dawdler.recv(1)  # nothing for the half request yet
        dawdler.settimeout(TIMEOUT_S)
        dawdler.sendall(last[20:])  # the rest arrives at last, and is answered
        assert reader.read()[2] == "waited 1 ms without blocking\n"


@shared(FAST, FAST_IDS)
def test_the_client_stopping_after_a_batch_still_gets_every_answer(server):
    with connect(server) as sock:
        sock.sendall(get_request("/async-sleep?ms=100") + get_request("/"))
        sock.shutdown(socket.SHUT_WR)  # EOF: nothing more is coming, but answers may still go back
        reader = AnswerReader(sock)
        assert [reader.read()[2] for _ in range(2)] == ["waited 100 ms without blocking\n", "hello world\n"]
        assert reader.closed_by_server()


# --- system calls ---------------------------------------------------------------------------


@pytest.mark.skipif(syscalls.missing_reason() is not None, reason=syscalls.missing_reason() or "")
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_batched_writes_make_one_write_per_batch(loop):
    batches, depth = 50, 16
    writes = {}
    for write in ("batched", "per-response"):
        with start((loop, "httptools", write)) as server, connect(server) as sock:
            reader = AnswerReader(sock)
            sock.sendall(get_request("/"))
            reader.read()  # the connection is up before we start counting
            try:
                with syscalls.counting(server.pid, only=syscalls.WRITES) as counts:
                    for _ in range(batches):
                        sock.sendall(get_request("/") * depth)  # one write, so it arrives in one read
                        for _ in range(depth):
                            reader.read()
                    time.sleep(0.1)  # the tracer records a call as it returns: let it catch up with the last one
            except syscalls.SyscallCountUnavailable as error:
                pytest.skip(str(error))
            writes[write] = counts.of(syscalls.WRITES)
    assert batches <= writes["batched"] <= batches + 2, writes
    assert writes["per-response"] >= batches * depth * 0.9, writes
