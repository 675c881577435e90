"""Lesson 07's parameters, checked, and shrunk to their quick sizes when asked."""

from dataclasses import dataclass, replace

from iolab import params


@dataclass(frozen=True)
class Sizes:
    """The notebook's parameters after checking: every later cell reads its sizes from here."""

    connections: int
    probe_connections: int
    fresh_requests: int
    memory_share: float
    wrk_connections: int
    wrk_duration_s: int
    wrk_timeout_s: int
    quick: bool
    solutions: bool
    results_path: str | None


def check(connections, probe_connections, fresh_requests, memory_share, wrk_connections, wrk_duration_s,
          wrk_timeout_s, quick, solutions, results_path):
    """The parameters cell's values, each checked by name (ParameterError names the value and its range)."""
    quick = params.check_common(quick, solutions, results_path)
    params.check_range("connections", connections, 100, 50_000)
    params.check_range("probe_connections", probe_connections, 50, 5_000)
    params.check_range("fresh_requests", fresh_requests, 10, 10_000)
    params.check_range("memory_share", memory_share, 0.05, 0.9, integer=False)
    params.check_range("wrk_connections", wrk_connections, 10, 5_000)
    params.check_range("wrk_timeout_s", wrk_timeout_s, 1, 30)
    params.check_range("wrk_duration_s", wrk_duration_s, 2 * wrk_timeout_s, 120)  # long enough to see timeouts
    if probe_connections >= connections:
        raise params.ParameterError(
            f"parameter probe_connections={probe_connections} must be smaller than connections={connections}"
        )
    sizes = Sizes(connections, probe_connections, fresh_requests, memory_share, wrk_connections, wrk_duration_s,
                  wrk_timeout_s, quick, solutions, results_path)
    if not quick:
        return sizes
    # A thousand connections, short wrk runs, and a 1 s timeout so the wrk scene takes half as long.
    return replace(sizes, connections=min(connections, 1000), probe_connections=min(probe_connections, 100),
                   fresh_requests=min(fresh_requests, 50), wrk_connections=min(wrk_connections, 200),
                   wrk_timeout_s=1, wrk_duration_s=2)
