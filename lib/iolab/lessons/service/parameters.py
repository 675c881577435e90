"""Lesson 15's parameters, checked.

Lesson 15's parameters, checked: each one out of range is named with its value and the range, and each rule between
two of them is named with both.
"""

from dataclasses import dataclass

from iolab.params import LessonPlan, ParameterError, cell_values

# Why each range: a block under 5 ms drowns in the loop's own lateness (about 1 ms: epoll waits in whole ms);
# above 200 ms a window holds too few blocks to count; the rest keep every run short.
RANGES = {
    "block_ms": (5, 200),  # b: how long the handler blocks the loop
    "period_ms": (20, 1000),  # Δ: how often it does; at least 2b, and at most 20b (rules below)
    "request_rate": (10, 200),  # requests a second to `/` through section 1's windows
    "tasks": (10, 100_000),  # n of section 2
    "shutdown_rate": (10, 200),  # X of section 3
    "hold_ms": (300, 2000),  # R of section 3: above uvicorn's 0.2 s before its timeout starts
    "drain_ms": (600, 10_000),  # the drain of section 3: at least 2R (rule below)
    "pool": (2, 64),  # c of section 4: slots
    "cancelled": (1, 32),  # cancellations before the rate is measured again: at most half the pool
    "pool_hold_ms": (10, 500),  # T of section 4
    "pool_timeout_ms": (60, 5000),  # the deadline: at least 6T, so a request that waits its turn is not cancelled
    "pool_calls": (8, 1000),  # requests per measured rate: at least 4 rounds of the pool
}
SECONDS = {"lag_seconds": (1.0, 20.0), "shutdown_seconds": (0.5, 10.0)}
QUICK = {"lag_seconds": 2.0, "request_rate": 100, "tasks": 1000, "shutdown_rate": 100, "hold_ms": 400,
         "drain_ms": 800, "shutdown_seconds": 0.8, "pool": 8, "cancelled": 4, "pool_hold_ms": 40,
         "pool_timeout_ms": 300, "pool_calls": 48}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"block_ms": 50, "period_ms": 200, "lag_seconds": 5.0, "request_rate": 100, "tasks": 10_000,
            "shutdown_rate": 100, "hold_ms": 500, "drain_ms": 1000, "shutdown_seconds": 1.5, "pool": 8,
            "cancelled": 4, "pool_hold_ms": 50, "pool_timeout_ms": 400, "pool_calls": 96, "quick": False,
            "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    block_ms: int
    period_ms: int
    lag_seconds: float
    request_rate: int
    tasks: int
    shutdown_rate: int
    hold_ms: int
    drain_ms: int
    shutdown_seconds: float
    pool: int
    cancelled: int
    pool_hold_ms: int
    pool_timeout_ms: int
    pool_calls: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, QUICK)
        if quick:  # a window of 5 periods at least, whatever Δ the cell asks for
            values["lag_seconds"] = max(values["lag_seconds"], 5 * values["period_ms"] / 1000)
        check_lag(values)
        check_shutdown(values)
        check_pool(values)
        return cls(**values, **cls.flags(cell, quick))

    def describe(self):
        return (f"Section 1: a block of b = {self.block_ms} ms every Δ = {self.period_ms} ms, windows of"
                f" {self.lag_seconds:g} s, {self.request_rate} requests a second. Section 2: n = {self.tasks} tasks."
                f" Section 3: X = {self.shutdown_rate} requests a second of R = {self.hold_ms} ms, a drain of"
                f" {self.drain_ms} ms. Section 4: a pool of {self.pool}, holds of {self.pool_hold_ms} ms,"
                f" {self.cancelled} cancelled, then the rest.")


def check_lag(values):
    """Section 1's rules: the loop is free at least half the time, blocked at least 1/20 of it (so its p99 lies in
    a block), and each window holds at least 5 blocks."""
    block, period = values["block_ms"], values["period_ms"]
    if period < 2 * block:
        raise ParameterError(f"period_ms must be at least 2 × block_ms ({2 * block}) so the loop is free half the"
                             f" time, got {period}")
    if period > 20 * block:
        raise ParameterError(f"period_ms must be at most 20 × block_ms ({20 * block}) so the blocks cover 1/20 of"
                             f" the time and the p99 lands in one, got {period}")
    if values["lag_seconds"] * 1000 < 5 * period:
        raise ParameterError(f"lag_seconds must be at least 5 × period_ms ({5 * period / 1000:g} s) so a window"
                             f" holds 5 blocks, got {values['lag_seconds']}")


def check_shutdown(values):
    """Section 3's rules: the drain covers R twice, and the load runs R before the signal, so L = X·R is reached."""
    hold = values["hold_ms"]
    if values["drain_ms"] < 2 * hold:
        raise ParameterError(f"drain_ms must be at least 2 × hold_ms ({2 * hold}) so the last request has R and"
                             f" room to spare, got {values['drain_ms']}")
    if values["shutdown_seconds"] * 1000 < hold + 200:
        raise ParameterError(f"shutdown_seconds must be at least hold_ms + 0.2 s ({(hold + 200) / 1000:g}) so L"
                             f" requests are in flight at the signal, got {values['shutdown_seconds']}")


def check_pool(values):
    """Section 4's rules: at most half the pool cancelled at first, a deadline of 6T, and 4 rounds of the pool."""
    pool = values["pool"]
    if values["cancelled"] > pool // 2:
        raise ParameterError(f"cancelled must be at most pool / 2 ({pool // 2}) so the rate is measured on what is"
                             f" left, got {values['cancelled']}")
    if values["pool_timeout_ms"] < 6 * values["pool_hold_ms"]:
        raise ParameterError(f"pool_timeout_ms must be at least 6 × pool_hold_ms ({6 * values['pool_hold_ms']}) so"
                             f" a request waiting its turn is not cancelled, got {values['pool_timeout_ms']}")
    if values["pool_calls"] < 4 * pool:
        raise ParameterError(f"pool_calls must be at least 4 × pool ({4 * pool}), got {values['pool_calls']}")
