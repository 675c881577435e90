"""Lesson 01's parameters, each refused by name when out of range."""

from dataclasses import dataclass

from iolab.params import LessonPlan, ParameterError, capped, cell_values

RANGES = {
    "requests": (1, 2000),  # customers in all, since opening (ab -n); at least concurrency
    "concurrency": (1, 200),  # customers in the hall at once (ab -c)
    "delay_ms": (10, 5000),  # each customer's errands
    "threads": (1, 64),  # tellers of the threaded bank
}
SECONDS = {}
# At most these in quick mode (a smaller cell value stays): the synchronous bank takes requests x delay, a few seconds.
QUICK = {"requests": 16, "concurrency": 4, "delay_ms": 200, "threads": 2}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"requests": 200, "concurrency": 40, "delay_ms": 1000, "threads": 4, "quick": False, "solutions": False,
            "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The bank's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    requests: int
    concurrency: int
    delay_ms: int
    threads: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; then quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, {})
        if values["requests"] < values["concurrency"]:
            raise ParameterError(
                f"parameter requests={values['requests']} is out of range: it must be at least"
                f" concurrency={values['concurrency']}, so that every customer in the hall comes at least once")
        if quick:
            values = capped(values, QUICK)
        return cls(**values, **cls.flags(cell, quick))
