"""Lesson 12's own measuring parts against real processes: the floor, and the subscribers' client on tornado_push."""

import psutil
import pytest

from iolab import servers
from iolab.lessons.long_lived import crowd, fanout, floor, memory


def test_a_websocket_frame_carries_its_length():
    assert floor.websocket_frame(b"x" * 5) == b"\x81\x05xxxxx"
    assert floor.websocket_frame(b"x" * 300)[:4] == b"\x81\x7e\x01\x2c"


def test_the_floor_is_a_few_microseconds_a_send():
    found = floor.measure(200, 100, 2)
    assert found["subscribers"] == 200 and found["frame_bytes"] == 102
    assert 0 < found["cpu_us_per_send"] < 1000 and len(found["runs_us"]) == 2


@pytest.mark.parametrize("kind", ["ws", "sse", "poll"])
def test_every_subscriber_gets_the_message_in_send_order_and_nothing_outlives_the_crowd(kind):
    with servers.serve("tornado_push") as server:
        with crowd.Crowd(server.url, kind, 30) as subscribers:
            assert memory.stats(server)["subscribers"][kind] == 30
            found = fanout.broadcast(server, subscribers, 100)
            assert len(found["deliveries"]) == 30 and found["client_cpu_s"] > 0
            if kind == "poll":
                assert fanout.repoll(server, subscribers) > 0
            rows = subscribers.deliveries()
            assert sorted(row["index"] for row in rows) == list(range(30))
            pid = subscribers.pid
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_crowd_grows_and_a_wrong_kind_is_named():
    with servers.serve("tornado_push") as server, crowd.Crowd(server.url, "ws", 10) as subscribers:
        assert subscribers.add(15) == 25 and memory.stats(server)["subscribers"]["ws"] == 25
    with pytest.raises(ValueError, match="kind must be one of"):
        crowd.Crowd("http://127.0.0.1:1", "smoke", 1)
