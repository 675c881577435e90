"""iolab.listening: the kernel's counters for listening sockets, read on a real listener."""

import socket

import pytest

from iolab import listening


def test_a_listener_shows_its_backlog_and_its_waiting_connections():
    with socket.create_server(("127.0.0.1", 0), backlog=5) as listener:
        port = listener.getsockname()[1]
        waiting, backlog, line = listening.listen_queue(port)
        assert waiting == 0 and str(port) in line
        with socket.create_connection(("127.0.0.1", port)):
            assert listening.listen_queue(port)[0] == 1
        if backlog is not None:  # from ss: the backlog listen() was given, capped by somaxconn
            assert backlog == min(5, listening.somaxconn()) == listening.listen_backlog(port)
    assert listening.listen_queue(port) is None


@pytest.mark.parametrize("counter", [listening.listen_drops, listening.listen_overflows])
def test_the_machine_wide_counters_are_counts_or_unknown(counter):
    value = counter()
    assert value is None or value >= 0
    assert listening.tcp_counter("NoSuchCounter") is None
