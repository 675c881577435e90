"""Lesson 10's runs: closed loops on a front end, each beside its bottleneck-law prediction.

Also the broker's queue while tasks are fired and forgotten, and the faults.
"""

import contextlib
import math
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from iolab import environment, load, metrics, neighbours, theory, usage
from iolab.lessons.backend.stack import QUEUE

TIE = 0.05  # tiers whose limits are within 5% share the bottleneck: closer than one run can tell apart
ALONE = 5  # 503s asked for one at a time once Redis is full
RUN_SLACK_S = 15.0  # added to every run's timeouts: client start-up and a loaded machine


@dataclass
class Tiers:
    """The tiers a request crosses in a blocking run, each with how many it serves at once (None: no fixed limit)."""

    users: int  # the closed loop: N users, each with one request out
    front: int | None  # F, the front end's: 1 (blocking Tornado), k threads, w sync workers, None (greenlets, awaiting)
    workers: int  # the Celery pool's concurrency c: threads of one worker process
    front_threads: bool = False  # the front end's F slots are threads of one process (Tornado's pool), not processes

    def law(self, front_s, worker_s=None):
        """(bound req/s, bottleneck): min(N / R, F / R, c / T_w), with R the front end's round trip, T_w a worker slot's.

        Tiers within TIE of the smallest share the name: a run cannot tell them apart. So do a front end and a
        worker pool of as many slots where each front slot waits out a worker's in its own: F = c and R ≥ T_w. Then
        the front end's limit is the pool's plus its own way, the two bind together, and which one the law names
        depends on a few percent of R (Tornado blocking its loop on one worker: its way is about 5% of R).
        """
        worker_s = front_s if worker_s is None else worker_s
        limits = {"users": (self.users, front_s), "front end": (self.front, front_s), "worker pool": (self.workers, worker_s)}
        bound, _ = theory.bottleneck(limits)
        tied = [name for name, (servers, demand) in limits.items()
                if servers is not None and servers / demand <= bound * (1 + TIE)]
        if tied == ["front end"] and self.front == self.workers and front_s >= worker_s:
            tied.append("worker pool")  # one chain of slots: the front's wait holds the worker's
        return bound, " = ".join(tied)


@dataclass
class Row:
    """One run of the lesson: what was measured, what was predicted, and the tier that limited it."""

    test: str
    front_end: str
    how: str
    users: int
    rps: float
    predicted_rps: float
    bound_rps: float
    bottleneck: str
    statuses: dict = field(default_factory=dict)
    summary: object = None
    # The pessimistic side: the law again with the path's own time (R − T, everything but the task's wait) counted
    # twice, as a machine whose CPUs are shared (a browser, the worker, Redis, the client) can stretch it.
    low_rps: float = math.nan
    container: object = None  # usage.ContainerWindow: the container's CPU over the run, under a CPU quota
    waits_ms: tuple = (0.0, 0.0, 0.0)  # the front end's, the worker pool's and Redis's wait for a CPU per request
    start_ms: float = 0.0  # S: what a fresh connection's first request took beyond R, measured alone
    worker_timeouts: int = 0  # gunicorn's WORKER TIMEOUT lines during the run
    left_in_queue: int | None = None  # fire and forget: tasks the workers had not started when the run ended
    neighbours: dict | None = None  # what else held the CPUs over the run (iolab.neighbours, as_dict)

    def quota_note(self):
        return quota_note(self.container)

    @property
    def off(self):
        """Measured over predicted, minus one: +0.05 is 5% faster than predicted."""
        return self.rps / self.predicted_rps - 1

    def as_dict(self):
        return {"test": self.test, "front_end": self.front_end, "how": self.how, "users": self.users,
                "rps": self.rps, "predicted_rps": self.predicted_rps, "bound_rps": self.bound_rps,
                "bottleneck": self.bottleneck, "off": self.off, "statuses": self.statuses, "low_rps": self.low_rps,
                "errors": self.summary.errors if self.summary else None,
                "container": vars(self.container) if self.container else None, "waits_ms": self.waits_ms,
                "start_ms": self.start_ms, "neighbours": self.neighbours,
                "cpu_ms_per_request": {"server": self.summary.demand_ms, "client": self.summary.client_demand_ms,
                                       "lab": self.summary.lab_demand_ms} if self.summary else None}


