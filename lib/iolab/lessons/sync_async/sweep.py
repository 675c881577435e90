"""Lesson 02's concurrency sweep.

Throughput and latency against the number of users, for both handlers, with theory's curves.
"""

import math
from dataclasses import dataclass, field

from iolab import theory

from . import experiment


def users_to_try(knee, most=200, points=9):
    """Populations from 1 to well past `knee` (up to `most`), spaced about evenly on a log scale, whole and distinct."""
    top = int(min(most, max(4 * knee, 8)))
    values = {1, top}
    for i in range(1, points - 1):
        values.add(max(1, round(top ** (i / (points - 1)))))
    return sorted(values)


@dataclass
class Sweep:
    """One handler measured at several populations, and the demands its curves are drawn with."""

    mode: str
    delay_ms: int
    points: list  # experiment.Measured, one per population, fewest users first
    per_user: int = 1  # requests each user sent in every run
    # The blocking handler's lone user measured again through the sweep (its middle and its end): the idle time it
    # leaves the thread changes as the machine's other programs come and go, and these say by how much in this run.
    lone_again: list = field(default_factory=list)

    @property
    def users(self):
        return [point.summary.concurrency for point in self.points]

    @property
    def busiest(self):
        """The run with the most users: where the server's CPU is busiest, so its D is the one the knee depends on."""
        return self.points[-1]

    def demand_s(self):
        """The server's CPU per request when it is busiest (an idle server spends more per request, waking for each)."""
        return self.busiest.summary.demand_ms / 1000

    def queued_s(self):
        """The server's wait for a CPU per request when it is busiest: its share of a CPU it shares."""
        return self.busiest.prediction.queued_s

    def path_s(self):
        """Everything one request needed besides its wait, from the lone user's run (users = 1)."""
        return self.points[0].prediction.path_s

    def step_path_s(self):
        """The same as users in step pay it (theory.step_path): a wait for a CPU counts only beyond the other side's
        CPU."""
        return self.points[0].prediction.step_path_s

    def bottleneck_s(self):
        """D_max: what saturates first, per request, in the busiest run. Either the server's one thread (its CPU and
        its wait for a CPU), or all the CPU the run took (server, client, this notebook) shared by the cores it had:
        on one CPU the client's work takes the same processor as the server's."""
        s = self.busiest.summary
        thread_s = self.demand_s() + self.queued_s()
        if not s.cores:
            return thread_s
        everything_ms = sum(v for v in (s.demand_ms, s.client_demand_ms, s.lab_demand_ms) if not math.isnan(v))
        return max(thread_s, everything_ms / 1000 / s.cores)

    def curves(self, users):
        """Theory's throughput (the bounds, users in step, MVA) and mean latency (users in step) at each population."""
        wait_s, demand_s, queued_s, path_s = self.delay_ms / 1000, self.demand_s(), self.queued_s(), self.path_s()
        if self.mode == "sync":
            predictions = [theory.predict(n, wait_s, demand_s, queued_s, path_s, blocking=True,
                                          step_path_s=self.step_path_s()) for n in users]
            curves = {
                "optimistic": [p.high_rps for p in predictions],
                "pessimistic": [p.low_rps for p in predictions],
                "in step": [p.in_step_rps for p in predictions],
            }
            mva = theory.mva(max(users), wait_s + demand_s + queued_s)
            turn_s, delay_s, first_s = wait_s + demand_s + queued_s, 0.0, wait_s + demand_s + queued_s
        else:
            turn_s = self.bottleneck_s()
            path_s = max(path_s, turn_s)
            step_s = theory.clamped_step_path(self.step_path_s(), turn_s, path_s)
            curves = {
                "optimistic": [theory.optimistic_throughput(n, path_s, wait_s, bottleneck_s=turn_s) for n in users],
                "pessimistic": [theory.pessimistic_throughput(n, path_s, wait_s + theory.TIMER_SLACK_S) for n in users],
                "in step": [theory.in_step_throughput(n, step_s, turn_s, wait_s) for n in users],
            }
            # MVA with the bottleneck as its one queueing centre and the rest of the path as delay.
            mva = theory.mva(max(users), turn_s, wait_s + path_s - turn_s)
            delay_s, first_s = wait_s, turn_s
        curves["MVA"] = [mva[n - 1].throughput for n in users]
        # Mean latency of runs like the measured ones, users in step: simulated, because a run this short is mostly
        # its first round (everyone arriving together) and its last (users finishing one by one), which the
        # response-time law, R = N / X - Z, leaves out.
        simulated = [theory.simulate(n, n * self.per_user, first_s, delay_s) for n in users]
        curves["in step latency"] = [1000 * sum(run.latencies_s) / len(run.latencies_s) for run in simulated]
        return curves

    def knee_predicted(self):
        """N* = (Z + D) / D_max from the measured demands: D the lone user's whole path, D_max the bottleneck's per
        request in the busiest run (see bottleneck_s). 1 for the blocking server, whatever the demands."""
        wait_s = self.delay_ms / 1000
        if self.mode == "sync":
            return theory.knee(wait_s + self.demand_s())
        turn_s = self.bottleneck_s()
        return theory.knee(max(self.path_s(), turn_s), wait_s, bottleneck_s=turn_s)

    def held(self, point):
        """The share of a run the server's one thread was held by requests: X (Z + D + its wait for a CPU), the wait
        counted only as far as it fits in a request's turn, 1 / X less Z and D. Beside CPU hogs the kernel's counter
        of a thread's waits can read more than could have been on the requests' path (40 ms a request while each of
        ten took 401 ms for a wait of 400): what no request waited for did not hold the thread for them."""
        s = point.summary
        turn_ms = 1000 / s.rps if s.rps > 0 else math.inf
        waited_ms = max(0.0, min(s.queued_ms, turn_ms - self.delay_ms - s.demand_ms))
        return s.rps * (self.delay_ms + s.demand_ms + waited_ms) / 1000

    def lone_runs(self):
        """Every run of the blocking handler's lone user: the sweep's first point and its repeats."""
        return [self.points[0], *self.lone_again]

    def idle_per_request_s(self, lone):
        """How long the thread had no request, per request, in one lone user's run, its first send left out.

        The run's duration less Z + D + queued per request, less the wait before the client sent its first request
        (when nothing had reached the server yet). What is left is, per request, the client's turn (reading an
        answer, sending the next) and whatever of the thread's time no counter saw: a sleep ending late, a wait in
        the kernel that is neither CPU nor a run queue.
        """
        s = lone.summary
        idle_s = s.duration_s * (1 - self.held(lone)) - first_send_s(lone.result)
        return max(0.0, idle_s) / max(s.completed, 1)

    def lone_idle_per_request_s(self):
        """The most any of the lone user's runs left the thread idle per request (see idle_per_request_s), and at least
        theory.TIMER_SLACK_S: each sleep may end that late, time Z leaves out, which a lone run whose counters caught
        extra time (its wait for a CPU, after the last answer) can hide."""
        return max(theory.TIMER_SLACK_S, *(self.idle_per_request_s(lone) for lone in self.lone_runs()))

    def least_held(self, point):
        """The blocking thread's least share of a run of two users or more, from the lone user's runs of this sweep.

        From the second user on, another request is always waiting when one is answered: the client's turn on a
        request overlaps the thread's work on another. So per request the thread can stand idle at most as long as
        the lone user's runs left it idle per request (their most: the machine's other programs come and go), and
        once more before the first request arrived (this run's own first send, measured by its client).
        """
        s = point.summary
        idle_s = first_send_s(point.result) + s.completed * self.lone_idle_per_request_s()
        return 1 - idle_s / s.duration_s

    def cpu_bound_points(self):
        """The runs past twice the predicted knee in which no connection attempt was dropped.

        A dropped attempt (a listen backlog that overflowed: Tornado asks for 128) waits a second for TCP's retry,
        so a run with drops spent part of its time waiting on TCP, not on the CPU: another experiment.
        """
        knee = self.knee_predicted()
        return [p for p in self.points if p.summary.concurrency >= 2 * knee and not p.summary.listen_drops]

    def thread_busy(self, point):
        """The share of a run the server's thread spent running or ready to run: (D + its wait for a CPU) X."""
        s = point.summary
        return (s.demand_ms + s.queued_ms) / 1000 * s.rps

    def least_thread_busy(self, point):
        """The least busy share the pessimistic bound leaves the server's thread in a run: (D + queued) X_low.

        At the worst arrival order every request waits for all the others at every step of its path, and the
        thread is busy only for its own part of each. Users in step do better (about 2/3 at twice the knee, where
        (N - 1) D is twice Z + D), and users drifting out of step better still: the figure is a floor, not a forecast.
        """
        s = point.summary
        return (s.demand_ms + s.queued_ms) / 1000 * point.prediction.low_rps * (1 - experiment.TOLERANCE)

    def knee_bounds(self):
        """(earliest, latest) number of users at which the measured curve can bend, from every run's bounds.

        knee_measured is the highest throughput over the lone user's per user; the highest throughput lies between
        the highest pessimistic and the highest optimistic bound of the runs (widened by the measuring's own error,
        experiment.TOLERANCE), so the bend lies between those over the same per-user throughput.
        """
        lone = self.points[0].summary.rps / self.points[0].summary.concurrency
        low = max(p.prediction.low_rps for p in self.points) * (1 - experiment.TOLERANCE)
        high = max(p.prediction.high_rps for p in self.points) * (1 + experiment.TOLERANCE)
        return low / lone, high / lone

    def knee_measured(self):
        """Where the measured curve bends: the line through the origin and the lone user's throughput, times N, meets
        the highest throughput measured."""
        lone = self.points[0].summary.rps / self.points[0].summary.concurrency
        return max(point.summary.rps for point in self.points) / lone


