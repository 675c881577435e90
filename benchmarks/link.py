"""What the lab's link does: round trip, slow start, loss and the SYN timeout, each against its prediction.

It builds a link (iolab.link) and runs a small probe of its own on both sides: a server in the server namespace
that sends what it is asked with the congestion control it is asked for (set on the *server's* socket: the
sender's choice decides), and a client in the client namespace that times connects, one-byte round trips and
transfers. Printed: measured RTT and connect time against the set RTT; rounds for 1 MB against slow start from
an initial window of 10 segments; reno, cubic and bbr goodput at 2 % loss each way against Mathis et al.
((MSS/RTT)·sqrt(3/(2bp)), b = 2 for delayed ACKs); the share of connects taking 1 s or more at 5 % loss
against 1 - (1 - p)^2 (a SYN or its SYN-ACK lost waits out the initial RTO, RFC 6298); the delay line's CPU per
frame, at the transfers' pace and under a flood of datagrams, and the clean link's bulk goodput with the delay line's
share of a CPU meanwhile (and the frames it could not keep up with).
TCP_CONGESTION may set cubic only with CAP_NET_ADMIN over the socket's namespace: inside the link that
is root, or an ordinary user who owns the link's user namespace; outside it, root only (the figures say which
this user may set out there). The last line is JSON.

    flock /tmp/iolab-measure.lock .venv/bin/python benchmarks/link.py [--rtt-ms 40] [--quick]
"""

import argparse
import concurrent.futures
import json
import math
import socket
import statistics
import sys
import threading
import time

from iolab import link
from iolab.children import read_until, run
from iolab.contract import die_with_parent

MSS = 1448  # 1500-byte frames, 20 + 20 bytes of IP and TCP headers, 12 of timestamps
INITIAL_WINDOW = 10
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)


# --- The probe's server (in the server namespace) ---------------------------------------------------------

def serve(host: str) -> None:
    """Answer `PING` with one byte per byte and `SEND n cc` with n bytes sent under congestion control cc."""
    die_with_parent()
    listener = socket.create_server((host, 0), backlog=1024)
    print(f"LISTENING {host}:{listener.getsockname()[1]}", flush=True)
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=answer, args=(connection,), daemon=True).start()


def first_line(connection):
    """The request line, read a byte at a time: a buffered reader would swallow the bytes a PING sends next."""
    line = b""
    while not line.endswith(b"\n") and (byte := connection.recv(1)):
        line += byte
    return line.decode()


def answer(connection):
    with connection:
        connection.settimeout(120)
        request = first_line(connection).split()
        if not request:
            return
        if request[0] == "PING":
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while (byte := connection.recv(1)):
                connection.sendall(byte)
        elif request[0] == "SEND":
            size, congestion = int(request[1]), request[2]
            try:
                connection.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, congestion.encode())
            except OSError as error:
                connection.sendall(f"REFUSED {error}\n".encode())
                return
            connection.sendall(b"OK\n" + bytes(size))


# --- The probe's client (in the client namespace) ----------------------------------------------------------

def probe(host: str, port: int, what: str, count: int, size: int, congestion: str) -> dict:
    if what == "ping":
        return ping(host, port, count)
    if what == "send":
        return transfer(host, port, size, congestion)
    if what == "blast":
        return blast(host, count, size)
    return connects(host, port, count)


def blast(host, count, size):
    """Send `count` datagrams of `size` bytes to the discard port as fast as this process can: the delay line's load."""
    began = time.perf_counter()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        for _ in range(count):
            sender.sendto(bytes(size), (host, 9))
    return {"seconds": time.perf_counter() - began}


def ping(host, port, count):
    began = time.perf_counter()
    with socket.create_connection((host, port), timeout=10) as connection:
        connect_s = time.perf_counter() - began
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.sendall(b"PING\n")
        round_trips = []
        for _ in range(count):
            sent = time.perf_counter()
            connection.sendall(b"x")
            connection.recv(1)
            round_trips.append(time.perf_counter() - sent)
    return {"connect_s": connect_s, "round_trips_s": round_trips}


