"""Lesson 10's experiment: its sizes as one Plan, and each of its runs as one method of a Lab.

The notebook calls them cell by cell, benchmarks/slow_backend.py in one go; both
get the same runs, with the same figures measured and kept.
"""

import contextlib
import dataclasses
import math
import time
from dataclasses import dataclass, field

from iolab import params, servers

from . import article, runs, stack

SETTLE_S = 0.3  # after an open loop ends: its last tasks' arrival in Redis, before the queue's watch stops
FRONT_TIMEOUT_MS = 30000  # how long a front end waits for a result in the measured runs: longer than any run
HELLO_FRONTS = {"tornado_backend": {}, "gevent_flask": {}, "gunicorn_flask": {"workers": article.HELLO_GUNICORN_WORKERS}}
FORGET_FRONTS = ("tornado_backend", "gevent_flask")
REDIS_FAULT_USERS, REDIS_FAULT_AFTER = 4, 20  # gevent's users while Redis dies, and the requests sent after it


@dataclass
class Plan:
    """The lesson's sizes, as its parameters cell names them; check() refuses what the lesson cannot run."""

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
    def from_cell(cls, names):
        """The plan a notebook's parameters cell set (`names`: its globals()), checked, at quick sizes if asked.

        quick, solutions and results_path are checked as every lesson's are; quick is on with IOLAB_QUICK=1 too.
        """
        quick = params.check_common(names["quick"], names["solutions"], names["results_path"])
        sizes = {size.name: names[size.name] for size in dataclasses.fields(cls) if size.name != "quick"}
        plan = cls(**sizes).check()
        return plan.quick_sizes() if quick else plan

    def check(self):
        """Raise a params.ParameterError naming the first parameter outside what the lesson allows; else self."""
        check = params.check_range
        check("task_ms", self.task_ms, 50, 1000)
        check("users", self.users, 2, 200)
        check("blocking_requests", self.blocking_requests, 4, 1000)
        check("article_workers", self.article_workers, 1, 4)
        check("gunicorn_workers", self.gunicorn_workers, 1, 8)
        check("hello_users", self.hello_users, 1, 500)
        check("hello_requests", self.hello_requests, 10, 20000)
        threads = self.sweep_threads
        if not (isinstance(threads, list) and threads and len(threads) <= 8):
            raise params.ParameterError(f"parameter sweep_threads={threads!r} must be a list of 1 to 8 thread counts")
        for k in threads:
            check("each of sweep_threads", k, 1, 64)
        check("sweep_workers", self.sweep_workers, 1, 16)
        check("sweep_users", self.sweep_users, max(threads), 200)
        check("sweep_requests", self.sweep_requests, self.sweep_users, 1000)
        check("forget_users", self.forget_users, 1, 500)
        check("forget_requests", self.forget_requests, self.forget_users, 20000)
        check("queue_workers", self.queue_workers, 1, 8)
        check("arrival_rps", self.arrival_rps, 1, 1000)
        if self.arrival_rps < 2 * self.drain_rps:
            raise params.ParameterError(
                f"parameter arrival_rps={self.arrival_rps} must be at least twice what the workers drain, queue_workers"
                f" / task_ms = {self.drain_rps:g}/s, so the queue grows fast enough to measure its slope")
        check("queue_seconds", self.queue_seconds, 2, 60)
        check("queue_limit", self.queue_limit, 1, 10000)
        check("cap_mb", self.cap_mb, 4, 16)  # under 4 MB Redis's fixed overhead blurs the count; 16 MB fills in under a minute
        check("timeout_ms", self.timeout_ms, 2 * self.task_ms, 30000)
        params.check_flag("run_faults", self.run_faults)
        if self.blocking_requests < self.users:
            raise params.ParameterError(f"parameter blocking_requests={self.blocking_requests} must be at least"
                                        f" users={self.users}")
        return self

    def quick_sizes(self):
        """The same plan at CI's small sizes: short tasks, few users, and arrivals three times the drain at least."""
        small = dataclasses.replace(
            self, quick=True, task_ms=50, users=6, blocking_requests=10, hello_users=50, hello_requests=200,
            sweep_threads=[1, 4], sweep_workers=2, sweep_users=8, sweep_requests=12, timeout_ms=400,
            forget_users=20, forget_requests=200, arrival_rps=60, queue_seconds=2, queue_limit=10)
        small.arrival_rps = max(small.arrival_rps, 3 * small.drain_rps)
        return small

    def as_dict(self):
        return {"task_ms": self.task_ms, "users": self.users, "article_workers": self.article_workers,
                "sweep_workers": self.sweep_workers, "queue_workers": self.queue_workers,
                "arrival_rps": self.arrival_rps, "queue_limit": self.queue_limit, "cap_mb": self.cap_mb,
                "quick": self.quick}


