"""Lesson 02's experiment.

One handler under a closed-loop load, with the server's CPU measured and theory's prediction beside
it.
"""

import math
import weakref
from dataclasses import dataclass

from iolab import load, metrics, neighbours, theory

ROUTES = {"sync": "sync-sleep", "async": "async-sleep"}
_started: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # server -> the neighbours read at its run's start
TOLERANCE = 0.02  # how far past a bound a measurement may lie before it counts as outside: the measuring's own error


@dataclass
class Measured:
    """One handler's run: the load result, its summary (with the server's CPU), and theory's prediction from it."""

    mode: str
    delay_ms: int
    result: load.LoadResult
    summary: metrics.Summary
    prediction: theory.Prediction
    others: neighbours.Neighbours | None = None  # what else held the CPUs while it ran

    @property
    def in_band(self):
        """Is the measured throughput between the pessimistic and optimistic bounds (TOLERANCE either side)?"""
        return self.prediction.contains(self.summary.rps, TOLERANCE)

    @property
    def off_in_step(self):
        """Measured over predicted-in-step throughput, minus one: +0.01 is 1% faster than the prediction."""
        return self.summary.rps / self.prediction.in_step_rps - 1

    def row(self):
        """The figures a corner table or a results file needs, as plain numbers."""
        s, p = self.summary, self.prediction
        return {
            "mode": self.mode, "delay_ms": self.delay_ms, "users": s.concurrency, "requests": s.completed,
            "rps": s.rps, "low_rps": p.low_rps, "in_step_rps": p.in_step_rps, "high_rps": p.high_rps,
            "off_in_step": self.off_in_step, "in_band": self.in_band, "demand_ms": s.demand_ms,
            "queued_ms": s.queued_ms, "client_demand_ms": s.client_demand_ms, "utilization": s.utilization,
            "mean_ms": s.mean_ms, "p50_ms": s.p50_ms, "p99_ms": s.p99_ms, "errors": s.errors, "cores": s.cores,
            "listen_drops": s.listen_drops,
            "neighbours": self.others.as_dict() if self.others else None,
        }


def start(server, mode, requests, concurrency, delay_ms, client="async"):
    """Start the run (its server's CPU measured) and return the LoadRun, for a live dashboard to follow."""
    _started[server] = neighbours.read()  # finish() reads the neighbours over the whole run from here
    service_s = delay_ms / 1000
    # A blocking server answers one request per service time: the last user waits for the whole queue.
    worst_s = requests * service_s if mode == "sync" else service_s * math.ceil(requests / concurrency)
    return load.start_load(
        f"{server.url}/{ROUTES[mode]}?ms={delay_ms}", server=server, requests=requests, concurrency=concurrency,
        kind=f"closed_{client}", timeout_s=min(600.0, worst_s + 30), max_duration_s=min(3600.0, 2 * worst_s + 30),
    )


def finish(server, mode, delay_ms, result):
    """The Measured for a finished run: its summary, the prediction from the CPU it measured, and what else held
    the CPUs since its start()."""
    before = _started.get(server)
    others = neighbours.between(before, neighbours.read()) if before else None
    server.check()
    summary = metrics.summarize(result)
    prediction = theory.predict_run(summary, delay_ms, blocking=mode == "sync", window_s=measured_window_s(result))
    return Measured(mode, delay_ms, result, summary, prediction, others)


def measured_window_s(result):
    """The seconds a run's CPU counters were open (from the go until the clients exited), or None if unmeasured."""
    return getattr(result.usage, "wall_s", None)


def run(server, mode, requests, concurrency, delay_ms, client="async", follow=None):
    """Run one handler to the end; `follow(run)` may draw it live and must return its LoadResult."""
    started = start(server, mode, requests, concurrency, delay_ms, client)
    try:
        result = follow(started) if follow else started.wait()
    finally:
        started.stop()
    return finish(server, mode, delay_ms, result)


def percentile_band_ms(measured):
    """(lowest, highest) latency theory allows any request of the run, in ms: each needs its wait and the server's CPU,
    and waits at worst for every other user at every step of its path (a blocking server: for the whole queue)."""
    p = measured.prediction
    if p.blocking:
        return (p.wait_s + p.demand_s) * 1000, p.users * (p.wait_s + p.path_s) * 1000
    return (p.wait_s + p.demand_s) * 1000, (p.wait_s + theory.TIMER_SLACK_S + p.users * p.path_s) * 1000


def simulated(measured):
    """theory.simulate for the run's users, requests and measured demand: the in-step model's latencies."""
    p, s = measured.prediction, measured.summary
    if p.blocking:
        return theory.simulate(p.users, s.completed, p.wait_s + p.demand_s)
    return theory.simulate(p.users, s.completed, p.demand_s, p.wait_s)


# The corners of the lesson's parameters (waits of 20 ms to 1 s, 1 to 200 users), each with as many requests as
# keeps it short: a blocking run takes requests x wait, so its long waits get a lone user and two requests. A lone
# user lands inside its bounds within 50 requests of 20 ms or 10 of 100 ms, and 40 users waiting a second come within
# 5% of the optimistic bound in three rounds (at most 1.8% off in three runs).
CORNERS = (
    ("async", 20, 1, 50), ("async", 20, 40, 200), ("async", 20, 200, 400),
    ("async", 100, 1, 10), ("async", 100, 40, 200), ("async", 100, 200, 400),
    ("async", 1000, 1, 2), ("async", 1000, 40, 120), ("async", 1000, 200, 200),
    ("sync", 20, 1, 25), ("sync", 20, 40, 80), ("sync", 20, 200, 200),
    ("sync", 100, 1, 10), ("sync", 1000, 1, 2),
)


def run_corners(server, corners=CORNERS, client="async", on_corner=None):
    """Run each (mode, delay_ms, users, requests) on one server; a list of Measured, in order."""
    measured = []
    for mode, delay_ms, users, requests in corners:
        measured.append(run(server, mode, requests, users, delay_ms, client))
        if on_corner:
            on_corner(measured[-1])
    return measured
