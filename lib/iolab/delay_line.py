"""The lab's netem: a stdlib bridge that moves each Ethernet frame between two interfaces after a delay, or drops it.

Run by iolab.link as a child process, never by hand: `python -m iolab.delay_line` (in the middle network
namespace, which this process holds) or `python -m iolab.delay_line --hold` (only holds a namespace). It dies with
its parent (contract.die_with_parent) and when its stdin closes. First it prints `READY <net namespace>`; then
it answers one JSON line on stdout for each JSON line on stdin:

    {"op": "attach", "a": "toclient", "b": "toserver"}  -> {"ok": true}   bridge these two interfaces
    {"op": "set", "delay_ms": 20.0, "loss": 0.02}       -> {"ok": true}   each direction: delay and drop chance
    {"op": "usage"}  -> {"ok": true, "cpu_s": ..., "packets": ..., "dropped": ..., "overflowed": ...}

`dropped` counts the frames it was told to lose (and any a full queue refused); `overflowed`, the frames the kernel
dropped because this process fell behind and its receive buffer filled: more than a few means the delay line,
not the link it plays, set the pace.

This kernel has no netem qdisc, and a TUN device needs root; an AF_PACKET socket works for any user who owns
the namespace. Frames wait in one FIFO per direction: the delay is the same for all, so arrival order is kept.
"""

import collections
import contextlib
import ctypes
import json
import os
import random
import resource
import selectors
import socket
import struct
import sys
import time
from typing import Any

from iolab.contract import die_with_parent

ETH_P_ALL = 0x0003
SOL_PACKET = 263  # Python 3.11's socket module names neither
PACKET_IGNORE_OUTGOING = 23  # Linux 4.20: our own sends are not read back
PACKET_STATISTICS = 6  # struct tpacket_stats: frames seen, frames dropped for want of room; reading resets both
PR_SET_TIMERSLACK = 29
FRAME_BYTES = 65536
RECEIVE_BUFFER = 4 * 1024 * 1024  # a burst of a few thousand frames waits here, not in a kernel drop
Frame = tuple[float, bytes]  # (when it leaves, the frame)


class Direction:
    """One way through the bridge: frames read on `source` leave by `sink` `delay_s` later, unless dropped."""

    def __init__(self, source: socket.socket, sink: socket.socket) -> None:
        self.source = source
        self.sink = sink
        self.waiting: collections.deque[Frame] = collections.deque()
        self.buffer = bytearray(FRAME_BYTES)  # read into, then copied at the frame's length: no 64 KiB per frame
        self.view = memoryview(self.buffer)

    def take(self, now: float, delay_s: float, loss: float, chance: random.Random) -> tuple[int, int]:
        """Read every frame waiting on the source: (frames read, frames dropped)."""
        read = dropped = 0
        while True:
            try:
                size, address = self.source.recvfrom_into(self.buffer)
            except BlockingIOError:
                return read, dropped
            if address[2] == socket.PACKET_OUTGOING:
                continue
            read += 1
            if loss > 0 and chance.random() < loss:
                dropped += 1
            else:
                self.waiting.append((now + delay_s, bytes(self.view[:size])))

    def send_due(self, now: float) -> int:
        """Send every frame whose time has come; the number the sink refused (a full queue counts as a drop)."""
        refused = 0
        while self.waiting and self.waiting[0][0] <= now:
            _, frame = self.waiting.popleft()
            try:
                self.sink.send(frame)
            except OSError:  # ENOBUFS from a full qdisc (a tbf), or the interface went away
                refused += 1
        return refused

    def next_due(self) -> float | None:
        return self.waiting[0][0] if self.waiting else None


def cpu_s() -> float:
    """The CPU this process has used, user and system. The system part includes what the kernel does for each frame
    sent: on a veth the receiving side's stack runs in the sender's context, here the delay line's."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def packet_socket(interface: str) -> socket.socket:
    """A raw socket that reads every frame arriving on `interface` and sends frames out of it."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    try:
        sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:  # an older kernel: Direction.take skips them by their packet type
        pass
    sock.bind((interface, ETH_P_ALL))
    sock.setblocking(False)
    return sock


