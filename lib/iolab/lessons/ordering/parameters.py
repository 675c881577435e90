"""Lesson 03's parameters, each refused by name when out of range."""

from dataclasses import dataclass

from iolab.params import LessonPlan, capped, cell_values, check_range

RANGES = {"delay_ms": (100, 10_000)}  # how long A, B and A′ wait, and D computes
SECONDS = {}
GAP_LEAST_MS = 10  # gap_ms, the second request's delay after the first: from this to half of delay_ms
QUICK = {"delay_ms": 400, "gap_ms": 40}  # at most these in quick mode: a smaller cell value stays
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"delay_ms": 1000, "gap_ms": 100, "quick": False, "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's handlers' delay and the gap between two requests, after the checks."""

    delay_ms: int
    gap_ms: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; then quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, {})
        values["gap_ms"] = check_range("gap_ms", cell["gap_ms"], GAP_LEAST_MS, values["delay_ms"] // 2)
        if quick:
            values = capped(values, QUICK)
        return cls(**values, **cls.flags(cell, quick))
