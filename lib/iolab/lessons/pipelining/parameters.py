"""Lesson 08's parameters, checked, and shrunk to their quick sizes when asked."""

from dataclasses import dataclass, replace

from iolab import params


@dataclass(frozen=True)
class Sizes:
    """The notebook's parameters after checking: every later cell reads its sizes from here."""

    connections: int
    duration_s: int
    depths: list
    wait_ms: int
    batch_size: int
    order_requests: int
    quick: bool
    solutions: bool
    results_path: str | None


def check(connections, duration_s, depths, wait_ms, batch_size, order_requests, quick, solutions, results_path):
    """The parameters cell's values, each checked by name (ParameterError names the value and its range)."""
    quick = params.check_common(quick, solutions, results_path)
    params.check_range("connections", connections, 4, 1000)
    params.check_range("duration_s", duration_s, 1, 60)
    params.check_range("wait_ms", wait_ms, 50, 5000)
    params.check_range("batch_size", batch_size, 2, 64)
    params.check_range("order_requests", order_requests, 1000, 1_000_000)
    if not isinstance(depths, (list, tuple)) or not depths or 1 not in depths or 16 not in depths:
        raise params.ParameterError(f"parameter depths={depths!r} must be a list of depths that includes 1 and 16")
    for depth in depths:
        params.check_range("each of depths", depth, 1, 256)
    sizes = Sizes(connections, duration_s, sorted(set(depths)), wait_ms, batch_size, order_requests, quick,
                  solutions, results_path)
    if not quick:
        return sizes
    return replace(sizes, duration_s=1, depths=[1, 4, 16], order_requests=min(order_requests, 4000))
