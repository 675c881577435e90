"""Lesson 08's parameters, checked: each one out of range is named with its value and what is allowed."""

from dataclasses import dataclass

from iolab import params
from iolab.params import LessonPlan, cell_values

RANGES = {"connections": (4, 1000), "duration_s": (1, 60), "wait_ms": (50, 5000), "batch_size": (2, 64),
          "order_requests": (1000, 1_000_000)}
DEPTHS = (1, 256)  # each depth of the sweep; it must include 1 and 16, the depths the claims compare
REQUIRED_DEPTHS = (1, 16)
# Quick mode: one-second runs, three depths, and at most QUICK_ORDER_REQUESTS answers checked for their order.
QUICK = {"duration_s": 1, "depths": [1, 4, 16]}
QUICK_ORDER_REQUESTS = 4000
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"connections": 64, "duration_s": 3, "depths": [1, 2, 4, 8, 16, 32], "wait_ms": 300, "batch_size": 8,
            "order_requests": 32_000, "quick": False, "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    connections: int
    duration_s: int
    depths: list
    wait_ms: int
    batch_size: int
    order_requests: int

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, {}, {})
        depths = cell["depths"]
        if not isinstance(depths, (list, tuple)) or not depths or any(d not in depths for d in REQUIRED_DEPTHS):
            raise params.ParameterError(f"parameter depths={depths!r} must be a list of depths that includes 1 and 16")
        for depth in depths:
            params.check_range("each of depths", depth, *DEPTHS)
        values["depths"] = sorted(set(depths))
        if quick:
            values.update({**QUICK, "depths": list(QUICK["depths"]),
                           "order_requests": min(values["order_requests"], QUICK_ORDER_REQUESTS)})
        return cls(**values, **cls.flags(cell, quick))

    def as_dict(self):
        return {"connections": self.connections, "duration_s": self.duration_s, "depths": self.depths,
                "wait_ms": self.wait_ms, "batch_size": self.batch_size, "order_requests": self.order_requests,
                "quick": self.quick, "solutions": self.solutions}
