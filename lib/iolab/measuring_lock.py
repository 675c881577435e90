"""One measuring run at a time: benchmarks that share a machine take turns on one lock file."""

import contextlib
import fcntl
import os
from collections.abc import Iterator


@contextlib.contextmanager
def held(path: str | os.PathLike[str] | None) -> Iterator[None]:
    """Hold an exclusive flock on `path` (no lock when `path` is empty) while the block runs.

    The same lock as `flock PATH command` in a shell, so a benchmark and a hand-run command queue behind each other.
    """
    if not path:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
