"""Lesson 10's experiment: each of its runs is one method of a Lab.

The notebook calls them cell by cell, benchmarks/slow_backend.py in one go; both
get the same runs, with the same figures measured and kept.
"""

import concurrent.futures
import contextlib
import math
from dataclasses import dataclass

from iolab import params, servers

from . import article, runs, stack

FRONT_TIMEOUT_MS = 30000  # how long a front end waits for a result in the measured runs: longer than any run
HELLO_FRONTS = {"tornado_backend": {}, "gevent_flask": {}, "gunicorn_flask": {"workers": article.HELLO_GUNICORN_WORKERS}}
FORGET_FRONTS = ("tornado_backend", "gevent_flask")
REDIS_FAULT_USERS, REDIS_FAULT_AFTER = 4, 20  # gevent's users while Redis dies, and the requests sent after it


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
        run, result, watch, others = queue_arrivals(lab.backend, self.front, plan, follow, lab.backend.worker)
        lab.queue = runs.QueueRun(plan.arrival_rps, self.drain_rps, watch.points, result, plan.queue_workers,
                                  self.trip_s, run.worker_meter.stop(), others)
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
        self.lab.cap = runs.fill_to_cap(self.front, self.client, plan.cap_mb, bytes_per_task=self.lab.bytes_per_task,
                                        rate=self.rate, users=plan.forget_users, empty_bytes=self.empty_bytes)
        return self.lab.cap


def settle(run, watch):
    """Wait for an open loop without drawing it; stops the watch two readings later. A fire-and-forget answer
    comes once its task is in Redis, so the last tasks are in those readings."""
    result = run.wait()
    watch.stop_after()
    return result


