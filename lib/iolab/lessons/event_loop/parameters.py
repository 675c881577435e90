"""Lesson 05's parameters, each refused by name when out of range."""

from dataclasses import dataclass

from iolab import load
from iolab.params import LessonPlan, ParameterError, capped, cell_values, check_choice

RANGES = {
    "hello_requests": (100, 1_000_000),  # hello-world requests per benchmark run
    "hello_concurrency": (1, 1000),  # connections during the benchmark; at most hello_requests
    "repetitions": (1, 20),  # benchmark runs per server
    "async_requests": (1, 10_000),  # the article's experiment on our own loop; at least async_concurrency
    "async_concurrency": (1, 1000),
    "async_delay_ms": (50, 10_000),
}
SECONDS = {"idle_seconds": (0.1, 10)}  # how long to watch each step's CPU while no client is connected
CHOICES = {"client": load.CLIENTS}
# Quick mode makes fewer and shorter runs (at most these; a smaller cell value stays): the async-sleep run keeps its
# waits and users, but has QUICK_ASYNC_ROUNDS rounds.
QUICK = {"hello_requests": 1000, "repetitions": 2, "idle_seconds": 0.2}
QUICK_ASYNC_ROUNDS = 3
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"hello_requests": 20000, "hello_concurrency": 20, "repetitions": 3, "async_requests": 200,
            "async_concurrency": 40, "async_delay_ms": 1000, "client": "raw", "idle_seconds": 1.0, "quick": False,
            "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    hello_requests: int
    hello_concurrency: int
    repetitions: int
    async_requests: int
    async_concurrency: int
    async_delay_ms: int
    idle_seconds: float
    client: str

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; then quick mode's sizes where it is on;
        quick is also on when IOLAB_QUICK asks for it."""
        quick, values = cell_values(cell, RANGES, SECONDS, {})
        values |= {name: check_choice(name, cell[name], choices) for name, choices in CHOICES.items()}
        for requests, concurrency in (("async_requests", "async_concurrency"), ("hello_requests", "hello_concurrency")):
            if values[requests] < values[concurrency]:
                raise ParameterError(f"parameter {requests}={values[requests]} must be at least"
                                     f" {concurrency}={values[concurrency]}")
        if quick:
            values = capped(values, QUICK)
            values["async_requests"] = min(values["async_requests"], QUICK_ASYNC_ROUNDS * values["async_concurrency"])
        return cls(**values, **cls.flags(cell, quick))
