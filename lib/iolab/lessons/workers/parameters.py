"""Lesson 06's parameters, checked: each one out of range is named with its value and what is allowed."""

import time
from dataclasses import dataclass, field

from iolab.params import LessonPlan, cell_values

from . import cores as core_info
from . import sweep

RANGES = {"wait_ms": (5, 200), "cpu_ms": (1, 50), "users": (4, 256), "gil_probes": (5, 500)}
SECONDS = {"run_seconds": (0.1, 10)}
# The lists of counts: (lowest, highest, the counts each must include, how many it must have at least).
COUNTS = {
    "thread_counts": (1, 32, (1,), 2),
    "worker_counts": (1, 8, (1, 2), 2),
    "matrix_workers": (1, 8, (1,), 2),
    "matrix_threads": (1, 32, (1,), 2),
    "usl_workers": (1, 16, (1,), 4),
    "gil_busy": (0, 8, (0, 1), 2),
}
# Quick mode keeps two points per sweep and shorter runs (every section still runs, every claim is still checked):
# the positions kept of each list (past its end, its last), and the most each size may be.
QUICK_POINTS = {"thread_counts": (0, 2), "worker_counts": (0, 1), "matrix_workers": (0, 1), "matrix_threads": (0, 2),
                "usl_workers": (0, 1, 2, 3), "gil_busy": (0, 1, 2)}
QUICK_MOST = {"gil_probes": 10, "run_seconds": 0.25}
RETRIES = 2  # a run other programs disturbed is run again this many times at most, the least disturbed kept
# The notebook's parameters cell at full size, for a benchmark or a test that runs the lesson's parts alone.
DEFAULTS = {"wait_ms": 20, "cpu_ms": 5, "users": 16, "run_seconds": 0.5, "thread_counts": [1, 2, 4, 8],
            "worker_counts": [1, 2, 4], "matrix_workers": [1, 2, 4], "matrix_threads": [1, 2, 4, 8],
            "usl_workers": [1, 2, 3, 4, 6, 8, 12, 16], "gil_busy": [0, 1, 2, 4], "gil_probes": 40, "quick": False,
            "solutions": False, "results_path": None}


@dataclass(frozen=True)
class Plan(LessonPlan):
    """The lesson's sizes, after the checks (quick mode shrinks the runs, not the ideas)."""

    wait_ms: float
    cpu_ms: float
    users: int
    run_seconds: float
    thread_counts: list
    worker_counts: list
    matrix_workers: list
    matrix_threads: list
    usl_workers: list
    gil_busy: list
    gil_probes: int
    retries: int = RETRIES
    nginx_missing: str | None = None  # why nginx cannot run here, or None
    began: float = field(default_factory=time.monotonic)

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on."""
        quick, values = cell_values(cell, RANGES, SECONDS, {})
        for name, (low, high, must_have, at_least) in COUNTS.items():
            values[name] = sweep.check_counts(name, cell[name], low, high, must_have=must_have, at_least=at_least)
        if quick:
            values.update({name: _points(values[name], kept) for name, kept in QUICK_POINTS.items()})
            values.update({name: min(values[name], most) for name, most in QUICK_MOST.items()})
        # Quick mode has no time to run a disturbed run again: it reports such runs instead.
        return cls(**values, **cls.flags(cell, quick),
                   retries=0 if quick else RETRIES, nginx_missing=sweep.nginx_missing())

    @property
    def process_kinds(self):
        """The kinds the process experiments run: Tornado behind nginx only where nginx is installed."""
        return ("sync",) if self.nginx_missing else ("sync", "tornado")

    def lab(self, **options):
        """A sweep.Lab at these sizes (`options`: handlers, cpus)."""
        return sweep.Lab(wait_ms=self.wait_ms, cpu_ms=self.cpu_ms, run_seconds=self.run_seconds, users=self.users,
                         retries=self.retries, **options)

    def describe(self):
        """What this kernel may use and the sizes it runs, in sentences."""
        lines = []
        if self.nginx_missing:
            lines.append(f"Skipped: {self.nginx_missing}, so the nginx comparisons (nginx + Tornado processes, nginx"
                         " alone) are left out; everything else runs.")
        usable = core_info.usable_cores()
        cores = self.lab().cores
        quota = " (a CPU quota allows less than those cores)" if cores < len(usable) else ""
        lines.append(f"This kernel may use {cores:g} CPU(s), on the cores {usable}{quota}. Each run lasts about "
                     f"{self.run_seconds} s.")
        lines.append(f"threads {self.thread_counts}, processes {self.worker_counts}, matrix {self.matrix_workers} x "
                     f"{self.matrix_threads}, scaling curve {self.usl_workers}, GIL {self.gil_busy} busy threads x "
                     f"{self.gil_probes} requests.")
        return "\n".join(lines)


def _points(values, kept):
    """The counts at the positions `kept` (past the end, the last one), each once: the list rises, so none repeats
    but where a position past the end falls on the last."""
    picked = [values[min(i, len(values) - 1)] for i in kept]
    return list(dict.fromkeys(picked))
