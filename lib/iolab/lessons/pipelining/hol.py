"""Head-of-line blocking, timed.

One batch written at once, and when each of its answers arrives.
"""

import socket
import time
from dataclasses import dataclass

from iolab.http1 import AnswerReader, get_request

TIMEOUT_S = 10
# A loop may fire a timer up to its clock's resolution early (libuv's is 1 ms): an answer held behind a wait of
# W ms arrives no sooner than W minus this.
TIMER_EARLY_AT_MOST_MS = 5


@dataclass(frozen=True)
class BatchTiming:
    """The paths of one pipelined batch and, for each answer in order, its body and ms from the write to its arrival."""

    paths: list
    bodies: list
    arrived_ms: list

    @property
    def last_ms(self):
        return self.arrived_ms[-1]


def time_batch(server, paths):
    """Write every request of `paths` in one send on a fresh connection, and time each answer as it arrives."""
    with socket.create_connection((server.host, server.port), timeout=TIMEOUT_S) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reader = AnswerReader(sock)
        sock.sendall(get_request("/"))  # one answer first, so the connection is accepted and warm
        reader.read()
        began = time.perf_counter()
        sock.sendall(b"".join(get_request(path) for path in paths))
        bodies, arrived = [], []
        for _ in paths:
            bodies.append(reader.body())
            arrived.append((time.perf_counter() - began) * 1000)
    return BatchTiming(list(paths), bodies, arrived)


def wait_first(wait_ms, batch=8):
    """The batch of the lesson: a wait first, then `batch - 1` instant hello worlds."""
    return [f"/async-sleep?ms={wait_ms}"] + ["/"] * (batch - 1)
