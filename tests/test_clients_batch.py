"""The batch client against real servers: every answer's number checked in its place, errors counted, every run bounded."""

import asyncio
import socket
import textwrap
import time
import types

import pytest

from helpers import script_server
from iolab import load, servers
from iolab.clients import batch
from iolab.clients.kinds import LoadParameterError

# A server that reads what has arrived and answers hello world to every GET /?seq=N in it, each echoing a number:
# MODE "reversed" answers a read's requests backwards, "body" answers with the wrong body, "silent" never answers.
MISBEHAVING_SERVER = textwrap.dedent(
    """
    import asyncio, re, sys
    from iolab.contract import announce, die_with_parent

    MODE = sys.argv[1]
    NUMBER = re.compile(rb"GET /\\?seq=([0-9]+) ")

    class Server(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport, self.buffer = transport, b""

        def data_received(self, data):
            self.buffer += data
            cut = self.buffer.rfind(b"\\r\\n\\r\\n") + 4
            numbers, self.buffer = NUMBER.findall(self.buffer[:cut]), self.buffer[cut:]
            if MODE == "silent":
                return
            if MODE == "reversed":
                numbers.reverse()
            body = b"hello world\\n" if MODE != "body" else b"hello wrold\\n"
            self.transport.write(b"".join(
                b"HTTP/1.1 200 OK\\r\\nDate: now\\r\\nContent-Type: text/plain\\r\\nContent-Length: 12\\r\\n"
                b"Connection: keep-alive\\r\\nSeq: " + number + b"\\r\\n\\r\\n" + body for number in numbers))

    async def main():
        server = await asyncio.get_running_loop().create_server(Server, "127.0.0.1", 0)
        announce("127.0.0.1", server.sockets[0].getsockname()[1])
        await server.serve_forever()

    die_with_parent()
    asyncio.run(main())
    """
)



@pytest.fixture(scope="module", params=["pipeline_batch_app", "pipeline_app"])
def server(request):
    with servers.serve(request.param, loop="uvloop", parser="httptools") as running:
        yield running


def test_every_answer_is_checked_and_counted(server):
    result = load.run_batches(server.url, depth=16, connections=4, duration_s=0.5)
    assert result.errors == {} and result.requests > 16 * 4 * 10
    assert result.requests % 16 == 0  # whole batches: the next leaves only once the last is all answered
    assert result.seconds >= 0.5 and result.client_cpu_s > 0 and result.client_us > 0
    server.check()


def test_the_request_bound_holds_to_a_batch(server):
    result = load.run_batches(server.url, depth=8, connections=2, duration_s=30, max_requests=1000)
    assert result.errors == {} and 1000 <= result.requests < 1000 + 8 * 2
    assert result.seconds < 10  # it stopped at the count, not at the duration


def test_the_answers_of_the_same_in_reverse_are_wrong(tmp_path):
    # The server's answers are all right except their order within a read: a batch of one is still right.
    with script_server(tmp_path, MISBEHAVING_SERVER, "reversed") as url:
        assert load.run_batches(url, depth=1, connections=1, duration_s=0.3).errors == {}
        result = load.run_batches(url, depth=4, connections=2, duration_s=0.3)
    assert result.errors == {"wrong answer": 8} and result.requests == 0


def test_a_wrong_body_is_wrong(tmp_path):
    with script_server(tmp_path, MISBEHAVING_SERVER, "body") as url:
        result = load.run_batches(url, depth=4, connections=1, duration_s=0.3)
    assert result.errors == {"wrong answer": 4} and result.requests == 0


def test_a_server_that_never_answers_times_out(tmp_path):
    with script_server(tmp_path, MISBEHAVING_SERVER, "silent") as url:
        began = time.perf_counter()
        result = load.run_batches(url, depth=4, connections=2, duration_s=5, timeout_s=0.3)
        took = time.perf_counter() - began
    assert result.errors == {"timeout": 8} and result.requests == 0
    assert took < 5, f"the run took {took:.1f} s: the timeout did not end it"


def test_nothing_listening_is_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free once closed, and nothing else here listens on it
    result = load.run_batches(f"http://127.0.0.1:{port}", depth=4, connections=2, duration_s=0.2)
    assert result.errors == {"refused": 2} and result.requests == 0


