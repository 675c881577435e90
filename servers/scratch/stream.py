"""A buffered stream over one non-blocking socket.

Read and write buffers, and an interest set that follows them (Tornado's IOStream in miniature).
"""

from scratch.loop import EVENT_READ, EVENT_WRITE

RECV_SIZE = 64 * 1024  # one recv() can bring many pipelined requests at once


class BufferedStream:
    """Moves bytes between a socket and two buffers, and tells the selector what it is waiting for.

    The protocol on top (here HTTPConnection) never touches the socket. It reads
    from `read_buffer` when told there is new data, and hands bytes to write(),
    which never blocks: what the kernel will not take now waits in
    `write_buffer`, and the stream asks the selector for EVENT_WRITE until it
    has drained. The interest set is therefore always "READ unless reading is
    paused, plus WRITE while there is something left to send".

    The protocol object receives: on_data() after new bytes arrive, on_eof()
    when the peer stops sending, on_drain() when the write buffer empties, and
    on_close() once, when the stream is closed.
    """

    def __init__(self, loop, sock, protocol):
        self.loop = loop
        self.sock = sock
        self.fd = sock.fileno()  # kept for messages: a closed socket's fileno() is -1
        self.protocol = protocol
        self.read_buffer = bytearray()
        self.write_buffer = bytearray()
        self.reading = True
        self.closed = False
        self.label = ""  # what the protocol is doing: shown when a callback blocks the loop
        self._close_when_drained = False
        self._interest = EVENT_READ
        loop.register(sock, EVENT_READ, self._on_events)

    def __repr__(self):
        doing = f" {self.label}" if self.label else ""
        return f"<BufferedStream fd={self.fd}{doing}>"

    # --- what the protocol calls --------------------------------------------------

    def write(self, data):
        """Send data now if the kernel takes it; buffer the rest and ask to hear when the socket is writable."""
        if self.closed:
            return
        if not self.write_buffer:
            # The common case: the socket's send buffer has room for the whole
            # response, so it leaves in this one system call and we never
            # bother the selector about writing.
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:  # the peer reset the connection: nobody is listening any more
                self.close()
                return
            if sent == len(data):
                return
            data = memoryview(data)[sent:]
        self.write_buffer += data
        self._update_interest()

    def pause_reading(self):
        """Stop asking for EVENT_READ: the kernel's receive buffer then fills and TCP slows the sender down."""
        if self.reading:
            self.reading = False
            self._update_interest()

    def resume_reading(self):
        if not self.reading and not self.closed:
            self.reading = True
            self._update_interest()

    def close_when_drained(self):
        """Close once everything written so far has been sent (at once if nothing is waiting)."""
        self._close_when_drained = True
        self.pause_reading()
        if not self.write_buffer:
            self.close()

    def abort(self):
        """Close the socket without telling the loop: for shutdown, when the loop itself is about to go.

        SIGTERM arrives as an exception between any two lines, so at shutdown our
        record of what is registered may be half-updated; the loop's close() drops
        every registration at once instead.
        """
        self.closed = True
        self.sock.close()

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self._interest:
            self.loop.unregister(self.sock)
        self._interest = 0
        self.sock.close()
        self.protocol.on_close()

    # --- what the loop calls ------------------------------------------------------

    def _on_events(self, mask):
        if mask & EVENT_READ:
            self._on_readable()
        if mask & EVENT_WRITE and not self.closed:
            self._on_writable()

    def _on_readable(self):
        try:
            chunk = self.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return  # a spurious wakeup: nothing to read after all
        except OSError:
            self.close()
            return
        if not chunk:
            # recv() returning nothing means the peer shut down its sending side.
            # We may still owe it answers, so the protocol decides when to close.
            self.pause_reading()
            self.protocol.on_eof()
            return
        self.read_buffer += chunk
        self.protocol.on_data()

    def _on_writable(self):
        try:
            sent = self.sock.send(self.write_buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        del self.write_buffer[:sent]  # cheap: a bytearray drops its head without copying the rest
        if self.write_buffer:
            return  # still more to send: stay registered for EVENT_WRITE
        self._update_interest()
        if self._close_when_drained:
            self.close()
        else:
            self.protocol.on_drain()

    def _update_interest(self):
        """Re-register with the selector only when what we wait for actually changes."""
        if self.closed:
            return
        wanted = (EVENT_READ if self.reading else 0) | (EVENT_WRITE if self.write_buffer else 0)
        if wanted == self._interest:
            return
        # A selector cannot watch for "nothing", so an empty interest set means unregistering.
        if not wanted:
            self.loop.unregister(self.sock)
        elif not self._interest:
            self.loop.register(self.sock, wanted, self._on_events)
        else:
            self.loop.modify(self.sock, wanted, self._on_events)
        self._interest = wanted
