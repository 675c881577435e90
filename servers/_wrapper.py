"""What a wrapper around programs not written here (gunicorn, nginx, Redis, PostgreSQL) does to speak the contract.

The wrapper binds the listening socket itself and hands it to the program, so
the port the LISTENING line names cannot be taken by anyone in between (a
program that binds its own, such as redis-server, postgres or pgbouncer, is
given a free port's number instead, and another if it was taken). It leads a
process group holding the programs and everything they fork: SIGTERM stops
them in order, and when the wrapper's parent dies, however it dies, the whole
group dies with it (nginx's and gunicorn's workers would not by themselves).
It announces LISTENING only once a real request gets an answer.
"""

import argparse
import contextlib
import http.client
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

from iolab.contract import (
    PARENT_ENV,
    announce,
    die_with_parent,
    exit_on_sigterm,
    log,
    parse_listening,
    wait_for_exit,
)

READY_TIMEOUT_S = 10.0  # the launcher's own deadline; a wrapper run by hand must not wait forever either
STOP_TIMEOUT_S = 3.0


class Programs:
    """The processes a wrapper started, all in its process group, stopped together."""

    def __init__(self, cleanup=None):
        self.processes = []
        self.cleanup = cleanup

    def start(self, name, argv, done_with_its_children=False, **popen):
        """Start a program; its stdout goes to our stderr, since stdout belongs to the LISTENING line.

        `done_with_its_children`: once its children have exited, a stopping program has nothing left to do but look
        for them again (gunicorn's arbiter looks every 100 ms), so stop() kills it then instead of waiting for it.
        """
        popen.setdefault("stdout", sys.stderr)
        # A lab server started by a wrapper must know the wrapper is the parent it must not outlive.
        env = {**os.environ, PARENT_ENV: str(os.getpid()), **popen.pop("env", {})}
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env, **popen)
        process.name = name
        process.done_with_its_children = done_with_its_children
        self.processes.append(process)
        return process

    def serve(self, listener):
        """Hand the socket over, wait until it answers, announce it, then run until SIGTERM or a program's end."""
        address = listener.getsockname()[:2]
        # The programs hold the socket now. Without our copy, a program that dies
        # makes connecting fail at once instead of waiting in the backlog.
        listener.close()
        wait_until_answering(address, self.processes)
        self.announce_and_run(*address)

    def announce_and_run(self, host, port):
        """Announce host:port, run until SIGTERM or a program's end, then stop them all and take the group down.

        SIGTERM ends the wait with SystemExit, which the wrapper's `with in_charge()` turns into an orderly stop.
        """
        announce(host, port)
        # Wait for any child to exit, leaving it unreaped for Popen.
        with contextlib.suppress(ChildProcessError):  # none left to wait for: they are all gone already
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        for process in self.processes:
            if process.poll() is not None:
                log(f"{describe(process)} exited with code {process.returncode}; stopping the rest")
        self.stop()
        # A master that died may have left its workers behind: take the whole group, ourselves included.
        self.take_the_group_down()

    def stop(self):
        """SIGTERM every program still running and wait; if one lingers, kill the whole group, ourselves included."""
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the stopping short
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in self.processes:
            if process.done_with_its_children and wait_for_its_children(process, deadline):
                process.kill()
            try:
                wait_for_exit(process, max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"{describe(process)} did not stop within {STOP_TIMEOUT_S} s; killing the whole group")
                self.take_the_group_down()

    def take_the_group_down(self):
        """SIGKILL our whole process group, ourselves included, after the wrapper's cleanup."""
        if self.cleanup:
            self.cleanup()
        os.killpg(os.getpgrp(), signal.SIGKILL)


def wait_for_its_children(process, deadline, every_s=0.005):
    """Whether every child of `process` has exited (and been reaped by it) before `deadline`, while it still runs.
    False where Linux does not list a process's children (/proc/PID/task/PID/children)."""
    listing = f"/proc/{process.pid}/task/{process.pid}/children"
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with open(listing) as children:
                if not children.read().split():
                    return True
        except OSError:
            return False
        time.sleep(every_s)
    return False


@contextlib.contextmanager
def in_charge(cleanup=None):
    """Lead a process group, stop on SIGTERM, die with the parent; yields the Programs to start in it.

    `cleanup` (removing a wrapper's temporary files) runs before the group is
    killed; on a clean exit the wrapper's own `with` statements clean up instead.
    """
    if os.getpgrp() != os.getpid():
        # Started by a program without job control (a test, a script): we are in its group.
        # Taking "our group" down would then take our parent's relatives too, so make one of our own.
        os.setpgid(0, 0)
    programs = Programs(cleanup)
    exit_on_sigterm()
    # The kernel's parent-death signal is SIGTERM, so the programs stop in order; the
    # watchdog's last act, a quarter of a second later at most, kills whatever is left.
    die_with_parent(signum=signal.SIGTERM, on_death=programs.take_the_group_down)
    try:
        yield programs
    finally:
        programs.stop()


