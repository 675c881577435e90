"""Lesson 12 on the held subscribers, against tornado_push."""

import psutil
import pytest

from iolab import servers
from iolab.clients.held_subscribers import Held
from iolab.lessons.long_lived import fanout, memory


@pytest.mark.parametrize("kind", ["ws", "sse", "poll"])
def test_every_subscriber_gets_the_message_in_send_order_and_nothing_outlives_the_client(kind):
    with servers.serve("tornado_push") as server:
        with Held(server.url, kind, 30) as subscribers:
            assert memory.stats(server)["subscribers"][kind] == 30
            found = fanout.broadcast(server, subscribers, 100, kind)
            assert len(found["deliveries"]) == 30 and found["client_cpu_s"] > 0
            # The path ends at the last send, or the last poll answered: never past all the server did for it.
            assert 0 < found["path_cpu_s"] <= found["server_cpu_s"]
            if kind == "poll":
                # Answered and not yet polling again: the server holds none until the client is told.
                assert memory.stats(server)["subscribers"]["poll"] == 0
                assert fanout.repoll(server, subscribers) > 0
            rows = subscribers.deliveries()
            assert sorted(row["index"] for row in rows) == list(range(30))
            pid = subscribers.pid
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_the_held_subscribers_grow_and_a_wrong_transport_is_named():
    with servers.serve("tornado_push") as server, Held(server.url, "ws", 10) as subscribers:
        assert subscribers.add(15) == 25 and memory.stats(server)["subscribers"]["ws"] == 25
        with pytest.raises(RuntimeError, match="repoll is for long polls; these subscribers are ws"):
            subscribers.repoll()
    with pytest.raises(ValueError, match="transport must be one of"):
        Held("http://127.0.0.1:1", "smoke", 1)


def test_a_server_that_is_not_there_is_named():
    with servers.serve("tornado_push") as server:
        url = server.url
    with pytest.raises(RuntimeError, match="did not all subscribe: FAILED subscriber 0 could not subscribe: refused"):
        Held(url, "ws", 3, timeout_s=2)
