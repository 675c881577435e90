"""Lesson 10's parameters, checked: each one out of range is named with its value and what is allowed."""

import dataclasses
from dataclasses import dataclass, field

from iolab import params

# Why some ranges: under 4 MB Redis's fixed overhead blurs the count of tasks it holds; 16 MB fills in under a minute.
RANGES = {"task_ms": (50, 1000), "users": (2, 200), "blocking_requests": (4, 1000), "article_workers": (1, 4),
          "gunicorn_workers": (1, 8), "hello_users": (1, 500), "hello_requests": (10, 20000),
          "sweep_workers": (1, 16), "forget_users": (1, 500), "queue_workers": (1, 8), "arrival_rps": (1, 1000),
          "queue_seconds": (2, 60), "queue_limit": (1, 10000), "cap_mb": (4, 16)}
MOST_SWEEP_THREADS = 8  # counts in sweep_threads, each from 1 to 64
# CI's small sizes: short tasks, few users; the arrivals become three times the drain at least (Plan.quick_sizes).
QUICK = {"task_ms": 50, "users": 6, "blocking_requests": 10, "hello_users": 50, "hello_requests": 200,
         "sweep_threads": [1, 4], "sweep_workers": 2, "sweep_users": 8, "sweep_requests": 12, "timeout_ms": 400,
         "forget_users": 20, "forget_requests": 200, "arrival_rps": 60, "queue_seconds": 2, "queue_limit": 10}


@dataclass(frozen=True)
class Plan:
    """The lesson's sizes, as its parameters cell names them (the defaults are the cell's); check() refuses what the
    lesson cannot run."""

    task_ms: int = 200  # T: how long each backend task waits
    users: int = 20  # N in the blocking tests
    blocking_requests: int = 60
    article_workers: int = 1  # c in the article's tests
    gunicorn_workers: int = 3  # gunicorn's sync workers in the blocking test
    hello_users: int = 200
    hello_requests: int = 3000
    sweep_threads: list = field(default_factory=lambda: [1, 2, 4, 8])  # k: Tornado's threads that wait for results
    sweep_workers: int = 4  # c during the sweep
    sweep_users: int = 16
    sweep_requests: int = 40
    forget_users: int = 50
    forget_requests: int = 2000
    queue_workers: int = 2  # c while the queue is watched, bounded and broken
    arrival_rps: float = 50  # λ
    queue_seconds: float = 8
    queue_limit: int = 20
    cap_mb: int = 4  # Redis's memory cap for the run that fills it; full size only
    timeout_ms: int = 1500  # a front end's wait for a result in the fault runs
    run_faults: bool = True
    quick: bool = False  # the small sizes, for CI (quick_sizes)

    @property
    def task_s(self):
        return self.task_ms / 1000

    @property
    def drain_rps(self):
        """c / T: what the queue's worker pool takes per second, from T alone."""
        return self.queue_workers / self.task_s

    @property
    def fault_lead_s(self):
        """Seconds of answers before a part is killed: long enough to see it work first."""
        return 1 if self.quick else 2

    @classmethod
    def from_cell(cls, cell):
        """The parameters cell's values (a dict such as globals()), checked; quick mode's sizes where it is on.
        quick, solutions and results_path are checked as every lesson's are; quick is on with IOLAB_QUICK=1 too."""
        quick = params.check_common(cell["quick"], cell["solutions"], cell["results_path"])
        sizes = {size.name: cell[size.name] for size in dataclasses.fields(cls) if size.name != "quick"}
        plan = cls(**sizes).check()
        return plan.quick_sizes() if quick else plan

    def check(self):
        """Raise a params.ParameterError naming the first parameter outside what the lesson allows; else self."""
        check = params.check_range
        for name, (low, high) in RANGES.items():
            check(name, getattr(self, name), low, high)
        threads = self.sweep_threads
        if not (isinstance(threads, list) and threads and len(threads) <= MOST_SWEEP_THREADS):
            raise params.ParameterError(f"parameter sweep_threads={threads!r} must be a list of 1 to 8 thread counts")
        for k in threads:
            check("each of sweep_threads", k, 1, 64)
        check("sweep_users", self.sweep_users, max(threads), 200)
        check("sweep_requests", self.sweep_requests, self.sweep_users, 1000)
        check("forget_requests", self.forget_requests, self.forget_users, 20000)
        if self.arrival_rps < 2 * self.drain_rps:
            raise params.ParameterError(
                f"parameter arrival_rps={self.arrival_rps} must be at least twice what the workers drain, queue_workers"
                f" / task_ms = {self.drain_rps:g}/s, so the queue grows fast enough to measure its slope")
        check("timeout_ms", self.timeout_ms, 2 * self.task_ms, 30000)
        params.check_flag("run_faults", self.run_faults)
        if self.blocking_requests < self.users:
            raise params.ParameterError(f"parameter blocking_requests={self.blocking_requests} must be at least"
                                        f" users={self.users}")
        return self

    def quick_sizes(self):
        """The same plan at CI's small sizes (QUICK), with arrivals three times the drain at least."""
        small = dataclasses.replace(self, quick=True, **QUICK)
        return dataclasses.replace(small, arrival_rps=max(small.arrival_rps, 3 * small.drain_rps))

    def as_dict(self):
        return {"task_ms": self.task_ms, "users": self.users, "article_workers": self.article_workers,
                "sweep_workers": self.sweep_workers, "queue_workers": self.queue_workers,
                "arrival_rps": self.arrival_rps, "queue_limit": self.queue_limit, "cap_mb": self.cap_mb,
                "forget_users": self.forget_users, "timeout_ms": self.timeout_ms, "run_faults": self.run_faults,
                "quick": self.quick}
