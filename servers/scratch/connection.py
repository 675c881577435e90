"""HTTP/1.1 over a BufferedStream.

Read a request, hand it to the application with a reply callback, answer in order (Tornado's
HTTP1Connection and HTTPServer in miniature).

This file is the idea. What it takes to survive careless or hostile clients
(strict parsing, 408/413/431/501, HEAD, backpressure, idle timeouts) lives in
hardening.py, beside it; the core calls it by name.
"""

import errno
import socket

from scratch import hardening
from scratch.loop import EVENT_READ
from scratch.stream import BufferedStream

LISTEN_BACKLOG = 1024  # connections the kernel may queue before we accept them; the lab opens hundreds at once


class HTTPConnection:
    """Speaks HTTP/1.1 on one stream: requests in, answers out, strictly in order.

    `application(request, reply)` answers by calling reply(status, body) either
    at once or later (from a timer, say). Until it has replied, the requests
    behind this one stay unparsed in the read buffer: that is how pipelined
    requests are answered in the order they came, even when the first one is
    slow. Other connections are not affected: they have their own buffers.
    """

    def __init__(self, server, sock):
        self.server = server
        self.stream = BufferedStream(server.loop, sock, self)
        self.waiting_for_reply = False  # a request is with the application and has not been answered yet
        self.closing = False  # answer what we have been asked, then close
        self.batch = None  # answers made in one pass over the read buffer, sent with one send()
        self.idle = hardening.IdleTimeout(self, server.idle_timeout_s)

    # --- events from the stream ---------------------------------------------------

    def on_data(self):
        self.answer_buffered_requests()
        self.idle.watch_partial_request()  # what is left must arrive whole in time (hardening.py)

    def on_eof(self):
        # The client will send nothing more. Answer what it has already asked, then close.
        if self.waiting_for_reply:
            self.closing = True
        else:
            self.stream.close_when_drained()

    def on_drain(self):
        if not self.closing:  # the client has read what we owed it: go on with its next requests
            self.answer_buffered_requests()

    def on_close(self):
        self.server.connections.discard(self)

    # --- one request at a time ----------------------------------------------------

    def answer_buffered_requests(self):
        """Answer every complete request in the read buffer, in order, then send all the answers at once."""
        self.batch = []
        try:
            while not self.waiting_for_reply and not self.closing:
                request = hardening.parse_request(self.stream.read_buffer)
                if request is None:
                    break  # the rest of a request has not arrived yet; on_data calls us again
                self.idle.progress()
                self.stream.label = f"{request.method} {request.target}"  # named if it blocks the loop
                self.waiting_for_reply = True
                reply = self.reply_to(request)
                try:
                    self.server.application(request, reply)  # it calls reply(), now or later
                except Exception:
                    hardening.answer_with_500(self, request, reply)
                if hardening.writing_too_much(self):
                    break
        except hardening.BadRequest as error:
            self.batch.append(hardening.error_response(error))
            self.closing = True
        batch, self.batch = self.batch, None
        if batch:
            self.stream.write(b"".join(batch))
        hardening.apply_backpressure(self)

    def reply_to(self, request):
        """The callback the application answers `request` with."""

        def reply(status, body):
            if self.stream.closed:
                return  # the client left while we were working on its answer
            keep_alive = hardening.keeps_alive(request) and not self.closing
            data = hardening.format_response(status, body, request, keep_alive)
            self.waiting_for_reply = False
            self.closing = not keep_alive
            if self.batch is not None:
                self.batch.append(data)  # answered at once: it leaves with the rest of this pass
                return
            # Answered later, from a timer: send it, then go on with the requests queued behind it.
            self.stream.write(data)
            if self.closing:
                self.stream.close_when_drained()
            else:
                self.answer_buffered_requests()

        return reply


class HTTPServer:
    """A listening socket on the loop: accepts connections and gives each an HTTPConnection."""

    def __init__(self, loop, application, host, port, idle_timeout_s=60.0):
        self.loop = loop
        self.application = application
        self.idle_timeout_s = idle_timeout_s
        self.connections = set()
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        # create_server sets SO_REUSEADDR, so a restarted server can bind while old connections linger in TIME_WAIT.
        self.listener = socket.create_server((host, port), family=family, backlog=LISTEN_BACKLOG)
        self.listener.setblocking(False)  # accept() must return EAGAIN, not wait, when the queue is empty
        self.reserve = hardening.ReserveDescriptor()  # a spare descriptor, for when we run out (EMFILE)
        self.address = self.listener.getsockname()[:2]
        loop.register(self.listener, EVENT_READ, self.on_acceptable)

    def on_acceptable(self, mask):
        # One readiness event can stand for many queued connections: take them all.
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return  # EAGAIN: the queue is empty
            except OSError as error:
                if error.errno == errno.EMFILE:
                    shed = self.reserve.shed(self.listener)
                    if shed is None:
                        return  # nothing queued: the next connection wakes us again
                    if shed:
                        continue  # one queued connection fewer; the next accept() says whether more wait
                if error.errno in (errno.EMFILE, errno.ENFILE):
                    hardening.pause_accepting(self, error)
                    return
                if error.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue  # the client gave up while queued; take the next one
                raise
            sock.setblocking(False)
            # Each answer leaves in one send(), so there is nothing for Nagle's algorithm to coalesce.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connections.add(HTTPConnection(self, sock))

    def close(self):
        """Shutdown: close every socket; the loop is closed next, which forgets their registrations."""
        for connection in list(self.connections):
            connection.stream.abort()
        self.listener.close()
        self.reserve.close()