def transfer(host, port, size, congestion):
    with socket.create_connection((host, port), timeout=60) as connection:
        sent = time.perf_counter()
        connection.sendall(f"SEND {size} {congestion}\n".encode())
        reader = connection.makefile("rb")
        head = reader.readline().decode().strip()
        if head != "OK":
            return {"refused": head}
        got = 0
        while got < size:
            chunk = reader.read1(1 << 20)
            if not chunk:
                break
            got += len(chunk)
    return {"seconds": time.perf_counter() - sent, "bytes": got}


def connects(host, port, count):
    def one(_):
        began = time.perf_counter()
        try:
            with socket.create_connection((host, port), timeout=10):
                return time.perf_counter() - began
        except OSError:
            return None

    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        return {"connects_s": list(pool.map(one, range(count)))}


# --- The measurements, from the notebook's side -------------------------------------------------------------

def run_probe(path, port, what, count=0, size=0, congestion="bbr"):
    argv = [sys.executable, __file__, "--probe", path.server_host, str(port), what, str(count), str(size), congestion]
    done = run(path.argv("client", argv), 300)
    if done.returncode != 0:
        raise RuntimeError(f"the probe failed: {done.stderr}")
    return json.loads(done.stdout)


def round_trips(path, port, rtt_ms):
    rtts = sorted(run_probe(path, port, "ping", count=30)["round_trips_s"])
    connect_s = sorted(run_probe(path, port, "connect", count=20)["connects_s"])
    return {"set_rtt_ms": rtt_ms, "rtt_median_ms": round(statistics.median(rtts) * 1000, 2),
            "rtt_min_ms": round(rtts[0] * 1000, 2), "rtt_max_ms": round(rtts[-1] * 1000, 2),
            "connect_median_ms": round(statistics.median(connect_s) * 1000, 2)}


def slow_start(path, port, rtt_s, size=1_000_000, repeats=3):
    times = [run_probe(path, port, "send", size=size, congestion="reno")["seconds"] for _ in range(repeats)]
    predicted = math.ceil(math.log2(size / (INITIAL_WINDOW * MSS) + 1))
    return {"transfer_bytes": size, "transfer_s": [round(t, 4) for t in times],
            "rounds_measured": round(statistics.median(times) / rtt_s, 2), "rounds_predicted_iw10": predicted}


def goodput_under_loss(path, port, rtt_s, loss, size):
    path.set(loss_percent=loss * 100)
    mathis = MSS / rtt_s * math.sqrt(3 / (2 * 2 * loss))
    rows = {}
    for congestion in ("reno", "cubic", "bbr"):
        measured = run_probe(path, port, "send", size=size, congestion=congestion)
        if "refused" in measured:
            rows[congestion] = f"refused: {measured['refused']}"
        else:
            rows[congestion] = round(measured["bytes"] / measured["seconds"] / 1e6, 3)
    path.set(loss_percent=0)
    return {"loss": loss, "goodput_mb_s": rows, "mathis_b2_mb_s": round(mathis / 1e6, 3), "transfer_bytes": size}


def syn_timeouts(path, port, loss, count):
    path.set(loss_percent=loss * 100)
    measured = run_probe(path, port, "connect", count=count)["connects_s"]
    path.set(loss_percent=0)
    done = [seconds for seconds in measured if seconds is not None]
    slow = sum(seconds >= 1.0 for seconds in done)
    return {"loss": loss, "connects": count, "failed": count - len(done), "share_at_least_1s": round(slow / count, 3),
            "predicted_share": round(1 - (1 - loss) ** 2, 3)}


