"""Lesson 10's runs against a real Redis and Celery worker pool.

Threads taking turns at the GIL inside the pessimistic side; a small Redis filled to its cap.
"""

from types import SimpleNamespace

import pytest

from iolab import servers
from iolab.lessons.backend import runs, stack

MISSING = stack.missing()
needs_backend = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


@needs_backend
@pytest.mark.parametrize("how, threads", [("await", None), ("pool", 16)])
def test_threads_that_take_turns_at_the_gil_stay_above_the_pessimistic_side_that_counts_the_turns(how, threads):
    """Sixteen worker threads with 50 ms tasks finish in step and wait for each other at their process's GIL.
    Without those turns (runs.gil_turns) the pessimistic side came out 14% and 17% over what the pool did."""
    backend = stack.Backend(concurrency=16)
    try:
        with backend.front("tornado_backend", timeout_ms=30000, threads=threads or 1) as front:
            slot = runs.trip_s(front, "await", 50)
            trip = runs.trip_s(front, how, 50)
            tiers = runs.Tiers(32, threads, 16, front_threads=threads is not None)
            blocking = runs.Blocking(how, front, how, tiers, trip, slot, 50, 192)
            run = runs.start_blocking(blocking, backend.worker, backend.redis_server)
            try:
                row = runs.blocking_row(blocking, run.wait(), run.worker_meter, broker=run.broker_meter)
            finally:
                run.stop()
    finally:
        backend.stop()
    assert set(row.statuses) == {200}, row.statuses
    assert row.low_rps <= row.rps <= row.bound_rps * 1.02, (row.low_rps, row.rps, row.predicted_rps, row.bound_rps)


def test_redis_waits_for_a_cpu_are_counted_per_request_and_a_part_not_metered_counts_none():
    """Redis's waits lie on both tiers' way: the pessimistic side adds them (a quick run of lesson 10 fell 0.1 ms per
    task under a side that left them out)."""
    summary = SimpleNamespace(completed=10, queued_ms=0.5)
    worker, redis = SimpleNamespace(queued_s=0.014), SimpleNamespace(queued_s=0.012)
    assert runs.cpu_waits(summary, worker, redis) == pytest.approx((0.0005, 0.0014, 0.0012))
    assert runs.cpu_waits(summary, None, SimpleNamespace(queued_s=float("nan"))) == (0.0005, 0.0, 0.0)


def test_tasks_that_fit_is_the_cap_less_what_redis_uses_empty_over_bytes_per_task():
    assert runs.tasks_that_fit(2, 2**20, 1024) == 1024
    assert runs.tasks_that_fit(1, 2**21, 800) == 0  # already over the cap: nothing fits
    with pytest.raises(ValueError, match="bytes_per_task"):
        runs.tasks_that_fit(2, 0, float("nan"))


@needs_backend
@pytest.mark.slow
def test_filling_a_small_redis_holds_about_what_its_own_bytes_per_task_predict_then_only_503s():
    with stack.capped_broker(2) as (broker, client), servers.serve("tornado_backend", broker=broker) as front:
        cap = runs.fill_to_cap(front, client, 2, bytes_per_task=820.0, rate=500.0, users=8, refused=20)
    own = runs.tasks_that_fit(2, cap.empty_bytes, cap.bytes_per_task_here())
    assert 0.8 * own <= cap.held <= 1.2 * own, (cap.held, own, cap.bytes_per_task_here())
    fewest, most = cap.held_bounds()  # where its own readings of memory against LLEN reach the cap
    assert fewest <= cap.held <= most, (cap.held, fewest, most)
    assert cap.held == runs.statuses(cap.result)[200]  # nothing drains it, and a refused task is not queued
    assert {sample.status for sample in cap.refusals()} == {503}, cap.as_dict()
    assert cap.reason_status == 503 and cap.reason.startswith("503 broker full"), cap.reason
    assert cap.reason_ms < 1000, cap.reason_ms


def test_a_front_end_whose_one_slot_waits_out_the_one_worker_binds_with_it():
    # Tornado blocking its loop on a one-slot pool: R = T_w + its way, so the law alone would always name the front
    # end, by a few percent; the two hold one chain of slots.
    assert runs.Tiers(users=5, front=1, workers=1).law(0.060, 0.050)[1] == "front end = worker pool"
    assert runs.Tiers(users=5, front=2, workers=1).law(0.060, 0.050)[1] == "worker pool"
    assert runs.Tiers(users=5, front=1, workers=2).law(0.060, 0.050)[1] == "front end"  # fewer slots: its own limit


@needs_backend
def test_a_worker_pool_of_the_same_size_is_kept_once_idle_and_another_size_starts_afresh():
    """A kept pool meets an empty queue and no task in flight: the tasks it was running finish first."""
    backend = stack.Backend(concurrency=2)
    try:
        with backend.front("tornado_backend") as front:
            for _ in range(6):  # two running, four waiting in the queue
                runs.one_answer(f"{front.url}/backend?ms=200&how=forget")
        first = backend.worker
        assert backend.start_worker(2) is first
        assert backend.queue_length() == 0 and backend.unacked() == 0
        assert backend.start_worker(1) is not first and not first.alive()
    finally:
        backend.stop()


@needs_backend
def test_the_queue_watch_stops_two_readings_after_it_is_asked():
    backend = stack.Backend(concurrency=1)
    try:
        watch = stack.QueueWatch(backend).start()
        while not watch.points:
            pass
        taken = len(watch.points)
        points = watch.stop_after()
        assert len(points) >= taken + 2 and not watch._thread.is_alive()
    finally:
        backend.stop()
