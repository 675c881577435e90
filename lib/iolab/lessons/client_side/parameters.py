"""Lesson 11's parameters, checked: each one out of range is named with its value and the range."""

from dataclasses import dataclass

from iolab.params import ParameterError, check_common, check_range

# Why each range: a round must last longer than the client's and the server's CPU for the same calls, so T has a
# floor; calls above aiohttp's own 100 would add its limit (section 2) to section 1's; the rest keep a run short.
RANGES = {
    "calls": (4, 100),  # n: section 1's calls; at most aiohttp's 100 at once, so gather's only limit is n
    "call_ms": (50, 2000),  # T of section 1
    "threads": (2, 10),  # k: at most requests' pool of 10, so the threads are the only limit
    "semaphore": (2, 50),  # s
    "limit_ms": (100, 2000),  # T of section 2: above 100 ms, one round is told from the next (measured in tests)
    "rounds": (2, 5),  # section 2's calls are rounds x each library's limit: two rounds at least show the limit
    "fastapi_threads": (1, 100),  # anyio's limiter in fastapi_app (FastAPI's 40); at most the 100 aiohttp lets out
}
QUICK = {"calls": 20, "call_ms": 100, "limit_ms": 100, "rounds": 2}
TIMEOUT_S = 30  # every call's timeout: far above any T the ranges allow


@dataclass(frozen=True)
class Plan:
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    calls: int
    call_ms: int
    threads: int
    semaphore: int
    limit_ms: int
    rounds: int
    fastapi_threads: int
    quick: bool
    solutions: bool
    results_path: str | None
    timeout_s: float = TIMEOUT_S

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick = check_common(cell["quick"], cell["solutions"], cell["results_path"])
        values = {name: cell[name] for name in RANGES}
        if quick:
            values.update(QUICK)
        for name, (low, high) in RANGES.items():
            check_range(name, values[name], low, high)
        for name in ("threads", "semaphore"):
            if values[name] >= values["calls"]:
                raise ParameterError(f"{name} must be less than calls ({values['calls']}) so that some calls wait,"
                                     f" got {values[name]}")
        return cls(**values, quick=quick, solutions=cell["solutions"], results_path=cell["results_path"])

    def describe(self):
        return (f"Section 1: {self.calls} calls of T = {self.call_ms} ms, {self.threads} threads, a semaphore of"
                f" {self.semaphore}. Section 2: {self.rounds} rounds of each library's limit, T = {self.limit_ms} ms.")