@dataclass
class Sweep:
    """Tornado's k threads against a worker pool of c: a row per k, the row awaiting, and R and T_w for the figure."""

    rows: list
    await_row: runs.Row
    trip_s: float  # R through the last k's front end
    slot_s: float  # T_w, measured awaiting


@dataclass
class QueueGrowth:
    """The queue's run, ready: its worker pool and Tornado started, R measured alone; run() watches the queue grow."""

    lab: "Lab"
    front: object
    trip_s: float  # how long a slot is held: T and the way to the worker and back

    @property
    def drain_rps(self):
        return self.lab.plan.queue_workers / self.trip_s

    @property
    def predicted_slope(self):
        return self.lab.plan.arrival_rps - self.drain_rps

    def run(self, follow=None):
        """Fire and forget at λ for queue_seconds while LLEN is read; `follow(run, watch)` may draw it and must
        return its LoadResult with the watch stopped. Keeps the QueueRun, the bytes per task and the stack's RSS."""
        lab, plan = self.lab, self.lab.plan
        watch = stack.QueueWatch(lab.backend).start()
        run = runs.start_open_loop(self.front, plan.arrival_rps, plan.queue_seconds, plan.task_ms, lab.backend.worker)
        try:
            result = (follow or settle)(run, watch)
        finally:
            run.stop()
            watch.stop()  # stopped already, unless following failed
        lab.queue = runs.QueueRun(plan.arrival_rps, self.drain_rps, watch.points, result, plan.queue_workers,
                                  self.trip_s, run.worker_meter.stop())
        lab.bytes_per_task = watch.bytes_per_task()
        lab.rss = lab.backend.rss_mb(self.front)  # everything running: Redis with its queue, the worker pool, the front end
        return lab.queue


@dataclass
class CapFill:
    """The memory cap's run, ready: a capped Redis of its own, Tornado on it, and what Redis uses empty."""

    lab: "Lab"
    front: object
    client: object
    empty_bytes: int
    rate: float  # Tornado's fire-and-forget answers per second, from the forget run

    @property
    def predicted_tasks(self):
        return runs.tasks_that_fit(self.lab.plan.cap_mb, self.empty_bytes, self.lab.bytes_per_task)

    def run(self):
        plan = self.lab.plan
        self.lab.cap = runs.fill_to_cap(self.front, self.client, plan.cap_mb, self.lab.bytes_per_task, self.rate,
                                        plan.forget_users, empty_bytes=self.empty_bytes)
        return self.lab.cap


def settle(run, watch):
    """Wait for an open loop without drawing it, then for its last tasks to reach Redis; stops the watch."""
    result = run.wait()
    time.sleep(SETTLE_S)
    watch.stop()
    return result


