"""Shared by the IO-model programs.

A clock and trace of events and phases, a CPU meter, and a peer that sends late.
"""

import dataclasses
import hashlib
import json
import resource
import selectors
import socket
import struct
import subprocess
import time
from pathlib import Path

from iolab import neighbours, usage
from iolab.children import python, spawn

PEER_SCRIPT = Path(__file__).with_name("peer.py")
RECV_BYTES = 65536  # one recv() asks for up to this much; the payloads are smaller, so one call gets it all
TIMEOUT_S = 15.0
_WORK = bytes(64 * 1024)


class ModelUnavailable(RuntimeError):
    """This model cannot run here (wrong platform, not the main thread, ...); str() says why."""


@dataclasses.dataclass(frozen=True)
class Event:
    """Something that happened at one instant: a system call, a return, EAGAIN, a signal, data arriving."""

    t_ms: float
    lane: str  # "app" or "kernel"
    kind: str  # call, return, eagain, signal, completion, data, ready
    label: str = ""


@dataclasses.dataclass(frozen=True)
class Span:
    """Something that lasted: a phase in the kernel (wait, copy) or what the application did (blocked, busy, work)."""

    start_ms: float
    end_ms: float
    lane: str
    kind: str
    label: str = ""


@dataclasses.dataclass
class ModelRun:
    """One run of one IO model: its two phases, what they cost the application, and the raw trace."""

    model: str
    delay_ms: float  # when the last peer was told to send, after "go"
    wait_ms: float  # waiting for data: from asking until the data was ready
    asked_ms: float  # when the application first asked, after "go" (late if the scheduler kept it off a CPU)
    ready_ms: float  # when the application's last wait ended, after "go"
    copy_ms: float  # copying the data from the kernel into the application's buffer
    cpu_ms: float  # CPU the application burnt on the IO itself (its own useful work excluded)
    work_ms: float  # CPU the application spent on its own work while the IO was in flight
    queued_ms: float  # time the application thread was ready to run but queued for a CPU (None off Linux)
    calls: int  # IO-related system calls the application made
    wakeups: int  # times the application thread slept and was woken (voluntary context switches)
    sent_ms: list  # when each peer called send(), on the trace's clock
    blocks: dict  # {"wait": who blocks, "copy": who blocks}
    events: list
    spans: list
    notes: dict
    # When the last peer called send(), after "go": its delay, or later if the machine kept the peer off a CPU.
    last_sent_ms: float = 0.0
    # When the last peer's send() returned, after "go": over loopback the data is in our buffer by then.
    last_delivered_ms: float = 0.0
    others: neighbours.Neighbours | None = None  # what else held the CPUs from the trace's start to its finish

    def figures(self):
        """The headline numbers, rounded, for a results file."""
        named = ("wait_ms", "asked_ms", "ready_ms", "last_sent_ms", "copy_ms", "cpu_ms", "work_ms")
        numbers = {name: round(getattr(self, name), 3) for name in named}
        queued = None if self.queued_ms is None else round(self.queued_ms, 3)
        return {**numbers, "queued_ms": queued, "calls": self.calls, "wakeups": self.wakeups, "delay_ms": self.delay_ms}


def _voluntary_switches():
    who = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)
    return resource.getrusage(who).ru_nvcsw


class Meter:
    """CPU time, time queued for a CPU and voluntary context switches of the calling thread, until stop()."""

    def __init__(self):
        self._cpu, self._queued, self._switches = time.thread_time(), usage.queued_ns(), _voluntary_switches()
        self.cpu_ms = self.queued_ms = self.wakeups = None

    def stop(self):
        self.cpu_ms = (time.thread_time() - self._cpu) * 1000
        queued = usage.queued_ns()
        # On a busy machine a thread that never sleeps is still not always running:
        # the scheduler makes it queue. cpu_ms + queued_ms is how long it wanted a CPU.
        self.queued_ms = (queued - self._queued) / 1e6 if None not in (queued, self._queued) else None
        self.wakeups = _voluntary_switches() - self._switches
        return self


def do_other_work():
    """One slice of the application's own work (hashing 64 KiB, GIL released); returns the CPU ms it took."""
    start = time.thread_time()
    hashlib.sha256(_WORK).digest()
    return (time.thread_time() - start) * 1000


