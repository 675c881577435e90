"""The floor under every broadcaster: one bare send per subscriber.

The floor of section 4: one `socket.send` of the same frame to each of N loopback connections, its CPU measured
in a process of its own while another process holds and reads the other ends, as a subscriber would.
Run as `python -m iolab.lessons.long_lived.floor send N B REPEATS` (prints JSON) or `... hold PORT N`.
"""

import asyncio
import json
import socket
import statistics
import sys
import time

from iolab import children, environment
from iolab.contract import LOOPBACK, die_with_parent
from iolab.params import check_range

READY = b"READY"
MODULE = "iolab.lessons.long_lived.floor"  # not __name__: that is "__main__" in the sender
TIMEOUT_S = 60.0  # the whole measurement, 10,000 connections included: far above the few seconds it takes


def send_to_all(sockets, frame):
    """The floor: the same bytes to every subscriber, one system call each, nothing else."""
    for sock in sockets:
        sock.send(frame)


def websocket_frame(payload):
    """A server's unmasked WebSocket text frame (RFC 6455, section 5.2) around `payload`: FIN + opcode 1, length."""
    n = len(payload)
    if n < 126:
        header = bytes([0x81, n])
    elif n < 65536:
        header = bytes([0x81, 126]) + n.to_bytes(2, "big")
    else:
        header = bytes([0x81, 127]) + n.to_bytes(8, "big")
    return header + payload


def measure(n, message_bytes, repeats, timeout_s=TIMEOUT_S):
    """The floor's CPU per subscriber over `n` loopback connections: {"subscribers", "cpu_us_per_send" (median),
    "runs_us" (each repeat's), "frame_bytes"}. Runs in a child process; its own holder is a child of that."""
    check_range("n", n, 1, 20_000)
    check_range("message_bytes", message_bytes, 1, 1 << 20)
    check_range("repeats", repeats, 1, 20)
    environment.raise_file_limit(n + 100)
    process = children.spawn(children.python("-m", MODULE, "send", n, message_bytes, repeats))
    try:
        out, _ = process.communicate(timeout=timeout_s)
    except BaseException:
        process.kill()
        process.wait()
        raise
    if process.returncode != 0:
        raise RuntimeError(f"the floor's sender exited with {process.returncode}: {out.decode(errors='replace')[-500:]}")
    return json.loads(out.decode().strip().splitlines()[-1])


class _Reader(asyncio.Protocol):
    def data_received(self, data):
        pass  # read and dropped: the kernel's buffer is emptied as a subscriber's would be


async def _hold(port, n):
    loop = asyncio.get_running_loop()
    held = [await loop.create_connection(_Reader, LOOPBACK, port) for _ in range(n)]
    sys.stdout.buffer.write(READY + b"\n")
    sys.stdout.flush()
    await loop.run_in_executor(None, sys.stdin.buffer.read)  # until the sender closes our stdin, or dies
    for transport, _ in held:
        transport.close()


def _send(n, message_bytes, repeats):
    environment.raise_file_limit(n + 100)
    listener = socket.create_server((LOOPBACK, 0), backlog=min(n, 4096))
    port = listener.getsockname()[1]
    holder = children.spawn(children.python("-m", MODULE, "hold", port, n), stdin=children.subprocess.PIPE)
    try:
        sockets = []
        listener.settimeout(TIMEOUT_S)
        while len(sockets) < n:
            sock, _ = listener.accept()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sockets.append(sock)
        children.read_until(holder.stdout, READY, TIMEOUT_S)
        frame = websocket_frame(json.dumps({"seq": 0, "t": time.monotonic()}).encode().ljust(message_bytes))
        runs = []
        for _ in range(repeats):
            began = time.thread_time()
            send_to_all(sockets, frame)
            runs.append((time.thread_time() - began) / n * 1e6)
            time.sleep(0.05)  # the holder reads before the next round
        print(json.dumps({"subscribers": n, "frame_bytes": len(frame), "runs_us": runs,
                          "cpu_us_per_send": statistics.median(runs)}))
    finally:
        holder.stdin.close()
        holder.kill()
        holder.wait()


def main(argv):
    die_with_parent()
    if argv[0] == "hold":
        asyncio.run(_hold(int(argv[1]), int(argv[2])))
    else:
        _send(int(argv[1]), int(argv[2]), int(argv[3]))


if __name__ == "__main__":
    main(sys.argv[1:])
