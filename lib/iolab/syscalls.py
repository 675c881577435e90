"""Count a running process's system calls with strace.

The count covers the time something else runs, with `strace -c -f` (Linux, when installed and allowed).
"""

import contextlib
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from typing import IO, cast

from .children import read_until, spawn
from .contract import find_program

ATTACH_TIMEOUT_S = 10.0
DETACH_TIMEOUT_S = 10.0
# The calls that move bytes between a socket and the process, under every name an event loop uses.
WRITES = ("write", "writev", "send", "sendto", "sendmsg")
READS = ("read", "readv", "recv", "recvfrom", "recvmsg")


class SyscallCountUnavailable(RuntimeError):
    """strace is missing, or may not trace the process here (no ptrace permission, not Linux)."""


def missing_reason() -> str | None:
    """None if strace can be used here, else a sentence saying why not."""
    if find_program("strace") is None:
        return "strace is not installed (Debian package strace), so system calls are not counted"
    return None


class Counts:
    """System calls by name, from strace's summary table; filled in when counting() ends."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.elapsed_s: float | None = None

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def of(self, names: Iterable[str]) -> int:
        """How many calls there were of any of `names` (e.g. WRITES)."""
        return sum(self.calls.get(name, 0) for name in names)

    def __repr__(self) -> str:
        busiest = sorted(self.calls.items(), key=lambda item: -item[1])[:5]
        return f"<Counts total={self.total} {dict(busiest)}>"


def parse_summary(text: str) -> tuple[dict[str, int], dict[str, float]]:
    """strace -c's table -> ({syscall: calls}, {syscall: seconds}); the 'total' line is left out."""
    calls: dict[str, int] = {}
    seconds: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split()
        # "% time  seconds  usecs/call  calls  [errors]  syscall": 5 or 6 fields, the first four numbers.
        if len(fields) not in (5, 6) or fields[-1] == "total":
            continue
        try:
            spent, count = float(fields[1]), int(fields[3])
        except ValueError:
            continue  # the header or a rule
        calls[fields[-1]] = calls.get(fields[-1], 0) + count
        seconds[fields[-1]] = seconds.get(fields[-1], 0.0) + spent
    return calls, seconds


@contextlib.contextmanager
def counting(pid: int, only: Iterable[str] | None = None) -> Iterator[Counts]:
    """`with counting(server.pid) as counts:` run something; afterwards counts.calls holds what the process called.

    strace attaches to every thread of `pid` before the block starts and detaches
    when it ends, leaving the process running. `only` limits the count to some
    calls (e.g. WRITES). Tracing slows every system call down, so measure speed
    in a separate run: this counts, it does not time.
    """
    reason = missing_reason()
    if reason:
        raise SyscallCountUnavailable(reason)
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as summary:
        command = ["strace", "-c", "-f", "-o", summary.name, "-p", str(pid)]
        if only:
            command[1:1] = ["-e", "trace=" + ",".join(only)]
        tracer = spawn(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        counts = Counts()
        try:
            _wait_until_attached(tracer, pid)
            began = time.perf_counter()
            yield counts
            counts.elapsed_s = time.perf_counter() - began
        finally:
            _detach(tracer)
        counts.calls, counts.seconds = parse_summary(summary.read())


def _wait_until_attached(tracer: subprocess.Popen[bytes], pid: int) -> None:
    """strace says 'Process N attached' on stderr once it traces; anything else before that is why it cannot."""
    try:
        said = read_until(cast(IO[bytes], tracer.stderr), b"attached", ATTACH_TIMEOUT_S)
    except TimeoutError:
        raise SyscallCountUnavailable(f"strace did not attach to pid {pid} within {ATTACH_TIMEOUT_S} s") from None
    if b"attached" not in said:  # strace closed stderr: it exited without tracing
        why = said.decode(errors="replace").strip() or f"exit code {tracer.wait()}"
        raise SyscallCountUnavailable(f"strace could not trace pid {pid}: {why}")


def _detach(tracer: subprocess.Popen[bytes]) -> None:
    # SIGINT makes strace detach, leaving the process running, and write its summary.
    with contextlib.suppress(ProcessLookupError):
        tracer.send_signal(signal.SIGINT)
    try:
        tracer.wait(timeout=DETACH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        tracer.kill()
        tracer.wait()
    cast(IO[bytes], tracer.stderr).close()
