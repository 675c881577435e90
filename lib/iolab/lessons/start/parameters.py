"""Lesson 00's parameters, each refused by name when out of range."""

from dataclasses import dataclass

from iolab.params import LessonPlan, capped, cell_values

RANGES = {"users": (1, 200), "delay_ms": (50, 2000)}  # users in flight; how long each handler waits
SECONDS = {}
QUICK = {"users": 5, "delay_ms": 200}  # at most these in quick mode: a smaller cell value stays
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"users": 20, "delay_ms": 500, "quick": False, "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The first experiment's sizes, checked: `users` in flight against handlers that wait `delay_ms`."""

    users: int
    delay_ms: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; then quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, {})
        if quick:
            values = capped(values, QUICK)
        return cls(**values, **cls.flags(cell, quick))

    @property
    def wait_s(self):
        return self.delay_ms / 1000

    # Sized so that the whole experiment takes about half a minute at the defaults.
    @property
    def sync_requests(self):
        return self.users * 2

    @property
    def async_requests(self):
        return self.users * 5

    @property
    def sync_timeout_s(self):
        return self.sync_requests * self.wait_s + 30
