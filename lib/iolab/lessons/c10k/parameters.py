"""Lesson 07's parameters, checked: each one out of range is named with its value and what is allowed."""

from dataclasses import dataclass

from iolab import params
from iolab.params import LessonPlan, cell_values

RANGES = {"connections": (100, 50_000), "probe_connections": (50, 5_000), "fresh_requests": (10, 10_000),
          "wrk_connections": (10, 5_000), "wrk_timeout_s": (1, 30)}
SECONDS = {"memory_share": (0.05, 0.9)}
MOST_WRK_DURATION_S = 120  # and at least twice wrk_timeout_s: long enough to see timeouts
# Quick mode: a thousand connections at most and short wrk runs, with a 1 s timeout so the wrk scene takes half as long.
QUICK_MOST = {"connections": 1000, "probe_connections": 100, "fresh_requests": 50, "wrk_connections": 200}
QUICK = {"wrk_timeout_s": 1, "wrk_duration_s": 2}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"connections": 10_000, "probe_connections": 500, "fresh_requests": 200, "memory_share": 0.5,
            "wrk_connections": 1000, "wrk_duration_s": 10, "wrk_timeout_s": 2, "quick": False, "solutions": False,
            "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    connections: int
    probe_connections: int
    fresh_requests: int
    memory_share: float
    wrk_connections: int
    wrk_duration_s: int
    wrk_timeout_s: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, {})
        values["wrk_duration_s"] = params.check_range("wrk_duration_s", cell["wrk_duration_s"],
                                                      2 * values["wrk_timeout_s"], MOST_WRK_DURATION_S)
        if values["probe_connections"] >= values["connections"]:
            raise params.ParameterError(f"parameter probe_connections={values['probe_connections']} must be smaller"
                                        f" than connections={values['connections']}")
        if quick:
            values.update({name: min(values[name], most) for name, most in QUICK_MOST.items()}, **QUICK)
        return cls(**values, **cls.flags(cell, quick))
