"""Lesson 14's client: short HTTP/1.1 exchanges timed one after another, pipelined or on n sockets; large downloads.

Runs in the kernel on loopback, or as `python -m iolab.lessons.network.exchanges` inside the link's client namespace
(the kernel stays outside it), printing its figures as one JSON line.
"""

import argparse
import json
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from iolab import http1

TIMEOUT_S = 10.0  # every read and connect on a clean link: a link that lost the server fails in seconds, never hangs
# A transfer's reads and section 4's connects, under loss. At 10 % each way a retransmission is lost again one time in
# five, and each loss doubles the wait: a SYN's from 1 s, a segment's from RTT + 200 ms (0.4 s on a 200 ms link).
# Six SYNs lost in a row wait 63 s, seven segments 51 s: each about one time in 100,000.
LOSSY_TIMEOUT_S = 60.0
MOST_EXCHANGES = 1000
REQUEST = b"GET / HTTP/1.1\r\nHost: lab\r\n\r\n"


def connect(host, port, timeout_s=TIMEOUT_S):
    """A connected socket, with the time the connect took (the SYN, the SYN-ACK: one round trip)."""
    started = time.perf_counter()
    sock = socket.create_connection((host, port), timeout=timeout_s)
    return sock, time.perf_counter() - started


def read_answer(sock, pending=b""):
    """Read one HTTP/1.1 answer (iolab.http1 cuts it off by its Content-Length); return what arrived after it (the
    next answer's start). An answer other than a 200 is no figure: it raises, with what the server said."""
    data = pending
    while not (length := http1.answer_length(data)):
        data += receive(sock)
    status = data.split(b" ", 2)[1]
    if status != b"200":
        raise ConnectionError(f"the server answered {data[:length].decode(errors='replace')[-300:]}")
    return data[length:]


def receive(sock):
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the server closed the connection in the middle of an answer")
    return chunk


def one_exchange(sock, parts):
    """Send the request in `parts` (each its own send), wait for the whole answer; the seconds it took."""
    started = time.perf_counter()
    for part in parts:
        sock.sendall(part)
    read_answer(sock)
    return time.perf_counter() - started


def connect_then_request(host, port):
    """(connect seconds, request seconds) on a new connection: a round trip each."""
    sock, connected = connect(host, port)
    with sock:
        return connected, one_exchange(sock, [REQUEST])


def in_sequence(host, port, n):
    """n requests one after another on one new connection, the connect included: seconds."""
    started = time.perf_counter()
    sock, _ = connect(host, port)
    with sock:
        for _ in range(n):
            one_exchange(sock, [REQUEST])
    return time.perf_counter() - started


def pipelined(host, port, n):
    """n requests written at once on one new connection, then their n answers read: seconds, the connect included."""
    started = time.perf_counter()
    sock, _ = connect(host, port)
    with sock:
        sock.sendall(REQUEST * n)
        pending = b""
        for _ in range(n):
            pending = read_answer(sock, pending)
    return time.perf_counter() - started


def on_n_connections(host, port, n):
    """n requests, each on a connection of its own, all opened at once from n threads: seconds until the last."""
    started = time.perf_counter()
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda _: connect_then_request(host, port), range(n)))
    return time.perf_counter() - started


def write_write_read(host, port, exchanges, nodelay):
    """`exchanges` requests on one connection, each sent as two writes (the head, then its last blank line) before
    the read, with Nagle on (nodelay False) or off; seconds of each."""
    sock, _ = connect(host, port)
    with sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(nodelay))
        head, end = REQUEST[:-2], REQUEST[-2:]
        return [one_exchange(sock, [head, end]) for _ in range(exchanges)]


def round_trips(host, port, repeats, n):
    """Section 1's figures: `repeats` connects and requests, then n requests three ways, each `repeats` times."""
    pairs = [connect_then_request(host, port) for _ in range(repeats)]
    return {"connect_s": [c for c, _ in pairs], "request_s": [r for _, r in pairs], "n": n,
            "sequence_s": [in_sequence(host, port, n) for _ in range(repeats)],
            "pipelined_s": [pipelined(host, port, n) for _ in range(repeats)],
            "connections_s": [on_n_connections(host, port, n) for _ in range(repeats)]}


def nagle(host, port, exchanges):
    """Section 6's figures: three connects (the round trip), then write-write-read `exchanges` times with
    TCP_NODELAY on, then off, each on a fresh connection."""
    connects = [connect_then_request(host, port)[0] for _ in range(3)]
    return {"connect_s": connects, "nodelay_s": write_write_read(host, port, exchanges, True),
            "nagle_s": write_write_read(host, port, exchanges, False)}


def transfer(host, port, size, congestion):
    """(seconds, seconds of the second half) from a request for `size` bytes on a new connection to the last byte of
    its answer, the sender using `congestion`; the connect is not counted. The second half is timed on its own: by
    then a sender under loss has left slow start for its steady rate."""
    sock, _ = connect(host, port, LOSSY_TIMEOUT_S)
    with sock:
        request = f"GET /bytes?n={size}&cc={congestion} HTTP/1.1\r\nHost: lab\r\n\r\n".encode()
        started = time.perf_counter()
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += receive(sock)
        head, _, body = data.partition(b"\r\n\r\n")
        if head.split(b" ", 2)[1] != b"200":
            read_answer(sock, data)  # a refusal's whole text, raised
        received, halfway = len(body), None
        while received < size:
            received += len(receive(sock))
            if halfway is None and received >= size / 2:
                halfway = time.perf_counter()
        ended = time.perf_counter()
        return ended - started, ended - (halfway or started)