def capacity(path, count=20_000, size=1000):
    """The delay line under a flood of frames: what it read, what the kernel dropped because it fell behind, and its CPU
    per frame when busy (each wake-up then moves many frames)."""
    before = path.delay_line_usage()
    sent_s = run_probe(path, 0, "blast", count=count, size=size)["seconds"]
    time.sleep(path.spec.rtt_ms / 1000 + 0.1)  # the last frames leave
    after = path.delay_line_usage()
    return {"offered_frames": count, "offered_per_s": round(count / sent_s), **cost(before, after),
            "overflowed": after.overflowed - before.overflowed}


def clean_goodput(path, port, size):
    """The goodput of one bulk transfer on the clean link (bbr), and the delay line's share of a CPU meanwhile: the
    ceiling of what the link can play, and whether the delay line or TCP set it."""
    before = path.delay_line_usage()
    measured = run_probe(path, port, "send", size=size, congestion="bbr")
    after = path.delay_line_usage()
    return {"transfer_bytes": size, "goodput_mb_s": round(measured["bytes"] / measured["seconds"] / 1e6, 2),
            "delay_line_cpu_share": round((after.cpu_s - before.cpu_s) / measured["seconds"], 2),
            "overflowed": after.overflowed - before.overflowed}


def congestion_outside():
    """Which congestion controls this user may set on a socket outside the link (cubic needs CAP_NET_ADMIN there)."""
    allowed = {}
    for congestion in ("reno", "cubic", "bbr"):
        with socket.socket() as probe_socket:
            try:
                probe_socket.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, congestion.encode())
                allowed[congestion] = "allowed"
            except OSError as error:
                allowed[congestion] = f"refused: {error.strerror}"
    return allowed


def cost(before, after):
    """The delay line's CPU per frame over the transfers between two readings of its usage."""
    cpu_s, packets = after.cpu_s - before.cpu_s, after.packets - before.packets
    return {"cpu_s": round(cpu_s, 3), "packets": packets, "dropped": after.dropped - before.dropped,
            "cpu_us_per_packet": round(cpu_s / max(packets, 1) * 1e6, 2)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt-ms", type=float, default=40.0)
    parser.add_argument("--quick", action="store_true", help="smaller transfers and fewer connects")
    args = parser.parse_args()
    reason = link.why_not()
    if reason:
        print(json.dumps({"skipped": reason}))
        return
    began = time.perf_counter()
    with link.build(link.LinkSpec(rtt_ms=args.rtt_ms)) as path:
        built_s = time.perf_counter() - began
        server = path.spawn("server", [sys.executable, __file__, "--serve", path.server_host])
        try:
            port = int(read_until(server.stdout, b"\n", 10).split(b":")[-1])
            figures = {"mode": path.mode, "build_s": round(built_s, 3), "congestion_outside_link": congestion_outside()}
            figures |= round_trips(path, port, args.rtt_ms)
            print(figures, flush=True)
            rtt_s = figures["rtt_median_ms"] / 1000
            figures["slow_start"] = slow_start(path, port, rtt_s)
            print(figures["slow_start"], flush=True)
            figures["clean"] = clean_goodput(path, port, 5_000_000 if args.quick else 20_000_000)
            print(figures["clean"], flush=True)
            before = path.delay_line_usage()
            figures["loss"] = goodput_under_loss(path, port, rtt_s, 0.02, 1_000_000 if args.quick else 3_000_000)
            print(figures["loss"], flush=True)
            figures["delay_line"] = cost(before, path.delay_line_usage())
            figures["capacity"] = capacity(path, 5_000 if args.quick else 20_000)
            print(figures["capacity"], flush=True)
            figures["syn"] = syn_timeouts(path, port, 0.05, 100 if args.quick else 400)
            print(figures["syn"], flush=True)
        finally:
            server.kill()
            server.wait()
    print(json.dumps(figures))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(sys.argv[2])
    elif sys.argv[1:2] == ["--probe"]:
        host, port, what, count, size, congestion = sys.argv[2:8]
        print(json.dumps(probe(host, int(port), what, int(count), int(size), congestion)))
    else:
        main()
