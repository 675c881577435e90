"""Model 4, signal-driven IO.

The kernel sends SIGIO when data is ready; meanwhile the app works (Stevens, figure 6.4).
"""

import fcntl
import os
import signal
import sys
import threading

from .trace import RECV_BYTES, Meter, ModelUnavailable, Peer, Trace, do_other_work

# Python's fcntl exposes these on Linux; the numbers are <fcntl.h>'s, should it not.
F_SETOWN = getattr(fcntl, "F_SETOWN", 8)
F_SETSIG = getattr(fcntl, "F_SETSIG", 10)  # not used: it picks another signal, whose siginfo Python never shows

WHO_BLOCKS = {"wait": "nobody: the application keeps working", "copy": "application (in recv, inside the handler)"}


def read_when_signalled(sock, do_own_work):
    """Model 4, bare: ask for SIGIO when the socket has data, do our own work, and read in the signal handler."""
    received = []

    def on_sigio(signum, frame):
        try:
            received.append(sock.recv(RECV_BYTES))  # the data is ready: copying it is still our job
        except BlockingIOError:
            pass  # on TCP, SIGIO also comes for reasons that bring no data

    sock.setblocking(False)  # a handler must never block
    previous = signal.signal(signal.SIGIO, on_sigio)
    flags = fcntl.fcntl(sock, fcntl.F_GETFL)
    fcntl.fcntl(sock, F_SETOWN, os.getpid())  # send this socket's signals to our process...
    fcntl.fcntl(sock, fcntl.F_SETFL, flags | os.O_ASYNC)  # ...and switch them on
    try:
        while not received:
            do_own_work()  # the signal interrupts this when the data is ready
    finally:
        fcntl.fcntl(sock, fcntl.F_SETFL, flags)  # switch SIGIO off before putting the old handler back
        signal.signal(signal.SIGIO, previous)
    return received[0]


def run(delay_ms=200, payload_bytes=4096):
    """read_when_signalled() traced: arm SIGIO on a socket, work until the signal arrives, read the data in the handler."""
    if not sys.platform.startswith("linux"):
        raise ModelUnavailable(f"signal-driven IO on sockets is shown on Linux only; this is {sys.platform}")
    if threading.current_thread() is not threading.main_thread():
        raise ModelUnavailable("Python runs signal handlers in the main thread only; call this from there")
    with Peer([delay_ms], payload_bytes) as peer:
        sock = peer.sockets[0]
        sock.setblocking(False)  # a handler must never block: a spurious SIGIO finds no data, and says so
        trace, received, spurious = Trace(), [], []

        def on_sigio(signum, frame):
            # Python runs this between two bytecodes of the main thread, so "handled" is
            # a few microseconds (at most one slice of work) after the kernel raised it.
            handled = trace.mark("app", "signal", "SIGIO")
            try:
                data = sock.recv(RECV_BYTES)
            except BlockingIOError:
                spurious.append(handled)
                return
            copied = trace.mark("app", "return", f"recv(): {len(data)} bytes")
            received.append((handled, copied, data))

        previous = signal.signal(signal.SIGIO, on_sigio)  # sigaction(): SIGIO's default action kills us
        flags = fcntl.fcntl(sock, fcntl.F_GETFL)
        try:
            peer.go()
            meter = Meter()
            asked = trace.mark("app", "call", "fcntl(F_SETOWN, O_ASYNC)")
            fcntl.fcntl(sock, F_SETOWN, os.getpid())  # send this socket's signals to our process...
            fcntl.fcntl(sock, fcntl.F_SETFL, flags | os.O_ASYNC)  # ...and switch them on
            trace.mark("app", "return", "armed")

            work_ms, slices = 0.0, 0
            while not received:  # free to do our own work; the signal will interrupt it
                work_ms += do_other_work()
                slices += 1
            meter.stop()
        finally:
            fcntl.fcntl(sock, fcntl.F_SETFL, flags)  # disarm before un-handling: no stray SIGIO may kill us
            signal.signal(signal.SIGIO, previous)
        # The application never waited: it did `slices` slices of its own work, and the
        # kernel interrupted it once, when the data was ready. Only the copy was its to do.

        handled, copied, data = received[0]
        trace.span("app", "work", asked, handled, f"own work: {slices} slices")
        trace.span("app", "blocked", handled, copied, "handler: recv()")
        return trace.finish(
            "signal", peer, wait=[(asked, handled)], copy=[(handled, copied)], meter=meter,
            calls=3 + 1 + len(spurious),  # to arm: sigaction and two fcntl; then one recv() per signal
            blocks=WHO_BLOCKS, work_ms=work_ms,
            signal_ms=handled, spurious_signals=len(spurious), work_slices=slices, bytes=len(data),
        )