NOISE = 3  # standard errors either side of a fitted figure: the fit's own scatter, measured in the same run


def quota_note(container):
    """Under a CPU quota (a usage.ContainerWindow), the container's CPU over the run and how often and how long
    the kernel stopped it; "no quota" elsewhere."""
    if container is None:
        return "no quota"
    used = f"{container.utilization:.2f} of {container.quota:g} CPU"
    if not container.throttled:
        return f"{used}; never stopped"
    return f"{used}; stopped {container.throttled}×, {container.throttled_s:.2f} s in all"


def others_held(row):
    """The share of a run others held the CPUs, for a table: "38%", or "unknown" where it was not read."""
    return neighbours.held(row.neighbours)


def watched(url, **options):
    """load.start_load(url, **options), with the neighbours read just before it: over_run() reads them to its end."""
    before = neighbours.read()
    run = load.start_load(url, **options)
    run.neighbours_before = before
    return run


def over_run(run):
    """What else held the CPUs from a watched() run's start to now, as a dict (iolab.neighbours), or None."""
    before = getattr(run, "neighbours_before", None)
    return neighbours.between(before, neighbours.read()).as_dict() if before else None


def statuses(result):
    """{status: count} of a run's answers; 0 for requests that got none."""
    return dict(Counter(sample.status for sample in result.samples))


def trip_s(front, how="wait", ms=100, requests=5):
    """R: the time one /backend request takes alone (send, the worker's T, the result's way back), in seconds."""
    url = f"{front.url}/backend?ms={ms}&how={how}"
    load.run_load(url, requests=1, concurrency=1, timeout_s=ms / 1000 + RUN_SLACK_S)  # connects; not timed
    return _median_alone(front, url, requests)


def trip_and_start_s(front, how="wait", ms=100, requests=5):
    """(R, S) in seconds: R as trip_s; S what a request on a fresh connection takes beyond R, the median of
    `requests` each alone on a connection of its own (they go first, and connect the front end to Redis).

    gevent runs each connection in a greenlet of its own, and Celery keeps a result store per thread, which the
    patch makes per greenlet: a new connection's first wait connects a store to Redis and subscribes before its
    task is sent (sharing one store between greenlets fails: two use its socket at once). Measured alone, S was
    6-12 ms through gevent. Tornado's thread and gunicorn's workers keep their store from one connection to the
    next, and the run's first round builds it: their S is no cost of the run (plan_waits measures it for gevent)."""
    url = f"{front.url}/backend?ms={ms}&how={how}"
    fresh = _median_alone(front, url, requests, keep_alive=False)
    trip = _median_alone(front, url, requests)
    return trip, max(0.0, fresh - trip)


def _median_alone(front, url, requests, **options):
    """The median time of `requests` sent one at a time to `url`, each answered 200, in seconds."""
    result = load.run_load(url, requests=requests, concurrency=1, timeout_s=RUN_SLACK_S + 1, **options)
    answered = [sample.latency for sample in result.samples if sample.status == 200]
    if len(answered) < requests:
        raise RuntimeError(f"{front.name} answered {statuses(result)} to {url}; last stderr:\n{front.stderr_tail()}")
    return float(np.median(answered))


@dataclass
class Blocking:
    """One blocking run, planned: its front end (started), the tiers, R and T_w measured alone, the task's T.

    The run's own figures travel together here, so that starting it, predicting it and judging it read the same.
    """

    test: str  # the row's name: "wait", "await", "k=4"
    front: object  # the front end's servers.Server, started on the backend
    how: str  # how the front end waits for the result: wait, pool or await
    tiers: Tiers
    trip_s: float  # R: one request alone through this front end
    slot_s: float  # T_w: how long a worker slot is held per task, measured alone
    task_ms: int  # T
    requests: int
    start_s: float = 0.0  # S: a fresh connection's first request beyond R, alone (trip_and_start_s)

    def law(self):
        """(predicted req/s, bottleneck) from R and T_w measured alone."""
        return self.tiers.law(self.trip_s, self.slot_s)

    @property
    def predicted_rps(self):
        return self.law()[0]

    @property
    def url(self):
        return f"{self.front.url}/backend?ms={self.task_ms}&how={self.how}"