def count_between(low, high):
    """An argparse type: a whole number from low to high, refused by name otherwise."""

    def count(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value

    return count


PORT_ATTEMPTS = 5  # a program that binds its own port may find the free one we picked taken a moment later


def free_port(host):
    """A port nobody listens on just now (the program binds it itself a moment later)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def start_on_a_port(programs, name, host, port, start, ready, waiting_for="listen"):
    """Start a program that binds its port itself (redis-server, postgres, pgbouncer cannot inherit ours) and return
    (it, its port) once `ready(port)`; with port 0, on another free port if the one picked was taken in between.

    `start(port)` starts it through `programs` and returns its Popen.
    """
    for _ in range(PORT_ATTEMPTS if port == 0 else 1):
        chosen = port or free_port(host)
        process = start(chosen)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while process.poll() is None and time.monotonic() < deadline:
            if ready(chosen):
                return process, chosen
            time.sleep(0.01)
        if process.poll() is None:
            raise SystemExit(f"{name} did not {waiting_for} on {host}:{chosen} within {READY_TIMEOUT_S} s")
        programs.processes.remove(process)
        log(f"{name} exited with code {process.returncode} on port {chosen} (taken?)")
    raise SystemExit(f"{name} could not listen on {host}:{port or 'a free port'}; see its log above")


def bind_listener(host, port):
    """A listening socket on host:port (port 0: the kernel picks one), for a program to inherit."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=1024)


def serve_wsgi_on_gevent(listener, app):
    """Serve a WSGI app with gevent's pywsgi on a bound listener, announce it, and stop on SIGTERM (a second to finish)."""
    import gevent  # here, not at the top: gevent must be imported after a server's monkey patch, if it patches
    import gevent.socket
    from gevent.pywsgi import WSGIServer

    if not isinstance(listener, gevent.socket.socket):  # unpatched, gevent's server needs its own cooperative socket
        listener = gevent.socket.socket(listener.family, listener.type, fileno=listener.detach())
    # pywsgi sends the head and the body in two writes. With Nagle on, the body waits for the client's delayed ACK
    # of the head: 40 ms per keep-alive request. Linux gives every accepted socket the listener's TCP_NODELAY.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    server = WSGIServer(listener, app, log=None)  # no access log: it would cost more than hello world
    server.start()
    gevent.signal_handler(signal.SIGTERM, server.stop, 1.0)
    announce(*listener.getsockname()[:2])
    server.serve_forever()


def wait_until_answering(address, processes, timeout_s=READY_TIMEOUT_S):
    """Return once an HTTP request to `address` gets any answer; exit if a program ends first or time runs out."""
    host, port = address
    deadline = time.monotonic() + timeout_s
    while True:
        for process in processes:
            if process.poll() is not None:
                raise SystemExit(f"{describe(process)} exited with code {process.returncode} before it answered")
        # A connection waits in the socket's backlog until the program accepts it, so
        # one request usually spans the whole start-up; the short timeout only bounds
        # how long a program's death can go unnoticed.
        connection = http.client.HTTPConnection(host, port, timeout=1.0)
        try:
            connection.request("GET", "/")
            connection.getresponse().read()
            return
        except (OSError, http.client.HTTPException) as error:
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing answered on {host}:{port} within {timeout_s} s: {error}") from None
            time.sleep(0.01)
        finally:
            connection.close()


def read_listening(process, timeout_s=READY_TIMEOUT_S):
    """(host, port) from the LISTENING line of a lab server we started with stdout=PIPE."""
    deadline = time.monotonic() + timeout_s
    line = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while b"\n" not in line and time.monotonic() < deadline:
            if selector.select(deadline - time.monotonic()):
                chunk = os.read(process.stdout.fileno(), 256)
                if not chunk:
                    break
                line += chunk
    address = parse_listening(line.decode(errors="replace").split("\n", 1)[0])
    if address is None:
        raise SystemExit(
            f"{describe(process)} printed {line!r} instead of a LISTENING line"
            f" within {timeout_s} s (exit code {process.poll()})"
        )
    return address


def describe(process):
    """The program's name and pid, as a log line says it."""
    return f"{process.name} (pid {process.pid})"
