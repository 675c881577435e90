"""Pause a process for a while with SIGSTOP, as a garbage-collection pause or a stalled disk would, and always resume it.

A small child process of its own does the stop, the wait and the SIGCONT, so the
resume does not depend on whoever asked for the stall: if the notebook's kernel
is interrupted, the stall is cancelled and the process resumed at once; if the
kernel dies (even by SIGKILL), the child, in a session of its own, still sends
SIGCONT when the time is up. The child also resumes on SIGTERM; only a SIGKILL
of the child itself could leave the process stopped, and cancel() follows its
own SIGKILL with a SIGCONT.
"""

import atexit
import contextlib
import inspect
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO, cast

from .children import spawn
from .params import ParameterError, check_range

LIMITS = {"seconds": (0.001, 60.0), "after_s": (0.0, 3600.0)}
START_MARGIN_S = 0.2  # a stall asked for "now" waits this long for its child to start: it is never late


# Annotations in quotes: the child runs this function's source with only os, signal, sys and time imported.
def stop_wait_continue(send: "Callable[[int], None]", seconds: float, say: "Callable[..., None]" = print) -> None:
    """The stall itself: stop the process, let `seconds` pass, continue it. `send(sig)` signals it (or its group)."""
    try:
        send(signal.SIGSTOP)  # the process stops where it is: no CPU, no answers; its clients' requests queue up
        say("stopped", time.monotonic())
        time.sleep(seconds)
    finally:
        send(signal.SIGCONT)  # it carries on where it stopped, whatever ended the wait
    say("resumed", time.monotonic())


# The child runs stop_wait_continue, as written above, in a process of its own: it sleeps until `at`
# (time.monotonic, shared by every process), ignores the terminal's signals, and leaves on SIGTERM, resuming first.
_CHILD = "import os, signal, sys, time\n" + inspect.getsource(stop_wait_continue) + r"""
pid, group, at, seconds = int(sys.argv[1]), sys.argv[2] == "group", float(sys.argv[3]), float(sys.argv[4])
for number in (signal.SIGINT, signal.SIGHUP):
    signal.signal(number, signal.SIG_IGN)
def leave(number, frame):
    raise SystemExit(0)
signal.signal(signal.SIGTERM, leave)
def send(sig):
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except ProcessLookupError:
        if sig == signal.SIGSTOP:
            raise  # nothing to stop: the process is gone
def say(*words):
    try:
        print(*words, flush=True)
    except OSError:
        pass  # whoever asked is gone: the resume matters, the report does not
time.sleep(max(0.0, at - time.monotonic()))
try:
    stop_wait_continue(send, seconds, say)
except ProcessLookupError:
    sys.exit(0)
"""


class StallError(ParameterError):
    """A stall asked for something outside its range, or for a process that does not exist."""


_pending: list["Stall"] = []
_pending_lock = threading.Lock()


def _target(process: object) -> int:
    pid = getattr(process, "pid", process)
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1 or pid == os.getpid():
        raise StallError(f"the process to stall must be a server or another process's pid, got {process!r}")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise StallError(f"no process {pid} to stall") from None
    return pid


class Stall:
    """One stall under way: the process is stopped `after_s` from now for `seconds`, then continued.

    `stopped_at` and `resumed_at` are time.monotonic() instants (the same clock as
    time.perf_counter on Linux), known once wait() returns.
    """

    def __init__(self, process: object, seconds: float, after_s: float = 0.0, group: bool | None = None) -> None:
        for name, value in (("seconds", seconds), ("after_s", after_s)):
            check_range(name, value, *LIMITS[name], integer=False, error=StallError)
        self.pid = _target(process)
        # A server started by iolab.servers leads a process group of its own: stop all of it (workers too).
        self.group = os.getpgid(self.pid) == self.pid if group is None else group
        self.seconds = float(seconds)
        self.planned_at = time.monotonic() + max(float(after_s), START_MARGIN_S)
        self.stopped_at: float | None = None
        self.resumed_at: float | None = None
        self.cancelled = False
        self._child = spawn(
            [sys.executable, "-I", "-S", "-c", _CHILD, str(self.pid), "group" if self.group else "one",
             repr(self.planned_at), repr(self.seconds)],
            new_session=True,  # outlives a kernel killed with its process group
        )
        with _pending_lock:
            _pending.append(self)

    @property
    def child_pid(self) -> int:
        return self._child.pid

    def done(self) -> bool:
        return self._child.poll() is not None

    def wait(self, timeout: float | None = None) -> tuple[float | None, float | None]:
        """Block until the process has been resumed; returns (stopped_at, resumed_at) in time.monotonic()."""
        limit = self.planned_at - time.monotonic() + self.seconds + 5.0 if timeout is None else timeout
        try:
            out, _ = self._child.communicate(timeout=max(limit, 0.1))
        except subprocess.TimeoutExpired:
            self.cancel()
            raise TimeoutError(f"the stall of pid {self.pid} did not end within {limit:.1f} s; it was cancelled") from None
        self._read(out)
        self._forget()
        return self.stopped_at, self.resumed_at

    def cancel(self) -> None:
        """Resume the process now (if stopped) and end the stall; safe to call at any time, more than once."""
        if self._child.poll() is None:
            self.cancelled = True
            self._child.send_signal(signal.SIGTERM)  # the child resumes the process on its way out
            try:
                self._child.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self._child.kill()
                self._child.wait()
        self._resume()  # whatever happened to the child, the process runs again
        with contextlib.suppress(ValueError, OSError):
            self._read(cast(IO[bytes], self._child.stdout).read())
        self._forget()

    def _resume(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            (os.killpg if self.group else os.kill)(self.pid, signal.SIGCONT)

    def _read(self, out: bytes | str | None) -> None:
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        for line in (out or "").splitlines():
            word, _, value = line.partition(" ")
            if word == "stopped":
                self.stopped_at = float(value)
            elif word == "resumed":
                self.resumed_at = float(value)
        if self._child.stdout and not self._child.stdout.closed:
            self._child.stdout.close()

    def _forget(self) -> None:
        with _pending_lock:
            if self in _pending:
                _pending.remove(self)

    def __enter__(self) -> "Stall":
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self.wait()
        else:
            self.cancel()  # an interrupted cell resumes the process at once

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else "done" if self.done() else "under way"
        return f"<Stall pid={self.pid} {self.seconds} s {state}>"


def stall(process: object, seconds: float, after_s: float = 0.0, group: bool | None = None) -> Stall:
    """Stop `process` (a servers.Server or a pid) `after_s` from now for `seconds`, then continue it; returns the Stall.

    `with stall(server, 1.0):` waits for the resume at the end of the block, or
    resumes at once if the block raises (a KeyboardInterrupt included).
    """
    return Stall(process, seconds, after_s, group)


@atexit.register
def _resume_all() -> None:
    with _pending_lock:
        pending = list(_pending)
    for stalled in pending:
        stalled.cancel()