def start_blocking(blocking, worker=None, broker=None):
    """Start a closed loop of `blocking.tiers.users` on /backend?how=...; each request may wait behind everyone else.

    A first round of short tasks from every user goes before it, unmeasured: each
    thread of a pool, each awaiting request, opens its connections to Redis then.
    With `worker` (the worker pool's Server) the run also measures, from its go,
    how long the worker pool's threads waited for a CPU: `run.worker_meter`; with
    `broker` (Redis's Server), how long Redis waited: `run.broker_meter`.
    """
    front, users = blocking.front, blocking.tiers.users
    warm = f"{front.url}/backend?ms=1&how={blocking.how}"
    load.run_load(warm, requests=users, concurrency=users, timeout_s=RUN_SLACK_S + users * blocking.trip_s)
    bound, _ = blocking.law()
    worst_s = blocking.requests / bound + blocking.trip_s  # the last request waits for all the others
    meters = [usage.CpuMeter(part.pid) if part is not None else None for part in (worker, broker)]

    def start_meters():
        for meter in meters:
            if meter is not None:
                meter.start()

    run = watched(
        blocking.url, server=front, requests=blocking.requests, concurrency=users,
        timeout_s=min(600.0, worst_s + RUN_SLACK_S), max_duration_s=min(1800.0, 2 * worst_s + RUN_SLACK_S),
        before_go=start_meters,
    )
    run.worker_meter, run.broker_meter = meters
    return run


def cpu_waits(summary, worker_usage, broker_usage=None):
    """(front end's, worker pool's, Redis's) seconds per request spent ready to run but waiting for a CPU, in this run.

    A slot of either tier is held for its round trip alone and for those waits: on a busy machine, beside a
    hog, or while a CPU quota has stopped the whole container (a throttled thread waits on its run queue too).
    The front end's figure is its busiest thread's (the event loop's, or the thread a blocking call holds);
    the worker pool's is all its threads', the consumer's and the pool's, each on every task's way. Redis's is
    on both tiers' way: a front end's slot waits for it to take the task and give the result back, a worker's
    slot for it to store the result, take the acknowledgement and hand over the next task.
    """
    done = summary.completed or 1
    front = summary.queued_ms / 1000 if summary.queued_ms == summary.queued_ms else 0.0
    return front, _queued_per(worker_usage, done), _queued_per(broker_usage, done)


def _queued_per(used, done):
    """A usage.Usage's seconds waiting for a CPU per request, 0 where it was not measured."""
    return used.queued_s / done if used is not None and used.queued_s == used.queued_s else 0.0


def gil_turns(tiers, summary, worker_usage):
    """(front end's, worker pool's) seconds per request a slot may wait for the other slots' turns at the GIL.

    A tier's slots that are threads of one process run its Python one at a time. At worst, a slot finishing
    its task waits for every other slot to finish theirs first: (slots − 1) × the tier's CPU per request,
    measured in this run. This is the pessimistic bound's N × D again, inside one tier. Measured closed loops
    of 16 slots with 50 ms tasks ran 24% under c / T_w, because the slots come to finish in step.
    """
    done = summary.completed or 1
    worker_cpu_s = worker_usage.cpu_s / done if worker_usage is not None and worker_usage.cpu_s == worker_usage.cpu_s else 0.0
    front_cpu_s = summary.demand_ms / 1000 if summary.demand_ms == summary.demand_ms else 0.0
    front = (tiers.front - 1) * front_cpu_s if tiers.front_threads and tiers.front else 0.0
    return front, (tiers.workers - 1) * worker_cpu_s