def queue_arrivals(backend, front, plan, follow=None, worker=None):
    """The queue's arrivals, fire and forget into `front` at λ for queue_seconds, while LLEN is read: (run, its
    LoadResult, the watch, what else held the CPUs). `follow(run, watch)` may draw it and must return the LoadResult
    with the watch stopped; `worker`, the pool whose wait for a CPU run.worker_meter measures (start_open_loop)."""
    watch = stack.QueueWatch(backend).start()
    run = runs.start_open_loop(front, plan.arrival_rps, plan.queue_seconds, plan.task_ms, worker)
    try:
        result = (follow or settle)(run, watch)
        others = runs.over_run(run)
    finally:
        run.stop()
        watch.stop()  # stopped already, unless following failed
    return run, result, watch, others


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
                    others = runs.over_run(run)
                finally:
                    run.stop()
                row = runs.cpu_bound_row("hello", front, "hello", result, options.get("workers", 1), others)
                row.worker_timeouts = front.stderr_tail(1000).count("WORKER TIMEOUT")
            self.hello_rows.append(row)
        return self.hello_rows

    def plan_waits(self):
        """Test 2, before it runs: each front end started, T_w and its R measured alone; one runs.Blocking each.

        The front ends stay up for waits(), which stops them; if planning fails, the ones started are stopped.
        """
        plan = self.plan
        # The last field: each connection's first wait builds a result store (gevent's greenlets: runs.trip_and_start_s).
        fronts = {"tornado_backend": ("wait", {}, 1, False), "gevent_flask": ("wait", {}, None, True),
                  "gunicorn_flask": ("wait", {"workers": plan.gunicorn_workers}, plan.gunicorn_workers, False)}
        planned = []
        with contextlib.ExitStack() as started:
            started_fronts = self._start_side_by_side(started, {name: (name, options)
                                                                for name, (_, options, *_) in fronts.items()})
            for name, (how, _, front_servers, per_connection) in fronts.items():
                front = started_fronts[name]
                if name == "tornado_backend":  # a worker slot's time: the leanest round trip there is, Tornado awaiting
                    slot = runs.trip_s(front, "await", plan.task_ms)
                trip, start = (runs.trip_and_start_s(front, how, plan.task_ms) if per_connection
                               else (runs.trip_s(front, how, plan.task_ms), 0.0))
                tiers = runs.Tiers(plan.users, front_servers, plan.article_workers)
                planned.append(runs.Blocking("wait", front, how, tiers, trip, slot, plan.task_ms, plan.blocking_requests,
                                             start))
            started.pop_all()  # planned: waits() runs and stops them
        return planned

    def _start_side_by_side(self, started, fronts):
        """Start each front end of {label: (name, options)} at once, each entered in the ExitStack `started`:
        {label: Server}. Start-up measures nothing; each one's R is still measured alone, after every start."""
        with concurrent.futures.ThreadPoolExecutor(len(fronts)) as pool:
            futures = {label: pool.submit(self.backend.front, name, timeout_ms=FRONT_TIMEOUT_MS, **options)
                       for label, (name, options) in fronts.items()}
        failed = [future.exception() for future in futures.values() if future.exception() is not None]
        servers_ = {name: started.enter_context(future.result())
                    for name, future in futures.items() if future.exception() is None}
        if failed:
            raise failed[0]
        return servers_

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
        """One blocking run with the worker pool's and Redis's wait for a CPU metered: its runs.Row."""
        run = runs.start_blocking(blocking, self.backend.worker, self.backend.redis_server)
        try:
            result = follow(run, blocking) if follow else run.wait()
            others = runs.over_run(run)
        finally:
            run.stop()
        return runs.blocking_row(blocking, result, run.worker_meter, others, run.broker_meter)

    def thread_sweep(self):
        """Moving the bottleneck: Tornado awaiting, then on k threads, against c = sweep_workers. Every Tornado
        starts at once, and all stop at the end: one that has run sits idle beside the next run."""
        plan = self.plan
        self.backend.start_worker(plan.sweep_workers)
        with contextlib.ExitStack() as started:
            fronts = self._start_side_by_side(started, {"await": ("tornado_backend", {}), **{
                k: ("tornado_backend", {"threads": k}) for k in plan.sweep_threads}})
            front = fronts.pop("await")
            slot = runs.trip_s(front, "await", plan.task_ms)
            tiers = runs.Tiers(plan.sweep_users, None, plan.sweep_workers)
            await_row = self.blocking(runs.Blocking("await", front, "await", tiers, slot, slot, plan.task_ms,
                                                    plan.sweep_requests))
            rows = []
            for k in plan.sweep_threads:
                front = fronts[k]
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
                    result = run.wait()
                    row = runs.cpu_bound_row("forget", front, "forget", result, 1, runs.over_run(run))
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
            _, result, watch, others = queue_arrivals(self.backend, front, plan, follow)
            self.bounded = runs.QueueRun(plan.arrival_rps, self.drain_rps, watch.points, result, neighbours=others)
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
                front, f"/backend?ms={plan.task_ms}&how=pool", users, before=before, after=users,
                timeout_s=plan.timeout_ms / 1000 + 10, kill=lambda: self.backend.kill_worker(busy=plan.queue_workers),
                what="worker pool")
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
                front, f"/backend?ms={plan.task_ms}&how=wait", REDIS_FAULT_USERS, before=before,
                after=REDIS_FAULT_AFTER, timeout_s=plan.timeout_ms / 1000 + 10, kill=self.backend.kill_redis, what="Redis")
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
        """The lesson's measurements as plain data, for its results file, its claims and the benchmark's JSON line."""
        keys = ("test", "front_end", "how", "rps", "predicted_rps", "bound_rps", "low_rps", "bottleneck", "statuses",
                "errors", "container", "cpu_ms_per_request", "waits_ms", "start_ms", "neighbours")
        return {
            "tests": [{key: row.as_dict()[key] for key in keys} for row in self.rows()],
            **self._queue_results(),
            "memory_cap": self._cap_results(),
            "faults": self.faults,
            "rss_mb": self.rss,
            "skipped": skipped,
            "parameters": self.plan.as_dict(),
        }

    def _queue_results(self):
        """The queue's slope, measured against the law's two sides, and the bounded queue's refusals."""
        queue, bounded = self.queue, self.bounded
        lowest, highest = queue.slope_bounds(self.plan.task_s) if queue else (None, None)
        refused = [sample.latency for sample in bounded.result.samples if sample.status == 503] if bounded else []
        return {
            "queue_container": vars(queue.result.container()) if queue and queue.result.container() else None,
            "queue_slope": {"measured": queue.measured_slope() if queue else None,
                            "predicted": queue.predicted_slope if queue else None,
                            "with_waits": queue.slope_here() if queue else None,
                            "lowest": lowest, "highest": highest, "sent_rps": queue.sent_rps() if queue else None,
                            "neighbours": queue.neighbours if queue else None},
            "backpressure": {"statuses": bounded.statuses(), "longest_queue": max(n for _, n in bounded.points),
                             "limit": self.plan.queue_limit, "points": bounded.points, "refused": len(refused),
                             "slowest_refusal_s": max(refused, default=None), "drain_rps": bounded.drain_here(),
                             "neighbours": bounded.neighbours,
                             } if bounded else None,
        }

    def _cap_results(self):
        """The memory cap's run: what Redis held against its own readings' bounds, and the answers after it filled."""
        cap = self.cap
        if not cap:
            return None
        return {**cap.as_dict(), "held_bounds": list(cap.held_bounds()),
                "answered_200": runs.statuses(cap.result).get(200), "reason_status": cap.reason_status}