@pytest.mark.parametrize(
    ("arguments", "named"),
    [({"depth": 0}, "depth"), ({"depth": 257}, "depth"), ({"connections": 5000}, "connections"),
     ({"duration_s": 0}, "duration_s"),
     ({"timeout_s": 100}, "timeout_s"), ({"depth": 2.5}, "depth"), ({"url": "http://10.0.0.1:80"}, "url"),
     ({"url": "https://127.0.0.1:80"}, "url"),
     ({"url": "http://127.0.0.1"}, "url")],
)
def test_bad_parameters_are_refused_by_name(arguments, named):
    arguments = {"url": "http://127.0.0.1:1", **arguments}
    with pytest.raises(LoadParameterError, match=named):
        load.run_batches(**arguments)


def answer(number, date=b"Thu, 26 Nov 2026 07:46:27 GMT"):
    return (b"HTTP/1.1 200 OK\r\nDate: " + date + b"\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n"
            b"Connection: keep-alive\r\nSeq: " + number + b"\r\n\r\nhello world\n")


class FakeTransport:
    def __init__(self):
        self.written, self.aborted = [], False

    def write(self, data):
        self.written.append(data)

    def abort(self):
        self.aborted = True

    def close(self):
        pass

    def is_closing(self):
        return self.aborted


def connection(depth):
    """A Batches connection on a stub run, its first batch sent: the numbers 0 .. depth-1 expected back."""
    loop = asyncio.new_event_loop()
    run = types.SimpleNamespace(depth=depth, cycle=2, host="127.0.0.1", loop=loop, ends_at=float("inf"), issued=0,
                                max_requests=10**9, answered=0, errors={})
    batches = batch.Batches(run, 0)
    batches.connection_made(FakeTransport())
    batches.send()
    return batches, run, loop


@pytest.mark.parametrize("cut", [None, 1, 100, 150, 1000])
def test_answers_alike_or_not_cut_anywhere_are_all_checked(cut):
    numbers = [b"%d" % i for i in range(8)]
    dates = [b"Thu, 26 Nov 2026 07:46:27 GMT"] * 5 + [b"Thu, 26 Nov 2026 07:46:28 GMT"] * 3  # a second ticked
    for stream in (b"".join(answer(n) for n in numbers), b"".join(map(answer, numbers, dates))):
        batches, run, loop = connection(8)
        pieces = [stream] if cut is None else [stream[:cut], stream[cut:]]
        for piece in pieces:
            batches.data_received(piece)
        assert run.errors == {} and run.answered == 8 and len(batches.transport.written) == 2  # the next batch left
        loop.close()
    assert batch._all_answers_alike(b"".join(answer(n) for n in numbers), numbers)
    assert not batch._all_answers_alike(b"".join(map(answer, numbers, dates)), numbers)


@pytest.mark.parametrize("wrong", ["swapped", "missing", "extra", "body", "junk"])
def test_a_wrong_read_fails_the_batch(wrong):
    numbers = [b"%d" % i for i in range(4)]
    answers = [answer(n) for n in numbers]
    if wrong == "swapped":
        answers[1], answers[2] = answers[2], answers[1]
    elif wrong == "missing":
        answers[1] = answers[2]
    elif wrong == "extra":
        answers.append(answer(b"4"))
    elif wrong == "body":
        answers[3] = answers[3].replace(b"hello world", b"hello wrold")
    else:
        answers.insert(2, b"\r\n")
    batches, run, loop = connection(4)
    batches.data_received(b"".join(answers))
    loop.close()
    assert "wrong answer" in run.errors and batches.transport.aborted


def test_the_last_batchs_answers_again_are_wrong():
    numbers = [b"%d" % i for i in range(4)]
    batches, run, loop = connection(4)
    batches.data_received(b"".join(answer(n) for n in numbers))
    assert run.answered == 4 and run.errors == {}
    batches.data_received(b"".join(answer(n) for n in numbers))  # a server that answered the first batch twice
    loop.close()
    assert run.errors == {"wrong answer": 4}
