"""Lesson 02's look at the listen backlog: the kernel completes connections while the server's one thread sleeps."""

import socket
import subprocess
import time
from dataclasses import dataclass, field

from iolab import contract


@dataclass(frozen=True)
class QueueReading:
    """The listening socket's accept queue at one moment, as `ss -ltn` prints it: Recv-Q and Send-Q."""

    at_ms: float  # since the blocking request was sent
    waiting: int  # Recv-Q: handshakes the kernel has completed that the server has not accept()ed yet
    limit: int | None  # Send-Q: the backlog the server asked listen() for (None where ss is missing)
    line: str  # what `ss -ltn` printed, or the /proc/net/tcp line it was read from


def listen_queue(port, at_ms=0.0):
    """The QueueReading of the socket listening on 127.0.0.1:`port`, from `ss -ltn` or else /proc/net/tcp; None if none."""
    if contract.find_program("ss"):
        out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, timeout=5).stdout
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[3].endswith(f":{port}"):
                return QueueReading(at_ms, int(fields[1]), int(fields[2]), " ".join(fields[:5]))
    # /proc/net/tcp (iproute2 not installed): for a listening socket (state 0A), rx_queue is its accept queue.
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                return QueueReading(at_ms, int(fields[4].split(":")[1], 16), None, line.strip())
    return None


@dataclass
class Knocks:
    """What happened to `knocks` new connections opened while the server slept in a blocking request."""

    sleep_ms: int
    knocks: int
    connected_ms: list = field(default_factory=list)  # when each connect() returned, since the blocking request
    answered_ms: float = float("nan")  # when the blocking request's answer arrived
    readings: list = field(default_factory=list)  # QueueReading, every few ms until after the answer

    @property
    def most_waiting(self):
        return max((reading.waiting for reading in self.readings), default=0)

    @property
    def waiting_after(self):
        """Recv-Q at the last reading, after the answer: the server woke up and accept()ed them."""
        return self.readings[-1].waiting if self.readings else 0


def knock_while_asleep(host, port, sleep_ms, knocks=5, gap_ms=40, timeout_s=10.0):
    """Send one blocking request (`/sync-sleep?ms=sleep_ms`); while the server sleeps in it, open `knocks` connections,
    `gap_ms` apart, sending nothing on them, and read the listen queue after each and until the answer has come."""
    result = Knocks(sleep_ms, knocks)
    opened = []
    sender = socket.create_connection((host, port), timeout=timeout_s)
    try:
        start = time.perf_counter()
        sender.sendall(f"GET /sync-sleep?ms={sleep_ms} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        sender.setblocking(False)
        deadline = start + timeout_s
        answer = b""
        next_knock = start + sleep_ms / 4000  # let the server read the request and fall asleep first
        while time.perf_counter() < deadline:
            now_ms = (time.perf_counter() - start) * 1000
            if len(opened) < knocks and time.perf_counter() >= next_knock:
                opened.append(socket.create_connection((host, port), timeout=timeout_s))
                result.connected_ms.append((time.perf_counter() - start) * 1000)
                next_knock = time.perf_counter() + gap_ms / 1000
            reading = listen_queue(port, now_ms)
            if reading is not None:
                result.readings.append(reading)
            if b"\r\n\r\n" in answer:
                if len(opened) == knocks and now_ms >= result.answered_ms + 2 * gap_ms:
                    break  # the answer has come, and the readings since show what the server did next
            else:
                try:
                    answer += sender.recv(65536)
                    if b"\r\n\r\n" in answer:
                        result.answered_ms = (time.perf_counter() - start) * 1000
                except BlockingIOError:
                    pass
            time.sleep(0.005)
    finally:
        for connection in opened + [sender]:
            connection.close()
    return result