def quota_tier(container, completed):
    """The container's CPU quota as a tier: (quota / D_c req/s, D_c), D_c the container's CPU per request over the
    run's own window (every process in it: Redis, the workers, the front end, the client, this notebook and its
    drawing). None where no quota applies.

    The kernel gives the whole container at most `quota` CPU seconds per second, so by the utilization law it
    answers at most quota / D_c requests per second, however many cores the machine has.
    """
    if container is None or not completed or not container.cpu_s > 0:
        return None
    demand_s = container.cpu_s / completed
    return container.quota / demand_s, demand_s


def blocking_row(blocking, result, worker=None, others=None, broker=None):
    """The row for a finished blocking run: predicted from R and T_w measured alone and, under a CPU quota, the
    container's CPU per request in this run (quota_tier); bounded above by the task's own T.

    The pessimistic side holds each tier's slot for its own way twice, for its threads' wait for a CPU in this
    run, Redis's included (cpu_waits), and for their turns at their process's GIL (gil_turns); `worker` and
    `broker` are the run's worker_meter and broker_meter, if it had them; `others`, what else held the CPUs over
    it (over_run).
    """
    front, tiers, trip, slot, ms = blocking.front, blocking.tiers, blocking.trip_s, blocking.slot_s, blocking.task_ms
    front.check()
    summary = metrics.summarize(result)
    worker_usage = worker.stop() if worker is not None else None
    broker_usage = broker.stop() if broker is not None else None
    front_wait, worker_wait, broker_wait = cpu_waits(summary, worker_usage, broker_usage)
    front_turns, worker_turns = gil_turns(tiers, summary, worker_usage)
    predicted, bottleneck = tiers.law(trip, slot)
    container = result.container()
    quota = quota_tier(container, summary.completed)
    if quota is not None and quota[0] <= predicted * (1 + TIE):
        tied = f" = {bottleneck}" if quota[0] * (1 + TIE) >= predicted else f", then {bottleneck}"
        predicted, bottleneck = min(predicted, quota[0]), f"the container's CPU quota{tied}"
    bound, _ = tiers.law(ms / 1000)  # no slot of any tier can be held for less than the task's T
    own_s = max(0.0, trip - ms / 1000)
    low, _ = tiers.law(trip + own_s + front_wait + broker_wait + front_turns,
                       slot + own_s + worker_wait + broker_wait + worker_turns)
    low = started_late(low, summary.completed, tiers.users, blocking.start_s)
    return Row(blocking.test, front.name, blocking.how, tiers.users, summary.rps, predicted, bound, bottleneck,
               statuses(result), summary, low, container, (front_wait * 1000, worker_wait * 1000, broker_wait * 1000),
               blocking.start_s * 1000, neighbours=others)


def started_late(rps, done, users, start_s):
    """A rate of `done` requests, with the run's start S late for each of its `users`: done / (done / rps + N × S).

    Every user opens a fresh connection at the go, and each pays S before its first task is sent. On one thread
    (gevent's) their starts may run one after another: at worst the first task reaches the worker N × S late, and
    the worker idles that long. Measured, quick sizes (10 requests, 6 users): gevent's first answer came at
    88-100 ms against Tornado's 58-62, its answers after it 54-56 ms apart as Tornado's; 6% of the run."""
    if not done or not rps > 0 or not start_s > 0:
        return rps
    return done / (done / rps + users * start_s)


def start_cpu_bound(front, path, users, requests):
    """Start a closed loop on a route that holds nothing but the front end's CPU (hello world, fire and forget)."""
    return watched(f"{front.url}{path}", server=front, requests=requests, concurrency=users,
                           timeout_s=RUN_SLACK_S + 15, max_duration_s=300.0)


