"""Lesson 02's concurrency sweep.

Throughput and latency against the number of users, for both handlers, with theory's curves.
"""

import math
from dataclasses import dataclass

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
        """The share of a run the server's one thread was held by requests: X (Z + D + its wait for a CPU)."""
        s = point.summary
        return s.rps * (self.delay_ms + s.demand_ms + s.queued_ms) / 1000

    def lone_idle_s(self):
        """How long the thread had no request in the lone user's run: its duration less Z + D + queued per request.

        It covers the moments before the first request arrives and after the last is answered, and the gaps
        between a user's requests (the client reading an answer and sending the next).
        """
        lone = self.points[0].summary
        return max(0.0, lone.duration_s * (1 - self.held(self.points[0])))

    def least_held(self, point):
        """The blocking thread's least share of a run of two users or more, built from the lone user's run.

        From the second user on, another request is always waiting when one is answered; only the first
        arrival and the last answer leave the thread idle, and the lone user's run had both (and its gaps besides).
        And each sleep may end up to theory.TIMER_SLACK_S late, time the thread was held that Z leaves out.
        """
        return 1 - self.lone_idle_s() / point.summary.duration_s - point.summary.rps * theory.TIMER_SLACK_S

    def cpu_bound_points(self):
        """The runs past twice the predicted knee in which no connection attempt was dropped.

        A dropped attempt (a listen backlog that overflowed: Tornado asks for 128) waits a second for TCP's retry,
        so a run with drops spent part of its time waiting on TCP, not on the CPU: another experiment.
        """
        knee = self.knee_predicted()
        return [p for p in self.points if p.summary.concurrency >= 2 * knee and not p.summary.listen_drops]

    def knee_measured(self):
        """Where the measured curve bends: the line through the origin and the lone user's throughput, times N, meets
        the highest throughput measured."""
        lone = self.points[0].summary.rps / self.points[0].summary.concurrency
        return max(point.summary.rps for point in self.points) / lone


def measure(server, mode, users, delay_ms, rounds=10, client="async", blocking_rounds=2, on_point=None):
    """Run `mode` ("sync" or "async") at each population in `users` against one server; a Sweep.

    Each run sends `rounds` requests per user (`blocking_rounds` for the blocking
    handler, whose runs take users x rounds x wait however many users there are).
    `on_point(measured)` is called after each run, for a progress line.
    """
    per_user = blocking_rounds if mode == "sync" else rounds
    points = []
    for n in users:
        measured = experiment.run(server, mode, requests=n * per_user, concurrency=n, delay_ms=delay_ms, client=client)
        points.append(measured)
        if on_point:
            on_point(measured)
    return Sweep(mode, delay_ms, points, per_user)
