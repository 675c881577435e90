"""The server contract, written once for the launcher and every server in servers/ (standard library only)."""

import argparse
import ctypes
import glob
import ipaddress
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any, cast
from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"
# RFC 2544's benchmarking range: the lab's addresses inside the network namespaces it builds itself (iolab.link),
# allowed only there. A process learns its namespace's identity from LAB_NETNS_VARIABLE, set by iolab.link, and
# takes the range only while /proc/self/ns/net still reads the same: anywhere else it could reach a real network.
LAB_RANGE = ipaddress.IPv4Network("198.18.0.0/15")
LAB_NETNS_VARIABLE = "IOLAB_LAB_NETNS"
PARENT_ENV = "IOLAB_PARENT_PID"  # set by iolab.children.spawn, so a child knows whom it must not outlive
MAX_MS = 60_000  # a single request may ask for at most a minute of sleep or CPU
HELLO_BODY = "hello world\n"  # what `/` answers on every server, nginx included
# File descriptors a process of the lab holds besides its connections (stdio, pipes, epoll, Python's own
# files): what every check of a run's size against RLIMIT_NOFILE leaves aside, client or server.
FDS_BESIDES_CONNECTIONS = 64
_PR_SET_PDEATHSIG = 1

# --- The limits every server the lab wrote keeps against careless or hostile clients ---------------
# Past them a request gets 431, 413 or 408 and its connection is closed (tests/test_hostile_http.py,
# tests/test_slow_clients.py). nginx's defaults, for scale: 8 KiB header buffers, 1 MiB bodies, 60 s.
MAX_HEAD_BYTES = 8 * 1024  # request line plus headers
MAX_BODY_BYTES = 1024 * 1024  # no route reads a body; a larger one is refused rather than buffered
# A test may shorten both timeouts for the servers it starts (their environment's IOLAB_REQUEST_TIMEOUT_S, in
# seconds), so that waiting one out takes seconds, not tens of them; never longer, and never in a lesson.
REQUEST_TIMEOUT_VARIABLE = "IOLAB_REQUEST_TIMEOUT_S"
DEFAULT_REQUEST_TIMEOUT_S = 10.0


def request_timeout_s(environ: Mapping[str, str] = os.environ) -> float:
    """The head and body timeouts: DEFAULT_REQUEST_TIMEOUT_S, or the shorter one $IOLAB_REQUEST_TIMEOUT_S gives."""
    text = environ.get(REQUEST_TIMEOUT_VARIABLE)
    if text is None:
        return DEFAULT_REQUEST_TIMEOUT_S
    try:
        seconds: float | None = float(text)
    except ValueError:
        seconds = None
    if seconds is None or not 0 < seconds <= DEFAULT_REQUEST_TIMEOUT_S:
        raise ValueError(f"{REQUEST_TIMEOUT_VARIABLE} must be a number of seconds above 0 and at most"
                         f" {DEFAULT_REQUEST_TIMEOUT_S:g}, got {text!r}")
    return seconds


# From a request's first byte to the end of its head (a slowloris sends it a byte at a time).
HEAD_TIMEOUT_S = request_timeout_s()
BODY_TIMEOUT_S = request_timeout_s()  # from the end of the head to the end of the body it announced
# The reason phrase of each status the lab's own servers answer, RFC 9110's (Python 3.11's http.HTTPStatus
# still calls 413 by its old name, "Request Entity Too Large").
REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    408: "Request Timeout",
    413: "Content Too Large",
    414: "URI Too Long",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
}


# --- The loopback rule --------------------------------------------------------------------------

def in_lab_namespace() -> bool:
    """True inside a network namespace iolab.link built: the one $IOLAB_LAB_NETNS names is the one we are in,
    and no IPv4 route here leads outside LAB_RANGE (no default route, no other network), so nothing sent to the
    range can leave the lab's own interfaces."""
    expected = os.environ.get(LAB_NETNS_VARIABLE)
    if not expected:
        return False
    try:
        return os.readlink("/proc/self/ns/net") == expected and _routes_stay_in_lab_range()
    except OSError:
        return False


def _routes_stay_in_lab_range() -> bool:
    with open("/proc/net/route") as table:  # this namespace's IPv4 routes, addresses in little-endian hex
        rows = [line.split() for line in table.read().splitlines()[1:] if line.strip()]
    for row in rows:
        destination, mask = (ipaddress.IPv4Address(bytes.fromhex(field)[::-1]) for field in (row[1], row[7]))
        if not ipaddress.IPv4Network(f"{destination}/{mask}").subnet_of(LAB_RANGE):
            return False
    return True


