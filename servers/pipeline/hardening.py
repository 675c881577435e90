"""What keeps one pipelining connection from taking all memory or the server down: bounds, back-pressure, slow requests."""

import asyncio

from iolab.contract import BODY_TIMEOUT_S, HEAD_TIMEOUT_S
from pipeline.answers import respond
from pipeline.parsers import BadRequest

# A request still partial at two checks this far apart, with none completed between them, gets a 408:
# so a request has at most HEAD_TIMEOUT_S + BODY_TIMEOUT_S from its first byte to its last.
SLOW_REQUEST_CHECK_S = min(HEAD_TIMEOUT_S, BODY_TIMEOUT_S)
MAX_ANSWERS_IN_LINE = 1024  # answers (or waits) queued on one connection before we stop reading from it
WRITE_HIGH_WATER = 1024 * 1024  # bytes of answers the client has not read yet before we stop reading from it


class Hardening:
    """Mixed into PipelinedHTTP: the flow control of asyncio's Protocol, and when to close.

    Reading stops while the connection holds requests it has not started (too
    many waits), while too many answers wait in line, or while the client does
    not read its answers (the transport calls pause_writing). Not reading lets
    the kernel's buffers fill, and TCP then slows the client down for us. So a
    connection holds at most one read's worth of requests (256 KiB) beyond these
    bounds, however deep its client pipelines.
    """

    transport = None
    closing = False  # a request asked to close (or broke the protocol): answer up to it, then close
    peer_done = False  # the client sent EOF: answer what it asked, then close
    reading = True
    client_not_reading = False
    slow_check = None  # the timer of the slow-request check
    partial_at_last_check = None  # (requests completed, True) when a request was partial at the last check

    def connection_made(self, transport):
        self.transport = transport
        self.settings.connections.add(self)
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self.slow_check = asyncio.get_running_loop().call_later(SLOW_REQUEST_CHECK_S, self.check_slow_request)

    def check_slow_request(self):
        """A slowloris sends a request a byte every few seconds to keep its connection: answer 408 and close.

        One timer per connection, every SLOW_REQUEST_CHECK_S, looking at what the connection holds of a request.
        """
        completed, pending = self.request_progress()
        ours_to_answer = self.blocked or self.held or not self.reading  # the client waits for us, not we for it
        now = (completed, pending and not ours_to_answer)
        if now[1] and now == self.partial_at_last_check and not self.closing:
            self.closing = True
            self.transport.write(respond(BadRequest(408, ""), 408, "408 the request did not arrive in time\n"))
            self.transport.close()
            return
        self.partial_at_last_check = now
        self.slow_check = asyncio.get_running_loop().call_later(SLOW_REQUEST_CHECK_S, self.check_slow_request)

    def request_progress(self):
        """(requests completed so far, whether part of one waits for the rest): the slow-request check's reading."""
        return self.parser.completed, self.parser.pending

    def after_writing(self):
        """Close once every answer owed has gone; otherwise read only while this connection's bounds allow."""
        if self.closing and not self.blocked:
            self.transport.close()  # sends what is buffered first; requests after the close are dropped
            return
        if self.peer_done and not self.blocked and not self.held:
            self.transport.close()
            return
        stop = (
            self.closing
            or self.peer_done
            or self.held
            or len(self.blocked) > MAX_ANSWERS_IN_LINE
            or self.client_not_reading
        )
        if stop and self.reading:
            self.transport.pause_reading()
            self.reading = False
        elif not stop and not self.reading:
            self.transport.resume_reading()
            self.reading = True

    def pause_writing(self):
        # Called from inside transport.write, in write_ready, whose after_writing then stops reading.
        self.client_not_reading = True

    def resume_writing(self):
        self.client_not_reading = False
        self.after_writing()

    def eof_received(self):
        self.peer_done = True
        self.after_writing()
        return True  # keep our half open until the answers it asked for are sent

    def connection_lost(self, error):
        self.settings.connections.discard(self)
        if self.slow_check is not None:
            self.slow_check.cancel()
        for reply in self.blocked:
            if getattr(reply, "timer", None) is not None:
                reply.timer.cancel()  # nobody is left to answer
        self.blocked.clear()
        self.held.clear()
