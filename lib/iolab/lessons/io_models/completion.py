"""Model 5, asynchronous IO.

Hand over a buffer, get told when it is full (Stevens, figure 6.5). An honest emulation.

Python's standard library has no completion API: no io_uring binding (Linux)
and no IOCP (Windows). So a worker thread plays the kernel's part here. On
Linux, io_uring shares two rings with the kernel: the application writes
"read into this buffer" entries into the submission ring, the kernel does the
waiting AND the copying on its own, then puts a result in the completion ring,
which the application reads without even a system call. Windows's IOCP has
the same shape: overlapped ReadFile() with a buffer, then
GetQueuedCompletionStatus() hands back finished operations. Our EmulatedRing
keeps that shape; what it cannot copy is the cost: our "kernel" is a thread that
needs the GIL, a real one needs nothing from us.
"""

import collections
import dataclasses
import select
import threading

from .trace import RECV_BYTES, Meter, Peer, Trace, do_other_work

WHO_BLOCKS = {"wait": "nobody: the kernel waits for us", "copy": "nobody: the kernel copies for us"}


@dataclasses.dataclass(frozen=True)
class Completion:
    """One finished operation, as a completion-queue entry: whose it was and how many bytes landed."""

    user_data: str
    nbytes: int
    ready_ms: float
    copied_ms: float


class EmulatedRing:
    """io_uring in miniature: submit_recv() returns at once; completions appear in a queue we peek at."""

    def __init__(self, trace=None):
        self.trace = trace  # marks when the "kernel" found the data ready and had copied it, if given
        self.completions = collections.deque()  # append/popleft are atomic: our "completion ring"
        self.kernel_threads = []

    def submit_recv(self, sock, buffer, user_data):
        worker = threading.Thread(target=self._kernel_side, args=(sock, buffer, user_data), name="emulated-kernel")
        self.kernel_threads.append(worker)
        worker.start()

    def _kernel_side(self, sock, buffer, user_data):
        # Everything here is what a real kernel does for us: both phases, off our thread.
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        poller.poll()
        ready = self.trace.mark("kernel", "ready", "data ready") if self.trace else None
        nbytes = sock.recv_into(buffer)  # copied straight into the buffer the application handed over
        copied = self.trace.mark("kernel", "copied", f"{nbytes} bytes in the app's buffer") if self.trace else None
        self.completions.append(Completion(user_data, nbytes, ready, copied))

    def peek(self):
        """The next completion, or None: no system call, like reading io_uring's completion ring."""
        return self.completions.popleft() if self.completions else None

    def close(self):
        for worker in self.kernel_threads:
            worker.join()


def read_on_completion(sock, do_own_work):
    """Model 5, bare: hand over a buffer, keep working, and find the data already in it when the completion comes."""
    buffer = bytearray(RECV_BYTES)  # ours, but lent to the kernel until the completion says it is done
    ring = EmulatedRing()
    ring.submit_recv(sock, buffer, user_data="read #1")  # returns at once
    while (done := ring.peek()) is None:
        do_own_work()  # meanwhile the kernel waits for the data and copies it into `buffer`
    ring.close()
    return bytes(buffer[: done.nbytes])


def run(delay_ms=200, payload_bytes=4096):
    """read_on_completion() traced: submit one read, keep working, and notice the completion when it is posted."""
    with Peer([delay_ms], payload_bytes) as peer:
        sock = peer.sockets[0]
        buffer = bytearray(RECV_BYTES)  # ours, but lent to the kernel until the completion says it is done
        trace = Trace()
        ring = EmulatedRing(trace)
        peer.go()
        meter = Meter()

        asked = trace.mark("app", "call", "submit recv (io_uring_enter)")
        ring.submit_recv(sock, buffer, user_data="read #1")
        trace.mark("app", "return", "submitted")
        work_ms, slices = 0.0, 0
        while (done := ring.peek()) is None:  # our own work, checking the completion queue between slices
            work_ms += do_other_work()
            slices += 1
        noticed = trace.mark("app", "completion", f"{done.user_data}: {done.nbytes} bytes")
        meter.stop()
        ring.close()
        # Neither phase cost us anything: the data was waited for and copied into our
        # buffer while we worked. We learn of it when we next look, up to one slice later.

        trace.span("app", "work", asked, noticed, f"own work: {slices} slices")
        return trace.finish(
            "async", peer, wait=[(asked, done.ready_ms)], copy=[(done.ready_ms, done.copied_ms)], meter=meter,
            calls=1, blocks=WHO_BLOCKS, work_ms=work_ms, noticed_ms=noticed, work_slices=slices,
            emulated=True, bytes=done.nbytes, data=bytes(buffer[: done.nbytes][:16]),
        )