def first_send_s(result):
    """Seconds from the run's go to its first request leaving the client (0 for a run without per-request times)."""
    samples = result.samples
    if result.aggregated or not samples:
        return 0.0
    return min(sample.start for sample in samples)


def measure(server, mode, users, delay_ms, *, rounds=10, client="async", blocking_rounds=2, on_point=None):
    """Run `mode` ("sync" or "async") at each population in `users` against one server; a Sweep.

    Each run sends `rounds` requests per user (`blocking_rounds` for the blocking
    handler, whose runs take users x rounds x wait however many users there are).
    The blocking handler's lone user (if `users` starts at 1) runs again halfway and at the end: see
    Sweep.least_held. `on_point(measured)` is called after each run, for a progress line.
    """
    per_user = blocking_rounds if mode == "sync" else rounds

    def run(n):
        return experiment.run(server, mode, requests=n * per_user, concurrency=n, delay_ms=delay_ms, client=client)

    points, lone_again = [], []
    for index, n in enumerate(users):
        points.append(run(n))
        if on_point:
            on_point(points[-1])
        if mode == "sync" and users[0] == 1 and index in (len(users) // 2, len(users) - 1) and index > 0:
            lone_again.append(run(1))
    return Sweep(mode, delay_ms, points, per_user, lone_again)