class Trace:
    """Events and spans in milliseconds since the trace began, on CLOCK_MONOTONIC (shared with the peer process)."""

    def __init__(self):
        self.neighbours_at_start = neighbours.read()  # finish() reads what else held the CPUs over the run
        self.t0 = time.monotonic()
        self.events, self.spans = [], []

    def now(self):
        return (time.monotonic() - self.t0) * 1000

    def at(self, monotonic_s):
        """A monotonic timestamp (seconds, e.g. from the peer) on this trace's clock."""
        return (monotonic_s - self.t0) * 1000

    def mark(self, lane, kind, label=""):
        t_ms = self.now()
        self.events.append(Event(t_ms, lane, kind, label))  # list.append is atomic: threads may mark too
        return t_ms

    def span(self, lane, kind, start_ms, end_ms, label=""):
        self.spans.append(Span(start_ms, end_ms, lane, kind, label))

    def finish(self, model, peer, *, wait, copy, meter, calls, blocks, work_ms=0.0, **notes):
        """Close the trace: add the kernel's phases and the peer's sends, and return the ModelRun."""
        others = neighbours.between(self.neighbours_at_start, neighbours.read())
        go_ms = self.at(peer.go_at)
        sent_ms = [self.at(start) for start, _ in peer.sent()]
        delivered_ms = [self.at(end) for _, end in peer.sent()]
        for index, t_ms in enumerate(sent_ms):
            self.events.append(Event(t_ms, "kernel", "data", "peer sends" + (f" #{index}" if len(sent_ms) > 1 else "")))
        for start, end in wait:
            self.span("kernel", "wait", start, end, "wait for data")
        for start, end in copy:
            self.span("kernel", "copy", start, end, "copy to user")
        return ModelRun(
            model=model,
            delay_ms=max(peer.delays_ms),
            wait_ms=sum(end - start for start, end in wait),
            # The peer counts its delay from "go"; our wait starts when we ask, which is
            # a few microseconds later, or milliseconds if the thread was made to queue.
            asked_ms=wait[0][0] - go_ms,
            ready_ms=wait[-1][1] - go_ms,
            copy_ms=sum(end - start for start, end in copy),
            cpu_ms=max(0.0, meter.cpu_ms - work_ms),
            work_ms=work_ms,
            queued_ms=meter.queued_ms,
            calls=calls,
            wakeups=meter.wakeups,
            sent_ms=sent_ms,
            blocks=dict(blocks),
            events=sorted(self.events, key=lambda event: event.t_ms),
            spans=list(self.spans),
            notes=notes,
            last_sent_ms=max(sent_ms) - go_ms,
            last_delivered_ms=max(delivered_ms) - go_ms,
            others=others,
        )


def _recv_exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the peer closed the connection during setup")
        data += chunk
    return data


class Peer:
    """A separate process at the far end of one loopback TCP connection per delay; each sends after its delay.

    `with Peer([200]) as peer:` gives `peer.sockets` (ours, plain blocking sockets);
    `peer.go()` starts the peer's clocks; `peer.sent()` says when each send() ran.
    """

    def __init__(self, delays_ms, payload_bytes=4096):
        self.delays_ms = [float(delay) for delay in delays_ms]
        self.payload_bytes = int(payload_bytes)
        self.sockets, self._process, self._sent = [], None, None
        self.go_at = None  # our CLOCK_MONOTONIC when go() told the peer to start counting

    def __enter__(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        by_index = {}
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(len(self.delays_ms))
            listener.settimeout(TIMEOUT_S)
            delays = ",".join(f"{delay:g}" for delay in self.delays_ms)
            # -I (isolated): the peer's own folder stays off sys.path, so its neighbours shadow no module.
            self._process = spawn(python("-I", PEER_SCRIPT, listener.getsockname()[1], delays, self.payload_bytes))
            for _ in self.delays_ms:
                conn, _ = listener.accept()
                conn.settimeout(TIMEOUT_S)
                by_index[struct.unpack("!H", _recv_exactly(conn, 2))[0]] = conn
                # No timeout from here on: a Python socket timeout would quietly make the
                # descriptor non-blocking and poll() inside recv(), changing the model.
                conn.settimeout(None)
            self.sockets = [by_index[index] for index in range(len(self.delays_ms))]
        except BaseException:
            for conn in by_index.values():
                conn.close()
            self.__exit__(None, None, None)
            raise
        finally:
            listener.close()
        return self

    def go(self):
        """Tell the peer our CLOCK_MONOTONIC now; it sends connection i's data at now + delay_i."""
        self.go_at = time.monotonic()
        self.sockets[0].sendall(struct.pack("!d", self.go_at))
        return self.go_at

    def sent(self):
        """[(start, end), ...] of each peer send() in monotonic seconds (waits for the peer's report)."""
        if self._sent is None:
            with selectors.DefaultSelector() as selector:
                selector.register(self._process.stdout, selectors.EVENT_READ)
                if not selector.select(TIMEOUT_S):
                    raise TimeoutError(f"the peer did not report its sends within {TIMEOUT_S} s")
                report = self._process.stdout.readline()
            if not report:
                raise ConnectionError(f"the peer exited (status {self._process.poll()}) without reporting its sends")
            self._sent = [tuple(times) for times in json.loads(report)]
        return self._sent

    def __exit__(self, *exc_info):
        for sock in self.sockets:
            sock.close()  # the peer sees EOF on each and exits
        if self._process is not None:
            try:
                self._process.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process.stdout.close()
