"""The connection-holding client, run in its own process.

Open N keep-alive connections, keep them idle, time fresh requests beside them.

Started by `iolab.lessons.c10k.holding` as `python -m iolab.lessons.c10k.client SPEC`
(SPEC is JSON). It grows its connections step by step, in the order of
`spec["steps"]`. After each step it writes one JSON line to stdout and waits
for the parent to say `next` (or `stop`) on stdin, still watching every held
connection, so the parent can measure the server while they are all open. End
of file on stdin, like `stop`, closes every socket and ends the process; it dies
with its parent as every child of the lab does. Standard library, iolab.contract
and iolab.http1 only.

It does not speak the load clients' frames (iolab.clients.wire) on purpose:
those carry one row per request after a single go, and this conversation is a
step at a time, the notebook measuring the server between steps while every
connection is held.
"""

import errno
import json
import os
import resource
import select
import selectors
import socket
import sys
import time

from iolab.http1 import HEADER_END, answer_length, closes, get_request

# socket.IP_BIND_ADDRESS_NO_PORT (Linux 4.2+): bind() to a source address without taking a port
# yet, so connect() can pick one per destination (a port is then shared by every 4-tuple it can).
IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)
# Errors that come from this machine, not the server: once one happens, opening more only repeats it.
LOCAL_ERRORS = {errno.EMFILE, errno.ENFILE, errno.EADDRNOTAVAIL, errno.EADDRINUSE, errno.ENOBUFS, errno.ENOMEM}
CLOSE_ANSWER = "Connection: close"  # the failure kind of an answer that refuses to keep the connection alive
STOP_AFTER_FAILURES = 10  # the server has hit a limit: give up opening after this many connections fail
# A fresh connection still in the server's accept queue after this long, unanswered, is one the server will not take
# (gunicorn's gthread worker at worker_connections stops accepting until one closes): waiting out the answer timeout
# would only add its 10 s. A server that accepts answers in milliseconds, even beside 1,000 held connections.
UNACCEPTED_S = 2.0

# Message kinds on stdout, one JSON object a line; `holding` reads them by these names.
STEP = "step"  # a step is held (or has failed): what it took, what went wrong
CLOSED = "closed"  # every socket is closed; the last line


def error_name(number):
    return errno.errorcode.get(number, f"errno {number}")


class Connection:
    """One connection's progress: connecting, then its first request sent, then answered and held."""

    __slots__ = ("sock", "began", "connected_at", "answered_at", "state", "buffer")

    def __init__(self, sock, began):
        self.sock = sock
        self.began = began
        self.connected_at = self.answered_at = None
        self.state = "connecting"
        self.buffer = b""