def cpu_bound_row(test, front, how, result, processes, others=None):
    """The row for a CPU-bound run: its bound is the utilization law's, min(processes, cores) / D, with D measured."""
    front.check()
    summary = metrics.summarize(result)
    cores = min(processes, summary.cores or environment.usable_cores())
    bound = cores / (summary.demand_ms / 1000) if summary.demand_ms > 0 else math.nan
    busy = summary.utilization / cores
    bottleneck = "front end's CPU" if busy >= 0.8 else f"the machine's CPUs, shared (front end {busy:.0%} busy)"
    return Row(test, front.name, how, summary.concurrency, summary.rps, bound, bound, bottleneck, statuses(result), summary,
               container=result.container(), neighbours=others)


@dataclass
class QueueRun:
    """An open loop of fire-and-forget requests at `rate` while LLEN is read: the queue's growth and its slope."""

    rate: float
    drain: float  # c / T: what the worker pool takes from the queue per second
    points: list
    result: object
    workers: int = 0  # c
    slot_s: float = math.nan  # T_w: how long a slot is held per task, measured alone
    worker_usage: object = None  # usage.Usage of the worker pool over the run: its threads' wait for a CPU
    neighbours: dict | None = None  # what else held the CPUs over the run (over_run)

    @property
    def predicted_slope(self):
        return self.rate - self.drain

    def drain_here(self):
        """c / T_w less the slots lost waiting for a CPU in this run: (c − q / t) / T_w, q the worker pool's threads'
        seconds waiting over the run's t seconds (q / t of them waited at any moment, on average)."""
        usage_ = self.worker_usage
        if usage_ is None or not self.workers or not usage_.wall_s > 0 or usage_.queued_s != usage_.queued_s:
            return self.drain
        return max(0.0, self.workers - usage_.queued_s / usage_.wall_s) / self.slot_s

    def slope_here(self):
        """λ − the drain this run's waits for a CPU left: the slope the law gives with what this run measured."""
        return self.rate - self.drain_here()

    def _growth(self):
        """The (time, LLEN) points from when the queue starts growing to its highest point, or None if too few."""
        times, lengths = np.array(self.points, dtype=float).T if self.points else (np.array([]), np.array([]))
        growing = np.nonzero(lengths > 0)[0]
        if len(growing) < 5:
            return None
        first, peak = growing[0], int(np.argmax(lengths))
        if peak - first < 5:
            return None
        window = slice(first + (peak - first) // 10, peak + 1)  # past the first tenth: the client's start-up ramp
        return times[window], lengths[window]

    def measured_slope(self):
        """LLEN's growth per second, fitted from when the queue starts growing to its highest point."""
        growth = self._growth()
        return metrics.line_fit(*growth)[0] if growth else math.nan

    def sent_rps(self):
        """The arrivals the client really made: requests over the time from the first send to the last."""
        starts = [sample.start for sample in self.result.samples]
        return (len(starts) - 1) / (max(starts) - min(starts)) if len(starts) > 1 and max(starts) > min(starts) else 0.0

    def slope_bounds(self, task_s):
        """(lowest, highest) slope the law allows with what this run measured, each NOISE standard errors wider.

        Lowest: the arrivals the client really made, less the most the slots can drain, c / T (no slot is held
        for less than the task's T). Highest: λ less the least they drain, with each slot held for T_w and its
        own way (T_w − T) again, as the blocking runs' pessimistic side, and less the slots' waits for a CPU
        (drain_here).
        """
        growth = self._growth()
        if growth is None:
            return math.nan, math.nan
        _, _, slope_se, _ = metrics.line_fit(*growth)
        own_s = max(0.0, self.slot_s - task_s)
        least_drain = self.drain_here() * self.slot_s / (self.slot_s + own_s)
        low = min(self.rate, self.sent_rps()) - self.workers / task_s
        return low - NOISE * slope_se, self.rate - least_drain + NOISE * slope_se

    def statuses(self):
        return statuses(self.result)


def start_open_loop(front, rate, seconds, ms, worker=None):
    """Fire and forget at a fixed rate for `seconds`: the arrivals the queue must absorb.

    With `worker` (the worker pool's Server), `run.worker_meter` measures its threads' wait for a CPU from the go.
    """
    meter = usage.CpuMeter(worker.pid) if worker is not None else None
    run = watched(
        f"{front.url}/backend?ms={ms}&how=forget", kind="open", rate_rps=rate,
        requests=max(1, round(rate * seconds)), concurrency=64, timeout_s=10.0, max_duration_s=seconds + RUN_SLACK_S,
        before_go=meter.start if meter else None,
    )
    run.worker_meter = meter
    return run


@dataclass
class FaultRun:
    """A closed loop during which a part was killed: what came back, how fast, and what was left in Redis."""

    what: str
    killed_at_s: float
    result: object
    left: dict = field(default_factory=dict)
    requests: int = 0  # sent in all: before the kill and after it
    took_s: float = math.nan  # from the start to the last answer, the kill and the wait for answers included

    def counts(self):
        """Answers by kind, and the slowest answer of each kind, in ms."""
        by_status = {}
        for sample in self.result.samples:
            kind = str(sample.status) if sample.status else (sample.error or "no answer")
            count, slowest = by_status.get(kind, (0, 0.0))
            by_status[kind] = (count + 1, max(slowest, sample.latency * 1000))
        return {kind: {"count": count, "slowest_ms": round(slowest, 1)} for kind, (count, slowest) in by_status.items()}

    def as_dict(self):
        return {"killed": self.what, "killed_at_s": round(self.killed_at_s, 2), "answers": self.counts(),
                "duration_s": round(self.result.duration_s, 2), "left_in_redis": self.left}


def run_with_fault(front, path, users, *, before, after, timeout_s, kill, what):
    """A closed loop on `path`: `kill()` once `before` requests are answered, then `after` more are sent.

    Every request is bounded by `timeout_s`; nothing the kill does can make the run hang. Returns the FaultRun.
    """
    run = load.start_load(f"{front.url}{path}", requests=before + after, concurrency=users, timeout_s=timeout_s,
                          max_duration_s=(before + after) * timeout_s + RUN_SLACK_S)
    began = time.monotonic()
    try:
        while len(run.samples()) < before and not run.done():
            time.sleep(0.01)
        killed_at = time.monotonic() - began
        kill()
        result = run.wait()
    finally:
        run.stop()
    return FaultRun(what, killed_at, result, requests=before + after, took_s=time.monotonic() - began)


def tasks_that_fit(cap_mb, empty_bytes, bytes_per_task):
    """How many waiting tasks a Redis capped at `cap_mb` holds: (cap − what it uses empty) / bytes per task."""
    if not bytes_per_task > 0:
        raise ValueError(f"bytes_per_task={bytes_per_task!r}: the queue's run must measure a positive figure first")
    return max(0.0, (cap_mb * 2**20 - empty_bytes) / bytes_per_task)


@dataclass
class CapRun:
    """Fire and forget into a small Redis with no worker until it refuses: how many tasks fit, and the answers after."""

    cap_mb: int
    empty_bytes: int  # used_memory before the first task: what Redis holds with nothing queued
    bytes_per_task: float  # Redis memory per waiting task, measured by the queue's run
    rate: float  # the front end's fire-and-forget answers per second, measured before
    held: int  # LLEN once the run is over: no worker takes any, and a refused task is not queued
    result: object
    reason: str = ""  # the first line of one answer asked for alone after the run
    reason_status: int = 0
    reason_ms: float = math.nan  # the median time of ALONE answers, each asked for alone
    used_at_end: int = 0  # used_memory once Redis refused
    memory: list = field(default_factory=list)  # (LLEN, used_memory) read during the run

    def bytes_per_task_here(self):
        """Redis memory per waiting task in this run: the slope of used_memory against LLEN."""
        if len({length for length, _ in self.memory}) < 3:
            return math.nan
        return metrics.line_fit(*np.array(self.memory, dtype=float).T)[0]

    def held_bounds(self):
        """(fewest, most) tasks Redis could hold by this run's own readings of used_memory against LLEN.

        Redis refuses a write once used_memory passes the cap, so it holds the LLEN at which the readings' line
        reaches the cap. The readings scatter about that line (clients' buffers come and go): the bounds move
        the line NOISE of its standard deviations up and down and its slope NOISE standard errors either way.
        """
        if len({length for length, _ in self.memory}) < 3:
            return math.nan, math.nan
        slope, intercept, slope_se, spread = metrics.line_fit(*np.array(self.memory, dtype=float).T)
        room = self.cap_mb * 2**20 - intercept
        steepest, flattest = slope + NOISE * slope_se, max(slope - NOISE * slope_se, 1e-9)
        return (room - NOISE * spread) / steepest, (room + NOISE * spread) / flattest

    @property
    def predicted_tasks(self):
        return tasks_that_fit(self.cap_mb, self.empty_bytes, self.bytes_per_task)

    @property
    def predicted_s(self):
        return self.predicted_tasks / self.rate

    def refusals(self):
        """The answers from the first 503 on, in the order they were sent."""
        samples = sorted(self.result.samples, key=lambda sample: sample.start)
        first = next((i for i, sample in enumerate(samples) if sample.status == 503), len(samples))
        return samples[first:]

    def first_503_after_s(self):
        refused = self.refusals()
        return refused[0].end if refused else math.nan

    def median_503_ms(self):
        refused = [sample.latency for sample in self.refusals() if sample.status == 503]
        return float(np.median(refused)) * 1000 if refused else math.nan

    def as_dict(self):
        return {"cap_mb": self.cap_mb, "predicted_tasks": round(self.predicted_tasks), "measured_tasks": self.held,
                "predicted_s": self.predicted_s, "first_503_after_s": self.first_503_after_s(),
                "median_503_ms": self.median_503_ms(), "reason": self.reason, "alone_503_ms": self.reason_ms,
                "bytes_per_task_here": self.bytes_per_task_here(), "used_at_end": self.used_at_end,
                "after_first_503": {str(k): v for k, v in Counter(s.status for s in self.refusals()).items()}}


def one_answer(url, timeout_s=5.0):
    """(status, body's first line, ms) of one GET alone; an HTTP error's status and body too."""
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            status, body = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    return status, (body.decode().strip().splitlines() or [""])[0], (time.perf_counter() - began) * 1000


def fill_to_cap(front, client, cap_mb, *, bytes_per_task, rate, users, refused=100, empty_bytes=None):
    """A closed loop of fire and forget into `client`'s Redis until `refused` answers were 503s.

    Nothing drains the queue, so LLEN at the end is every task Redis took before
    its cap. The run is bounded at three times the tasks predicted to fit, in case
    Redis never refuses. (LLEN, used_memory) pairs are read as it goes, for the
    bytes per task of this queue. `empty_bytes`: used_memory read before, when a
    prediction was printed from it.
    """
    empty = client.info("memory")["used_memory"] if empty_bytes is None else empty_bytes
    requests = round(3 * tasks_that_fit(cap_mb, empty, bytes_per_task)) + refused
    url = f"{front.url}/backend?ms=10&how=forget"
    run = load.start_load(url, requests=requests, concurrency=users, timeout_s=10.0,
                          max_duration_s=requests / max(rate, 1.0) * 3 + RUN_SLACK_S)
    memory = []
    try:
        while not run.done() and sum(sample.status == 503 for sample in run.samples()) < refused:
            with contextlib.suppress(Exception):
                memory.append((client.llen(QUEUE), client.info("memory")["used_memory"]))
            time.sleep(0.05)
        run.stop()
        result = run.wait()
    finally:
        run.stop()
    front.check()
    cap = CapRun(cap_mb, empty, bytes_per_task, rate, client.llen(QUEUE), result)
    cap.used_at_end = client.info("memory")["used_memory"]
    alone = [one_answer(url) for _ in range(ALONE)]  # each alone: how fast a single user learns the broker is full
    cap.reason_status, cap.reason, _ = alone[-1]
    cap.reason_ms = float(np.median([ms for _, _, ms in alone]))
    cap.memory = memory
    return cap
