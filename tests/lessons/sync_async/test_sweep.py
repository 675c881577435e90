"""Lesson 02's sweep bounds.

The blocking thread's least share built from the lone user's run, and runs with dropped connects set aside.
"""

from types import SimpleNamespace

from iolab import theory
from iolab.lessons.sync_async.sweep import Sweep


def point(users, rps, duration_s, demand_ms=1.0, queued_ms=0.0, drops=0):
    summary = SimpleNamespace(concurrency=users, rps=rps, duration_s=duration_s, demand_ms=demand_ms,
                              queued_ms=queued_ms, listen_drops=drops)
    return SimpleNamespace(summary=summary)


def test_the_least_share_held_is_the_lone_users_idle_time_over_the_run():
    # Z = 20 ms, D = 1 ms: a lone user's 2 requests in 50 ms leave the thread 8 ms idle.
    lone = point(1, rps=2 / 0.050, duration_s=0.050)
    # Two users and a hundred: idle only before the first request and after the last, 6 ms in all.
    two = point(2, rps=4 / 0.090, duration_s=0.090)
    hundred = point(100, rps=200 / 4.206, duration_s=4.206)
    sweep = Sweep("sync", 20, [lone, two, hundred], per_user=2)
    assert abs(sweep.lone_idle_s() - 0.008) < 1e-9
    assert abs(sweep.held(two) - 4 * 0.021 / 0.090) < 1e-9
    late = two.summary.rps * theory.TIMER_SLACK_S  # each sleep may end a little late
    assert abs(sweep.least_held(two) - (1 - 0.008 / 0.090 - late)) < 1e-9  # a short run: the edges weigh
    assert sweep.least_held(hundred) > 0.99 - late  # a long one: they hardly do
    assert sweep.least_held(two) <= sweep.held(two) and sweep.least_held(hundred) <= sweep.held(hundred)


def test_runs_with_dropped_connects_are_not_taken_as_cpu_bound():
    points = [point(n, rps=n, duration_s=1.0, drops=9 if n == 200 else 0) for n in (1, 10, 40, 100, 200)]
    sweep = Sweep("async", 20, points)
    sweep.knee_predicted = lambda: 20
    assert [p.summary.concurrency for p in sweep.cpu_bound_points()] == [40, 100]