class Holder:
    """Opens connections, keeps them, and accounts for every one: held, failed (and why), or closed by the server."""

    def __init__(self, spec):
        self.spec = spec
        self.server = (spec["host"], spec["port"])
        self.request = get_request(f"http://{spec['host']}:{spec['port']}{spec['path']}")
        self.selector = selectors.EpollSelector() if hasattr(selectors, "EpollSelector") else selectors.DefaultSelector()
        self.pending = {}  # fd -> Connection, not answered yet
        self.held = {}  # fd -> Connection, answered and idle
        self.opened = 0  # sockets created, over the whole run (it picks the source address and port)
        self.closed_by_server = 0  # held connections the server closed, over the whole run
        self.shortest_idle_close_s = None  # the least time a connection sat idle before the server closed it
        self.reset_step()

    def reset_step(self):
        self.errors = {}
        self.first_error = None
        self.closed_before_step = self.closed_by_server
        self.failures = 0
        self.connect_ms = []
        self.answer_ms = []

    # --- opening -----------------------------------------------------------------------------

    def source(self):
        """(address, port) to bind the next socket to, or None to let the kernel choose both."""
        sources = self.spec["sources"]
        if not sources:
            return None
        address = sources[self.opened % len(sources)]
        ports = self.spec.get("source_ports")
        if ports:
            low, high = ports
            # Every source address walks the same narrow range, as the kernel walks ip_local_port_range.
            return address, low + (self.opened // len(sources)) % (high - low + 1)
        return address, 0

    def open_one(self):
        """Start one non-blocking connect; a local error (no file descriptor, no port) is recorded and returned."""
        began = time.perf_counter()
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except OSError as error:
            return self.fail(None, error.errno, str(error))
        self.opened += 1
        try:
            code = self.connect(sock)
        except OSError as error:
            sock.close()
            return self.fail(None, error.errno, str(error))
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            return self.fail(None, code, os.strerror(code))
        connection = Connection(sock, began)
        self.pending[sock.fileno()] = connection
        self.selector.register(sock, selectors.EVENT_WRITE, connection)
        return None

    def connect(self, sock):
        """Point `sock` at the server without waiting: bind a source address (a port too, if named), then connect."""
        source = self.source()
        if source is not None:
            if source[1]:
                # An explicit port: SO_REUSEADDR lets several sockets bind it, as long as each goes to a
                # different destination; the same 4-tuple twice is refused by connect() with EADDRNOTAVAIL.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            else:
                sock.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            sock.bind(source)
        sock.setblocking(False)
        return sock.connect_ex(self.server)

    def fail(self, connection, code, message):
        """Count a failure by kind; the first one of a step is kept whole, with how many were held when it came."""
        kind = error_name(code) if isinstance(code, int) else code
        self.errors[kind] = self.errors.get(kind, 0) + 1
        self.failures += 1
        if self.first_error is None:
            # Held: answered in this run and not yet closed by the server when trouble began (a dying
            # server closes the ones we held in the same instant as it resets the rest).
            held = len(self.held) + self.closed_by_server - self.closed_before_step
            self.first_error = {"kind": kind, "message": message, "held": held,
                                "open": len(self.held) + len(self.pending) - (connection is not None)}
        if connection is not None:
            self.pending.pop(connection.sock.fileno(), None)
            self.selector.unregister(connection.sock)
            connection.sock.close()
        return kind if isinstance(code, int) and code in LOCAL_ERRORS else None

    # --- events ------------------------------------------------------------------------------

    def on_event(self, connection, mask):
        now = time.perf_counter()
        sock = connection.sock
        if connection.state == "connecting":
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self.fail(connection, code, os.strerror(code))
                return
            connection.connected_at = now
            self.connect_ms.append((now - connection.began) * 1000)
            try:
                sock.send(self.request)  # a few dozen bytes into an empty buffer: always taken whole
            except OSError as error:  # reset the moment it was accepted
                self.fail(connection, error.errno, str(error))
                return
            connection.state = "sent"
            self.selector.modify(sock, selectors.EVENT_READ, connection)
            return
        try:
            data = sock.recv(65536)
        except (ConnectionResetError, ConnectionAbortedError) as error:
            data, reset = b"", error
        else:
            reset = None
        if connection.state == "held":
            if not data:  # the server closed an idle connection we were holding
                self.closed_by_server += 1
                idle = now - connection.answered_at
                self.shortest_idle_close_s = min(idle, self.shortest_idle_close_s or idle)
                self.held.pop(sock.fileno(), None)
                self.selector.unregister(sock)
                sock.close()
            return
        if not data:
            self.fail(connection, errno.ECONNRESET if reset else "closed before answering",
                      str(reset or "the server closed the connection without answering"))
            return
        connection.buffer += data
        try:
            complete = answer_length(connection.buffer)
        except ValueError as error:
            self.fail(connection, "bad answer", str(error))
            return
        if complete:
            if closes(connection.buffer, 0, connection.buffer.find(HEADER_END)):  # answered, but not kept
                self.fail(connection, CLOSE_ANSWER, "the server answered with 'Connection: close'")
                return
            connection.state, connection.buffer, connection.answered_at = "held", b"", now
            self.answer_ms.append((now - connection.began) * 1000)
            fd = sock.fileno()
            self.held[fd] = self.pending.pop(fd)

    def expire(self, now):
        """Fail every connection that waited too long to connect or to be answered."""
        for connection in list(self.pending.values()):
            if connection.state == "connecting" and now - connection.began > self.spec["connect_timeout_s"]:
                self.fail(connection, "connect timeout",
                          f"no connection within {self.spec['connect_timeout_s']} s (the SYN was never answered)")
            elif connection.state == "sent" and now - connection.connected_at > self.spec["answer_timeout_s"]:
                self.fail(connection, "no answer",
                          f"connected, but no answer within {self.spec['answer_timeout_s']} s")

    def poll(self, timeout):
        for key, mask in self.selector.select(timeout):
            if key.data is not None:
                self.on_event(key.data, mask)
        self.expire(time.perf_counter())

    # --- a step ------------------------------------------------------------------------------

    def grow_to(self, target):
        """Open connections until `target` are held, a limit is hit, or the step's deadline passes."""
        began = time.perf_counter()
        deadline = began + self.spec["step_deadline_s"]
        last_answer = began
        local_error = None
        closed_before = self.closed_by_server
        while time.perf_counter() < deadline:
            room = min(self.spec["window"] - len(self.pending), target - len(self.held) - len(self.pending))
            # A server that closes connections we hold would only have them reopened: that is its limit.
            gave_up = local_error or self.failures >= STOP_AFTER_FAILURES or self.closed_by_server > closed_before
            while room > 0 and not gave_up:
                local_error = self.open_one()
                gave_up = local_error or self.failures >= STOP_AFTER_FAILURES
                room -= 1
            if not self.pending and (gave_up or len(self.held) >= target):
                break
            answered = len(self.answer_ms)
            self.poll(0.05)
            if len(self.answer_ms) > answered:
                last_answer = time.perf_counter()
        timed_out = bool(self.pending)
        for connection in list(self.pending.values()):
            self.fail(connection, "step deadline", f"still pending after {self.spec['step_deadline_s']} s")
        return {"accept_s": last_answer - began, "timed_out": timed_out, "local_error": local_error}

    def fresh_requests(self):
        """Latencies (ms) of requests sent one after another on one more connection, while the others are held."""
        count = self.spec["fresh_requests"]
        if not count:
            return [], None
        latencies = []
        try:
            with socket.create_connection(self.server, timeout=self.spec["answer_timeout_s"]) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                for index in range(count):
                    began = time.perf_counter()
                    sock.sendall(self.request)
                    if index == 0:
                        self.wait_until_accepted(sock, began)
                    buffer = b""
                    while not answer_length(buffer):
                        chunk = sock.recv(65536)
                        if not chunk:
                            raise ConnectionResetError("the server closed the fresh connection")
                        buffer += chunk
                    latencies.append((time.perf_counter() - began) * 1000)
        except (OSError, ValueError) as error:
            return latencies, f"{type(error).__name__}: {error}"
        return latencies, None

    def wait_until_accepted(self, sock, began):
        """Wait for the first answer on the fresh connection to start (within the answer timeout); a TimeoutError as
        soon as the server has left it in its accept queue for UNACCEPTED_S."""
        poller = select.poll()  # not select(): a descriptor past 1,023 is out of its reach
        poller.register(sock, select.POLLIN)
        while not poller.poll(250):
            waited = time.perf_counter() - began
            if waited >= self.spec["answer_timeout_s"]:
                raise TimeoutError("timed out")
            if waited >= UNACCEPTED_S and accept_queue(self.server[1]):
                raise TimeoutError(f"not accepted: the server left the connection in its accept queue for"
                                   f" {waited:.1f} s, unanswered")

    def report(self, target, grown):
        fresh_ms, fresh_error = self.fresh_requests() if self.held or target == 0 else ([], None)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        message = {
            "kind": STEP,
            "target": target,
            "held": len(self.held),
            "accept_s": grown["accept_s"],
            "timed_out": grown["timed_out"],
            "errors": self.errors,
            "first_error": self.first_error,
            "closed_by_server": self.closed_by_server,
            "shortest_idle_close_s": self.shortest_idle_close_s,
            "connect_ms": [round(ms, 3) for ms in self.connect_ms],
            "answer_ms": [round(ms, 3) for ms in self.answer_ms],
            "fresh_ms": [round(ms, 4) for ms in fresh_ms],
            "fresh_error": fresh_error,
            "client_max_rss_kb": usage.ru_maxrss,
            "client_nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
        }
        write(message)

    def wait_for_parent(self):
        """Keep watching the held connections until the parent says `next` or `stop` (or goes away)."""
        deadline = time.monotonic() + self.spec["hold_s"]
        line = b""
        while time.monotonic() < deadline:
            for key, _ in self.selector.select(min(0.2, max(0.0, deadline - time.monotonic()))):
                if key.data is None:  # stdin
                    chunk = os.read(0, 4096)
                    if not chunk:
                        return "stop"
                    line += chunk
                    if b"\n" in line:
                        return line.split(b"\n", 1)[0].decode().strip() or "stop"
                else:
                    self.on_event(key.data, selectors.EVENT_READ)
        return "stop"  # held as long as we were allowed to: bounded even if the parent forgets us

    def close_all(self):
        for table in (self.pending, self.held):
            for connection in table.values():
                self.selector.unregister(connection.sock)
                connection.sock.close()
            table.clear()
        self.selector.close()


def write(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def accept_queue(port):
    """Connections waiting to be accepted on the socket listening on `port`, from /proc/net/tcp (state 0A is LISTEN, its
    rx_queue the accept queue); 0 where none is found."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as listing:
                for line in listing:
                    fields = line.split()
                    if fields[3] == "0A" and fields[1].endswith(f":{port:04X}"):
                        return int(fields[4].split(":")[1], 16)
        except OSError:
            continue
    return 0


def set_file_limit(wanted):
    """Raise our soft RLIMIT_NOFILE to the hard limit, or set it to `wanted` (to show what a low one does)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new_soft = hard if wanted is None else min(wanted, hard)
    if new_soft != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (new_soft, hard))


def main():
    from iolab.contract import check_loopback, die_with_parent

    die_with_parent()
    spec = json.loads(sys.argv[1])
    check_loopback(spec["host"])
    for address in spec["sources"]:
        check_loopback(address)
    set_file_limit(spec["nofile"])
    holder = Holder(spec)
    holder.selector.register(0, selectors.EVENT_READ, None)  # the parent's commands
    try:
        for target in [0, *spec["steps"]]:
            holder.reset_step()
            grown = holder.grow_to(target)
            holder.report(target, grown)
            # Wait even after a step fell short: the parent weighs the server while it still holds what it got.
            if holder.wait_for_parent() != "next" or len(holder.held) < target:
                break
    finally:
        holder.close_all()
        open_fds = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
        write({"kind": CLOSED, "closed_by_server": holder.closed_by_server, "open_fds": open_fds})


if __name__ == "__main__":
    main()
