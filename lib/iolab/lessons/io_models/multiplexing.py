"""Model 3, IO multiplexing.

One thread sleeps in select/poll/epoll for many sockets at once (Stevens, figure 6.3).
"""

import select

from .trace import RECV_BYTES, Meter, Peer, Trace

WHO_BLOCKS = {"wait": "application (asleep in select, for all sockets at once)", "copy": "application (in recv)"}


def read_all(socks):
    """Model 3, bare: one thread sleeps in select() for every socket at once, then reads the ones it names."""
    for sock in socks:
        sock.setblocking(False)  # readiness is a hint: should a recv() block after all, it returns EAGAIN instead
    received, pending = {}, list(socks)
    while pending:
        readable, _, _ = select.select(pending, [], [])  # the thread sleeps here until at least one has data
        for sock in readable:
            try:
                received[sock] = sock.recv(RECV_BYTES)
            except BlockingIOError:
                continue  # a false alarm: wait again
            pending.remove(sock)
    return [received[sock] for sock in socks]


class SelectWaiter:
    """select(): every call hands the kernel the whole list, and the kernel scans all of it."""

    def __init__(self, socks):
        self.watched = set(socks)

    def wait(self):
        readable, _, _ = select.select(list(self.watched), [], [])
        return readable

    def forget(self, sock):
        self.watched.discard(sock)

    def close(self):
        pass


class PollWaiter:
    """poll(): an array of (fd, events) instead of a bitmap, so no 1024 limit; still scanned on every call."""

    make, readable = staticmethod(select.poll), select.POLLIN

    def __init__(self, socks):
        self.poller, self.by_fd = self.make(), {}
        for sock in socks:
            self.poller.register(sock, self.readable)
            self.by_fd[sock.fileno()] = sock

    def wait(self):
        return [self.by_fd[fd] for fd, _ in self.poller.poll()]

    def forget(self, sock):
        self.poller.unregister(sock)
        del self.by_fd[sock.fileno()]

    def close(self):
        if hasattr(self.poller, "close"):  # an epoll object is a descriptor of its own
            self.poller.close()


class EpollWaiter(PollWaiter):
    """epoll: the same three calls as poll; the difference is all inside the kernel (see select_vs_epoll.py).

    register() hands each socket over once, and the kernel keeps the list. When
    data arrives it puts that socket on a ready list, so a wait costs the same
    whether we watch four sockets or forty thousand.
    """

    # getattr, because epoll exists on Linux only; run() uses poll elsewhere.
    make, readable = staticmethod(getattr(select, "epoll", None)), getattr(select, "EPOLLIN", None)


WAITERS = {"select": SelectWaiter, "poll": PollWaiter, "epoll": EpollWaiter}


def run(delay_ms=200, payload_bytes=4096, peers=4, mechanism="epoll"):
    """read_all() traced, with a choice of waiter.

    It serves `peers` connections from one thread; the last peer sends after delay_ms.
    """
    if mechanism == "epoll" and not hasattr(select, "epoll"):
        mechanism = "poll"  # epoll is Linux-only (BSD and macOS have kqueue instead)
    delays = [delay_ms * (index + 1) / peers for index in range(peers)]
    with Peer(delays, payload_bytes) as peer:
        for sock in peer.sockets:
            sock.setblocking(False)  # readiness is a hint; a recv() that would block must not
        waiter = WAITERS[mechanism](peer.sockets)
        trace = Trace()
        peer.go()
        meter = Meter()

        waits, copies, pending = [], [], set(peer.sockets)
        while pending:
            asked = trace.mark("app", "call", f"{mechanism}()")
            ready = waiter.wait()  # the thread sleeps here until at least one socket has data
            woke = trace.mark("app", "return", f"{len(ready)} readable")
            waits.append((asked, woke))
            trace.span("app", "blocked", asked, woke, f"asleep in {mechanism}()")
            for sock in ready:
                start = trace.mark("app", "call", "recv()")
                try:
                    data = sock.recv(RECV_BYTES)
                except BlockingIOError:  # readiness was a false alarm: wait again
                    trace.mark("app", "eagain")
                    continue
                copied = trace.mark("app", "return", f"#{peer.sockets.index(sock)}: {len(data)} bytes")
                copies.append((start, copied))
                trace.span("app", "blocked", start, copied, "in recv()")
                waiter.forget(sock)
                pending.discard(sock)
        meter.stop()
        waiter.close()
        # One thread served every connection, and it slept whenever none of them had
        # data: the whole run took about as long as the slowest peer, not their sum.

        return trace.finish(
            "multiplexing", peer, wait=waits, copy=copies, meter=meter,
            calls=len(waits) + len(copies), blocks=WHO_BLOCKS, mechanism=mechanism, peers=peers,
        )