def check_loopback(host: str, lab: bool | None = None) -> str:
    """Refuse anything but a loopback address: the lab never listens on, or sends to, a network.

    The one exception is LAB_RANGE inside a namespace the lab built: where `lab` says so (the launcher, which
    starts the process there), or, when `lab` is None, where in_lab_namespace() finds this process is in one.
    """
    name = LOOPBACK if host == "localhost" else host
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(name)
    except ValueError:
        address = None
    if address is not None and address.version == 4 and address in LAB_RANGE:
        if lab if lab is not None else in_lab_namespace():
            return host
        raise ValueError(f"host {host!r} is in {LAB_RANGE}, which the lab uses only inside network namespaces it"
                         " built itself (iolab.link: pass link=path); outside them it could reach a real network")
    loopback = address is not None and address.is_loopback
    if not loopback:
        raise ValueError(f"host must be a loopback address (127.0.0.0/8, ::1 or localhost), got {host!r}")
    return host


def check_loopback_url(url: str, name: str, scheme: str, path: str, lab: bool | None = None) -> str:
    """`url` when it is scheme://HOST:PORT`path` with HOST a loopback address; a ValueError naming `name` otherwise.

    `path` only shows the shape in the message ("/path", "/0"); the lab never sends to a network.
    """
    parts = urlsplit(url)
    try:
        well_formed = parts.scheme == scheme and parts.hostname and parts.port
    except ValueError:  # a port that is not a number, or out of range
        well_formed = False
    if not well_formed:
        raise ValueError(f"{name} must look like {scheme}://{LOOPBACK}:PORT{path}, got {url!r}")
    try:
        check_loopback(cast(str, parts.hostname), lab)  # well formed: it has one
    except ValueError as error:
        raise ValueError(f"{name} {url!r}: {error}") from None
    return url


# --- The LISTENING line: the only thing a server ever writes to stdout ----------------------------

_LISTENING = re.compile(r"^LISTENING (?P<host>[^\s]+):(?P<port>\d+)$")


def listening_line(host: str, port: int) -> str:
    return f"LISTENING {host}:{port}"


def parse_listening(line: str) -> tuple[str, int] | None:
    """(host, port) from a LISTENING line, or None if the line is anything else."""
    match = _LISTENING.match(line.strip())
    return (match["host"], int(match["port"])) if match else None


def announce(host: str, port: int) -> None:
    """Print the one line the launcher waits for; nothing else ever goes to stdout."""
    sys.stdout.write(listening_line(host, port) + "\n")
    sys.stdout.flush()


# --- Routes and their query rules ---------------------------------------------------------------

@dataclass(frozen=True)
class Route:
    """One of the paths every server answers the same way (the article's handlers A, B and C, and CPU work)."""

    path: str
    takes_ms: bool
    what: str


ROUTES = {
    "/": Route("/", False, "answers at once (handler C)"),
    "/sync-sleep": Route("/sync-sleep", True, "sleeps ms, blocking the thread that serves it (handler A)"),
    "/async-sleep": Route("/async-sleep", True, "waits ms without blocking (handler B); only where the model can"),
    "/cpu": Route("/cpu", True, "burns ms of CPU"),
}


class BadParameter(ValueError):
    """A query value outside what a route accepts; its text is the one-line 400 reason."""


def parse_whole(raw: str | None, name: str, unit: str, high: int, example: str) -> int:
    """A query value that must be a whole number of `unit` from 0 to `high`; a BadParameter saying why otherwise.

    `example` follows "is required" when the value is missing: ", e.g. ?ms=1000".
    """
    if raw is None or raw == "":
        raise BadParameter(f"{name} is required{example}")
    try:
        value = int(raw)
    except ValueError:
        raise BadParameter(f"{name} must be a whole number of {unit}, got {raw!r}") from None
    if not 0 <= value <= high:
        raise BadParameter(f"{name} must be between 0 and {high}, got {value}")
    return value


def parse_ms(raw: str | None, name: str = "ms") -> int:
    """Validate an `ms` query value (or another named in milliseconds): a whole number from 0 to MAX_MS."""
    return parse_whole(raw, name, "milliseconds", MAX_MS, f", e.g. ?{name}=1000")


def burn_cpu(ms: float) -> None:
    """Spin until this thread has used `ms` milliseconds of CPU time."""
    deadline = time.thread_time() + ms / 1000
    while time.thread_time() < deadline:
        pass


# --- A server's life: arguments, its parent, SIGTERM, logs ----------------------------------------

# Daemons such as nginx install into sbin, which is on root's PATH but often not on a student's.
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin")
# Debian and Ubuntu keep PostgreSQL's programs (postgres, initdb) off every PATH, in one folder per major version.
VERSIONED_DIRS = "/usr/lib/postgresql/*/bin"


# Programs the lab treats as not installed, comma-separated: to see a lesson run as on a machine without them.
TOOLS_OFF_VARIABLE = "IOLAB_TOOLS_OFF"


