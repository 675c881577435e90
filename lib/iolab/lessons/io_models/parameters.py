"""Lesson 04's parameters, each refused by name when out of range."""

from dataclasses import dataclass

from iolab.params import LessonPlan, ParameterError, capped, cell_values, check_choice, check_range

from . import multiplexing, select_vs_epoll

RANGES = {
    "delay_ms": (10, 5000),  # the peer sends this long after the application asks
    "payload_bytes": (1, 32768),  # one loopback segment, so one recv() gets it all
    "peers": (1, 64),  # connections the multiplexing program serves from one thread
    "repetitions": (10, 10000),  # waits timed per descriptor count
}
SECONDS = {}
CHOICES = {"mechanism": list(multiplexing.WAITERS)}
FD_COUNT = (1, select_vs_epoll.MOST_FILES)  # each of fd_counts, a list of at least two counts
QUICK = {"delay_ms": 100, "repetitions": 100}  # at most these in quick mode: a smaller cell value stays
QUICK_MOST_FDS = 4000  # in quick mode the descriptor counts stop here
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"delay_ms": 300, "payload_bytes": 4096, "peers": 4, "mechanism": "epoll",
            "fd_counts": [1, 16, 64, 128, 256, 384, 512, 640, 768, 896, 1500, 2000, 3000, 4000, 6000, 8000],
            "repetitions": 500, "quick": False, "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    delay_ms: int
    payload_bytes: int
    peers: int
    mechanism: str
    fd_counts: list
    repetitions: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; then quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, {})
        values |= {name: check_choice(name, cell[name], choices) for name, choices in CHOICES.items()}
        fd_counts = cell["fd_counts"]
        if not isinstance(fd_counts, list) or len(fd_counts) < 2:
            raise ParameterError(f"parameter fd_counts={fd_counts!r} must be a list of at least two counts")
        for index, count in enumerate(fd_counts):
            check_range(f"fd_counts[{index}]", count, *FD_COUNT)
        if quick:
            values = capped(values, QUICK)
            fd_counts = [count for count in fd_counts if count <= QUICK_MOST_FDS]
        return cls(**values, fd_counts=list(fd_counts), **cls.flags(cell, quick))
