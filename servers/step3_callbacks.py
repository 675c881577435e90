"""Step 3 of lesson 05: a loop with callbacks.

The kernel tells us which sockets are ready.

Read step2_busy_wait.py first. What this adds: instead of asking every socket
in turn, we register each one with a selector (epoll on Linux) along with the
function to call when it is ready, and select() puts the thread to sleep until
at least one is. Waiting costs no CPU any more. Timers (call_later) live on a
heap, and select()'s timeout is the time until the earliest one: that is how
/async-sleep waits without blocking and without spinning.

What it still lacks, and step 4 (step4_event_loop.py) adds: it assumes every
send() takes the whole answer; it accepts one connection per wakeup; a slow
callback silently stalls everyone; it cannot tell you what the loop is doing;
it never cuts off a client that sends a request a byte at a time.
"""

import heapq
import itertools
import selectors
import time

import _tiny_http


class MiniLoop:
    """A selector for sockets and a heap for timers: the whole of an event loop, in thirty lines."""

    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.timers = []  # heap of (when, tie-breaker, callback)
        self.order = itertools.count()  # so two timers due at the same moment never compare callbacks

    def register(self, sock, callback):
        self.selector.register(sock, selectors.EVENT_READ, callback)

    def unregister(self, sock):
        self.selector.unregister(sock)

    def call_later(self, delay_s, callback):
        heapq.heappush(self.timers, (time.monotonic() + delay_s, next(self.order), callback))

    def run_forever(self):
        while True:
            # Sleep until a socket is ready, or until the next timer is due, whichever comes first.
            timeout = max(0.0, self.timers[0][0] - time.monotonic()) if self.timers else None
            for key, _events in self.selector.select(timeout):
                key.data(key.fileobj)  # the callback we registered with this socket
            while self.timers and self.timers[0][0] <= time.monotonic():
                _, _, callback = heapq.heappop(self.timers)
                callback()


class CallbackServer:
    """The server as callbacks: one for the listening socket, one per client socket, and timers for /async-sleep."""

    def __init__(self, loop, listener):
        self.loop = loop
        self.inboxes = {}  # socket -> bytes received but not yet answered
        loop.register(listener, self.on_acceptable)

    def on_acceptable(self, listener):
        sock, _ = listener.accept()  # select() said someone is waiting, so this does not block
        sock.setblocking(False)
        self.inboxes[sock] = b""
        self.loop.register(sock, self.on_readable)

    def on_readable(self, sock):
        try:
            chunk = sock.recv(4096)  # select() said there is data: this returns at once
        except ConnectionError:
            chunk = b""
        if not chunk:
            self.close(sock)
            return
        inbox = self.inboxes[sock] + chunk
        while sock in self.inboxes:  # send() closes the socket after an answer that ends the connection
            request, inbox = _tiny_http.split_request(inbox)
            if request is None:
                self.inboxes[sock] = inbox
                return  # half a request: wait for the rest; other sockets carry on meanwhile
            answer = _tiny_http.route(request, can_wait=True)
            if answer.wait_s:
                # Do not sleep: ask the loop to call us back, and return so it can serve others.
                # (Requests pipelined behind this one could overtake it; step 4 keeps them in order.)
                self.loop.call_later(answer.wait_s, lambda answer=answer: self.send(sock, answer))
            else:
                self.send(sock, answer)

    def send(self, sock, answer):
        if sock not in self.inboxes:
            return  # the client left while we were waiting
        # Naive: assumes the kernel takes the whole answer at once. It does for small
        # answers; a big one would be cut short. Step 4 buffers what is left.
        try:
            sock.send(_tiny_http.format_answer(answer))
        except OSError:  # reset by the peer, or (rarely) a full send buffer
            self.close(sock)
            return
        if not answer.keep_alive:
            self.close(sock)

    def close(self, sock):
        self.loop.unregister(sock)
        del self.inboxes[sock]
        sock.close()


def main():
    listener = _tiny_http.listen(__doc__.splitlines()[0], blocking=False)
    loop = MiniLoop()
    CallbackServer(loop, listener)
    with listener:
        loop.run_forever()


if __name__ == "__main__":
    main()
