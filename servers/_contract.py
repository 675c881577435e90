"""The server contract shared by every file in servers/: arguments, the LISTENING line, parent watch."""

import argparse
import ctypes
import os
import signal
import sys
import threading
import time

LOOPBACK = "127.0.0.1"
MAX_MS = 60_000  # a single request may ask for at most a minute of sleep or CPU
PARENT_ENV = "IOLAB_PARENT_PID"  # set by iolab.servers so a server knows whom to outlive never
_PR_SET_PDEATHSIG = 1


class BadParameter(ValueError):
    """A query value outside what a route accepts; its text is the one-line 400 reason."""


def parse_args(description, add_arguments=None):
    """The common command line: --host and --port, plus whatever the server adds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default=LOOPBACK, help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 lets the kernel choose")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args()
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be between 0 and 65535, got {args.port}")
    return args


def die_with_parent():
    """Exit when the process that started us dies, however it dies.

    PR_SET_PDEATHSIG makes the kernel send SIGKILL when the parent goes. It can
    only be armed after fork, so a parent that died in between is caught by
    comparing getppid() with the pid the launcher wrote into our environment.
    A watchdog thread repeats that check, which also covers platforms without prctl.
    """
    expected = int(os.environ.get(PARENT_ENV) or os.getppid())
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != expected:
        os._exit(1)

    def watch():
        while os.getppid() == expected:
            time.sleep(0.25)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def exit_on_sigterm():
    """Turn SIGTERM into SystemExit so `finally` blocks run and sockets close."""

    def handler(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, handler)


def announce(host, port):
    """Print the one line the launcher waits for; nothing else ever goes to stdout."""
    sys.stdout.write(f"LISTENING {host}:{port}\n")
    sys.stdout.flush()


def parse_ms(raw):
    """Validate an `ms` query value: a whole number of milliseconds from 0 to MAX_MS."""
    if raw is None or raw == "":
        raise BadParameter("ms is required, e.g. ?ms=1000")
    try:
        ms = int(raw)
    except ValueError:
        raise BadParameter(f"ms must be a whole number of milliseconds, got {raw!r}") from None
    if not 0 <= ms <= MAX_MS:
        raise BadParameter(f"ms must be between 0 and {MAX_MS}, got {ms}")
    return ms


def burn_cpu(ms):
    """Spin until this thread has used `ms` milliseconds of CPU time."""
    deadline = time.thread_time() + ms / 1000
    while time.thread_time() < deadline:
        pass


def log(message):
    """Logs go to stderr: stdout belongs to the LISTENING line."""
    print(message, file=sys.stderr, flush=True)
