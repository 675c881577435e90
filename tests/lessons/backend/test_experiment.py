"""Lesson 10's experiment: the Lab's runs on a real backend.

Redis and Celery are real; the tests that need them skip, with the reason, where they are missing.
"""

import pytest

from iolab.lessons.backend import experiment, parameters, runs, stack

MISSING = stack.missing()
needs_backend = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
# Small enough for a test, and still with arrivals past twice the drain: 2 slots of 50 ms drain 40 tasks/s.
SMALL = dict(task_ms=50, users=4, blocking_requests=8, sweep_threads=[1, 2], sweep_workers=2, sweep_users=4,
             sweep_requests=8, forget_users=10, forget_requests=50, queue_workers=2, arrival_rps=100, queue_seconds=2,
             queue_limit=5, timeout_ms=400)


def test_before_the_queues_run_the_bounded_queue_is_predicted_from_t_alone():
    lab = experiment.Lab(parameters.Plan(**SMALL).check())
    assert lab.drain_rps == 2 / 0.05
    sent, accepted = lab.bounded_prediction()
    assert sent == 200 and accepted == 5 + 2 + 40 * 2
    assert lab.results()["tests"] == [] and lab.results()["queue_slope"]["measured"] is None


@pytest.fixture
def lab():
    lab = experiment.Lab(parameters.Plan(**SMALL).check())
    lab.start()
    try:
        yield lab
    finally:
        lab.stop()


@needs_backend
def test_a_failed_run_stops_every_front_end_planned(lab):
    planned = lab.plan_waits()
    assert [b.front.name for b in planned] == ["tornado_backend", "gevent_flask", "gunicorn_flask"]
    assert all(b.front.alive() and b.requests == 8 and b.tiers.users == 4 for b in planned)
    assert planned[0].slot_s == planned[1].slot_s == planned[2].slot_s > 0.05  # one T_w, measured awaiting

    def fail(run, blocking):
        run.wait()
        raise RuntimeError("the dashboard broke")

    with pytest.raises(RuntimeError, match="dashboard"):
        lab.waits(planned, fail)
    assert not any(b.front.alive() for b in planned)


def test_a_blocking_run_carries_its_own_figures():
    """R, T_w, T and the tiers travel together: the prediction reads them from the run itself."""
    tiers = runs.Tiers(users=16, front=2, workers=4, front_threads=True)
    blocking = runs.Blocking("k=2", None, "pool", tiers, trip_s=0.25, slot_s=0.21, task_ms=200, requests=40)
    assert blocking.law() == tiers.law(0.25, 0.21) == (8.0, "front end")
    assert blocking.predicted_rps == 8.0


def test_each_users_late_start_lowers_the_pessimistic_side_once_per_run():
    """10 requests at 16 req/s take 625 ms; six users each 7 ms late at the go add 42 ms to the run, not per request."""
    assert runs.started_late(16.0, 10, 6, 0.007) == pytest.approx(10 / 0.667)
    assert runs.started_late(16.0, 10, 6, 0.0) == 16.0  # a front end whose connections start nothing new
    assert runs.started_late(16.0, 0, 6, 0.007) == 16.0  # nothing answered: the rate is what it was
