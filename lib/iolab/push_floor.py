"""The floor of a broadcast: one bare socket.send of one frame per subscriber.

No TCP broadcaster can do less than one system call per subscriber. `floor()`
measures that call's CPU on this machine, in the conditions a push server
meets: `connections` loopback connections whose other ends belong to a
receiver process that waits in epoll and reads everything, as a subscriber
client does. So the floor includes the kernel's work for the receiving side
and the wakeups, and leaves out everything a server adds in Python. The
sender is a process of its own (the caller's threads and sockets stay out of
it): its thread's CPU (time.thread_time, user and system) over each round of
sends, divided by the connections, is the figure; the median round is the
floor. The receiver counts the bytes it read, so a round that lost some shows.

    python -m iolab.push_floor [connections] [size] [rounds]     # prints the floor as JSON
"""

import json
import os
import selectors
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from typing import IO, Any, cast

from . import environment
from .children import python, read_until, spawn
from .contract import LOOPBACK, die_with_parent

READY = b"ready\n"
SETTLE_S = 0.05  # between rounds: the receiver reads what the last round sent, and goes back to waiting
TIMEOUT_S = 60.0  # any one wait (accepts, the receiver, the whole sender), 10,000 connections included
LIMITS = {"connections": 20_000, "size": 1 << 20, "rounds": 20}  # the most of each a run may ask for


def ws_frame(data: bytes) -> bytes:
    """One unmasked final text frame (RFC 6455 5.2), as a server sends it."""
    n = len(data)
    if n < 126:
        return bytes((0x81, n)) + data
    if n < 1 << 16:
        return bytes((0x81, 126)) + n.to_bytes(2, "big") + data
    return bytes((0x81, 127)) + n.to_bytes(8, "big") + data


def send_to_all(sockets: Iterable[socket.socket], frame: bytes) -> None:
    """The floor: the same bytes to every subscriber, one system call each, nothing else."""
    for sock in sockets:
        sock.sendall(frame)  # one send() whenever the frame fits the socket's buffer, as a subscriber that reads keeps it


def floor(connections: int = 2000, size: int = 64, rounds: int = 7, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """{"subscribers" (the connections), "size", "frame_bytes", "cpu_us_per_send" (the median round's CPU per send),
    "runs_us" (each round's), "received_bytes", "sent_bytes"}: measured by a sender process of its own."""
    for name, value in (("connections", connections), ("size", size), ("rounds", rounds)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LIMITS[name]:
            raise ValueError(f"{name} must be a whole number of at least 1 and at most {LIMITS[name]:,}, got {value!r}")
    problem = environment.file_limit_reason(connections, "connections")  # the sender and receiver inherit it
    if problem:
        raise ValueError(problem)
    sender = spawn(python("-m", "iolab.push_floor", "send", str(connections), str(size), str(rounds)))
    try:
        out, _ = sender.communicate(timeout=timeout_s)
    except BaseException:
        sender.kill()
        sender.wait()
        raise
    if sender.returncode != 0:
        raise RuntimeError(f"the floor's sender exited with {sender.returncode}: {out.decode(errors='replace')[-500:]}")
    measured: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])  # send's last line
    return measured


def send(connections: int, size: int, rounds: int) -> None:
    """The sender: accept the receiver's connections, then `rounds` rounds of one send each; print the JSON."""
    die_with_parent()
    payload = json.dumps({"seq": 0, "t": time.monotonic()}).encode().ljust(size)[:size]  # a server's message
    frame = ws_frame(payload)
    with socket.create_server((LOOPBACK, 0), backlog=min(connections, 4096)) as listener:
        port = listener.getsockname()[1]
        receiver = spawn(python("-m", "iolab.push_floor", "receive", str(port), str(connections)),
                         stdin=subprocess.PIPE)
        # Spawned with both pipes: closing its stdin tells it to report; its stdout says ready, then the bytes it read.
        to_receiver, from_receiver = cast(IO[bytes], receiver.stdin), cast(IO[bytes], receiver.stdout)
        senders = []
        try:
            listener.settimeout(TIMEOUT_S)
            for _ in range(connections):
                sender, _ = listener.accept()
                sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                senders.append(sender)
            if READY not in read_until(from_receiver, READY, TIMEOUT_S):
                raise RuntimeError("the floor's receiver never said it was ready")
            runs_us = []
            for _ in range(rounds):
                time.sleep(SETTLE_S)
                cpu = time.thread_time()
                send_to_all(senders, frame)
                runs_us.append((time.thread_time() - cpu) / connections * 1e6)
            time.sleep(SETTLE_S)
        finally:
            for sender in senders:
                sender.close()
            to_receiver.close()  # the receiver's signal to report and stop
            try:
                received = int(read_until(from_receiver, b"\n", TIMEOUT_S).strip() or 0)
            finally:
                receiver.kill()
                receiver.wait()
                from_receiver.close()
    print(json.dumps({"subscribers": connections, "size": size, "frame_bytes": len(frame),
                      "cpu_us_per_send": statistics.median(runs_us), "runs_us": runs_us,
                      "received_bytes": received, "sent_bytes": rounds * connections * len(frame)}), flush=True)


def receive(port: int, connections: int) -> None:
    """The other ends: connect, say ready, then read everything in epoll until stdin closes; print the bytes read."""
    die_with_parent()
    sockets = [socket.create_connection((LOOPBACK, port)) for _ in range(connections)]
    selector = selectors.EpollSelector()
    for sock in sockets:
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
    selector.register(sys.stdin.buffer, selectors.EVENT_READ)
    sys.stdout.buffer.write(READY)
    sys.stdout.flush()
    received, ending, open_sockets = 0, False, connections
    while open_sockets or not ending:
        ready = selector.select(TIMEOUT_S)
        if not ready:
            break  # a minute without a byte or the end: bounded, whatever happened to the parent
        for key, _ in ready:
            if key.fileobj is sys.stdin.buffer:
                os.read(0, 1)  # end of file: the parent has sent everything and closed its ends
                selector.unregister(sys.stdin.buffer)
                ending = True
                continue
            try:
                data = cast(socket.socket, key.fileobj).recv(1 << 16)  # every other one registered is a socket
            except BlockingIOError:
                continue
            if not data:
                selector.unregister(key.fileobj)
                open_sockets -= 1
            received += len(data)
    print(received, flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["receive"]:
        receive(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1:2] == ["send"]:
        send(*[int(value) for value in sys.argv[2:5]])
    else:
        print(json.dumps(floor(*[int(value) for value in sys.argv[1:4]])))
