"""Lesson 09's parameters, each refused by name when out of range."""

from dataclasses import dataclass

from iolab import environment
from iolab.params import LessonPlan, ParameterError, cell_values, check_range

# The lesson's sizes in the order of its parameters cell.
SIZES = ("rate_rps", "duration_s", "stall_s", "users", "ab_requests", "ab_concurrency", "ab_wait_ms", "slow_stall_s",
         "cpu_ms", "loads", "point_s")
RANGES = {"ab_concurrency": (2, 100), "ab_wait_ms": (100, 2000), "cpu_ms": (2, 20)}
# These may be fractions (rate_rps too, though it is no time).
SECONDS = {"rate_rps": (50, 1000), "duration_s": (2, 60), "slow_stall_s": (2.5, 5), "point_s": (1, 20)}
STALL_S = (0.2, 0.03, 1.5)  # stall_s: at least 0.2 s and 3% of duration_s, at most 1.5 s
ABOVE_P99 = 200  # users: fewer than 1% of the requests (rate_rps × duration_s / 200, at least 1)
LOADS = (0.1, 2.0, 0.8, 1.2)  # each of loads from 0.1 to 2.0, one at or below 0.8 and one of 1.2 or more
AB_MOST_REQUESTS = 2000  # ab_requests: from ab_concurrency to this
# Quick mode sets every size to these.
QUICK = {"rate_rps": 200, "duration_s": 3, "stall_s": 0.5, "users": 3, "ab_requests": 20, "ab_concurrency": 10,
         "ab_wait_ms": 200, "slow_stall_s": 2.5, "cpu_ms": 4, "loads": [0.3, 0.7, 1.3], "point_s": 1.2}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"rate_rps": 200, "duration_s": 20, "stall_s": 1.0, "users": 10, "ab_requests": 200, "ab_concurrency": 40,
            "ab_wait_ms": 1000, "slow_stall_s": 3.0, "cpu_ms": 4, "loads": [0.2, 0.4, 0.6, 0.8, 1.3], "point_s": 4,
            "quick": False, "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes after the checks (quick mode's where it is on), and the CPUs this run may use."""

    rate_rps: float
    duration_s: float
    stall_s: float
    users: int
    ab_requests: int
    ab_concurrency: int
    ab_wait_ms: int
    slow_stall_s: float
    cpu_ms: int
    loads: list
    point_s: float
    cores: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked: quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, QUICK)
        values = {name: values[name] if name in values else cell[name] for name in SIZES}
        check_related(values)
        return cls(**values, cores=environment.usable_cores(), **cls.flags(cell, quick))

    @property
    def sizes(self):
        """The sizes in the order of the parameters cell."""
        return tuple(getattr(self, name) for name in SIZES)


def check_related(s):
    """The sizes whose range depends on another's, and the loads, each refused by name."""
    least, share, most = STALL_S
    # The stall must hold more than the slowest 1% of the open loop's requests, so that its p99 shows it.
    check_range("stall_s", s["stall_s"], max(least, share * s["duration_s"]), most, integer=False)
    # Fewer users than 1% of the requests: then the closed loop's stalled requests cannot reach its p99.
    check_range("users", s["users"], 1, max(1, int(s["rate_rps"] * s["duration_s"] / ABOVE_P99)))
    check_range("ab_requests", s["ab_requests"], s["ab_concurrency"], AB_MOST_REQUESTS)
    low, high, calm, past = LOADS
    loads = s["loads"]
    if not isinstance(loads, (list, tuple)) or not loads or max(loads) < past or min(loads) > calm:
        raise ParameterError(f"parameter loads={loads!r} must list loads with one at or below 0.8 and one of 1.2 or more")
    for load in loads:
        check_range("each of loads", load, low, high, integer=False)
