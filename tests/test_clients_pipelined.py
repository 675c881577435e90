"""The pipelined client against real servers.

Depth d in flight, every answer matched to its own request.
"""

import textwrap

import pytest

from helpers import script_server
from iolab import load, metrics

PATHS = ("/", "/async-sleep?ms=0")  # two routes with different answers, so an answer in the wrong place shows

# A server that reads every request that has arrived, then answers them in reverse order (body = the path asked
# for). Alone, a request gets its own answer; two pipelined in one write get each other's.
BACKWARDS_SERVER = textwrap.dedent(
    """
    import asyncio
    from iolab.contract import announce, die_with_parent

    class Backwards(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport, self.buffer = transport, b""

        def data_received(self, data):
            self.buffer += data
            *requests, self.buffer = self.buffer.split(b"\\r\\n\\r\\n")
            for request in reversed(requests):
                body = request.split(b" ")[1]
                head = b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body)
                self.transport.write(head + body)

    async def main():
        server = await asyncio.get_running_loop().create_server(Backwards, "127.0.0.1", 0)
        announce("127.0.0.1", server.sockets[0].getsockname()[1])
        await server.serve_forever()

    die_with_parent()
    asyncio.run(main())
    """
)



@pytest.mark.parametrize("server", ["tornado", "step4"])
def test_answers_come_back_in_order(server, tornado, step4):
    url = {"tornado": tornado, "step4": step4}[server].url
    result = load.run_load(
        url + "/", kind="pipelined", pipeline_depth=4, pipeline_paths=PATHS, requests=80, concurrency=2, timeout_s=10
    )
    assert result.stop_reason == "completed"
    assert len(result.samples) == 80 and result.errors == 0, metrics.summarize(result).error_kinds
    assert {s.user for s in result.samples} == {0, 1} and len({s.connection for s in result.samples}) == 2
    _, in_flight = metrics.in_flight_over_time(result.samples, step_s=0.0005)
    assert max(in_flight) <= 2 * 4, "at most depth requests in flight on each connection"
    # A batch is written at once: each connection's requests share send times, four at a time.
    starts = sorted(s.start for s in result.samples if s.user == 0)
    assert len(set(starts)) == len(starts) // 4


def test_an_answer_out_of_order_is_counted(tmp_path):
    with script_server(tmp_path, BACKWARDS_SERVER) as url:
        result = load.run_load(
            url + "/", kind="pipelined", pipeline_depth=2, pipeline_paths=("/a", "/bb"), requests=20, concurrency=1,
            timeout_s=10,
        )
    kinds = metrics.summarize(result).error_kinds
    assert len(result.samples) == 20
    # Each pair written together is answered backwards; a pair split across two reads would come back right.
    assert kinds.get("out of order", 0) >= 10, kinds
    assert set(kinds) == {"out of order"}


def test_a_pipelined_request_times_out(tornado):
    result = load.run_load(
        tornado.url + "/async-sleep?ms=3000", kind="pipelined", pipeline_depth=3, requests=3, concurrency=1,
        timeout_s=0.3,
    )
    assert [s.error for s in result.samples] == ["timeout"] * 3
    assert all(0.25 < s.latency < 1.5 for s in result.samples)
