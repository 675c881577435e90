"""Lesson 10's runs: closed loops on a front end, each beside its bottleneck-law prediction.

Also the broker's queue while tasks are fired and forgotten, and the faults.
"""

import math
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from iolab import environment, load, metrics, theory

TIE = 0.05  # tiers whose limits are within 5% share the bottleneck: closer than one run can tell apart
RUN_SLACK_S = 15.0  # added to every run's timeouts: client start-up and a loaded machine


@dataclass
class Tiers:
    """The tiers a request crosses in a blocking run, each with how many it serves at once (None: no fixed limit)."""

    users: int  # the closed loop: N users, each with one request out
    front: int | None  # the front end: 1 (blocking Tornado), k threads, W sync workers, None (greenlets, awaiting)
    workers: int  # the Celery pool's concurrency c

    def law(self, front_s, worker_s=None):
        """(bound req/s, bottleneck): min(N / R, F / R, c / T_w), with R the front end's round trip, T_w a worker slot's.

        Tiers within TIE of the smallest share the name: a run cannot tell them apart.
        """
        worker_s = front_s if worker_s is None else worker_s
        limits = {"users": (self.users, front_s), "front end": (self.front, front_s), "worker pool": (self.workers, worker_s)}
        bound, _ = theory.bottleneck(limits)
        tied = [name for name, (servers, demand) in limits.items()
                if servers is not None and servers / demand <= bound * (1 + TIE)]
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

    @property
    def off(self):
        """Measured over predicted, minus one: +0.05 is 5% faster than predicted."""
        return self.rps / self.predicted_rps - 1

    def as_dict(self):
        return {"test": self.test, "front_end": self.front_end, "how": self.how, "users": self.users,
                "rps": self.rps, "predicted_rps": self.predicted_rps, "bound_rps": self.bound_rps,
                "bottleneck": self.bottleneck, "off": self.off, "statuses": self.statuses}


def statuses(result):
    """{status: count} of a run's answers; 0 for requests that got none."""
    return dict(Counter(sample.status for sample in result.samples))


def trip_s(front, how="wait", ms=100, requests=5):
    """R: the time one /backend request takes alone (send, the worker's T, the result's way back), in seconds."""
    url = f"{front.url}/backend?ms={ms}&how={how}"
    load.run_load(url, requests=1, concurrency=1, timeout_s=ms / 1000 + RUN_SLACK_S)  # connects; not timed
    result = load.run_load(url, requests=requests, concurrency=1, timeout_s=ms / 1000 + RUN_SLACK_S)
    answered = [sample.latency for sample in result.samples if sample.status == 200]
    if len(answered) < requests:
        raise RuntimeError(f"{front.name} answered {statuses(result)} to {url}; last stderr:\n{front.stderr_tail()}")
    return float(np.median(answered))


def start_blocking(front, how, users, requests, ms, tiers, trip, slot):
    """Start a closed loop on /backend?how=...; each request may wait behind everyone else.

    A first round of short tasks from every user goes before it, unmeasured: each
    thread of a pool, each awaiting request, opens its connections to Redis then.
    """
    warm = f"{front.url}/backend?ms=1&how={how}"
    load.run_load(warm, requests=users, concurrency=users, timeout_s=RUN_SLACK_S + users * trip)
    bound, _ = tiers.law(trip, slot)
    worst_s = requests / bound + trip  # the last request waits for all the others
    return load.start_load(
        f"{front.url}/backend?ms={ms}&how={how}", server=front, requests=requests, concurrency=users,
        timeout_s=min(600.0, worst_s + RUN_SLACK_S), max_duration_s=min(1800.0, 2 * worst_s + RUN_SLACK_S),
    )


def blocking_row(test, front, how, result, ms, tiers, trip, slot):
    """The row for a finished blocking run: predicted from R and T_w measured alone, bounded by the task's own T."""
    front.check()
    summary = metrics.summarize(result)
    predicted, bottleneck = tiers.law(trip, slot)
    bound, _ = tiers.law(ms / 1000)  # no slot of any tier can be held for less than the task's T
    return Row(test, front.name, how, tiers.users, summary.rps, predicted, bound, bottleneck, statuses(result), summary)


def start_cpu_bound(front, path, users, requests):
    """Start a closed loop on a route that holds nothing but the front end's CPU (hello world, fire and forget)."""
    return load.start_load(f"{front.url}{path}", server=front, requests=requests, concurrency=users,
                           timeout_s=RUN_SLACK_S + 15, max_duration_s=300.0)


def cpu_bound_row(test, front, how, result, processes):
    """The row for a CPU-bound run: its bound is the utilization law's, min(processes, cores) / D, with D measured."""
    front.check()
    summary = metrics.summarize(result)
    cores = min(processes, summary.cores or environment.usable_cores())
    bound = cores / (summary.demand_ms / 1000) if summary.demand_ms > 0 else math.nan
    busy = summary.utilization / cores
    bottleneck = "front end's CPU" if busy >= 0.8 else f"the machine's CPUs, shared (front end {busy:.0%} busy)"
    return Row(test, front.name, how, summary.concurrency, summary.rps, bound, bound, bottleneck, statuses(result), summary)


@dataclass
class QueueRun:
    """An open loop of fire-and-forget requests at `rate` while LLEN is read: the queue's growth and its slope."""

    rate: float
    drain: float  # c / T: what the worker pool takes from the queue per second
    points: list
    result: object

    @property
    def predicted_slope(self):
        return self.rate - self.drain

    def measured_slope(self):
        """LLEN's growth per second, fitted from when the queue starts growing to its highest point."""
        times, lengths = np.array(self.points, dtype=float).T if self.points else (np.array([]), np.array([]))
        growing = np.nonzero(lengths > 0)[0]
        if len(growing) < 5:
            return math.nan
        first, peak = growing[0], int(np.argmax(lengths))
        window = slice(first + (peak - first) // 10, peak + 1)  # past the first tenth: the client's start-up ramp
        if peak - first < 5:
            return math.nan
        slope, _ = np.polyfit(times[window], lengths[window], 1)
        return float(slope)

    def statuses(self):
        return statuses(self.result)


def start_open_loop(front, rate, seconds, ms):
    """Fire and forget at a fixed rate for `seconds`: the arrivals the queue must absorb."""
    return load.start_load(
        f"{front.url}/backend?ms={ms}&how=forget", loop="open", rate_rps=rate, requests=max(1, round(rate * seconds)),
        concurrency=64, timeout_s=10.0, max_duration_s=seconds + RUN_SLACK_S,
    )


@dataclass
class FaultRun:
    """A closed loop during which a part was killed: what came back, how fast, and what was left in Redis."""

    what: str
    killed_at_s: float
    result: object
    left: dict = field(default_factory=dict)

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


def run_with_fault(front, path, users, before, after, timeout_s, kill, what):
    """A closed loop on `path`: `kill()` once `before` requests are answered, then `after` more are sent.

    Every request is bounded by `timeout_s`; nothing the kill does can make the run hang.
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
    return FaultRun(what, killed_at, result), time.monotonic() - began