class Bridge:
    """The two directions, their settings, and what they have cost."""

    def __init__(self) -> None:
        self.directions: list[Direction] = []
        self.delay_s = 0.0
        self.loss = 0.0
        self.packets = 0
        self.dropped = 0
        self.overflowed = 0
        self.chance = random.Random()
        self.cpu_at_attach = 0.0  # Python's start and imports are not the bridge's cost

    def attach(self, selector: selectors.BaseSelector, a: str, b: str) -> None:
        self.cpu_at_attach = cpu_s()
        side_a, side_b = packet_socket(a), packet_socket(b)
        self.directions = [Direction(side_a, side_b), Direction(side_b, side_a)]
        for direction in self.directions:
            selector.register(direction.source, selectors.EVENT_READ, direction)

    def answer(self, selector: selectors.BaseSelector, request: dict[str, Any]) -> dict[str, Any]:
        """Carry out one request from the parent; its reply."""
        op = request.get("op")
        if op == "attach":
            self.attach(selector, str(request["a"]), str(request["b"]))
        elif op == "set":
            self.delay_s = float(request["delay_ms"]) / 1000
            self.loss = float(request["loss"])
        elif op == "usage":
            for direction in self.directions:
                self.overflowed += struct.unpack("II", direction.source.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))[1]
            return {"ok": True, "cpu_s": cpu_s() - self.cpu_at_attach, "packets": self.packets,
                    "dropped": self.dropped, "overflowed": self.overflowed}
        else:
            return {"ok": False, "error": f"unknown op {op!r}"}
        return {"ok": True}

    def next_due(self) -> float | None:
        times = [due for due in (direction.next_due() for direction in self.directions) if due is not None]
        return min(times) if times else None

    def send_due(self) -> None:
        now = time.monotonic()
        for direction in self.directions:
            self.dropped += direction.send_due(now)


def serve(commands: Any) -> None:
    """Bridge frames and answer the parent until stdin closes."""
    bridge = Bridge()
    # select(2) sleeps to the microsecond; epoll rounds a timeout up to the next millisecond, which would add up
    # to a millisecond each way to every frame's delay.
    selector = selectors.SelectSelector()
    selector.register(commands, selectors.EVENT_READ, None)
    pending = b""
    while True:
        due = bridge.next_due()
        timeout = None if due is None else max(0.0, due - time.monotonic())
        for key, _ in selector.select(timeout):
            if key.data is None:
                chunk = os.read(commands.fileno(), 65536)
                if not chunk:
                    return
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    reply(answer_safely(bridge, selector, line))
            else:
                read, dropped = key.data.take(time.monotonic(), bridge.delay_s, bridge.loss, bridge.chance)
                bridge.packets += read
                bridge.dropped += dropped
        bridge.send_due()


def answer_safely(bridge: Bridge, selector: selectors.BaseSelector, line: bytes) -> dict[str, Any]:
    """The bridge's answer to one request line; a failure (a missing interface, a bad request) is an answer too."""
    try:
        return bridge.answer(selector, json.loads(line))
    except (OSError, ValueError, KeyError, TypeError) as error:
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def reply(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def hold(commands: Any) -> None:
    """Only keep this namespace alive until stdin closes (or the parent dies)."""
    while os.read(commands.fileno(), 4096):
        pass


def fine_timers() -> None:
    """Ask the kernel to wake us on time: its default slack lets a timed sleep end up to 50 us late."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)


def main() -> None:
    die_with_parent()
    fine_timers()
    sys.stdout.write(f"READY {os.readlink('/proc/self/ns/net')}\n")
    sys.stdout.flush()
    if "--hold" in sys.argv[1:]:
        hold(sys.stdin)
    else:
        serve(sys.stdin)


if __name__ == "__main__":
    main()
