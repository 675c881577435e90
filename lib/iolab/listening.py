"""What the kernel says about listening sockets.

Accept queues, backlogs, and connections dropped.
"""

from pathlib import Path

from .children import run
from .contract import find_program


def _read(path: str, default: str | None = None) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return default


def tcp_counter(name: str) -> int | None:
    """A machine-wide TcpExt counter from /proc/net/netstat (Linux), or None where it is unknown."""
    lines = [line.split() for line in (_read("/proc/net/netstat", "") or "").splitlines() if line.startswith("TcpExt:")]
    if len(lines) < 2 or name not in lines[0]:
        return None
    return int(lines[1][lines[0].index(name)])


def listen_drops() -> int | None:
    """Connection attempts this machine's TCP dropped because a listening socket's accept queue was full (Linux's
    TcpExt ListenDrops, for every socket), or None where unknown. Each one waits for TCP to retry: 1 s, then 2 s."""
    return tcp_counter("ListenDrops")


def listen_overflows() -> int | None:
    """TcpExt ListenOverflows: connections dropped, machine-wide, because an accept queue was full; None where unknown."""
    return tcp_counter("ListenOverflows")


def somaxconn() -> int:
    """The kernel's ceiling on any listen() backlog (net.core.somaxconn)."""
    return int((_read("/proc/sys/net/core/somaxconn") or "4096").strip())


def listen_queue(port: int) -> tuple[int, int | None, str] | None:
    """(waiting, backlog, line) of the socket listening on `port`, or None if there is none.

    waiting is Recv-Q, handshakes the kernel has completed that the server has
    not accept()ed yet; backlog is Send-Q, what listen() was given (capped by
    somaxconn); line is what `ss -ltn` printed. Without ss, from /proc/net/tcp
    (state 0A is LISTEN, its rx_queue the accept queue), and backlog is None.
    """
    if find_program("ss"):
        listing = run(["ss", "-ltnH", f"sport = :{port}"], timeout_s=10).stdout
        for line in listing.splitlines():
            fields = line.split()
            if len(fields) >= 4 and fields[0] == "LISTEN" and fields[3].endswith(f":{port}"):
                return int(fields[1]), int(fields[2]), " ".join(fields[:5])
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in (_read(table, "") or "").splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return int(fields[4].split(":")[1], 16), None, line.strip()
    return None


def listen_backlog(port: int) -> int | None:
    """The backlog the kernel gave the listener on `port` (min of what it asked and somaxconn), from `ss`; None without ss."""
    found = listen_queue(port) if find_program("ss") else None
    return found[1] if found else None
