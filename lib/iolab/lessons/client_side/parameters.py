"""Lesson 11's parameters, checked.

Lesson 11's parameters, checked: each one out of range is named with its value and the range.
"""

from dataclasses import dataclass

from iolab.params import LessonPlan, ParameterError, cell_values

# Why each range: a round must last longer than the client's and the server's CPU for the same calls, so Z has a
# floor; calls above aiohttp's own 100 would add its limit (section 2) to section 1's; the rest keep a run short.
RANGES = {
    "calls": (4, 100),  # n: section 1's calls; at most aiohttp's 100 at once, so gather's only limit is n
    "call_ms": (50, 2000),  # Z of section 1
    "threads": (2, 10),  # k: at most requests' pool of 10, so the threads are the only limit
    "semaphore": (2, 50),  # s
    "limit_ms": (100, 2000),  # Z of section 2: above 100 ms, one round is told from the next (measured in tests)
    "rounds": (2, 5),  # section 2's calls are rounds x each library's limit: two rounds at least show the limit
    "fastapi_threads": (1, 100),  # anyio's limiter in fastapi_app (FastAPI's 40); at most the 100 aiohttp lets out
    "slow_ms": (100, 2000),  # Z of sections 3 and 4
    "timeout_ms": (10, 1000),  # and at most slow_ms / 2, so that every call times out well before it is answered
    "give_up_calls": (1, 200),
    "fail_calls": (2, 200),
    "retry_rate": (1, 200),  # λ; with retry_seconds, at least 5 calls in all
    "retries": (1, 5),  # r: 0 would make λ(1 + r) the same as λ
    "blocking_calls": (3, 40),  # 3 at least keeps Z and n·Z apart
    "debug_calls": (1, 10),
    "pool_calls": (2, 400),  # and above fastapi_threads, or the pool's limit never shows
}
SECONDS = {"retry_seconds": (0.1, 30.0)}  # how long the open loop of section 3 sends
QUICK = {"calls": 20, "call_ms": 100, "limit_ms": 100, "rounds": 2, "slow_ms": 200, "timeout_ms": 80,
         "give_up_calls": 40, "fail_calls": 10, "retry_rate": 20, "retry_seconds": 1.0, "retries": 2,
         "blocking_calls": 4, "debug_calls": 3, "pool_calls": 80}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"calls": 40, "call_ms": 200, "threads": 6, "semaphore": 15, "limit_ms": 200, "rounds": 3,
            "fastapi_threads": 40, "slow_ms": 300, "timeout_ms": 100, "give_up_calls": 40, "fail_calls": 20,
            "retry_rate": 30, "retry_seconds": 3.0, "retries": 2, "blocking_calls": 8, "debug_calls": 3,
            "pool_calls": 120, "quick": False, "solutions": False, "results_path": None}
TIMEOUT_S = 30  # every call's timeout: far above any Z the ranges allow


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    calls: int
    call_ms: int
    threads: int
    semaphore: int
    limit_ms: int
    rounds: int
    fastapi_threads: int
    slow_ms: int
    timeout_ms: int
    give_up_calls: int
    fail_calls: int
    retry_rate: int
    retry_seconds: float
    retries: int
    blocking_calls: int
    debug_calls: int
    pool_calls: int
    timeout_s: float = TIMEOUT_S

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, QUICK)
        for name in ("threads", "semaphore"):
            if values[name] >= values["calls"]:
                raise ParameterError(f"{name} must be less than calls ({values['calls']}) so that some calls wait,"
                                     f" got {values[name]}")
        check_sections_3_4(values)
        return cls(**values, **cls.flags(cell, quick))

    def describe(self):
        return (f"Section 1: {self.calls} calls of Z = {self.call_ms} ms, {self.threads} threads, a semaphore of"
                f" {self.semaphore}. Section 2: {self.rounds} rounds of each library's limit, Z = {self.limit_ms} ms."
                f" Sections 3 and 4: Z = {self.slow_ms} ms, a timeout of {self.timeout_ms} ms.")


def check_sections_3_4(values):
    """The rules between the parameters of sections 3 and 4, each named with its value."""
    slow, timeout = values["slow_ms"], values["timeout_ms"]
    if timeout > slow / 2:
        raise ParameterError(f"timeout_ms must be at most slow_ms / 2 ({slow / 2:g}) so every call times out well"
                             f" before its answer, got {timeout}")
    calls = values["retry_rate"] * values["retry_seconds"]
    if calls < 5:
        raise ParameterError(f"retry_rate × retry_seconds must be at least 5 calls, got {calls:g}")
    steady = values["retries"] * timeout / 1000 + slow / 1000
    if values["retry_seconds"] <= steady:
        raise ParameterError(f"retry_seconds must be above retries × timeout + slow ({steady:g} s) so the open loop"
                             f" reaches a steady state, got {values['retry_seconds']}")
    if values["pool_calls"] <= values["fastapi_threads"]:
        raise ParameterError(f"pool_calls must be above fastapi_threads ({values['fastapi_threads']}) so the pool's"
                             f" limit shows, got {values['pool_calls']}")
