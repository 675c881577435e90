"""Model 2, non-blocking IO.

Ask again and again until the data is there (Stevens, figure 6.2). Read after blocking.py.
"""

import socket
import time

from .trace import RECV_BYTES, Meter, Peer, Trace

WHO_BLOCKS = {"wait": "nobody: the application spins, asking again", "copy": "application (in recv)"}


def read_nonblocking(sock):
    """Model 2, bare: recv() never sleeps, so ask again and again until the data is there."""
    sock.setblocking(False)  # O_NONBLOCK: recv() now returns at once, with data or with EAGAIN
    while True:
        try:
            return sock.recv(RECV_BYTES)
        except BlockingIOError:  # EAGAIN: "nothing yet, try again later" ... so we do, at once
            pass


def run(delay_ms=200, payload_bytes=4096):
    """read_nonblocking() with a timestamp on every call: poll in a tight loop and count the calls that came back empty."""
    with Peer([delay_ms], payload_bytes) as peer:
        sock = peer.sockets[0]
        sock.setblocking(False)  # O_NONBLOCK: recv() now returns at once, with data or with EAGAIN
        trace = Trace()
        peer.go()
        meter = Meter()

        asked = trace.mark("app", "call", "recv()")
        wasted_calls = 0
        while True:
            attempt = trace.now()
            try:
                data = sock.recv(RECV_BYTES)
                break
            except BlockingIOError:  # EAGAIN: "nothing yet, try again later" ... so we do, at once
                wasted_calls += 1
                trace.mark("app", "eagain")
        returned = trace.mark("app", "return", f"{len(data)} bytes")
        meter.stop()
        # The thread never slept, so it answered within a microsecond of the data
        # arriving. The price: it burnt a whole CPU for the entire wait, doing nothing.

        trace.span("app", "busy", asked, attempt, f"{wasted_calls:,} x EAGAIN")
        trace.span("app", "blocked", attempt, returned, "in recv()")
        return trace.finish(
            "nonblocking", peer, wait=[(asked, attempt)], copy=[(attempt, returned)],
            meter=meter, calls=wasted_calls + 1, blocks=WHO_BLOCKS, wasted_calls=wasted_calls, bytes=len(data),
        )


def eagain_cost_us(turns=2000):
    """CPU µs one turn of run()'s busy loop costs while nothing has come: the same turn, timed on a silent connection.

    The busy loop's CPU over this cost predicts how many times it heard EAGAIN.
    """
    with socket.create_server(("127.0.0.1", 0)) as listener, \
            socket.create_connection(listener.getsockname()) as silent:
        silent.setblocking(False)
        trace = Trace()
        start = time.thread_time()
        for _ in range(turns):
            trace.now()
            try:
                silent.recv(RECV_BYTES)
            except BlockingIOError:
                trace.mark("app", "eagain")
        return (time.thread_time() - start) * 1e6 / turns
