"""Lesson 02's sweep bounds.

The blocking thread's least share built from the lone user's runs, the non-blocking thread's least busy share and the
knee's interval from every run's bounds, and runs with dropped connects set aside.
"""

from types import SimpleNamespace

import pytest

from iolab import theory
from iolab.lessons.sync_async import experiment
from iolab.lessons.sync_async.sweep import Sweep, first_send_s


def point(users, rps, duration_s, demand_ms=1.0, queued_ms=0.0, drops=0, first_send=0.0, low_rps=0.0, high_rps=0.0):
    summary = SimpleNamespace(concurrency=users, rps=rps, duration_s=duration_s, demand_ms=demand_ms,
                              queued_ms=queued_ms, listen_drops=drops, completed=round(rps * duration_s))
    samples = [SimpleNamespace(start=first_send), SimpleNamespace(start=first_send + 0.001)]
    result = SimpleNamespace(aggregated=False, samples=samples)
    prediction = SimpleNamespace(low_rps=low_rps, high_rps=high_rps)
    return SimpleNamespace(summary=summary, result=result, prediction=prediction)


def test_the_least_share_held_is_the_lone_users_idle_time_per_request():
    # Z = 20 ms, D = 1 ms: a lone user's 2 requests in 50 ms leave the thread 8 ms idle, 2 ms of it before its
    # first send: 3 ms per request. Repeated later in the sweep, a busier moment left it 4 ms per request.
    lone = point(1, rps=2 / 0.050, duration_s=0.050, first_send=0.002)
    lone_later = point(1, rps=2 / 0.052, duration_s=0.052, first_send=0.002)
    two = point(2, rps=4 / 0.090, duration_s=0.090, first_send=0.001)
    hundred = point(100, rps=200 / 4.206, duration_s=4.206, first_send=0.003)
    sweep = Sweep("sync", 20, [lone, two, hundred], per_user=2, lone_again=[lone_later])
    assert sweep.idle_per_request_s(lone) == pytest.approx(0.003)
    assert sweep.idle_per_request_s(lone_later) == pytest.approx(0.004)
    assert sweep.lone_idle_per_request_s() == pytest.approx(0.004)  # the most of the lone runs
    # A lone run whose counters caught more than its duration leaves no idle time: a late timer is still allowed for.
    busy_lone = point(1, rps=2 / 0.040, duration_s=0.040, queued_ms=2.0)
    assert Sweep("sync", 20, [busy_lone, two], per_user=2).lone_idle_per_request_s() == theory.TIMER_SLACK_S
    assert sweep.held(two) == pytest.approx(4 * 0.021 / 0.090)
    assert sweep.least_held(two) == pytest.approx(1 - (0.001 + 4 * 0.004) / 0.090)
    assert sweep.least_held(hundred) == pytest.approx(1 - (0.003 + 200 * 0.004) / 4.206)
    assert sweep.least_held(two) <= sweep.held(two) and sweep.least_held(hundred) <= sweep.held(hundred)
    # A server that left its thread idle 5 ms per request besides, with two users, is caught.
    idler = point(2, rps=4 / 0.110, duration_s=0.110, first_send=0.001)
    assert sweep.held(idler) < sweep.least_held(idler)


def test_a_wait_for_a_cpu_no_request_could_have_waited_does_not_hold_the_thread():
    # 15 users, Z = 20 ms, D = 1 ms, each request's turn 21 ms: the counters' 12 ms a request of waiting cannot have
    # been on the path, and the thread was held the whole run, not 157 % of it.
    crowded = point(15, rps=1 / 0.021, duration_s=3.0, queued_ms=12.0)
    sweep = Sweep("sync", 20, [point(1, rps=2 / 0.050, duration_s=0.050), crowded], per_user=2)
    assert sweep.held(crowded) == pytest.approx(1.0)
    # A wait that fits in the turn still counts: each took 25 ms, 4 of them waiting for a CPU.
    waiting = point(15, rps=1 / 0.025, duration_s=3.0, queued_ms=4.0)
    assert sweep.held(waiting) == pytest.approx(1.0)
    assert sweep.held(point(15, rps=1 / 0.025, duration_s=3.0)) == pytest.approx(0.84)  # not counted: idle


def test_a_run_without_per_request_times_counts_no_first_send():
    assert first_send_s(SimpleNamespace(aggregated=True, samples=object())) == 0.0
    assert first_send_s(SimpleNamespace(aggregated=False, samples=[])) == 0.0
    assert first_send_s(point(1, 1, 1, first_send=0.25).result) == 0.25


def test_the_least_busy_share_is_the_pessimistic_bounds():
    busy = point(200, rps=800, duration_s=1.0, demand_ms=1.0, queued_ms=0.2, low_rps=600)
    sweep = Sweep("async", 20, [point(1, 45, 1.0), busy])
    assert sweep.thread_busy(busy) == pytest.approx(0.96)
    assert sweep.least_thread_busy(busy) == pytest.approx(1.2e-3 * 600 * (1 - experiment.TOLERANCE))


def test_the_knee_lies_between_the_bounds_knees():
    lone = point(1, rps=40, duration_s=1.0, low_rps=38, high_rps=47)
    busy = point(200, rps=900, duration_s=1.0, low_rps=500, high_rps=1000)
    earliest, latest = Sweep("async", 20, [lone, busy]).knee_bounds()
    assert earliest == pytest.approx(500 * (1 - experiment.TOLERANCE) / 40)
    assert latest == pytest.approx(1000 * (1 + experiment.TOLERANCE) / 40)


def test_runs_with_dropped_connects_are_not_taken_as_cpu_bound():
    points = [point(n, rps=n, duration_s=1.0, drops=9 if n == 200 else 0) for n in (1, 10, 40, 100, 200)]
    sweep = Sweep("async", 20, points)
    sweep.knee_predicted = lambda: 20
    assert [p.summary.concurrency for p in sweep.cpu_bound_points()] == [40, 100]
