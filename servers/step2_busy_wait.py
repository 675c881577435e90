"""Step 2 of lesson 05: a non-blocking server that busy-waits.

It asks every socket again and again.

Read step1_blocking.py first. What this adds: every socket is non-blocking, so
accept(), recv() and send() return at once, with data or with EAGAIN
(BlockingIOError in Python): "nothing yet, ask again later". One thread can now
juggle many clients: a client that sends half a request no longer holds the
others up, and /async-sleep works, by checking the clock on every pass.

The price: the loop never sleeps. With no client at all it still spins through
accept() and recv() as fast as it can, and every one of those system calls
comes back empty. Now our program is burning 100% of a CPU doing nothing.
Once a second it says on stderr how many calls were wasted.

Next: step3_callbacks.py lets the kernel tell us which sockets are ready.
"""

import time

import _tiny_http
from iolab.contract import log


class Client:
    """One connection: the bytes received so far, the bytes still to send, and an answer waiting for its moment."""

    def __init__(self, sock):
        self.sock = sock
        self.inbox = b""
        self.outbox = b""
        self.answer_at = None  # (when, answer) while an /async-sleep is waiting
        self.close_when_sent = False  # the client asked to close after this answer
        self.done = False


class BusyWaitServer:
    """Goes round the listening socket and every client, forever, asking each one whether it has anything."""

    def __init__(self, listener):
        self.listener = listener
        self.clients = []
        self.wasted_calls = 0  # system calls that came back with EAGAIN: nothing to do
        self.served = 0

    def serve_forever(self):
        next_report = time.monotonic() + 1.0
        while True:  # no select(), no sleep(): round and round, as fast as the CPU allows
            self.try_accept()
            now = time.monotonic()
            for client in self.clients:
                self.try_client(client, now)
            if any(client.done for client in self.clients):
                for client in [c for c in self.clients if c.done]:
                    client.sock.close()
                self.clients = [c for c in self.clients if not c.done]
            if now >= next_report:
                log(
                    f"step2: {self.wasted_calls:,} calls came back empty (EAGAIN) in the last second;"
                    f" {self.served} requests served, {len(self.clients)} clients connected"
                )
                self.wasted_calls = self.served = 0
                next_report = now + 1.0

    def try_accept(self):
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            self.wasted_calls += 1  # nobody at the door
            return
        sock.setblocking(False)
        self.clients.append(Client(sock))

    def try_client(self, client, now):
        try:
            if client.outbox:
                sent = client.sock.send(client.outbox)  # may take only part of it
                client.outbox = client.outbox[sent:]
                client.done = client.close_when_sent and not client.outbox
                return
            if client.answer_at:
                when, answer = client.answer_at
                if now >= when:  # the wait is over: no timer fired, we just looked at the clock
                    client.answer_at = None
                    self.queue_answer(client, answer)
                return
            request, rest = _tiny_http.split_request(client.inbox)
            if request is None:
                chunk = client.sock.recv(4096)
                client.inbox += chunk
                client.done = not chunk  # recv() returning nothing: the client hung up
                return  # half a request at most: keep it and move on to the next client
        except BlockingIOError:
            self.wasted_calls += 1  # this client has nothing for us yet
            return
        except OSError:
            client.done = True  # reset by the peer: nothing more to do for it
            return
        client.inbox = rest
        answer = _tiny_http.route(request, can_wait=True)
        if answer.wait_s:
            client.answer_at = (now + answer.wait_s, answer)
        else:
            self.queue_answer(client, answer)

    def queue_answer(self, client, answer):
        client.outbox += _tiny_http.format_answer(answer)
        client.close_when_sent = not answer.keep_alive
        self.served += 1


def main():
    # Non-blocking: accept() returns at once, with EAGAIN if nobody is waiting.
    listener = _tiny_http.listen(__doc__.splitlines()[0], blocking=False)
    with listener:
        BusyWaitServer(listener).serve_forever()


if __name__ == "__main__":
    main()
