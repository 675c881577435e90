"""Lesson 02's parameters, each refused by name when out of range."""

from dataclasses import dataclass

from iolab import load
from iolab.params import LessonPlan, ParameterError, capped, cell_values, check_choice, check_flag

RANGES = {
    "requests": (1, 2000),  # requests per run, like ab -n; at least concurrency
    "concurrency": (1, 200),  # users sending at once, like ab -c
    "delay_ms": (10, 5000),  # how long each handler waits
    "sweep_delay_ms": (5, 200),  # the sweep's wait: short, so that the CPU becomes the limit
}
SECONDS = {}
CHOICES = {"client": load.CLIENTS}
FLAGS = ("run_ab", "run_sweep")
QUICK = {"requests": 10, "concurrency": 5, "delay_ms": 400}  # at most these in quick mode: a smaller value stays
# The sweep's sizes: (most users, populations, requests per user of the non-blocking handler, most users of the
# blocking one, whose runs take users x 2 requests x the wait), at full size and in quick mode.
SWEEP = {False: (200, 8, 10, 100), True: (60, 4, 3, 15)}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"requests": 200, "concurrency": 40, "delay_ms": 1000, "client": "async", "run_ab": True,
            "run_sweep": True, "sweep_delay_ms": 20, "quick": False, "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    requests: int
    concurrency: int
    delay_ms: int
    sweep_delay_ms: int
    client: str
    run_ab: bool
    run_sweep: bool

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; then quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, {})
        values |= {name: check_choice(name, cell[name], choices) for name, choices in CHOICES.items()}
        values |= {name: check_flag(name, cell[name]) for name in FLAGS}
        if values["requests"] < values["concurrency"]:
            raise ParameterError(f"parameter requests={values['requests']} must be at least"
                                 f" concurrency={values['concurrency']}")
        if quick:
            values = capped(values, QUICK)
        return cls(**values, **cls.flags(cell, quick))

    @property
    def sweep(self):
        """(most users, populations, requests per user, most users of the blocking handler) of the sweep."""
        return SWEEP[self.quick]
