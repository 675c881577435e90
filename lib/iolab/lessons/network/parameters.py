"""Lesson 14's parameters, checked: each one out of range is named with its value and what is allowed."""

from dataclasses import dataclass

from iolab.params import LessonPlan, cell_values

# Why each range: below 5 ms a round trip hides in the machine's own noise (a busy core wakes a thread 1 ms late);
# above 200 ms the runs grow long and the delayed-ACK timer (40 ms) is a small part of the stall.
RANGES = {
    "rtt_ms": (5, 200),  # RTT: the link's round trip, set on the delay line
    "requests": (2, 50),  # n: section 1's short requests, three ways
    "repeats": (3, 20),  # each of section 1's runs this many times: 3 at least, so the run has a spread
    "nagle_exchanges": (8, 200),  # section 6's write-write-reads on each setting of TCP_NODELAY
}
QUICK = {"requests": 6, "repeats": 3, "nagle_exchanges": 12}
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"rtt_ms": 40, "requests": 10, "repeats": 5, "nagle_exchanges": 30,
            "quick": False, "solutions": False, "results_path": None}
# Linux may ACK the first segments of a connection at once (quick-ACK mode): section 6 reads its stall from the
# exchanges after these.
WARM_UP_EXCHANGES = 4


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    rtt_ms: int
    requests: int
    repeats: int
    nagle_exchanges: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, {}, QUICK, cap=True)
        return cls(**values, **cls.flags(cell, quick))

    def describe(self):
        return (f"The link: a round trip of {self.rtt_ms} ms. Section 1: n = {self.requests} requests three ways,"
                f" each run {self.repeats} times. Section 6: {self.nagle_exchanges} write-write-reads with"
                f" TCP_NODELAY on, and as many with it off.")

    def as_dict(self):
        return {"rtt_ms": self.rtt_ms, "requests": self.requests, "repeats": self.repeats,
                "nagle_exchanges": self.nagle_exchanges, "quick": self.quick}
