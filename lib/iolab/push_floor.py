"""The floor of a broadcast: one bare socket.send of one frame per subscriber.

No TCP broadcaster can do less than one system call per subscriber. `floor()`
measures that call's CPU on this machine, in the conditions a push server
meets: `connections` loopback connections whose other ends belong to a
receiver process that waits in epoll and reads everything, as a subscriber
client does. So the floor includes the kernel's work for the receiving side
and the wakeups, and leaves out everything a server adds in Python. The
sender's CPU (time.process_time, user and system) over each round of sends,
divided by the connections, is the figure; the median round is the floor.

    python -m iolab.push_floor [connections] [size]     # prints the floor as JSON
"""

import json
import os
import selectors
import socket
import subprocess
import sys
import time

from .children import python, read_until, spawn
from .contract import LOOPBACK, die_with_parent

READY = b"ready\n"
SETTLE_S = 0.05  # between rounds: the receiver reads what the last round sent, and goes back to waiting
TIMEOUT_S = 60.0


def ws_frame(data):
    """One unmasked final text frame (RFC 6455 5.2), as a server sends it."""
    n = len(data)
    if n < 126:
        return bytes((0x81, n)) + data
    if n < 1 << 16:
        return bytes((0x81, 126)) + n.to_bytes(2, "big") + data
    return bytes((0x81, 127)) + n.to_bytes(8, "big") + data


def floor(connections=2000, size=64, rounds=7):
    """{"connections", "size", "us_per_send" (the median round's CPU per send), "rounds_us", "received_bytes"}."""
    from .clients.subscribers import raise_file_limit

    for name, value, low in (("connections", connections, 1), ("size", size, 1), ("rounds", rounds, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be a whole number of at least {low}, got {value!r}")
    problem = raise_file_limit(connections)
    if problem:
        raise ValueError(problem)
    frame = ws_frame(b"x" * size)
    with socket.create_server((LOOPBACK, 0), backlog=min(connections, 4096)) as listener:
        port = listener.getsockname()[1]
        receiver = spawn(python("-m", "iolab.push_floor", "receive", str(port), str(connections)),
                         stdin=subprocess.PIPE)
        senders = []
        try:
            listener.settimeout(TIMEOUT_S)
            for _ in range(connections):
                sender, _ = listener.accept()
                sender.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                senders.append(sender)
            if READY not in read_until(receiver.stdout, READY, TIMEOUT_S):
                raise RuntimeError("the floor's receiver never said it was ready")
            sends = [sender.send for sender in senders]
            rounds_us = []
            for _ in range(rounds):
                time.sleep(SETTLE_S)
                cpu = time.process_time()
                for send in sends:
                    send(frame)
                rounds_us.append((time.process_time() - cpu) / connections * 1e6)
            time.sleep(SETTLE_S)
        finally:
            for sender in senders:
                sender.close()
            receiver.stdin.close()  # the receiver's signal to report and stop
            try:
                received = int(read_until(receiver.stdout, b"\n", TIMEOUT_S).strip() or 0)
            finally:
                receiver.kill()
                receiver.wait()
                receiver.stdout.close()
    ordered = sorted(rounds_us)
    return {"connections": connections, "size": size, "us_per_send": ordered[len(ordered) // 2],
            "rounds_us": rounds_us, "received_bytes": received, "sent_bytes": rounds * connections * len(frame)}


def receive(port, connections):
    """The other ends: connect, say ready, then read everything in epoll until stdin closes; print the bytes read."""
    die_with_parent()
    from .clients.subscribers import raise_file_limit

    raise_file_limit(connections)
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
                data = key.fileobj.recv(1 << 16)
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
    else:
        print(json.dumps(floor(*[int(value) for value in sys.argv[1:3]])))
