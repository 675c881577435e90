"""Start the lab's servers in subprocesses, learn their ports, and stop them for sure."""

import atexit
import contextlib
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from . import registry
from .children import python, read_until, spawn
from .contract import LOOPBACK, check_loopback, parse_listening, wait_for_exit

if TYPE_CHECKING:
    from .link import Link

SERVERS_DIR = Path(os.environ.get("IOLAB_SERVERS_DIR", Path(__file__).resolve().parents[2] / "servers"))
READY_TIMEOUT_S = 10.0
STOP_GRACE_S = 0.3

_running: list["Server"] = []
_running_lock = threading.Lock()


class ServerError(RuntimeError):
    """A server could not be started, or died while in use."""


class ServerNotReady(ServerError):
    """A server did not print its LISTENING line within the deadline."""


class ServerUnavailable(ServerError):
    """A server that needs a program or package this machine does not have (nginx, gunicorn)."""


def available() -> list[str]:
    """The names `serve` accepts and can start on this machine, from the registry."""
    return [name for name in registry.names() if registry.missing(name) is None]


class Server:
    """A running server process: its name, port and URL, and the means to stop it."""

    info: registry.ServerInfo  # its entry in the registry, set by start

    def __init__(self, name: str, process: "subprocess.Popen[bytes]", host: str, port: int, stderr_file: IO[bytes],
                 started_in_s: float) -> None:
        self.name = name
        self.process = process
        self.host = host
        self.port = port
        self.started_in_s = started_in_s
        self._stderr_file = stderr_file

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def alive(self) -> bool:
        return self.process.poll() is None

    def stderr_tail(self, lines: int = 15) -> str:
        """The last lines the server wrote to stderr: where its tracebacks go."""
        self._stderr_file.flush()
        self._stderr_file.seek(0)
        text = self._stderr_file.read().decode(errors="replace")
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def check(self) -> None:
        """Raise ServerError if the server has died since it started."""
        if not self.alive():
            raise ServerError(
                f"server {self.name!r} (pid {self.pid}) exited with code {self.process.returncode}"
                f" while in use; last stderr:\n{self.stderr_tail()}"
            )

    def stop(self) -> None:
        """SIGTERM the server's process group, SIGKILL it if it lingers, then reap."""
        _signal_group(self.process, signal.SIGTERM)
        try:
            wait_for_exit(self.process, STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        # Kill the group even if the leader is gone: forked workers may remain.
        _signal_group(self.process, signal.SIGKILL)
        self.process.wait()
        # stderr stays readable after the stop: it is where post-mortems look.
        if self.process.stdout and not self.process.stdout.closed:
            self.process.stdout.close()
        with _running_lock:
            if self in _running:
                _running.remove(self)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.alive() else f"exited {self.process.returncode}"
        return f"<Server {self.name} {self.url} pid={self.pid} {state}>"


def start(name: str, *args: object, host: str | None = None, port: int = 0, ready_timeout: float = READY_TIMEOUT_S,
          link: "Link | None" = None, **options: Any) -> Server:
    """Start a server from the registry and return once it has printed its LISTENING line.

    Extra arguments go either as they would on its command line (`"--threads", 4`)
    or by the registry's keywords (`threads=4`). With `link` (an iolab.link.Link) it runs in that link's
    server namespace, bound to link.server_host unless `host` says otherwise.
    """
    info = registry.get(name)
    reason = info.missing()
    if reason:
        raise ServerUnavailable(reason)
    if host is None:
        host = link.server_host if link is not None else LOOPBACK
    check_loopback(host, lab=link is not None)
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be between 0 and 65535 (0 picks a free one), got {port}")
    argv = python(SERVERS_DIR / info.script, "--host", host, "--port", port, *args, *info.arguments(**options))
    stderr_file = tempfile.TemporaryFile()
    began = time.perf_counter()
    # Its own process group, so stop() reaches forked workers too.
    if link is not None:
        process = link.spawn("server", argv, stderr=stderr_file, own_group=True)
    else:
        process = spawn(argv, stderr=stderr_file, own_group=True)
    # Its port and start-up time are known once it says LISTENING, below: both are set before anyone else gets it.
    server = Server(name, process, host, None, stderr_file, None)  # type: ignore[arg-type]
    server.info = info
    with _running_lock:
        _running.append(server)
    try:
        line = _read_first_line(process, ready_timeout)
    except ServerNotReady:
        server.stop()
        raise ServerNotReady(
            f"server {name!r} did not print LISTENING within {ready_timeout} s; it was stopped."
            f" Last stderr:\n{server.stderr_tail()}"
        ) from None
    address = parse_listening(line)
    if address is None:
        server.stop()
        raise ServerError(_explain_failure(name, port, line, process.returncode, server.stderr_tail()))
    server.host, server.port = address
    server.started_in_s = time.perf_counter() - began
    return server


@contextlib.contextmanager
def serve(name: str, *args: object, **kwargs: Any) -> Iterator[Server]:
    """`with serve("tornado_app") as server:` starts a server and stops it however the block ends."""
    server = start(name, *args, **kwargs)
    try:
        yield server
    finally:
        server.stop()


def running() -> list[Server]:
    """The servers this process started and has not stopped yet."""
    with _running_lock:
        return list(_running)


def stop_all() -> None:
    for server in running():
        server.stop()


def _read_first_line(process: "subprocess.Popen[bytes]", timeout: float) -> str:
    """Read stdout until the first newline, EOF or the deadline, never blocking past it."""
    try:
        said = read_until(cast(IO[bytes], process.stdout), b"\n", timeout)  # spawned with stdout=PIPE
    except TimeoutError:
        raise ServerNotReady() from None
    if b"\n" not in said:  # stdout closed: the server has exited
        process.wait(timeout=STOP_GRACE_S * 3)
    return said.split(b"\n", 1)[0].decode(errors="replace").strip()


def _explain_failure(name: str, port: int, line: str, returncode: int | None, stderr_tail: str) -> str:
    if "Address already in use" in stderr_tail:
        return f"port {port} is already in use, so server {name!r} could not bind it; use port=0 to pick a free one"
    said = f"printed {line!r} instead of 'LISTENING host:port'" if line else "exited before listening"
    return f"server {name!r} {said} (exit code {returncode}); last stderr:\n{stderr_tail}"


def _signal_group(process: "subprocess.Popen[bytes]", signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


atexit.register(stop_all)