class Lab:
    """Lesson 10's backend, its plan, and every run measured so far; each method is one of the lesson's runs."""

    def __init__(self, plan):
        self.plan = plan
        self.backend = None
        self.hello_rows, self.wait_rows, self.forget_rows = [], [], []
        self.sweep = None
        self.queue = self.bounded = self.cap = None
        self.bytes_per_task = math.nan  # Redis memory per waiting task, from the queue's run
        self.rss = {}
        self.faults = {}

    def start(self):
        """Start Redis and the article's worker pool (c = article_workers)."""
        self.backend = stack.Backend(concurrency=self.plan.article_workers)
        return self.backend

    def stop(self):
        if self.backend is not None:
            self.backend.stop()

    @property
    def drain_rps(self):
        """c / R as the queue's run measured it, or c / T before it ran."""
        return self.queue.drain if self.queue else self.plan.drain_rps

    def bounded_prediction(self):
        """(sent, accepted) for the bounded queue: the limit, the tasks the workers hold, and what they drain."""
        plan = self.plan
        sent = max(1, round(plan.arrival_rps * plan.queue_seconds))
        return sent, min(sent, plan.queue_limit + plan.queue_workers + self.drain_rps * plan.queue_seconds)

    def hello(self):
        """Test 1: hello world on each front end, no backend touched; rows bounded by the utilization law."""
        plan = self.plan
        for name, options in HELLO_FRONTS.items():
            with servers.serve(name, broker=self.backend.broker, **options) as front:
                run = runs.start_cpu_bound(front, "/", plan.hello_users, plan.hello_requests)
                try:
                    result = run.wait()
                finally:
                    run.stop()
                row = runs.cpu_bound_row("hello", front, "hello", result, options.get("workers", 1))
                row.worker_timeouts = front.stderr_tail(1000).count("WORKER TIMEOUT")
            self.hello_rows.append(row)
        return self.hello_rows

    def plan_waits(self):
        """Test 2, before it runs: each front end started, T_w and its R measured alone; one runs.Blocking each.

        The front ends stay up for waits(), which stops them; if planning fails, the ones started are stopped.
        """
        plan = self.plan
        fronts = {"tornado_backend": ("wait", {}, 1), "gevent_flask": ("wait", {}, None),
                  "gunicorn_flask": ("wait", {"workers": plan.gunicorn_workers}, plan.gunicorn_workers)}
        planned = []
        with contextlib.ExitStack() as started:
            for name, (how, options, front_servers) in fronts.items():
                front = started.enter_context(self.backend.front(name, timeout_ms=FRONT_TIMEOUT_MS, **options))
                if name == "tornado_backend":  # a worker slot's time: the leanest round trip there is, Tornado awaiting
                    slot = runs.trip_s(front, "await", plan.task_ms)
                trip = runs.trip_s(front, how, plan.task_ms)
                tiers = runs.Tiers(plan.users, front_servers, plan.article_workers)
                planned.append(runs.Blocking("wait", front, how, tiers, trip, slot, plan.task_ms, plan.blocking_requests))
            started.pop_all()  # planned: waits() runs and stops them
        return planned

    def waits(self, planned, follow=None):
        """Test 2: run each planned front end against the worker pool, stopping each after its run; `follow(run,
        blocking)` may draw a run and must return its LoadResult."""
        waiting = list(planned)
        try:
            while waiting:
                blocking = waiting.pop(0)
                try:
                    self.wait_rows.append(self.blocking(blocking, follow))
                finally:
                    blocking.front.stop()
        finally:
            for blocking in waiting:  # a run failed: the front ends that never ran stop too
                blocking.front.stop()
        return self.wait_rows

    def blocking(self, blocking, follow=None):
        """One blocking run with the worker pool's wait for a CPU metered: its runs.Row."""
        run = runs.start_blocking(blocking, self.backend.worker)
        try:
            result = follow(run, blocking) if follow else run.wait()
        finally:
            run.stop()
        return runs.blocking_row(blocking, result, run.worker_meter)

    def thread_sweep(self):
        """Moving the bottleneck: Tornado awaiting, then on k threads, against c = sweep_workers."""
        plan = self.plan
        self.backend.start_worker(plan.sweep_workers)
        with self.backend.front("tornado_backend", timeout_ms=FRONT_TIMEOUT_MS) as front:
            slot = runs.trip_s(front, "await", plan.task_ms)
            tiers = runs.Tiers(plan.sweep_users, None, plan.sweep_workers)
            await_row = self.blocking(runs.Blocking("await", front, "await", tiers, slot, slot, plan.task_ms,
                                                    plan.sweep_requests))
        rows = []
        for k in plan.sweep_threads:
            with self.backend.front("tornado_backend", threads=k, timeout_ms=FRONT_TIMEOUT_MS) as front:
                trip = runs.trip_s(front, "pool", plan.task_ms)
                tiers = runs.Tiers(plan.sweep_users, k, plan.sweep_workers, front_threads=True)
                rows.append(self.blocking(runs.Blocking(f"k={k}", front, "pool", tiers, trip, slot, plan.task_ms,
                                                        plan.sweep_requests)))
        self.sweep = Sweep(rows, await_row, trip, slot)
        return self.sweep

    def forget(self):
        """Test 3: fire and forget on Tornado and gevent, CPU-bound rows, and the tasks each left in the queue."""
        plan = self.plan
        self.backend.start_worker(plan.article_workers)
        for name in FORGET_FRONTS:
            with self.backend.front(name) as front:
                run = runs.start_cpu_bound(front, f"/backend?ms={plan.task_ms}&how=forget", plan.forget_users,
                                           plan.forget_requests)
                try:
                    row = runs.cpu_bound_row("forget", front, "forget", run.wait(), 1)
                finally:
                    run.stop()
            row.left_in_queue = self.backend.queue_length()
            self.forget_rows.append(row)
            self.backend.flush()
        return self.forget_rows

    @contextlib.contextmanager
    def queue_growth(self):
        """The queue's run, ready to predict: the worker pool of c = queue_workers and Tornado started, R measured."""
        self.backend.start_worker(self.plan.queue_workers)
        with self.backend.front("tornado_backend") as front:
            yield QueueGrowth(self, front, runs.trip_s(front, "await", self.plan.task_ms))

    @contextlib.contextmanager
    def memory_cap(self):
        """The memory cap's run, ready to predict: a Redis of its own capped at cap_mb, with no worker, and Tornado."""
        rate = next((row.rps for row in self.forget_rows if row.front_end == "tornado_backend"), None)
        if rate is None:
            raise RuntimeError("the memory cap's run sends at test 3's fire-and-forget rate: run forget() first")
        with stack.capped_broker(self.plan.cap_mb) as (broker, client), \
                servers.serve("tornado_backend", broker=broker) as front:
            yield CapFill(self, front, client, client.info("memory")["used_memory"], rate)

    def bounded_queue(self, follow=None):
        """Backpressure: the queue's arrivals into Tornado with --queue-limit; `follow(run, watch)` as in the queue's
        run. Its drain is the queue's run's c / R, as the prediction printed before it."""
        plan = self.plan
        self.backend.start_worker(plan.queue_workers)
        with self.backend.front("tornado_backend", queue_limit=plan.queue_limit) as front:
            watch = stack.QueueWatch(self.backend).start()
            run = runs.start_open_loop(front, plan.arrival_rps, plan.queue_seconds, plan.task_ms)
            try:
                result = (follow or settle)(run, watch)
            finally:
                run.stop()
                watch.stop()  # stopped already, unless following failed
            self.bounded = runs.QueueRun(plan.arrival_rps, self.drain_rps, watch.points, result)
        return self.bounded

    def kill_worker(self):
        """The worker pool killed mid-run under Tornado on 2c threads, each wait bounded by timeout_ms."""
        plan = self.plan
        self.backend.start_worker(plan.queue_workers)
        # Twice as many users as slots, each with a thread: slots that finish together all find a task waiting. The
        # kill waits for the moment every slot holds one: a slot between two tasks holds none.
        users = 2 * plan.queue_workers
        with self.backend.front("tornado_backend", threads=users, timeout_ms=plan.timeout_ms) as front:
            trip = runs.trip_s(front, "pool", plan.task_ms)
            before = round(plan.fault_lead_s * plan.queue_workers / trip)  # a second or two of answers, then the kill
            fault = runs.run_with_fault(  # and one round of the users after it
                front, f"/backend?ms={plan.task_ms}&how=pool", users, before, users, plan.timeout_ms / 1000 + 10,
                lambda: self.backend.kill_worker(busy=plan.queue_workers), "worker pool")
            fault.left = {"queued (LLEN celery)": self.backend.queue_length(),
                          "unacked (running when killed)": self.backend.unacked(),
                          "worker still running": self.backend.worker.alive()}
        self.faults["worker_killed"] = fault.as_dict()
        return fault

    def kill_redis(self):
        """Redis killed mid-run under gevent + Flask, whose handlers wait for results."""
        plan = self.plan
        self.backend.start_worker(plan.queue_workers)
        with self.backend.front("gevent_flask", timeout_ms=plan.timeout_ms) as front:
            trip = runs.trip_s(front, "wait", plan.task_ms)
            before = round(plan.fault_lead_s * plan.queue_workers / trip)
            fault = runs.run_with_fault(
                front, f"/backend?ms={plan.task_ms}&how=wait", REDIS_FAULT_USERS, before, REDIS_FAULT_AFTER,
                plan.timeout_ms / 1000 + 10, self.backend.kill_redis, "Redis")
            front.check()
        self.faults["redis_killed"] = fault.as_dict()
        return fault

    def rows(self):
        """Every throughput row, in the lesson's order: hello, waiting, the sweep, awaiting, fire and forget."""
        sweep = (self.sweep.rows + [self.sweep.await_row]) if self.sweep else []
        return self.hello_rows + self.wait_rows + sweep + self.forget_rows

    def save(self, results_path, skipped=None, **extra):
        """The lesson's results (results() and `extra`), written as JSON to `results_path` if it is set."""
        return params.write_results(results_path, {**self.results(skipped), **extra}, default=str)

    def results(self, skipped=None):
        """The lesson's measurements as plain data, for its results file and the benchmark's JSON line."""
        queue, bounded = self.queue, self.bounded
        keys = ("test", "front_end", "how", "rps", "predicted_rps", "bottleneck", "container", "cpu_ms_per_request",
                "waits_ms")
        return {
            "tests": [{key: row.as_dict()[key] for key in keys} for row in self.rows()],
            "queue_container": vars(queue.result.container()) if queue and queue.result.container() else None,
            "queue_slope": {"measured": queue.measured_slope() if queue else None,
                            "predicted": queue.predicted_slope if queue else None,
                            "with_waits": queue.slope_here() if queue else None},
            "backpressure": {"statuses": bounded.statuses(), "longest_queue": max(n for _, n in bounded.points),
                             "limit": self.plan.queue_limit} if bounded else None,
            "memory_cap": self.cap.as_dict() if self.cap else None,
            "faults": self.faults,
            "rss_mb": self.rss,
            "skipped": skipped,
            "parameters": self.plan.as_dict(),
        }
