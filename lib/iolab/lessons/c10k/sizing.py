"""How many connections this machine can hold at once.

N from what one connection cost in a probe, the memory free and the kernel's limits.
"""

import math
from dataclasses import dataclass
from pathlib import Path

from iolab.contract import FDS_BESIDES_CONNECTIONS

from . import limits


@dataclass(frozen=True)
class Plan:
    """The N a run will hold, every bound that was considered, and which one decided."""

    connections: int
    wanted: int
    bounds: dict  # {reason: the most connections it allows}
    per_connection_kb: float
    budget_mb: float

    @property
    def decided_by(self):
        return min(self.bounds, key=self.bounds.get)

    def explain(self):
        """Why this N, in a sentence or two a student can check."""
        listed = "; ".join(f"{reason}: {bound:,}" for reason, bound in self.bounds.items())
        return (
            f"N = {self.connections:,}, set by {self.decided_by}. One connection costs up to"
            f" {self.per_connection_kb:,.1f} KiB here (the costliest server, the kernel's share and the client's),"
            f" and the run may use {self.budget_mb:,.0f} MiB. Every bound, in connections: {listed}."
        )


def _pids_headroom():
    """Tasks (threads count) this cgroup may still start: Binder and Docker can cap them with pids.max."""
    for folder in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids")):
        try:
            maximum = (folder / "pids.max").read_text().strip()
            current = int((folder / "pids.current").read_text())
        except (OSError, ValueError):
            continue
        if maximum.isdigit():
            return int(maximum) - current
    return None


def thread_bound():
    """How many threads one more process may start: each stack takes two memory maps, and cgroups may cap tasks."""
    bounds = [limits.max_map_count() // 2 - 1000]
    headroom = _pids_headroom()
    if headroom is not None:
        bounds.append(headroom - 100)
    return max(0, min(bounds))


def nice(n):
    """Round down to two significant figures: 12,345 becomes 12,000."""
    if n < 100:
        return max(1, int(n))
    scale = 10 ** (int(math.log10(n)) - 1)
    return int(n // scale * scale)


def plan(wanted, per_connection_kb, memory_share=0.5, threads_needed=True, available_bytes=None):
    """The N to hold: at most `wanted`, within `memory_share` of free memory at `per_connection_kb`, and the limits.

    `per_connection_kb` is what the costliest server's connection costs in all:
    its RSS slope, plus the kernel's memory for both ends, plus the client's.
    With `threads_needed` a thread per connection must fit too.
    """
    if per_connection_kb <= 0:
        raise ValueError(f"per_connection_kb must be more than 0, got {per_connection_kb}")
    if not 0 < memory_share <= 0.9:
        raise ValueError(f"memory_share must be more than 0 and at most 0.9, got {memory_share}")
    available = limits.memory_available_bytes() if available_bytes is None else available_bytes
    budget_kb = (available or 0) / 1024 * memory_share
    _, hard = limits.file_limits()
    bounds = {
        "what the lesson asks for": int(wanted),
        f"{memory_share:.0%} of the free memory": int(budget_kb / per_connection_kb),
        # The holding client's own descriptors, and as many again as a margin.
        "the file limit (RLIMIT_NOFILE's hard limit)": hard - 2 * FDS_BESIDES_CONNECTIONS,
    }
    if threads_needed:
        bounds["threads one process may start"] = thread_bound()
    connections = nice(max(1, min(bounds.values())))
    return Plan(connections, int(wanted), bounds, per_connection_kb, budget_kb / 1024)


def first_limit_ahead(kb_per_connection, kernel_kb=0.0, client_kb=0.0, thread_per_connection=False,
                      memory_share=0.5, available_bytes=None):
    """(name, connections) of the limit a server would meet first if asked for more, from what a connection cost it."""
    per_connection = max(kb_per_connection or 0, 0.1) + max(kernel_kb or 0, 0) + max(client_kb or 0, 0)
    available = limits.memory_available_bytes() if available_bytes is None else available_bytes
    _, hard = limits.file_limits()
    bounds = {
        limits.MEMORY: int((available or 0) / 1024 * memory_share / per_connection),
        "RLIMIT_NOFILE": hard - 2 * FDS_BESIDES_CONNECTIONS,
    }
    if thread_per_connection:
        bounds[limits.THREADS] = thread_bound()
    name = min(bounds, key=bounds.get)
    return name, bounds[name]
