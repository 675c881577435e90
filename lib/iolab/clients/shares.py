"""How a run's users and requests are split between its client processes.

The parent sizes each process's file descriptors by it (iolab.load), and each
client process takes its own share by it (process.py).
"""

from collections.abc import Mapping
from typing import Any, TypedDict


class Share(TypedDict):
    """One client process's part of a run: its users (a range of the run's user numbers) and its requests."""

    users: range
    requests: int


def split(total: int, parts: int, index: int) -> int:
    """The index-th of `parts` near-equal shares of `total` (the first ones one larger when it does not divide)."""
    return total // parts + (1 if index < total % parts else 0)


def share_of(spec: Mapping[str, Any]) -> Share:
    """The users and requests of client process spec["process"] (spec: what LoadSpec.to_process tells it)."""
    process, processes = spec["process"], spec["processes"]
    first = sum(split(spec["concurrency"], processes, i) for i in range(process))
    users = range(first, first + split(spec["concurrency"], processes, process))
    return {"users": users, "requests": split(spec["requests"], processes, process)}
