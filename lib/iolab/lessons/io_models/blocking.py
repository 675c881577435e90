"""Model 1, blocking IO.

One recv() puts the thread to sleep through both phases (Stevens, figure 6.1). Read this first.
"""

from .trace import RECV_BYTES, Meter, Peer, Trace

WHO_BLOCKS = {"wait": "application (asleep in recv)", "copy": "application (in recv)"}


def read_blocking(sock):
    """Model 1, bare: one call. The thread sleeps in it until the data has arrived and been copied into `data`."""
    data = sock.recv(RECV_BYTES)
    return data


def run(delay_ms=200, payload_bytes=4096):
    """read_blocking() with timestamps around its one call: ask a peer for data and record where the time went."""
    with Peer([delay_ms], payload_bytes) as peer:
        sock = peer.sockets[0]  # an ordinary socket: blocking, no timeout
        trace = Trace()
        peer.go()  # the peer starts counting delay_ms now
        meter = Meter()

        asked = trace.mark("app", "call", "recv()")
        data = sock.recv(RECV_BYTES)
        returned = trace.mark("app", "return", f"{len(data)} bytes")
        # The thread did nothing at all in between: the kernel parked it until the
        # peer's bytes arrived, copied them into `data`, and only then woke it up.
        meter.stop()

        # From user space one blocking recv() hides where waiting ends and copying
        # begins. On loopback the bytes can be in our receive buffer as soon as the
        # peer calls send(), so we split the call there: "copy" then also holds the
        # kernel's hand-over and our wakeup, an upper bound on the copy itself.
        ready = trace.at(peer.sent()[0][0])
        trace.span("app", "blocked", asked, returned, "asleep in recv()")
        return trace.finish(
            "blocking", peer, wait=[(asked, ready)], copy=[(ready, returned)],
            meter=meter, calls=1, blocks=WHO_BLOCKS, bytes=len(data),
        )