def transfers(host, port, sizes, repeats, congestion, at_once=1):
    """Section 3 and 4's figures: {size: [[seconds, seconds of the second half] of each of `repeats` transfers]},
    `at_once` of them at a time."""
    with ThreadPoolExecutor(at_once) as pool:
        return {str(size): list(pool.map(transfer, *zip(*[(host, port, size, congestion)] * repeats)))
                for size in sizes}


def requests(host, port, count, wait_for=0):
    """`count` short requests, one after another, each on a new connection: the seconds each took, its connect
    included (a server with no free worker leaves it waiting in the kernel's queue). With `wait_for`, they run
    twice: first at once, printing those figures as a JSON line; then once `wait_for` connections to `port` are
    open here (the slow clients', seen from the server's side)."""
    found = [sum(connect_then_request(host, port)) for _ in range(count)]
    if not wait_for:
        return found
    print(json.dumps(found), flush=True)
    deadline = time.monotonic() + TIMEOUT_S
    while established(port) < wait_for:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{wait_for} connections to port {port} were not open after {TIMEOUT_S} s")
        time.sleep(0.002)
    return [sum(connect_then_request(host, port)) for _ in range(count)]


def established(port):
    """Open TCP connections (IPv4) whose local port is `port`, in this network namespace, from /proc/net/tcp."""
    with open("/proc/net/tcp") as table:
        rows = [line.split() for line in table.readlines()[1:]]
    return sum(row[1].endswith(f":{port:04X}") and row[3] == "01" for row in rows)  # 01: ESTABLISHED


def downloads(host, port, size, clients, most, alone=0):
    """`alone` downloads of `size` bytes one at a time; then `clients` clients at once, each fetching it again and
    again on new connections until this process's stdin closes (at most `most` times). The seconds of each download
    (its connect not counted) and, for the clients, from their start until stdin closed and each had one answer:
    downloads still under way then are left unfinished (main() exits at once)."""
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    first = [transfer(host, port, size, "bbr") for _ in range(alone)]
    done = [[] for _ in range(clients)]

    def one_client(mine):
        while len(mine) < most and not (stop.is_set() and mine):
            mine.append(transfer(host, port, size, "bbr")[0])
    started = time.perf_counter()
    workers = [threading.Thread(target=one_client, args=(mine,), daemon=True) for mine in done]
    for worker in workers:
        worker.start()
    while not (stop.is_set() and all(done)) and any(worker.is_alive() for worker in workers):
        time.sleep(0.005)
    if not all(done):
        raise ConnectionError("a slow client got no whole answer (its error is on stderr above)")
    return {"alone_s": first, "wall_s": time.perf_counter() - started, "transfer_s": [s for mine in done for s in mine]}


def connects(host, port, count, at_once):
    """`count` connects, `at_once` of them at a time: the seconds each took (a lost SYN waits out the timeout). One
    that never connected counts its LOSSY_TIMEOUT_S: it met lost SYNs too."""
    def timed(_):
        try:
            sock, took = connect(host, port, LOSSY_TIMEOUT_S)
        except TimeoutError:
            return LOSSY_TIMEOUT_S
        sock.close()
        return took
    with ThreadPoolExecutor(at_once) as pool:
        return list(pool.map(timed, range(count)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["round_trips", "nagle", "transfers", "connects", "requests", "downloads"])
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--sizes", default="20000", help="bytes of each transfer, comma-separated")
    parser.add_argument("--cc", default="reno", help="the sender's congestion control for transfers")
    parser.add_argument("--at-once", type=int, default=1, help="connects, transfers or clients in flight at once")
    parser.add_argument("--wait-for", type=int, default=0, help="requests: again once this many connections are open")
    parser.add_argument("--alone", type=int, default=0, help="downloads: this many one at a time first")
    args = parser.parse_args(argv)
    if not (1 <= args.repeats <= MOST_EXCHANGES and 1 <= args.n <= 100 and 1 <= args.at_once <= 50
            and 0 <= args.wait_for <= 50 and 0 <= args.alone <= 50):
        parser.error(f"--repeats must be 1 to {MOST_EXCHANGES}, --n 1 to 100, --at-once, --wait-for and --alone"
                     " 0 to 50")
    if args.what == "round_trips":
        found = round_trips(args.host, args.port, args.repeats, args.n)
    elif args.what == "nagle":
        found = nagle(args.host, args.port, args.repeats)
    elif args.what == "transfers":
        sizes = [int(size) for size in args.sizes.split(",")]
        found = transfers(args.host, args.port, sizes, args.repeats, args.cc, args.at_once)
    elif args.what == "requests":
        found = requests(args.host, args.port, args.repeats, args.wait_for)
    elif args.what == "downloads":
        found = downloads(args.host, args.port, int(args.sizes), args.at_once, args.repeats, args.alone)
    else:
        found = connects(args.host, args.port, args.repeats, args.at_once)
    print(json.dumps(found), flush=True)
    if args.what == "downloads":
        os._exit(0)  # at once: the slow clients' downloads still under way are not waited for
    return 0


if __name__ == "__main__":
    sys.exit(main())