def find_program(name: str) -> str | None:
    """The full path of an installed program, looking in the sbin directories too; None if it is not installed
    (or is named in $IOLAB_TOOLS_OFF)."""
    if name in os.environ.get(TOOLS_OFF_VARIABLE, "").split(","):
        return None
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN_DIRS + versioned_dirs()))


def versioned_dirs() -> tuple[str, ...]:
    """VERSIONED_DIRS that exist, the newest major version first."""
    def version(folder: str) -> list[int]:
        return [int(part) if part.isdigit() else 0 for part in folder.split(os.sep)[-2].split(".")]

    return tuple(sorted(glob.glob(VERSIONED_DIRS), key=version, reverse=True))


def parse_args(description: str | None,
               add_arguments: Callable[[argparse.ArgumentParser], object] | None = None) -> argparse.Namespace:
    """The common command line: --host and --port, plus whatever the server adds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default=LOOPBACK, help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 lets the kernel choose")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args()
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be between 0 and 65535, got {args.port}")
    try:
        check_loopback(args.host)
    except ValueError as error:
        parser.error(f"--host: {error}")
    return args


def die_with_parent(signum: int = signal.SIGKILL, on_death: Callable[[], object] | None = None) -> None:
    """Exit when the process that started us dies, however it dies.

    PR_SET_PDEATHSIG makes the kernel send `signum` when the parent goes. It can
    only be armed after fork, so a parent that died in between is caught by
    comparing getppid() with the pid iolab.children.spawn wrote into our environment.
    A watchdog thread repeats that check, which also covers platforms without
    prctl. A wrapper around programs of its own (nginx, gunicorn) passes
    `on_death`, which must take its whole process group down with it.
    """
    expected = int(os.environ.get(PARENT_ENV) or os.getppid())
    last_act = on_death or (lambda: os._exit(1))
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if os.getppid() != expected:
        last_act()

    def watch() -> None:
        while os.getppid() == expected:
            time.sleep(0.25)
        last_act()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so `finally` blocks run and sockets close."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, handler)


def wait_for_exit(process: "subprocess.Popen[Any]", timeout_s: float) -> int:
    """Popen.wait(timeout=timeout_s), but woken the moment `process` exits.

    With a timeout, Popen.wait polls, sleeping up to 50 ms between looks: a stop that takes 20 ms is seen at 32 ms,
    and a wrapper's stop inside a launcher's stop twice over. A pidfd becomes readable when the process exits.
    """
    if process.poll() is not None:
        return process.returncode
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # no pidfd (before Linux 5.3), or reaped meanwhile by another thread
        return process.wait(timeout=timeout_s)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(max(0, int(timeout_s * 1000))):
            raise subprocess.TimeoutExpired(process.args, timeout_s)
    finally:
        os.close(pidfd)
    return process.wait()  # exited: this reaps it at once


def log(message: object) -> None:
    """Logs go to stderr: stdout belongs to the LISTENING line."""
    print(message, file=sys.stderr, flush=True)


# --- What the hand-built loop reports: the slow-callback warning and the trace ---------------------

_SLOW_CALLBACK = re.compile(r"callback (?P<callback>.+?) took (?P<ms>\d+) ms, blocking the loop")


def slow_callback_line(callback: str, took_s: float) -> str:
    """The warning a loop prints when one callback held it too long, as asyncio's debug mode does."""
    return f"callback {callback} took {took_s * 1000:.0f} ms, blocking the loop"


def parse_slow_callbacks(text: str) -> list[tuple[str, int]]:
    """[(callback, ms), ...] for every slow-callback warning in a server's stderr."""
    return [(match["callback"], int(match["ms"])) for match in _SLOW_CALLBACK.finditer(text)]


# One JSON line per loop iteration. "t" is time.monotonic() when it began, shared by every
# process on a Linux machine, so a notebook can line the trace up with its own clock.
TRACE_FIELDS = {
    "t": "time.monotonic() when the iteration began",
    "select_ms": "how long select() waited",
    "callbacks_ms": "how long the callbacks ran after it",
    "events": "sockets select() reported ready",
    "ready": "timers and call_soon callbacks run after them",
    "timers": "timers still waiting",
}


def trace_record(began: float, selected: float, finished: float, events: int, ready: int, timers: int) -> str:
    """One iteration as the trace's JSON line (without the newline)."""
    return json.dumps(
        {
            "t": round(began, 6),
            "select_ms": round((selected - began) * 1000, 4),
            "callbacks_ms": round((finished - selected) * 1000, 4),
            "events": events,
            "ready": ready,
            "timers": timers,
        }
    )


def parse_trace(text: str) -> list[dict[str, Any]]:
    """The iterations of a trace file's text, oldest first; a last line cut short by a kill is dropped."""
    return [json.loads(line) for line in text.splitlines() if line.endswith("}")]
