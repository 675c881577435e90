"""Start every child process the lab owns, so each can die with its parent."""

import contextlib
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

from .contract import PARENT_ENV

# PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the
# process. Forking from one long-lived thread keeps children alive while any
# short-lived thread (a widget callback, a test helper) comes and goes.
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="iolab-spawner")


def spawn(
    argv: Iterable[object],
    *,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = None,
    own_group: bool = False,
    new_session: bool = False,
) -> subprocess.Popen[bytes]:
    """Start `argv` as a child of this process and return its Popen.

    The child learns our pid from its environment (contract.PARENT_ENV); a child
    of ours calls contract.die_with_parent() first thing, so it goes however we
    die, SIGKILL included. `own_group` puts it in a process group of its own, for
    a child that forks workers which must be signalled with it. `new_session` is
    for the one child that must outlive us (stall.py's resumer, which must wake a
    stopped server even when our kernel is killed with its whole group).
    """
    return _spawner.submit(
        subprocess.Popen,
        [str(part) for part in argv],
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env={**os.environ, PARENT_ENV: str(os.getpid())},
        process_group=0 if own_group else None,
        start_new_session=new_session,
    ).result()


@contextlib.contextmanager
def environment(**variables: object) -> Iterator[None]:
    """Set environment variables for the children started inside the block (each copies ours), then restore ours."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update({name: str(value) for name, value in variables.items()})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def python(*argv: object) -> list[str]:
    """The command line that runs this interpreter on `argv` (a script's path, or "-m", module)."""
    return [sys.executable, *map(str, argv)]


def run(argv: Iterable[object], timeout_s: float, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a program that ends by itself (wrk, ab, ss) to its end, bounded by `timeout_s`: its CompletedProcess.

    `input` is written to its stdin (`ip -batch -` reads its commands there).
    """
    return subprocess.run([str(part) for part in argv], capture_output=True, text=True, timeout=timeout_s,
                          input=input)


def read_until(pipe: IO[bytes], marker: bytes, timeout_s: float) -> bytes:
    """What a child wrote to `pipe` up to `marker`, or all it wrote before closing it; never waits past `timeout_s`.

    Raises TimeoutError when neither the marker nor the end came in time.
    """
    deadline = time.monotonic() + timeout_s
    said = b""
    with selectors.DefaultSelector() as selector:
        selector.register(pipe, selectors.EVENT_READ)
        while marker not in said:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {marker!r} within {timeout_s} s")
            if selector.select(min(remaining, 0.05)):
                chunk = os.read(pipe.fileno(), 4096)
                if not chunk:  # the child closed its end: it has exited, or will
                    break
                said += chunk
    return said
